import { type NoRetryReason, decideRetry } from '../protocol/retry-policy.js';
import type { RetryPolicy } from '../protocol/work-envelope.js';
import type { NextRule, WorkflowDefinition, WorkflowRunEvent } from '../protocol/workflow.js';
import type { JsonValue } from '../protocol/audit.js';
import { checkCondition } from '../workflow/conditions.js';
import { stageRetryPolicy } from '../workflow/definition.js';
import type { RunFailureCode, WorkflowRunContext } from './workflow-run-context.js';
import { branchRunning, joinOutcome, settleBranch } from './workflow-run-join.js';
import type { RunJoin } from './workflow-run-join-shapes.js';
import { settledOnce } from './workflow-run-join-index.js';

/**
 * Where a run goes next, decided from its definition alone: a hop's outcome
 * is retried under its stage's retry policy, or routed by the stage's `next`
 * rules (within their `maxTraversals` and the target's `maxVisits`), or ends
 * the run. Pure.
 */

/** Where a hop's outcome leads. */
export type Route =
  | { kind: 'retry'; attempt: number; delayMs: number }
  | {
      kind: 'enter';
      stage: string;
      gated: boolean;
      via: { from: string; index: number } | null;
      /** The success's output the stage was left with (kept for the next conditions and maps). */
      output?: JsonValue | undefined;
      /** The condition of the rule taken, and the value it read. */
      condition?: { pointer: string; read: JsonValue | null } | undefined;
    }
  | {
      kind: 'complete';
      output?: JsonValue | undefined;
      condition?: { pointer: string; read: JsonValue | null } | undefined;
    }
  | { kind: 'fail'; code: RunFailureCode; reason: string };
export type RouteKind = 'retry' | 'enter' | 'enter-gated' | 'complete' | 'fail';

export function routeKind(route: Route): RouteKind {
  return route.kind === 'enter' ? (route.gated ? 'enter-gated' : 'enter') : route.kind;
}

export function ruleKey(stage: string, index: number): string {
  return `${stage}.next[${index}]`;
}

function canEnter(def: WorkflowDefinition, visits: Record<string, number>, stage: string): boolean {
  const max = def.stages[stage]?.maxVisits;
  return max === undefined || (visits[stage] ?? 0) < max;
}

function ruleUsable(def: WorkflowDefinition, ctx: WorkflowRunContext, stage: string, index: number, rule: NextRule) {
  if (rule.goto === undefined) return true;
  if (rule.maxTraversals !== undefined && (ctx.traversals[ruleKey(stage, index)] ?? 0) >= rule.maxTraversals) {
    return false;
  }
  return canEnter(def, ctx.visits, rule.goto);
}

/** Entering the definition's start stage. */
export function routeStart(def: WorkflowDefinition, from?: string): Route {
  const stage = from !== undefined && Object.hasOwn(def.stages, from) ? from : def.start;
  return { kind: 'enter', stage, gated: def.stages[stage]?.approval !== undefined, via: null };
}

export type HopOutcomeReport =
  | { outcome: 'succeeded'; output?: JsonValue | undefined }
  | {
      outcome: 'failed';
      errorType: string;
      message?: string | undefined;
      final?: NoRetryReason | undefined;
      /** Deliveries the worker's bus already made of the hop: the failure is final (see `finalAfterDeliveries`). */
      deliveries?: number | undefined;
      /** A fan-out stage's join failed (not a hop). */
      join?: boolean | undefined;
    };

/**
 * Why a failure the worker's bus already retried (`deliveries` times) is
 * final: `exhausted` when the stage's policy's `maximumAttempts` deliveries
 * were spent on a retryable error type, `non-retryable` otherwise (an error
 * type the policy does not retry, or a dead-letter for another reason).
 */
export function finalAfterDeliveries(policy: RetryPolicy, errorType: string, deliveries: number): NoRetryReason {
  const spent = policy.maximumAttempts !== 0 && deliveries >= policy.maximumAttempts;
  return policy.nonRetryableErrorTypes.includes(errorType) || !spent ? 'non-retryable' : 'exhausted';
}

