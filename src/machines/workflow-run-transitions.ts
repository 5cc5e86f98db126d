import { type NoRetryReason, decideRetry } from '../protocol/retry-policy.js';
import type { RetryPolicy } from '../protocol/work-envelope.js';
import {
  type NextRule,
  type RunUsage,
  type WorkflowDefinition,
  type WorkflowRef,
  type WorkflowRunEvent,
  WorkflowRunEventSchema,
  type WorkflowRunEventType,
  type WorkflowRunState,
  addRunUsage,
} from '../protocol/workflow.js';
import { stageRetryPolicy } from '../workflow/definition.js';
import { budgetStatus } from '../workflow/governance.js';
import type { ItemBudget } from '../workflow/records.js';

/**
 * The WorkflowRun's rules as data and pure functions: which event moves a
 * run from which state to which, under which condition, with which effect
 * on its context. `workflow-run-machine.ts` builds the XState machine from
 * `WORKFLOW_RUN_TRANSITIONS`; nothing here reads a clock or does I/O, so a
 * run replays to the same place from the same events.
 */

export const FINAL_RUN_STATES = ['completed', 'failed', 'canceled'] as const satisfies readonly WorkflowRunState[];
export type FinalRunState = (typeof FINAL_RUN_STATES)[number];
export type LiveRunState = Exclude<WorkflowRunState, FinalRunState>;
export function isFinalRunState(state: string): state is FinalRunState {
  return (FINAL_RUN_STATES as readonly string[]).includes(state);
}

/** Why a run failed. */
export type RunFailureCode =
  /** The hop failed with an error type its retry policy does not retry (or reported as final), and no rule routes it. */
  | 'NON_RETRYABLE'
  /** The hop failed on its last allowed attempt, and no rule routes it. */
  | 'RETRIES_EXHAUSTED'
  /** A rule `{ end: 'failed' }` ended the run. */
  | 'RULE_ENDED'
  /** Rules matched, but each was used up (`maxTraversals`) or led to a stage at its `maxVisits`. */
  | 'LOOP_BOUND'
  | 'GOVERNANCE_DENIED'
  | 'APPROVAL_DENIED'
  | 'BUDGET_EXCEEDED'
  /** The work item was still running past its definition's `deadline`. */
  | 'DEADLINE_EXCEEDED';

export interface RunFailure {
  code: RunFailureCode;
  reason: string;
  stage: string | null;
  hop: number;
}

/** What the run asks of whoever drives it (the Coordinator), as data. */
export type RunDirective =
  | { kind: 'start' }
  | {
      kind: 'dispatch';
      stage: string;
      role: string;
      hop: number;
      attempt: number;
      /** Wait this long before dispatching (a retry's backoff). */
      delayMs: number;
      /** Set when re-dispatching a suspended hop: the continuation to resume. */
      resume: string | null;
      /** Set when the hop was approved (gate or governance): who approved. */
      approvedBy: string | null;
    }
  | {
      kind: 'await-approval';
      stage: string;
      hop: number;
      source: 'gate' | 'governance';
      /** Who may approve; `null` means any named approver. */
      approvers: string[] | null;
      reason: string;
    }
  | { kind: 'await-reply'; stage: string; hop: number; continuation: string; askedRole: string | null }
  | { kind: 'none' };

export type RefusalReason =
  /** The event is not taken in this state. */
  | 'not-in-state'
  /** The event does not match the schema of `WorkflowRunEventSchema`. */
  | 'malformed'
  /** It names a hop or attempt other than the current one (late or redelivered). */
  | 'stale-hop'
  /** A resume that names another continuation than the one the hop suspended under. */
  | 'wrong-continuation'
  /** An approval or denial from someone not among the approvers. */
  | 'not-an-approver';

export interface RunRefusal {
  event: string;
  state: WorkflowRunState;
  reason: RefusalReason;
}

/** When a run's work item is past its definition's `deadline`: `at` (ms since the epoch), `ms` the deadline itself. */
export interface RunDeadline {
  at: number;
  ms: number;
}

/** The deadline of a work item created at `createdAt` under `definition` (`null` when it sets none). */
export function runDeadline(definition: WorkflowDefinition, createdAt: number): RunDeadline | null {
  const ms = definition.deadline;
  return ms === undefined ? null : { at: createdAt + ms, ms };
}

/** A timed-out hop (or query) the run wants published again, under the same idempotency key. */
export interface RunRepublish {
  hop: number;
  attempt: number;
  timeouts: number;
  /** The query's continuation when it is a suspended hop's query that timed out. */
  continuation: string | null;
}

