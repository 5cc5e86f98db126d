import { fc, test } from '@fast-check/vitest';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { type Actor, createActor, initialTransition, transition } from 'xstate';
import { adjacencyMapToArray, getAdjacencyMap, getShortestPaths } from 'xstate/graph';
import {
  type WorkflowRunMachine,
  restoreWorkflowRun,
  workflowRunMachine,
} from '../../src/machines/workflow-run-machine.js';
import { WORKFLOW_RUN_TRANSITIONS, type WorkflowRunContext } from '../../src/machines/workflow-run-transitions.js';
import { WORKFLOW_RUN_STATES } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { WorkflowDefinition, WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { ALL_FIXTURES, DEV_SDLC, REVIEW_LOOP, SINGLE } from '../workflow/fixtures.js';

type RunActor = Actor<WorkflowRunMachine>;

type Budget = { maxTokens?: number; maxCostUsd?: number };
type Deadline = { at: number; ms: number };

function startRun(
  definition: WorkflowDefinition,
  runId = 'item-1',
  budget: Budget | null = null,
  deadline: Deadline | null = null,
): RunActor {
  return createActor(workflowRunMachine, { input: { runId, definition, budget, deadline } }).start();
}

/**
 * A definition whose hop timeouts route: a timed-out `a` enters the gated
 * `b`, a timed-out `b` completes the run (and any other failure fails it).
 */
const TIMED = parseWorkflowDefinition({
  id: 'timed',
  version: 1,
  start: 'a',
  stages: {
    a: {
      role: 'worker',
      timeout: 100,
      retry: { maximumAttempts: 3 },
      next: [
        { on: 'succeeded', end: 'completed' },
        { on: 'failed', errorType: 'HopTimedOut', goto: 'b' },
      ],
    },
    b: {
      role: 'checker',
      timeout: 100,
      retry: { maximumAttempts: 2 },
      approval: { approvers: ['chief'] },
      next: [{ on: 'failed', errorType: 'HopTimedOut', end: 'completed' }],
    },
  },
});

/** A parallel stage (any of two branches) whose joined output is routed on: to a gate, to an ungated stage, or to the end. */
const FANOUT = parseWorkflowDefinition({
  id: 'fanout',
  version: 1,
  start: 'split',
  stages: {
    split: {
      parallel: { branches: { x: { role: 'rx' }, y: { role: 'ry' } }, join: 'any' },
      next: [
        { on: 'succeeded', when: { pointer: '/x/ok', exists: true }, goto: 'gate' },
        { on: 'succeeded', end: 'completed' },
        { on: 'failed', errorType: 'BranchFailed', goto: 'after' },
      ],
    },
    gate: { role: 'g', approval: { approvers: ['chief'] } },
    after: { role: 'a' },
  },
});

/** A stage that runs another workflow: its child's failure, unrouted, fails the run. */
const CHILD_WORKFLOW = parseWorkflowDefinition({
  id: 'child-workflow',
  version: 1,
  start: 'sub',
  stages: { sub: { workflow: 'other@1' } },
});

function ctx(actor: RunActor): WorkflowRunContext {
  return actor.getSnapshot().context;
}

/** Sends a hop result for the run's current hop and attempt. */
function current(actor: RunActor): { hop: number; attempt: number } {
  return { hop: ctx(actor).hop, attempt: ctx(actor).attempt };
}

// ---------------------------------------------------------------------------
// The reference model: written from the rules in docs/workflows.md, without
// reading WORKFLOW_RUN_TRANSITIONS or routeOutcome.
// ---------------------------------------------------------------------------

const FINAL = new Set(['completed', 'failed', 'canceled']);

type ModelDirective =
  | { kind: 'start' }
  | { kind: 'none' }
  | {
      kind: 'dispatch';
      stage: string;
      hop: number;
      attempt: number;
      delayMs: number;
      resume: string | null;
      approvedBy: string | null;
    }
  | { kind: 'await-approval'; source: 'gate' | 'governance'; approvers: string[] | null }
  | { kind: 'await-reply'; continuation: string };

class RunModel {
  state = 'pending';
  stage: string | null = null;
  hop = 0;
  attempt = 0;
  visits: Record<string, number> = {};
  traversals: Record<string, number> = {};
  tokens = 0;
  costMicros = 0;
  failure: string | null = null;
  directive: ModelDirective = { kind: 'start' };
  refusal: string | null = null;
  /** Who approved the current hop: kept across its retries and resumes. */
  approvedBy: string | null = null;
  /** The timed-out hop (or query) to publish again, as the last accepted event asked. */
  republish: { hop: number; attempt: number; timeouts: number; continuation: string | null } | null = null;
  constructor(
    readonly def: WorkflowDefinition,
    readonly budget: Budget | null = null,
    readonly deadline: Deadline | null = null,
  ) {}

  /** A tick: at or past the deadline, the run fails. */
  tick(now: number) {
    if (this.deadline !== null && now >= this.deadline.at) this.end('failed', 'DEADLINE_EXCEEDED');
  }

  /** Whether a hop (or query) that timed out `timeouts` times may go out again: its stage's attempts are not spent. */
  mayRepublish(timeouts: number): boolean {
    const attempts = this.retry(this.stage!).attempts;
    return attempts === 0 || timeouts < attempts;
  }

  /** Strictly over the budget: more tokens (input plus output) or more dollars than it allows. */
  overBudget(): boolean {
    const b = this.budget;
    if (b === null) return false;
    return (
      (b.maxTokens !== undefined && this.tokens > b.maxTokens) ||
      (b.maxCostUsd !== undefined && this.costMicros > Math.round(b.maxCostUsd * 1e6))
    );
  }

  retry(stage: string) {
    const s = this.def.stages[stage]?.retry ?? {};
    const d = this.def.defaults?.retry ?? {};
    // The work bus's defaults: 1 s, x2, 60 s (or the initial interval if longer), 5 attempts.
    const initial = s.initialInterval ?? d.initialInterval ?? 1000;
    return {
      initial,
      coefficient: s.backoffCoefficient ?? d.backoffCoefficient ?? 2,
      max: s.maximumInterval ?? d.maximumInterval ?? Math.max(60_000, initial),
      attempts: s.maximumAttempts ?? d.maximumAttempts ?? 5,
      nonRetryable: s.nonRetryableErrorTypes ?? d.nonRetryableErrorTypes ?? [],
    };
  }

  enter(stage: string) {
    this.stage = stage;
    this.hop += 1;
    this.attempt = 1;
    this.visits[stage] = (this.visits[stage] ?? 0) + 1;
    this.approvedBy = null;
    const gate = this.def.stages[stage]!.approval;
    if (gate) {
      this.state = 'awaiting-approval';
      this.directive = { kind: 'await-approval', source: 'gate', approvers: [...gate.approvers] };
    } else {
      this.state = 'running';
      this.dispatch(0, null);
    }
  }

  dispatch(delayMs: number, resume: string | null) {
    this.directive = {
      kind: 'dispatch',
      stage: this.stage!,
      hop: this.hop,
      attempt: this.attempt,
      delayMs,
      resume,
      approvedBy: this.approvedBy,
    };
  }

  end(state: 'completed' | 'failed' | 'canceled', failure: string | null = null) {
    this.state = state;
    this.failure = failure;
    this.directive = { kind: 'none' };
  }

  outcome(on: 'succeeded' | 'failed', errorType?: string, final?: 'non-retryable' | 'exhausted') {
    const stage = this.stage!;
    const policy = this.retry(stage);
    let exhausted = final === 'exhausted';
    if (on === 'failed' && final === undefined && !policy.nonRetryable.includes(errorType!)) {
      if (policy.attempts === 0 || this.attempt < policy.attempts) {
        const delay = Math.min(policy.initial * policy.coefficient ** (this.attempt - 1), policy.max);
        this.attempt += 1;
        this.dispatch(Math.round(delay), null);
        return;
      }
      exhausted = true;
    }
    const rules = this.def.stages[stage]!.next;
    let anyMatched = false;
    for (let i = 0; i < rules.length; i++) {
      const rule = rules[i]!;
      if (rule.on !== on) continue;
      if (rule.errorType !== undefined && rule.errorType !== errorType) continue;
      anyMatched = true;
      if (rule.end === 'completed') return this.end('completed');
      if (rule.end === 'failed') return this.end('failed', 'RULE_ENDED');
      const key = `${stage}.next[${i}]`;
      if (rule.maxTraversals !== undefined && (this.traversals[key] ?? 0) >= rule.maxTraversals) continue;
      const targetMax = this.def.stages[rule.goto!]!.maxVisits;
      if (targetMax !== undefined && (this.visits[rule.goto!] ?? 0) >= targetMax) continue;
      this.traversals[key] = (this.traversals[key] ?? 0) + 1;
      return this.enter(rule.goto!);
    }
    if (anyMatched) return this.end('failed', 'LOOP_BOUND');
    if (on === 'succeeded') return this.end('completed');
    return this.end('failed', exhausted ? 'RETRIES_EXHAUSTED' : 'NON_RETRYABLE');
  }

  accrue(usage?: { inputTokens: number; outputTokens: number; costUsd: number }) {
    if (!usage) return;
    this.tokens += usage.inputTokens + usage.outputTokens;
    this.costMicros += Math.round(usage.costUsd * 1e6);
  }

  /** Applies one event; returns nothing, sets `refusal` when refused. */
  apply(e: WorkflowRunEvent | { type: string; malformed: true }) {
    if (FINAL.has(this.state)) return;
    if ('malformed' in e) {
      this.refusal = 'malformed';
      return;
    }
    const refuse = (reason: string) => {
      this.refusal = reason;
    };
    const hopOk = (hop: number, attempt?: number) =>
      hop === this.hop && (attempt === undefined || attempt === this.attempt);
    const accept = () => {
      this.refusal = null;
      this.republish = null;
    };
    switch (this.state) {
      case 'pending':
        if (e.type === 'START') {
          accept();
          return this.enter(this.def.start);
        }
        if (e.type === 'CANCEL') {
          accept();
          return this.end('canceled');
        }
        return refuse('not-in-state');
      case 'running':
        switch (e.type) {
          case 'HOP_SUCCEEDED':
          case 'HOP_FAILED':
            if (!hopOk(e.hop, e.attempt)) return refuse('stale-hop');
            accept();
            this.accrue(e.usage);
            // The usage a result brings is weighed first: over the budget, the run fails whatever the outcome.
            if (this.overBudget()) return this.end('failed', 'BUDGET_EXCEEDED');
            return e.type === 'HOP_SUCCEEDED'
              ? this.outcome('succeeded')
              : this.outcome('failed', e.errorType, e.final);
          case 'HOP_SUSPENDED':
            if (!hopOk(e.hop, e.attempt)) return refuse('stale-hop');
            accept();
            this.accrue(e.usage);
            if (this.overBudget()) return this.end('failed', 'BUDGET_EXCEEDED');
            this.state = 'suspended';
            this.directive = { kind: 'await-reply', continuation: e.continuation };
            return;
          case 'APPROVAL_REQUIRED':
            if (!hopOk(e.hop)) return refuse('stale-hop');
            accept();
            this.state = 'awaiting-approval';
            this.directive = { kind: 'await-approval', source: 'governance', approvers: e.approvers ?? null };
            return;
          case 'GOVERNANCE_DENIED':
            if (!hopOk(e.hop)) return refuse('stale-hop');
            accept();
            return this.end('failed', 'GOVERNANCE_DENIED');
          case 'HOP_TIMED_OUT':
            if (!hopOk(e.hop, e.attempt)) return refuse('stale-hop');
            // A running hop's timeout names no continuation (that is a suspended hop's query).
            if (e.continuation !== undefined) return refuse('wrong-continuation');
            accept();
            if (this.mayRepublish(e.timeouts)) {
              this.republish = { hop: e.hop, attempt: e.attempt, timeouts: e.timeouts, continuation: null };
              return;
            }
            this.accrue(e.usage);
            if (this.overBudget()) return this.end('failed', 'BUDGET_EXCEEDED');
            return this.outcome('failed', 'HopTimedOut', 'exhausted');
          case 'TICK':
            accept();
            return this.tick(e.now);
          case 'CANCEL':
            accept();
            return this.end('canceled');
          default:
            return refuse('not-in-state');
        }
      case 'awaiting-approval': {
        const d = this.directive as { approvers: string[] | null };
        switch (e.type) {
          case 'APPROVED':
          case 'DENIED':
            if (d.approvers !== null && !d.approvers.includes(e.by)) return refuse('not-an-approver');
            accept();
            if (e.type === 'DENIED') return this.end('failed', 'APPROVAL_DENIED');
            this.state = 'running';
            this.approvedBy = e.by;
            return this.dispatch(0, null);
          case 'TICK':
            accept();
            return this.tick(e.now);
          case 'CANCEL':
            accept();
            return this.end('canceled');
          default:
            return refuse('not-in-state');
        }
      }
      case 'suspended': {
        const d = this.directive as { continuation: string };
        switch (e.type) {
          case 'HOP_RESUMED':
            if (e.hop !== this.hop) return refuse('stale-hop');
            if (e.continuation !== d.continuation) return refuse('wrong-continuation');
            accept();
            this.accrue(e.usage);
            if (this.overBudget()) return this.end('failed', 'BUDGET_EXCEEDED');
            this.state = 'running';
            return this.dispatch(0, e.continuation);
          case 'GOVERNANCE_DENIED':
            // The suspended hop's question, denied.
            if (!hopOk(e.hop)) return refuse('stale-hop');
            accept();
            return this.end('failed', 'GOVERNANCE_DENIED');
          case 'HOP_TIMED_OUT':
            // The query the suspended hop asked, out too long.
            if (!hopOk(e.hop, e.attempt)) return refuse('stale-hop');
            if (e.continuation !== d.continuation) return refuse('wrong-continuation');
            accept();
            if (e.questionKept !== false && this.mayRepublish(e.timeouts)) {
              this.republish = { hop: e.hop, attempt: e.attempt, timeouts: e.timeouts, continuation: e.continuation };
              return;
            }
            // The hop resumes with the query's failure as its answer.
            this.accrue(e.usage);
            if (this.overBudget()) return this.end('failed', 'BUDGET_EXCEEDED');
            this.state = 'running';
            return this.dispatch(0, e.continuation);
          case 'TICK':
            accept();
            return this.tick(e.now);
          case 'CANCEL':
            accept();
            return this.end('canceled');
          default:
            return refuse('not-in-state');
        }
      }
    }
  }
}

/** What the model predicts, projected from the actor's snapshot. */
function observed(actor: RunActor) {
  const snap = actor.getSnapshot();
  const c = snap.context;
  const d = c.directive;
  let directive: unknown = d;
  if (d.kind === 'dispatch') {
    const { role: _role, ...rest } = d;
    directive = { ...rest, roleOk: _role === c.definition.stages[d.stage]?.role };
  } else if (d.kind === 'await-approval') {
    directive = { kind: d.kind, source: d.source, approvers: d.approvers };
  } else if (d.kind === 'await-reply') {
    directive = { kind: d.kind, continuation: d.continuation };
  }
  return {
    state: snap.value,
    status: snap.status,
    stage: c.stage,
    hop: c.hop,
    attempt: c.attempt,
    visits: c.visits,
    traversals: c.traversals,
    tokens: c.usage.inputTokens + c.usage.outputTokens,
    costMicros: Math.round(c.usage.costUsd * 1e6),
    failure: c.failure?.code ?? null,
    refusal: c.refusal?.reason ?? null,
    approvedBy: c.approvedBy,
    republish: c.republish,
    directive,
  };
}

function predicted(model: RunModel) {
  const d = model.directive;
  return {
    state: model.state,
    status: FINAL.has(model.state) ? 'done' : 'active',
    stage: model.stage,
    hop: model.hop,
    attempt: model.attempt,
    visits: model.visits,
    traversals: model.traversals,
    tokens: model.tokens,
    costMicros: model.costMicros,
    failure: model.failure,
    refusal: model.refusal,
    approvedBy: model.approvedBy,
    republish: model.republish,
    directive: d.kind === 'dispatch' ? { ...d, roleOk: true } : d,
  };
}

/** Compares cheaply; on a difference, lets `expect` print it. */
function expectSame(model: RunModel, actor: RunActor): void {
  const actual = observed(actor);
  const expected = predicted(model);
  if (canonicalize(actual) !== canonicalize(expected)) expect(actual).toEqual(expected);
}

// ---------------------------------------------------------------------------
// Event descriptors: resolved against the run's context when they are sent,
// so that most of them name the current hop and some are deliberately stale.
// ---------------------------------------------------------------------------

type Usage = { inputTokens: number; outputTokens: number; costUsd: number; elapsedMs: number };
type Desc =
  | { t: 'START' }
  | { t: 'SUCCEED'; hopDelta: number; attemptDelta: number; usage?: Usage }
  | {
      t: 'FAIL';
      hopDelta: number;
      attemptDelta: number;
      errorType: number;
      final?: 'non-retryable' | 'exhausted';
      usage?: Usage;
    }
  | { t: 'SUSPEND'; hopDelta: number; continuation: string; usage?: Usage }
  | { t: 'RESUME'; hopDelta: number; continuation: string; usage?: Usage }
  | { t: 'APPROVAL_REQUIRED'; hopDelta: number; approvers?: string[] }
  | { t: 'APPROVE'; by: string }
  | { t: 'DENY'; by: string }
  | { t: 'GOVERNANCE_DENIED'; hopDelta: number }
  | { t: 'TICK'; now: number }
  | {
      t: 'TIMED_OUT';
      hopDelta: number;
      attemptDelta: number;
      timeouts: number;
      continuation?: string;
      questionKept?: false;
      usage?: Usage;
    }
  | { t: 'CANCEL' }
  | { t: 'MALFORMED'; which: number };

const MALFORMED: unknown[] = [
  { type: 'NOPE' },
  { type: 'HOP_SUCCEEDED', hop: 0, attempt: 1 },
  { type: 'HOP_FAILED', hop: 1, attempt: 1 },
  { type: 'APPROVED' },
  { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage: { inputTokens: -1, outputTokens: 0, costUsd: 0, elapsedMs: 0 } },
  { type: 'START', extra: true },
];

/** The error types a definition names (in rules and retry policies), and one it does not. */
function errorTypesOf(def: WorkflowDefinition): string[] {
  const named = new Set<string>(def.defaults?.retry?.nonRetryableErrorTypes ?? []);
  for (const stage of Object.values(def.stages)) {
    for (const t of stage.retry?.nonRetryableErrorTypes ?? []) named.add(t);
    for (const rule of stage.next) if (rule.errorType) named.add(rule.errorType);
  }
  return [...named, 'Boom'];
}

function toEvent(d: Desc, c: WorkflowRunContext): WorkflowRunEvent | { type: string; malformed: true } {
  const hop = Math.max(1, c.hop + ('hopDelta' in d ? d.hopDelta : 0));
  const attempt = Math.max(1, c.attempt + ('attemptDelta' in d ? d.attemptDelta : 0));
  const usage = 'usage' in d && d.usage ? { usage: d.usage } : {};
  switch (d.t) {
    case 'START':
      return { type: 'START' };
    case 'SUCCEED':
      return { type: 'HOP_SUCCEEDED', hop, attempt, ...usage };
    case 'FAIL':
      return {
        type: 'HOP_FAILED',
        hop,
        attempt,
        errorType: pick(errorTypesOf(c.definition), d.errorType),
        ...(d.final === undefined ? {} : { final: d.final }),
        ...usage,
      };
    case 'SUSPEND':
      return { type: 'HOP_SUSPENDED', hop, attempt, continuation: d.continuation, askedRole: 'architect', ...usage };
    case 'RESUME':
      return { type: 'HOP_RESUMED', hop, continuation: d.continuation, ...usage };
    case 'APPROVAL_REQUIRED':
      return { type: 'APPROVAL_REQUIRED', hop, reason: 'policy', ...(d.approvers ? { approvers: d.approvers } : {}) };
    case 'APPROVE':
      return { type: 'APPROVED', by: d.by };
    case 'DENY':
      return { type: 'DENIED', by: d.by, reason: 'no' };
    case 'GOVERNANCE_DENIED':
      return { type: 'GOVERNANCE_DENIED', hop, reason: 'not allowed', policy: 'p' };
    case 'TICK':
      return { type: 'TICK', now: d.now };
    case 'TIMED_OUT':
      return {
        type: 'HOP_TIMED_OUT',
        hop,
        attempt,
        timeouts: d.timeouts,
        ...(d.continuation === undefined ? {} : { continuation: d.continuation }),
        ...(d.questionKept === undefined ? {} : { questionKept: d.questionKept }),
        ...usage,
      };
    case 'CANCEL':
      return { type: 'CANCEL', by: 'human' };
    case 'MALFORMED':
      return { ...(MALFORMED[d.which] as { type: string }), malformed: true };
  }
}

function pick<T>(list: readonly T[], n: number): T {
  return list[n % list.length]!;
}

function send(actor: RunActor, e: WorkflowRunEvent | { type: string; malformed: true }): void {
  // A final run's actor is stopped and takes nothing more (XState warns on such a send).
  if (actor.getSnapshot().status !== 'active') return;
  if ('malformed' in e) {
    const { malformed: _m, ...raw } = e;
    actor.send(raw as unknown as WorkflowRunEvent);
  } else {
    actor.send(e);
  }
}

const usageArb: fc.Arbitrary<Usage | undefined> = fc.option(
  fc.record({
    inputTokens: fc.integer({ min: 0, max: 5_000 }),
    outputTokens: fc.integer({ min: 0, max: 5_000 }),
    costUsd: fc.integer({ min: 0, max: 50_000 }).map((m) => m / 1e6),
    elapsedMs: fc.integer({ min: 0, max: 60_000 }),
  }),
  { nil: undefined },
);
const hopDelta = fc.constantFrom(0, 0, 0, 0, 0, 0, -1, 1);
const attemptDelta = fc.constantFrom(0, 0, 0, 0, 0, -1, 1);
const errorTypes = fc.nat({ max: 1_000 });
const people = fc.constantFrom('release-manager', 'editor', 'chief', 'security', 'mallory');
const continuation = fc.constantFrom('k1', 'k1', 'k2');

const asDesc = <T extends Desc>(a: fc.Arbitrary<T>): fc.Arbitrary<Desc> => a as unknown as fc.Arbitrary<Desc>;
const descArbs: fc.Arbitrary<Desc>[] = [
  asDesc(fc.constant({ t: 'START' as const })),
  ...Array.from({ length: 6 }, () =>
    asDesc(fc.record({ t: fc.constant('SUCCEED' as const), hopDelta, attemptDelta, usage: usageArb })),
  ),
  ...Array.from({ length: 3 }, () =>
    asDesc(
      fc.record({
        t: fc.constant('FAIL' as const),
        hopDelta,
        attemptDelta,
        errorType: errorTypes,
        final: fc.constantFrom(undefined, undefined, undefined, 'non-retryable' as const, 'exhausted' as const),
        usage: usageArb,
      }),
    ),
  ),
  asDesc(fc.record({ t: fc.constant('SUSPEND' as const), hopDelta, continuation, usage: usageArb })),
  ...Array.from({ length: 2 }, () =>
    asDesc(fc.record({ t: fc.constant('RESUME' as const), hopDelta, continuation, usage: usageArb })),
  ),
  asDesc(
    fc.record({
      t: fc.constant('APPROVAL_REQUIRED' as const),
      hopDelta,
      approvers: fc.option(fc.constant(['security'] as string[]), { nil: undefined }),
    }),
  ),
  ...Array.from({ length: 3 }, () => asDesc(fc.record({ t: fc.constant('APPROVE' as const), by: people }))),
  asDesc(fc.record({ t: fc.constant('DENY' as const), by: people })),
  asDesc(fc.record({ t: fc.constant('GOVERNANCE_DENIED' as const), hopDelta })),
  ...Array.from({ length: 2 }, () =>
    asDesc(fc.record({ t: fc.constant('TICK' as const), now: fc.constantFrom(0, 9_999, 10_000, 20_000) })),
  ),
  ...Array.from({ length: 3 }, () =>
    asDesc(
      fc.record(
        {
          t: fc.constant('TIMED_OUT' as const),
          hopDelta,
          attemptDelta,
          timeouts: fc.integer({ min: 1, max: 6 }),
          continuation: fc.constantFrom(undefined, undefined, 'k1', 'k2'),
          questionKept: fc.constantFrom(undefined, undefined, false as const),
          usage: usageArb,
        },
        { requiredKeys: ['t', 'hopDelta', 'attemptDelta', 'timeouts'] },
      ),
    ),
  ),
  asDesc(fc.constant({ t: 'CANCEL' as const })),
  asDesc(fc.record({ t: fc.constant('MALFORMED' as const), which: fc.integer({ min: 0, max: MALFORMED.length - 1 }) })),
];
/** START is weighted up so that most sequences get going. */
const descSeq = fc
  .tuple(fc.array(fc.oneof(...descArbs), { maxLength: 40, size: 'max' }), fc.boolean())
  .map(([rest, startFirst]) => (startFirst ? [{ t: 'START' as const }, ...rest] : rest));
const definitionArb = fc.constantFrom(...ALL_FIXTURES, TIMED);
/** No deadline, or one a tick may be before (`now` < 10 000) or at and past. */
const deadlineArb: fc.Arbitrary<Deadline | null> = fc.option(fc.constant({ at: 10_000, ms: 4_000 }), { nil: null });
/** No budget, or one a few hop results overrun (each brings up to 10 000 tokens and 0.05 USD). */
const budgetArb: fc.Arbitrary<Budget | null> = fc.option(
  fc.record(
    {
      maxTokens: fc.integer({ min: 0, max: 30_000 }),
      maxCostUsd: fc.integer({ min: 0, max: 150_000 }).map((m) => m / 1e6),
    },
    { requiredKeys: [] },
  ),
  { nil: null },
);

// ---------------------------------------------------------------------------
// Model-based run
// ---------------------------------------------------------------------------

class EventCommand implements fc.Command<RunModel, RunActor> {
  constructor(readonly desc: Desc) {}
  check(model: Readonly<RunModel>): boolean {
    // A final run's actor is stopped; that a final snapshot never moves is checked below with `transition`.
    return !FINAL.has(model.state);
  }
  run(model: RunModel, actor: RunActor): void {
    const event = toEvent(this.desc, ctx(actor));
    send(actor, event);
    model.apply(event);
    expectSame(model, actor);
  }
  toString(): string {
    return JSON.stringify(this.desc);
  }
}

const commandArbs = descArbs.map((a) => a.map((d) => new EventCommand(d) as fc.Command<RunModel, RunActor>));

describe('WorkflowRun against a reference model', () => {
  test.prop(
    [
      definitionArb,
      fc.commands([fc.constant(new EventCommand({ t: 'START' })), ...commandArbs], { maxCommands: 40, size: 'max' }),
      budgetArb,
      deadlineArb,
    ],
    {
      numRuns: 1_000,
    },
  )('random event sequences move the machine as the model says', (definition, commands, budget, deadline) => {
    fc.modelRun(
      () => ({
        model: new RunModel(definition, budget, deadline),
        real: startRun(definition, 'item-1', budget, deadline),
      }),
      commands,
    );
  });

  const hopResult = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        t: fc.constant('SUCCEED' as const),
        hopDelta: fc.constant(0),
        attemptDelta: fc.constant(0),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        t: fc.constant('FAIL' as const),
        hopDelta: fc.constant(0),
        attemptDelta: fc.constant(0),
        errorType: errorTypes,
        final: fc.constantFrom(undefined, undefined, undefined, 'non-retryable' as const, 'exhausted' as const),
      }),
    },
    { weight: 1, arbitrary: fc.record({ t: fc.constant('APPROVE' as const), by: people }) },
  ) as fc.Arbitrary<Desc>;
  test.prop(
    [
      definitionArb,
      fc.commands([hopResult.map((d) => new EventCommand(d) as fc.Command<RunModel, RunActor>)], {
        maxCommands: 30,
        size: 'max',
      }),
    ],
    { numRuns: 500 },
  )('long runs of hop results route, retry and bound loops as the model says', (definition, commands) => {
    fc.modelRun(() => {
      const real = startRun(definition);
      const model = new RunModel(definition);
      real.send({ type: 'START' });
      model.apply({ type: 'START' });
      return { model, real };
    }, commands);
  });

  test.prop([definitionArb, descSeq, budgetArb, deadlineArb], { numRuns: 200 })(
    'a final run never moves again (pure transition)',
    (definition, descs, budget, deadline) => {
      let [snap] = initialTransition(workflowRunMachine, { runId: 'r', definition, budget, deadline });
      for (const d of descs) {
        const before = snap;
        const event = toEvent(d, snap.context);
        const raw = 'malformed' in event ? (({ malformed: _m, ...r }) => r)(event) : event;
        [snap] = transition(workflowRunMachine, snap, raw as WorkflowRunEvent);
        if (FINAL.has(before.value)) expect(snap).toBe(before);
      }
    },
  );
});