/**
 * Where the current hop's outcome leads, decided from the definition alone:
 * a failure is first retried under the stage's retry policy; then the
 * stage's `next` rules are tried in order (the first matching, usable rule
 * decides); with no matching rule, success completes the run and failure
 * fails it; with matching rules that are all used up, the run fails with
 * `LOOP_BOUND`.
 */
export function routeOutcome(ctx: WorkflowRunContext, report: HopOutcomeReport): Route {
  const def = ctx.definition;
  const stageName = ctx.stage;
  const stage = stageName === null ? undefined : def.stages[stageName];
  if (stageName === null || stage === undefined) {
    return { kind: 'fail', code: 'RULE_ENDED', reason: `the run is at no stage of ${def.id}@${def.version}` };
  }
  let retryWhy: NoRetryReason | null = null;
  if (report.outcome === 'failed') {
    const policy = stageRetryPolicy(def, stageName);
    const final =
      report.final ??
      (report.deliveries === undefined ? undefined : finalAfterDeliveries(policy, report.errorType, report.deliveries));
    const retry = decideRetry(policy, { attempt: ctx.attempt, errorType: report.errorType, final });
    if (retry.retry) return { kind: 'retry', attempt: retry.nextAttempt, delayMs: retry.delayMs };
    retryWhy = retry.why;
  }
  let matched = 0;
  const output = report.outcome === 'succeeded' ? report.output : undefined;
  for (const [index, rule] of stage.next.entries()) {
    if (rule.on !== report.outcome) continue;
    if (rule.errorType !== undefined && (report.outcome !== 'failed' || rule.errorType !== report.errorType)) continue;
    let condition: { pointer: string; read: JsonValue | null } | undefined;
    if (rule.when !== undefined) {
      const check = checkCondition(rule.when, output);
      if (!check.holds) continue;
      condition = { pointer: rule.when.pointer, read: (check.read ?? null) as JsonValue | null };
    }
    matched++;
    if (!ruleUsable(def, ctx, stageName, index, rule)) continue;
    if (rule.end === 'completed') return { kind: 'complete', output, condition };
    if (rule.end === 'failed') {
      return {
        kind: 'fail',
        code: 'RULE_ENDED',
        reason: rule.reason ?? `stage ${stageName} ended the run on ${describeOutcome(report)}`,
      };
    }
    const target = rule.goto!;
    return {
      kind: 'enter',
      stage: target,
      gated: def.stages[target]?.approval !== undefined,
      via: { from: stageName, index },
      output,
      condition,
    };
  }
  if (matched > 0) {
    return {
      kind: 'fail',
      code: 'LOOP_BOUND',
      reason: `stage ${stageName}: every rule for ${describeOutcome(report)} is used up (maxTraversals or maxVisits reached)`,
    };
  }
  if (report.outcome === 'succeeded') return { kind: 'complete', output };
  if (report.join === true) return { kind: 'fail', code: 'JOIN_FAILED', reason: describeOutcome(report) };
  // The attempts the hop took: the deliveries the worker's bus made of it (what `dlq list` shows), when it says.
  const attempts = report.deliveries ?? ctx.attempt;
  return {
    kind: 'fail',
    code: retryWhy === 'exhausted' ? 'RETRIES_EXHAUSTED' : 'NON_RETRYABLE',
    reason:
      `hop ${ctx.hop} (${stageName}) failed with ${describeOutcome(report)}` +
      (retryWhy === 'exhausted' ? ` after ${attempts} attempt${attempts === 1 ? '' : 's'}` : ''),
  };
}

function describeOutcome(report: HopOutcomeReport): string {
  if (report.outcome === 'succeeded') return 'success';
  return report.message ? `${report.errorType}: ${report.message}` : report.errorType;
}