export interface WorkflowRunContext {
  runId: string;
  workflow: WorkflowRef;
  /** The definition the run follows, kept whole so that a restored run keeps its version. */
  definition: WorkflowDefinition;
  stage: string | null;
  /** The current hop's number: hops started so far (a retry is another attempt of the same hop). */
  hop: number;
  attempt: number;
  /** Times each stage was entered. */
  visits: Record<string, number>;
  /** Times each `goto` rule was taken, by `ruleKey(stage, index)`. */
  traversals: Record<string, number>;
  /** Who approved the current hop (its gate or governance); kept across its retries and resumes. */
  approvedBy: string | null;
  /** Accrued over every accepted hop result. */
  usage: RunUsage;
  /**
   * What the work item may spend (`null`: no bound). An event whose usage
   * takes `usage` over it fails the run (`BUDGET_EXCEEDED`). A snapshot
   * persisted before the run held its budget has none: whoever restores it
   * puts the item's budget back.
   */
  budget: ItemBudget | null;
  /**
   * When the work item is past its deadline (`null`: none). A `TICK` at or
   * after `deadline.at` fails the run (`DEADLINE_EXCEEDED`). A snapshot
   * persisted before the run held its deadline has none: whoever restores it
   * puts it back from the item's creation time and definition.
   */
  deadline: RunDeadline | null;
  /**
   * Set by an accepted `HOP_TIMED_OUT` its stage's retry policy still allows:
   * the hop (or query) to publish again. Cleared by the next accepted event.
   */
  republish: RunRepublish | null;
  directive: RunDirective;
  failure: RunFailure | null;
  cancellation: { by: string | null; reason: string | null } | null;
  /** The last refused event, cleared by the next accepted one. */
  refusal: RunRefusal | null;
}

export function ruleKey(stage: string, index: number): string {
  return `${stage}.next[${index}]`;
}

/** Where a hop's outcome leads. */
export type Route =
  | { kind: 'retry'; attempt: number; delayMs: number }
  | { kind: 'enter'; stage: string; gated: boolean; via: { from: string; index: number } | null }
  | { kind: 'complete' }
  | { kind: 'fail'; code: RunFailureCode; reason: string };
export type RouteKind = 'retry' | 'enter' | 'enter-gated' | 'complete' | 'fail';

export function routeKind(route: Route): RouteKind {
  return route.kind === 'enter' ? (route.gated ? 'enter-gated' : 'enter') : route.kind;
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
export function routeStart(def: WorkflowDefinition): Route {
  return { kind: 'enter', stage: def.start, gated: def.stages[def.start]?.approval !== undefined, via: null };
}

export type HopOutcomeReport =
  | { outcome: 'succeeded' }
  | {
      outcome: 'failed';
      errorType: string;
      message?: string | undefined;
      final?: NoRetryReason | undefined;
      /** Deliveries the worker's bus already made of the hop: the failure is final (see `finalAfterDeliveries`). */
      deliveries?: number | undefined;
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
  for (const [index, rule] of stage.next.entries()) {
    if (rule.on !== report.outcome) continue;
    if (rule.errorType !== undefined && (report.outcome !== 'failed' || rule.errorType !== report.errorType)) continue;
    matched++;
    if (!ruleUsable(def, ctx, stageName, index, rule)) continue;
    if (rule.end === 'completed') return { kind: 'complete' };
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
    };
  }
  if (matched > 0) {
    return {
      kind: 'fail',
      code: 'LOOP_BOUND',
      reason: `stage ${stageName}: every rule for ${describeOutcome(report)} is used up (maxTraversals or maxVisits reached)`,
    };
  }
  if (report.outcome === 'succeeded') return { kind: 'complete' };
  return {
    kind: 'fail',
    code: retryWhy === 'exhausted' ? 'RETRIES_EXHAUSTED' : 'NON_RETRYABLE',
    reason:
      `hop ${ctx.hop} (${stageName}) failed with ${describeOutcome(report)}` +
      (retryWhy === 'exhausted' ? ` after ${ctx.attempt} attempt${ctx.attempt === 1 ? '' : 's'}` : ''),
  };
}

function describeOutcome(report: HopOutcomeReport): string {
  if (report.outcome === 'succeeded') return 'success';
  return report.message ? `${report.errorType}: ${report.message}` : report.errorType;
}