// ---------------------------------------------------------------------------
// Snapshot, restore, continue
// ---------------------------------------------------------------------------

describe('snapshot, restore, continue', () => {
  test.prop([definitionArb, descSeq, fc.nat(), budgetArb, deadlineArb], { numRuns: 300 })(
    'a JSON round trip at any point ends where never stopping ends',
    (definition, descs, cutAt, budget, deadline) => {
      const straight = startRun(definition, 'item-1', budget, deadline);
      for (const d of descs) send(straight, toEvent(d, ctx(straight)));

      const cut = descs.length === 0 ? 0 : cutAt % (descs.length + 1);
      let actor = startRun(definition, 'item-1', budget, deadline);
      for (const d of descs.slice(0, cut)) send(actor, toEvent(d, ctx(actor)));
      const stored = JSON.stringify(actor.getPersistedSnapshot());
      actor.stop();
      actor = restoreWorkflowRun(JSON.parse(stored)).start();
      for (const d of descs.slice(cut)) send(actor, toEvent(d, ctx(actor)));

      expect(JSON.parse(JSON.stringify(actor.getPersistedSnapshot()))).toEqual(
        JSON.parse(JSON.stringify(straight.getPersistedSnapshot())),
      );
    },
  );
});

// ---------------------------------------------------------------------------
// Graph coverage
// ---------------------------------------------------------------------------