function outcomeOf(ctx: WorkflowRunContext, event: WorkflowRunEvent): HopOutcomeReport | null {
  if (event.type === 'HOP_SUCCEEDED') return { outcome: 'succeeded', output: event.output as JsonValue | undefined };
  if (event.type === 'CHILD_SETTLED') {
    const join = ctx.join ?? null;
    // A branch runs only in an open join: past this, the join is there.
    if (!branchRunning(join, event.hop, event.branch)) return null;
    const decided = joinOutcome(joinSettledBy(join!, event));
    if (decided.status === 'open') return null;
    if (decided.status === 'succeeded') return { outcome: 'succeeded', output: decided.output };
    return {
      outcome: 'failed',
      errorType: decided.errorType,
      message: decided.message,
      final: 'non-retryable',
      join: true,
    };
  }
  if (event.type === 'HOP_TIMED_OUT') {
    if (event.continuation !== undefined || ctx.stage === null) return null;
    return {
      outcome: 'failed',
      errorType: 'HopTimedOut',
      message: timeoutMessage(ctx.definition, ctx.stage, event.timeouts, 'hop', true, event.timeoutMs),
      final: 'exhausted',
    };
  }
  if (event.type === 'HOP_FAILED') {
    return {
      outcome: 'failed',
      errorType: event.errorType,
      message: event.message,
      final: event.final,
      deliveries: event.deliveries,
    };
  }
  return null;
}

/**
 * Why a hop (`kind: 'hop'`) or a suspended hop's query (`'query'`) that timed
 * out `timeouts` times is not published again: the `HopTimedOut` message.
 * `timeoutMs` is the timeout it ran past (the event's); without it, the
 * stage's `timeout` (an event of an earlier Coordinator).
 */
export function timeoutMessage(
  def: WorkflowDefinition,
  stage: string,
  timeouts: number,
  kind: 'hop' | 'query',
  questionKept = true,
  timeoutMs?: number,
): string {
  const timeout = timeoutMs ?? def.stages[stage]?.timeout;
  const max = stageRetryPolicy(def, stage).maximumAttempts;
  if (kind === 'hop') return `out longer than ${timeout} ms ${timeouts} times: its retry policy allows ${max}`;
  if (!questionKept) return `out longer than ${timeout} ms, and its question was not kept to publish it again`;
  return `out longer than ${timeout} ms ${timeouts} times: the retry policy of stage ${stage} allows ${max}`;
}

/**
 * Whether a route handles a hop's failure on purpose: the run retries it, or
 * one of the stage's `next` rules takes it (one that ends the run failed
 * included). A failure that fails the run because nothing routes it
 * (`NON_RETRYABLE`, `RETRIES_EXHAUSTED`) or because its rules are used up
 * (`LOOP_BOUND`) is not handled.
 */
export function routesFailure(route: Route | null): boolean {
  if (route === null) return false;
  return route.kind !== 'fail' || route.code === 'RULE_ENDED';
}

/** The route an event takes from the context (`null` for events that are not routed). */
export function routeOf(ctx: WorkflowRunContext, event: WorkflowRunEvent): Route | null {
  if (event.type === 'START') return routeStart(ctx.definition, event.stage);
  const report = outcomeOf(ctx, event);
  return report === null ? null : routeOutcome(ctx, report);
}

/**
 * The join with the branch of a `CHILD_SETTLED` settled (`settleBranch`),
 * made once per join and event: the routing, the machine's guard and its
 * effect each ask it of one event, and a map's join copies its list of
 * branches (up to `maxItems`) to make it.
 */
export function joinSettledBy(join: RunJoin, event: Extract<WorkflowRunEvent, { type: 'CHILD_SETTLED' }>): RunJoin {
  return settledOnce(join, event, () => settleBranch(join, event.branch, settledOf(event)));
}

/** What a `CHILD_SETTLED` says of its branch. */
export function settledOf(event: Extract<WorkflowRunEvent, { type: 'CHILD_SETTLED' }>) {
  return {
    outcome: event.outcome,
    ...(event.output === undefined ? {} : { output: event.output as JsonValue }),
    ...(event.error === undefined ? {} : { error: event.error }),
  };
}