/**
 * A condition a transition row holds under; all are pure functions of the
 * context and the event. `over-budget`: the event is the current hop's
 * (its continuation's, for a resume) and the usage it brings takes the run
 * over its budget.
 */
export type RunCondition =
  | 'always'
  | 'current-hop'
  | 'current-continuation'
  | 'named-approver'
  | 'over-budget'
  /** A `TICK` at or after the run's deadline. */
  | 'past-deadline'
  /** A `HOP_TIMED_OUT` of the current hop (or its query) that its stage's retry policy lets be published again. */
  | 'timeout-republish'
  /** A `HOP_TIMED_OUT` of the current hop, or of the query the suspended hop waits on. */
  | 'current-timeout'
  | `route:${RouteKind}`;

/** What an accepted transition does to the context. */
export type RunEffect =
  | 'enter-start'
  | 'follow-route'
  | 'suspend'
  | 'resume'
  | 'require-approval'
  | 'approve'
  | 'deny'
  | 'governance-deny'
  | 'budget-exceeded'
  | 'deadline-exceeded'
  | 'republish'
  /** Accepted, nothing changes (a `TICK` before the deadline). */
  | 'none'
  | 'cancel';

export interface WorkflowRunTransition {
  from: LiveRunState;
  event: WorkflowRunEventType;
  when: RunCondition;
  to: WorkflowRunState;
  effect: RunEffect;
}

const routed = (
  from: LiveRunState,
  event: 'START' | 'HOP_SUCCEEDED' | 'HOP_FAILED' | 'HOP_TIMED_OUT',
): WorkflowRunTransition[] => {
  const effect: RunEffect = event === 'START' ? 'enter-start' : 'follow-route';
  const kinds: [RouteKind, WorkflowRunState][] =
    event === 'START'
      ? [
          ['enter-gated', 'awaiting-approval'],
          ['enter', 'running'],
        ]
      : [
          // A timed-out hop fails as exhausted: it is never retried.
          ...(event === 'HOP_FAILED' ? ([['retry', 'running']] as [RouteKind, WorkflowRunState][]) : []),
          ['enter-gated', 'awaiting-approval'],
          ['enter', 'running'],
          ['complete', 'completed'],
          ['fail', 'failed'],
        ];
  return kinds.map(([kind, to]) => ({ from, event, when: `route:${kind}` as const, to, effect }));
};

/** Time passed: past the deadline the run fails; before it, nothing changes. */
const ticks = (from: LiveRunState): WorkflowRunTransition[] => [
  { from, event: 'TICK', when: 'past-deadline', to: 'failed', effect: 'deadline-exceeded' },
  { from, event: 'TICK', when: 'always', to: from, effect: 'none' },
];

/**
 * Every legal move of a WorkflowRun, as data, in the order they are tried.
 * An event with no row whose condition holds is refused: the state and the
 * context stay as they are, except `refusal`, which records why.
 */