const GRAPH_BUDGET = { maxTokens: 100 };
const OVER = { inputTokens: 100, outputTokens: 1, costUsd: 0, elapsedMs: 0 };
const GRAPH_DEADLINE = { at: 1_000, ms: 1_000 };

function graphEvents(snap: { context: WorkflowRunContext }): WorkflowRunEvent[] {
  const { hop, attempt, directive } = snap.context;
  const h = Math.max(hop, 1);
  const a = Math.max(attempt, 1);
  const approver = directive.kind === 'await-approval' && directive.approvers ? directive.approvers[0]! : 'anyone';
  return [
    { type: 'START' },
    { type: 'HOP_SUCCEEDED', hop: h, attempt: a },
    { type: 'HOP_FAILED', hop: h, attempt: a, errorType: 'TestsFailed' },
    { type: 'HOP_FAILED', hop: h, attempt: a, errorType: 'Boom' },
    { type: 'HOP_FAILED', hop: h, attempt: a, errorType: 'Rewrite' },
    { type: 'HOP_FAILED', hop: h, attempt: a, errorType: 'Duplicate' },
    { type: 'HOP_SUSPENDED', hop: h, attempt: a, continuation: 'k' },
    { type: 'HOP_RESUMED', hop: h, continuation: 'k' },
    { type: 'APPROVAL_REQUIRED', hop: h, reason: 'policy' },
    { type: 'APPROVED', by: approver },
    { type: 'DENIED', by: approver },
    { type: 'GOVERNANCE_DENIED', hop: h, reason: 'no' },
    // Usage over the graph's budget (GRAPH_BUDGET).
    { type: 'HOP_SUCCEEDED', hop: h, attempt: a, usage: OVER },
    { type: 'HOP_FAILED', hop: h, attempt: a, errorType: 'Boom', usage: OVER },
    { type: 'HOP_SUSPENDED', hop: h, attempt: a, continuation: 'k', usage: OVER },
    { type: 'HOP_RESUMED', hop: h, continuation: 'k', usage: OVER },
    // Time: before and past the graph's deadline (GRAPH_DEADLINE); a hop and its query timed out, once and spent.
    { type: 'TICK', now: 0 },
    { type: 'TICK', now: GRAPH_DEADLINE.at },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 1 },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 99 },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 99, usage: OVER },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 1, continuation: 'k' },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 99, continuation: 'k' },
    { type: 'HOP_TIMED_OUT', hop: h, attempt: a, timeouts: 99, continuation: 'k', usage: OVER },
    { type: 'CANCEL' },
    // A fan-out stage's children: written, then settled (the graph's fixtures name branches x, y and child).
    { type: 'CHILDREN_SPAWNED', hop: h },
    { type: 'CHILD_SETTLED', hop: h, branch: 'x', outcome: 'completed', output: { ok: true } },
    { type: 'CHILD_SETTLED', hop: h, branch: 'y', outcome: 'completed', output: {} },
    { type: 'CHILD_SETTLED', hop: h, branch: 'x', outcome: 'failed', error: { type: 'X', message: 'x' } },
    { type: 'CHILD_SETTLED', hop: h, branch: 'y', outcome: 'canceled' },
    { type: 'CHILD_SETTLED', hop: h, branch: 'child', outcome: 'failed', error: { type: 'X', message: 'x' } },
    { type: 'CHILD_SETTLED', hop: h, branch: 'x', outcome: 'completed', output: { ok: true }, usage: OVER },
    // A hop that starts children itself (a handler's spawn), and their ends.
    { type: 'HOP_SUSPENDED', hop: h, attempt: a, continuation: 'k', children: [{ key: 's0' }, { key: 's1' }] },
    { type: 'CHILD_SETTLED', hop: h, branch: 's0', outcome: 'completed', output: 1 },
    { type: 'CHILD_SETTLED', hop: h, branch: 's1', outcome: 'failed', error: { type: 'X', message: 'x' } },
    { type: 'CHILD_SETTLED', hop: h, branch: 's0', outcome: 'completed', usage: OVER },
  ];
}

describe('xstate/graph', () => {
  it('reaches every state, and every stage of the dev SDLC while running', () => {
    const paths = getShortestPaths(workflowRunMachine, {
      input: { runId: 'graph', definition: DEV_SDLC, budget: GRAPH_BUDGET },
      events: graphEvents,
      serializeState: (s) => `${String(s.value)}|${s.context.stage}`,
    });
    const reached = new Set(paths.map((p) => String(p.state.value)));
    expect([...reached].sort()).toEqual([...WORKFLOW_RUN_STATES].sort());
    const runningStages = new Set(paths.filter((p) => p.state.value === 'running').map((p) => p.state.context.stage));
    expect([...runningStages].sort()).toEqual(['architect', 'coding', 'devops', 'testing']);
    // Each shortest path replays on a live actor to the same state.
    for (const path of paths) {
      const actor = startRun(DEV_SDLC, 'graph', GRAPH_BUDGET);
      for (const step of path.steps) actor.send(step.event);
      expect(actor.getSnapshot().value).toBe(path.state.value);
    }
  });

  it('takes every row of the transition table on some edge of the state graph', () => {
    const taken = new Set<string>();
    for (const definition of [...ALL_FIXTURES, TIMED, FANOUT, CHILD_WORKFLOW]) {
      const edges = adjacencyMapToArray(
        getAdjacencyMap(workflowRunMachine, {
          input: { runId: 'graph', definition, budget: GRAPH_BUDGET, deadline: GRAPH_DEADLINE },
          events: graphEvents,
          serializeState: (s) =>
            `${String(s.value)}|${s.context.stage}|${s.context.attempt}|${JSON.stringify(s.context.visits)}|${s.context.directive.kind}|${JSON.stringify(s.context.join?.branches.map((b) => b.state) ?? null)}`,
        }),
      );
      for (const { state, event, nextState } of edges) {
        if (nextState.context.refusal === null && !FINAL.has(String(state.value))) {
          taken.add(`${String(state.value)} ${event.type} -> ${String(nextState.value)}`);
        }
      }
    }
    const rows = new Set(WORKFLOW_RUN_TRANSITIONS.map((t) => `${t.from} ${t.event} -> ${t.to}`));
    expect([...rows].filter((r) => !taken.has(r))).toEqual([]);
    // ...and nothing outside the table is ever accepted.
    expect([...taken].filter((r) => !rows.has(r))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------
// Examples
// ---------------------------------------------------------------------------

describe('the dev SDLC run', () => {
  it('goes architect, coding (suspends and resumes), testing (fails once), coding, testing, gate, devops', () => {
    const run = startRun(DEV_SDLC);
    const usage = { inputTokens: 100, outputTokens: 50, costUsd: 0.002, elapsedMs: 10 };
    run.send({ type: 'START' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run), usage });
    expect(ctx(run).stage).toBe('coding');
    run.send({ type: 'HOP_SUSPENDED', ...current(run), continuation: 'cont-1', askedRole: 'architect' });
    expect(run.getSnapshot().value).toBe('suspended');
    expect(ctx(run).directive).toEqual({
      kind: 'await-reply',
      stage: 'coding',
      hop: 2,
      continuation: 'cont-1',
      askedRole: 'architect',
    });
    run.send({ type: 'HOP_RESUMED', hop: 2, continuation: 'cont-1', usage });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', stage: 'coding', hop: 2, resume: 'cont-1' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run), usage });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'TestsFailed', message: '2 tests failed', usage });
    expect(ctx(run)).toMatchObject({ stage: 'coding', hop: 4, visits: { coding: 2, testing: 1 } });
    expect(ctx(run).traversals).toEqual({ 'architect.next[0]': 1, 'coding.next[0]': 1, 'testing.next[1]': 1 });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run), usage });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run), usage });
    expect(run.getSnapshot().value).toBe('awaiting-approval');
    expect(ctx(run).directive).toMatchObject({
      kind: 'await-approval',
      source: 'gate',
      approvers: ['release-manager'],
    });
    run.send({ type: 'APPROVED', by: 'release-manager' });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', stage: 'devops', approvedBy: 'release-manager' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run), usage });
    expect(run.getSnapshot().value).toBe('completed');
    expect(run.getSnapshot().status).toBe('done');
    expect(ctx(run).hop).toBe(6);
    expect(ctx(run).usage).toEqual({ inputTokens: 700, outputTokens: 350, costUsd: 0.014, elapsedMs: 70 });
  });

  it('gives up when testing keeps failing: the loop bound fails the run', () => {
    const run = startRun(DEV_SDLC);
    run.send({ type: 'START' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
    for (let i = 0; i < 4; i++) {
      run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
      expect(ctx(run).stage).toBe('testing');
      run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'TestsFailed' });
    }
    expect(run.getSnapshot().value).toBe('failed');
    expect(ctx(run).failure).toEqual({
      code: 'LOOP_BOUND',
      reason: 'stage testing: every rule for TestsFailed is used up (maxTraversals or maxVisits reached)',
      stage: 'testing',
      hop: 9,
    });
    expect(ctx(run).visits).toEqual({ architect: 1, coding: 4, testing: 4 });
  });

  it('retries a retryable failure with backoff, then fails with the reason when retries are exhausted', () => {
    const run = startRun(DEV_SDLC);
    run.send({ type: 'START' });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Timeout' });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', hop: 1, attempt: 2, delayMs: 1_000 });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Timeout' });
    expect(ctx(run).directive).toMatchObject({ attempt: 3, delayMs: 2_000 });
    // A late result of attempt 2 is refused and changes nothing.
    run.send({ type: 'HOP_SUCCEEDED', hop: 1, attempt: 2 });
    expect(ctx(run).refusal).toEqual({ event: 'HOP_SUCCEEDED', state: 'running', reason: 'stale-hop' });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Timeout', message: 'no answer in 30s' });
    expect(run.getSnapshot().value).toBe('failed');
    expect(ctx(run).failure).toEqual({
      code: 'RETRIES_EXHAUSTED',
      reason: 'hop 1 (architect) failed with Timeout: no answer in 30s after 3 attempts',
      stage: 'architect',
      hop: 1,
    });
  });

  it('fails on a denial, a governance deny and a budget overrun, each with its reason', () => {
    const toGate = () => {
      const run = startRun(DEV_SDLC);
      run.send({ type: 'START' });
      for (let i = 0; i < 3; i++) run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
      return run;
    };
    const denied = toGate();
    denied.send({ type: 'DENIED', by: 'mallory' });
    expect(ctx(denied).refusal?.reason).toBe('not-an-approver');
    denied.send({ type: 'DENIED', by: 'release-manager', reason: 'freeze week' });
    expect(ctx(denied).failure).toMatchObject({
      code: 'APPROVAL_DENIED',
      reason: 'approval denied by release-manager: freeze week',
    });

    const governed = startRun(DEV_SDLC);
    governed.send({ type: 'START' });
    governed.send({
      type: 'GOVERNANCE_DENIED',
      hop: 1,
      reason: 'role architect is not allowed',
      policy: 'role-allow-list',
    });
    expect(ctx(governed).failure).toEqual({
      code: 'GOVERNANCE_DENIED',
      reason: 'role-allow-list: role architect is not allowed',
      stage: 'architect',
      hop: 1,
    });

    // The run weighs each result's usage against the budget it holds: over it, the run fails whatever the outcome.
    const budget = startRun(DEV_SDLC, 'item-1', { maxCostUsd: 1 });
    budget.send({ type: 'START' });
    const spend = (costUsd: number) => ({ inputTokens: 10, outputTokens: 5, costUsd, elapsedMs: 1 });
    budget.send({ type: 'HOP_SUCCEEDED', ...current(budget), usage: spend(1) });
    expect(ctx(budget).stage).toBe('coding');
    // A stale result is refused before its usage is weighed: it changes nothing.
    budget.send({ type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage: spend(5) });
    expect(ctx(budget).refusal?.reason).toBe('stale-hop');
    expect(budget.getSnapshot().value).toBe('running');
    budget.send({ type: 'HOP_SUCCEEDED', ...current(budget), usage: spend(0.2) });
    expect(budget.getSnapshot().value).toBe('failed');
    expect(ctx(budget).failure).toEqual({
      code: 'BUDGET_EXCEEDED',
      reason: 'budget exceeded: 1.2 of 1 USD',
      stage: 'coding',
      hop: 2,
    });
    expect(ctx(budget).usage.costUsd).toBe(1.2);
  });

  it("fails over its budget on a suspension's or an answer's usage, and a suspended hop on its question's denial", () => {
    const suspendAt = (budget: Budget | null) => {
      const run = startRun(DEV_SDLC, 'item-1', budget);
      run.send({ type: 'START' });
      run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
      return run;
    };
    const tokens = (n: number) => ({ inputTokens: n, outputTokens: 0, costUsd: 0, elapsedMs: 0 });
    const asked = suspendAt({ maxTokens: 10 });
    asked.send({ type: 'HOP_SUSPENDED', ...current(asked), continuation: 'k', usage: tokens(11) });
    expect(ctx(asked).failure).toMatchObject({ code: 'BUDGET_EXCEEDED', reason: 'budget exceeded: 11 of 10 tokens' });

    const answered = suspendAt({ maxTokens: 10 });
    answered.send({ type: 'HOP_SUSPENDED', ...current(answered), continuation: 'k', usage: tokens(10) });
    expect(answered.getSnapshot().value).toBe('suspended');
    // Another continuation's answer is refused, its usage not weighed.
    answered.send({ type: 'HOP_RESUMED', hop: 2, continuation: 'other', usage: tokens(5) });
    expect(ctx(answered).refusal?.reason).toBe('wrong-continuation');
    answered.send({ type: 'HOP_RESUMED', hop: 2, continuation: 'k', usage: tokens(1) });
    expect(ctx(answered).failure).toMatchObject({
      code: 'BUDGET_EXCEEDED',
      reason: 'budget exceeded: 11 of 10 tokens',
    });

    const denied = suspendAt(null);
    denied.send({ type: 'HOP_SUSPENDED', ...current(denied), continuation: 'k', usage: tokens(1_000_000) });
    expect(denied.getSnapshot().value).toBe('suspended');
    denied.send({ type: 'GOVERNANCE_DENIED', hop: 2, reason: 'role architect is not allowed' });
    expect(ctx(denied).failure).toMatchObject({ code: 'GOVERNANCE_DENIED', stage: 'coding', hop: 2 });
  });

  it('waits on a governance approval and lets only its approvers through', () => {
    const run = startRun(DEV_SDLC);
    run.send({ type: 'START' });
    run.send({ type: 'APPROVAL_REQUIRED', hop: 1, reason: 'first hop of the day', approvers: ['security'] });
    expect(ctx(run).directive).toEqual({
      kind: 'await-approval',
      stage: 'architect',
      hop: 1,
      source: 'governance',
      approvers: ['security'],
      reason: 'first hop of the day',
    });
    run.send({ type: 'APPROVED', by: 'release-manager' });
    expect(run.getSnapshot().value).toBe('awaiting-approval');
    run.send({ type: 'APPROVED', by: 'security' });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', hop: 1, attempt: 1, approvedBy: 'security' });
    // The approval holds for the hop's retries, not for the next hop.
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Timeout' });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', hop: 1, attempt: 2, approvedBy: 'security' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
    expect(ctx(run).directive).toMatchObject({ kind: 'dispatch', hop: 2, attempt: 1, approvedBy: null });
  });
});