export const WORKFLOW_RUN_TRANSITIONS: readonly WorkflowRunTransition[] = Object.freeze([
  ...routed('pending', 'START'),
  { from: 'pending', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  // A hop's usage that takes the run over its budget ends it, before anything else of the event is decided.
  { from: 'running', event: 'HOP_SUCCEEDED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_SUCCEEDED'),
  { from: 'running', event: 'HOP_FAILED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_FAILED'),
  { from: 'running', event: 'HOP_SUSPENDED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'running', event: 'HOP_SUSPENDED', when: 'current-hop', to: 'suspended', effect: 'suspend' },
  {
    from: 'running',
    event: 'APPROVAL_REQUIRED',
    when: 'current-hop',
    to: 'awaiting-approval',
    effect: 'require-approval',
  },
  { from: 'running', event: 'GOVERNANCE_DENIED', when: 'current-hop', to: 'failed', effect: 'governance-deny' },
  // A hop past its stage's timeout: published again while its retry policy allows, else failed as exhausted.
  { from: 'running', event: 'HOP_TIMED_OUT', when: 'timeout-republish', to: 'running', effect: 'republish' },
  { from: 'running', event: 'HOP_TIMED_OUT', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_TIMED_OUT'),
  ...ticks('running'),
  { from: 'running', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  { from: 'awaiting-approval', event: 'APPROVED', when: 'named-approver', to: 'running', effect: 'approve' },
  { from: 'awaiting-approval', event: 'DENIED', when: 'named-approver', to: 'failed', effect: 'deny' },
  ...ticks('awaiting-approval'),
  { from: 'awaiting-approval', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  { from: 'suspended', event: 'HOP_RESUMED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'suspended', event: 'HOP_RESUMED', when: 'current-continuation', to: 'running', effect: 'resume' },
  // The suspended hop's question, refused by governance.
  { from: 'suspended', event: 'GOVERNANCE_DENIED', when: 'current-hop', to: 'failed', effect: 'governance-deny' },
  // The suspended hop's query past the asking stage's timeout: published again, or the hop resumes with the failure.
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'timeout-republish', to: 'suspended', effect: 'republish' },
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'current-timeout', to: 'running', effect: 'resume' },
  ...ticks('suspended'),
  { from: 'suspended', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },
] satisfies WorkflowRunTransition[]);

function isCurrentHop(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (!('hop' in event) || event.hop !== ctx.hop) return false;
  return !('attempt' in event) || event.attempt === ctx.attempt;
}

function outcomeOf(ctx: WorkflowRunContext, event: WorkflowRunEvent): HopOutcomeReport | null {
  if (event.type === 'HOP_SUCCEEDED') return { outcome: 'succeeded' };
  if (event.type === 'HOP_TIMED_OUT') {
    if (event.continuation !== undefined || ctx.stage === null) return null;
    return {
      outcome: 'failed',
      errorType: 'HopTimedOut',
      message: timeoutMessage(ctx.definition, ctx.stage, event.timeouts, 'hop'),
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

/** Why a usage is strictly over a budget (`budgetStatus` exceeded), or `null` when it is not. */
function budgetOverrun(budget: ItemBudget | null, usage: RunUsage): string | null {
  if (budget === null) return null;
  const status = budgetStatus(budget, usage);
  return status?.state === 'exceeded' ? status.reason : null;
}

/**
 * Why a hop (`kind: 'hop'`) or a suspended hop's query (`'query'`) that timed
 * out `timeouts` times is not published again: the `HopTimedOut` message.
 */
export function timeoutMessage(
  def: WorkflowDefinition,
  stage: string,
  timeouts: number,
  kind: 'hop' | 'query',
  questionKept = true,
): string {
  const timeout = def.stages[stage]?.timeout;
  const max = stageRetryPolicy(def, stage).maximumAttempts;
  if (kind === 'hop') return `out longer than ${timeout} ms ${timeouts} times: its retry policy allows ${max}`;
  if (!questionKept) return `out longer than ${timeout} ms, and its question was not kept to publish it again`;
  return `out longer than ${timeout} ms ${timeouts} times: the retry policy of stage ${stage} allows ${max}`;
}

/**
 * Whether a `HOP_TIMED_OUT` names the current hop and attempt: a running
 * hop's (no continuation), or the query the suspended hop waits on.
 */
function isCurrentTimeout(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (event.type !== 'HOP_TIMED_OUT' || !isCurrentHop(ctx, event)) return false;
  const d = ctx.directive;
  if (event.continuation === undefined) return d.kind === 'dispatch';
  return d.kind === 'await-reply' && d.continuation === event.continuation;
}

/** Whether a current `HOP_TIMED_OUT` may be published again: its stage's retry policy has attempts left. */
function mayRepublish(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (event.type !== 'HOP_TIMED_OUT' || !isCurrentTimeout(ctx, event) || ctx.stage === null) return false;
  if (event.continuation !== undefined && event.questionKept === false) return false;
  const max = stageRetryPolicy(ctx.definition, ctx.stage).maximumAttempts;
  return max === 0 || event.timeouts < max;
}

function isCurrentContinuation(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  return (
    event.type === 'HOP_RESUMED' &&
    event.hop === ctx.hop &&
    ctx.directive.kind === 'await-reply' &&
    ctx.directive.continuation === event.continuation
  );
}

/** The route an event takes from the context (`null` for events that are not routed). */
export function routeOf(ctx: WorkflowRunContext, event: WorkflowRunEvent): Route | null {
  if (event.type === 'START') return routeStart(ctx.definition);
  const report = outcomeOf(ctx, event);
  return report === null ? null : routeOutcome(ctx, report);
}

/** Whether a row's condition holds. */
export function conditionHolds(ctx: WorkflowRunContext, event: WorkflowRunEvent, when: RunCondition): boolean {
  switch (when) {
    case 'always':
      return true;
    case 'current-hop':
      return isCurrentHop(ctx, event);
    case 'current-continuation':
      return isCurrentContinuation(ctx, event);
    case 'past-deadline': {
      const deadline = ctx.deadline ?? null;
      return event.type === 'TICK' && deadline !== null && event.now >= deadline.at;
    }
    case 'timeout-republish':
      return mayRepublish(ctx, event);
    case 'current-timeout':
      return isCurrentTimeout(ctx, event);
    case 'over-budget': {
      const current =
        event.type === 'HOP_RESUMED'
          ? isCurrentContinuation(ctx, event)
          : event.type === 'HOP_TIMED_OUT'
            ? isCurrentTimeout(ctx, event)
            : isCurrentHop(ctx, event);
      return current && budgetOverrun(ctx.budget ?? null, accrue(ctx, event)) !== null;
    }
    case 'named-approver': {
      if ((event.type !== 'APPROVED' && event.type !== 'DENIED') || ctx.directive.kind !== 'await-approval')
        return false;
      return ctx.directive.approvers === null || ctx.directive.approvers.includes(event.by);
    }
    default: {
      if (event.type !== 'START' && !isCurrentHop(ctx, event)) return false;
      if (event.type === 'HOP_TIMED_OUT' && !isCurrentTimeout(ctx, event)) return false;
      const route = routeOf(ctx, event);
      return route !== null && `route:${routeKind(route)}` === when;
    }
  }
}

/** Why an event that no row accepts is refused. */
export function refusalReason(state: WorkflowRunState, ctx: WorkflowRunContext, event: unknown): RefusalReason {
  const parsed = WorkflowRunEventSchema.safeParse(event);
  if (!parsed.success) return 'malformed';
  const e = parsed.data;
  const rows = WORKFLOW_RUN_TRANSITIONS.filter((t) => t.from === state && t.event === e.type);
  if (rows.length === 0) return 'not-in-state';
  if ('hop' in e && !isCurrentHop(ctx, e)) return 'stale-hop';
  if (e.type === 'HOP_RESUMED' || e.type === 'HOP_TIMED_OUT') return 'wrong-continuation';
  if (e.type === 'APPROVED' || e.type === 'DENIED') return 'not-an-approver';
  return 'not-in-state';
}

function accrue(ctx: WorkflowRunContext, event: WorkflowRunEvent): RunUsage {
  return 'usage' in event && event.usage !== undefined ? addRunUsage(ctx.usage, event.usage) : ctx.usage;
}

function dispatchDirective(
  ctx: WorkflowRunContext,
  stage: string,
  fields: { hop: number; attempt: number; delayMs?: number; resume?: string | null; approvedBy?: string | null },
): RunDirective {
  return {
    kind: 'dispatch',
    stage,
    role: ctx.definition.stages[stage]?.role ?? '',
    hop: fields.hop,
    attempt: fields.attempt,
    delayMs: fields.delayMs ?? 0,
    resume: fields.resume ?? null,
    approvedBy: fields.approvedBy ?? null,
  };
}

function enter(ctx: WorkflowRunContext, route: Extract<Route, { kind: 'enter' }>): Partial<WorkflowRunContext> {
  const stage = route.stage;
  const hop = ctx.hop + 1;
  const gate = ctx.definition.stages[stage]?.approval;
  const traversals =
    route.via === null
      ? ctx.traversals
      : {
          ...ctx.traversals,
          [ruleKey(route.via.from, route.via.index)]:
            (ctx.traversals[ruleKey(route.via.from, route.via.index)] ?? 0) + 1,
        };
  return {
    stage,
    hop,
    attempt: 1,
    visits: { ...ctx.visits, [stage]: (ctx.visits[stage] ?? 0) + 1 },
    approvedBy: null,
    traversals,
    directive: gate
      ? {
          kind: 'await-approval',
          stage,
          hop,
          source: 'gate',
          approvers: [...gate.approvers],
          reason: gate.reason ?? `stage ${stage} has an approval gate`,
        }
      : dispatchDirective(ctx, stage, { hop, attempt: 1 }),
  };
}

function fail(ctx: WorkflowRunContext, code: RunFailureCode, reason: string): Partial<WorkflowRunContext> {
  return { failure: { code, reason, stage: ctx.stage, hop: ctx.hop }, directive: { kind: 'none' } };
}

/**
 * The context after an accepted transition (the caller has checked the row's
 * condition). Pure: the same context and event always give the same result.
 */
export function applyEffect(ctx: WorkflowRunContext, event: WorkflowRunEvent, effect: RunEffect): WorkflowRunContext {
  // A hop published again has cost nothing yet: its usage is taken when it ends.
  const usage = effect === 'republish' ? ctx.usage : accrue(ctx, event);
  const base: WorkflowRunContext = { ...ctx, usage, refusal: null, republish: null };
  return { ...base, ...effectChanges(base, event, effect) };
}

function effectChanges(
  ctx: WorkflowRunContext,
  event: WorkflowRunEvent,
  effect: RunEffect,
): Partial<WorkflowRunContext> {
  switch (effect) {
    case 'enter-start':
    case 'follow-route': {
      const route = routeOf(ctx, event);
      if (route === null) return {};
      switch (route.kind) {
        case 'enter':
          return enter(ctx, route);
        case 'retry':
          return {
            attempt: route.attempt,
            directive: dispatchDirective(ctx, ctx.stage!, {
              hop: ctx.hop,
              attempt: route.attempt,
              delayMs: route.delayMs,
              approvedBy: ctx.approvedBy,
            }),
          };
        case 'complete':
          return { directive: { kind: 'none' } };
        case 'fail':
          return fail(ctx, route.code, route.reason);
      }
      return {};
    }
    case 'suspend':
      if (event.type !== 'HOP_SUSPENDED') return {};
      return {
        directive: {
          kind: 'await-reply',
          stage: ctx.stage!,
          hop: ctx.hop,
          continuation: event.continuation,
          askedRole: event.askedRole ?? null,
        },
      };
    case 'resume':
      // A query's answer, or its timeout (the hop resumes with that failure as its answer).
      if (event.type !== 'HOP_RESUMED' && (event.type !== 'HOP_TIMED_OUT' || event.continuation === undefined)) {
        return {};
      }
      return {
        directive: dispatchDirective(ctx, ctx.stage!, {
          hop: ctx.hop,
          attempt: ctx.attempt,
          resume: event.continuation!,
          approvedBy: ctx.approvedBy,
        }),
      };
    case 'require-approval':
      if (event.type !== 'APPROVAL_REQUIRED') return {};
      return {
        directive: {
          kind: 'await-approval',
          stage: ctx.stage!,
          hop: ctx.hop,
          source: 'governance',
          approvers: event.approvers ? [...event.approvers] : null,
          reason: event.reason,
        },
      };
    case 'approve':
      if (event.type !== 'APPROVED') return {};
      return {
        approvedBy: event.by,
        directive: dispatchDirective(ctx, ctx.stage!, { hop: ctx.hop, attempt: ctx.attempt, approvedBy: event.by }),
      };
    case 'deny':
      if (event.type !== 'DENIED') return {};
      return fail(ctx, 'APPROVAL_DENIED', `approval denied by ${event.by}${event.reason ? `: ${event.reason}` : ''}`);
    case 'governance-deny':
      if (event.type !== 'GOVERNANCE_DENIED') return {};
      return fail(ctx, 'GOVERNANCE_DENIED', event.policy ? `${event.policy}: ${event.reason}` : event.reason);
    case 'budget-exceeded':
      // The context's usage has the event's usage in it already.
      return fail(ctx, 'BUDGET_EXCEEDED', budgetOverrun(ctx.budget ?? null, ctx.usage) ?? 'budget exceeded');
    case 'deadline-exceeded': {
      const deadline = ctx.deadline ?? null;
      if (event.type !== 'TICK' || deadline === null) return {};
      const ageMs = event.now - (deadline.at - deadline.ms);
      return fail(ctx, 'DEADLINE_EXCEEDED', `the work item ran past its deadline of ${deadline.ms} ms (${ageMs} ms)`);
    }
    case 'republish':
      if (event.type !== 'HOP_TIMED_OUT') return {};
      return {
        republish: {
          hop: event.hop,
          attempt: event.attempt,
          timeouts: event.timeouts,
          continuation: event.continuation ?? null,
        },
      };
    case 'none':
      return {};
    case 'cancel':
      if (event.type !== 'CANCEL') return {};
      return { cancellation: { by: event.by ?? null, reason: event.reason ?? null }, directive: { kind: 'none' } };
  }
}

/** The context of a run that has not started. */
export function initialRunContext(
  runId: string,
  definition: WorkflowDefinition,
  budget: ItemBudget | null = null,
  deadline: RunDeadline | null = null,
): WorkflowRunContext {
  return {
    runId,
    workflow: { id: definition.id, version: definition.version },
    definition,
    stage: null,
    hop: 0,
    attempt: 0,
    visits: {},
    traversals: {},
    approvedBy: null,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    budget,
    deadline,
    republish: null,
    directive: { kind: 'start' },
    failure: null,
    cancellation: null,
    refusal: null,
  };
}