describe('other definitions', () => {
  it('gates the start stage, bounds a self-loop by maxVisits, and completes on a listed failure', () => {
    const run = startRun(REVIEW_LOOP);
    run.send({ type: 'START' });
    expect(run.getSnapshot().value).toBe('awaiting-approval');
    run.send({ type: 'APPROVED', by: 'chief' });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
    run.send({ type: 'HOP_SUCCEEDED', ...current(run) });
    expect(ctx(run).visits.review).toBe(3);
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Anything' });
    expect(ctx(run).stage).toBe('publish');
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Duplicate' });
    expect(run.getSnapshot().value).toBe('completed');

    const bounded = startRun(REVIEW_LOOP);
    bounded.send({ type: 'START' });
    bounded.send({ type: 'APPROVED', by: 'editor' });
    bounded.send({ type: 'HOP_SUCCEEDED', ...current(bounded) });
    for (let i = 0; i < 3; i++) bounded.send({ type: 'HOP_SUCCEEDED', ...current(bounded) });
    expect(ctx(bounded).failure?.code).toBe('LOOP_BOUND');
  });

  it('ends with a rule reason, and with the built-in defaults when no rule matches', () => {
    const run = startRun(REVIEW_LOOP);
    run.send({ type: 'START' });
    run.send({ type: 'APPROVED', by: 'editor' });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Writer-block' });
    run.send({ type: 'HOP_FAILED', ...current(run), errorType: 'Writer-block' });
    expect(ctx(run).failure).toMatchObject({ code: 'RULE_ENDED', reason: 'the writer gave up' });

    const single = startRun(SINGLE);
    single.send({ type: 'START' });
    single.send({ type: 'HOP_FAILED', ...current(single), errorType: 'Boom', final: 'non-retryable' });
    expect(ctx(single).failure).toEqual({
      code: 'NON_RETRYABLE',
      reason: 'hop 1 (only) failed with Boom',
      stage: 'only',
      hop: 1,
    });
    const ok = startRun(SINGLE);
    ok.send({ type: 'START' });
    ok.send({ type: 'HOP_SUCCEEDED', ...current(ok) });
    expect(ok.getSnapshot().value).toBe('completed');
  });

  it("decides whether a failure its worker already retried spent the stage's retries (deliveries)", () => {
    const def = parseWorkflowDefinition({
      id: 'retried',
      version: 1,
      start: 'only',
      stages: {
        only: { role: 'worker', retry: { maximumAttempts: 3, nonRetryableErrorTypes: ['Fatal'] }, next: [] },
      },
    });
    const failWith = (errorType: string, deliveries: number) => {
      const run = startRun(def);
      run.send({ type: 'START' });
      run.send({ type: 'HOP_FAILED', ...current(run), errorType, deliveries });
      return run;
    };
    // Spent: the policy's attempts were all delivered.
    const spent = failWith('Flaky', 3);
    expect(spent.getSnapshot().value).toBe('failed');
    expect(ctx(spent).failure).toEqual({
      code: 'RETRIES_EXHAUSTED',
      // As many attempts as its deliveries (what `dlq list` shows of its dead letter).
      reason: 'hop 1 (only) failed with Flaky after 3 attempts',
      stage: 'only',
      hop: 1,
    });
    // Never retried by the run itself: fewer deliveries (a dead-letter for another reason) or a fatal type.
    expect(ctx(failWith('Flaky', 1)).failure?.code).toBe('NON_RETRYABLE');
    expect(ctx(failWith('Fatal', 3)).failure?.code).toBe('NON_RETRYABLE');
    // Without deliveries the stage's policy retries it.
    const own = startRun(def);
    own.send({ type: 'START' });
    own.send({ type: 'HOP_FAILED', ...current(own), errorType: 'Flaky' });
    expect(own.getSnapshot().value).toBe('running');
    expect(ctx(own).attempt).toBe(2);
  });

  it('refuses malformed events and events of another state, changing nothing but the refusal', () => {
    const run = startRun(SINGLE);
    const before = ctx(run);
    run.send({ type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 });
    expect(ctx(run)).toEqual({
      ...before,
      refusal: { event: 'HOP_SUCCEEDED', state: 'pending', reason: 'not-in-state' },
    });
    run.send({ type: 'START', by: 'x' } as unknown as WorkflowRunEvent);
    expect(ctx(run).refusal).toEqual({ event: 'START', state: 'pending', reason: 'malformed' });
    expect(run.getSnapshot().value).toBe('pending');
    run.send({ type: 'CANCEL', reason: 'changed my mind' });
    expect(run.getSnapshot().value).toBe('canceled');
    expect(ctx(run).cancellation).toEqual({ by: null, reason: 'changed my mind' });
  });

  it('refuses to restore a snapshot that is not a run, with a typed error', () => {
    const run = startRun(DEV_SDLC);
    run.send({ type: 'START' });
    const good = JSON.parse(JSON.stringify(run.getPersistedSnapshot()));
    const broken = [
      null,
      { ...good, value: 'dancing' },
      { ...good, status: 'error' },
      { ...good, context: { ...good.context, runId: 7 } },
      { ...good, context: { ...good.context, definition: { ...good.context.definition, start: 'nowhere' } } },
      { ...good, context: { ...good.context, workflow: { id: 'dev-sdlc', version: 2 } } },
    ];
    for (const snapshot of broken) {
      expect(() => restoreWorkflowRun(snapshot)).toThrow(
        expect.objectContaining({ name: 'WorkflowError', code: 'WORKFLOW_RUN_SNAPSHOT_INVALID' }),
      );
    }
    expect(() => restoreWorkflowRun(broken[4])).toThrow(
      'its definition is invalid: start: start "nowhere" is not a stage',
    );
    // Each is refused for what is wrong with it, told in its message and its details.
    const { context: _context, ...noContext } = good;
    const { workflow: _workflow, ...noWorkflow } = good.context;
    const reasons: [unknown, string][] = [
      [null, 'not an object'],
      ['a run', 'not an object'],
      [{ ...good, value: 'dancing' }, 'unknown state "dancing"'],
      [{ ...good, value: 3 }, 'unknown state 3'],
      [{ ...good, status: 'error' }, 'unexpected status "error"'],
      [noContext, 'no run id in the context'],
      [{ ...good, context: null }, 'no run id in the context'],
      [{ ...good, context: { ...good.context, runId: 7 } }, 'no run id in the context'],
      [
        { ...good, context: { ...good.context, workflow: { id: 'dev-sdlc', version: 2 } } },
        'its workflow reference does not match its definition',
      ],
      [
        { ...good, context: { ...good.context, workflow: { id: 'other', version: 1 } } },
        'its workflow reference does not match its definition',
      ],
      [{ ...good, context: noWorkflow }, 'its workflow reference does not match its definition'],
    ];
    for (const [snapshot, reason] of reasons) {
      let thrown: unknown;
      try {
        restoreWorkflowRun(snapshot);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, reason).toMatchObject({
        code: 'WORKFLOW_RUN_SNAPSHOT_INVALID',
        message: `cannot restore a workflow run: ${reason}`,
        details: { reason },
      });
    }
  });

  it('keeps the definition it started with in its snapshot', () => {
    const run = startRun(DEV_SDLC);
    run.send({ type: 'START' });
    const snapshot = JSON.parse(JSON.stringify(run.getPersistedSnapshot()));
    expect(snapshot.context.workflow).toEqual({ id: 'dev-sdlc', version: 1 });
    expect(snapshot.context.definition).toEqual(JSON.parse(JSON.stringify(DEV_SDLC)));
    const restored = restoreWorkflowRun(snapshot).start();
    restored.send({ type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 });
    expect(restored.getSnapshot().context.stage).toBe('coding');
  });
});
