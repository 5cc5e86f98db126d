import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { WorkflowRunContext } from '../../src/machines/workflow-run-context.js';
import {
  type HopOutcomeReport,
  type Route,
  finalAfterDeliveries,
  routeKind,
  routeOf,
  routeOutcome,
  routeStart,
  routesFailure,
  ruleKey,
  timeoutMessage,
} from '../../src/machines/workflow-run-routing.js';
import { joinOutcome, settleBranch, spawnJoin } from '../../src/machines/workflow-run-join.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import { type NoRetryReason, decideRetry } from '../../src/protocol/retry-policy.js';
import type { NextRule, WorkflowDefinition, WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { stageRetryPolicy } from '../../src/workflow/definition.js';

/**
 * The rules of where a hop's outcome leads (`routeOutcome`), each against a
 * small reference model written from the rules, not from the code: a
 * failure the stage's retry policy retries is retried; otherwise the first
 * rule, in order, whose outcome, error type and condition match and that is
 * not used up (`maxTraversals`, the target's `maxVisits`) decides; matching
 * rules all used up fail the run with LOOP_BOUND; no matching rule completes
 * a success and fails a failure (JOIN_FAILED for a join's, RETRIES_EXHAUSTED
 * or NON_RETRYABLE for a hop's, saying after how many attempts).
 */

const STAGES = ['a', 'b', 'c'] as const;

const ruleArb: fc.Arbitrary<NextRule> = fc
  .record({
    on: fc.constantFrom('succeeded' as const, 'failed' as const),
    errorType: fc.option(fc.constantFrom('E1', 'E2'), { nil: undefined }),
    when: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
    goto: fc.option(fc.constantFrom(...STAGES), { nil: undefined }),
    end: fc.constantFrom('completed' as const, 'failed' as const),
    maxTraversals: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    reason: fc.option(fc.constantFrom('stopped here'), { nil: undefined }),
  })
  .map((r) => {
    const rule: Record<string, unknown> = { on: r.on };
    if (r.on === 'failed' && r.errorType !== undefined) rule.errorType = r.errorType;
    if (r.on === 'succeeded' && r.when !== undefined) rule.when = { pointer: '/v', equals: r.when };
    if (r.goto !== undefined) {
      rule.goto = r.goto;
      if (r.maxTraversals !== undefined) rule.maxTraversals = r.maxTraversals;
    } else {
      rule.end = r.end;
      if (r.end === 'failed' && r.reason !== undefined) rule.reason = r.reason;
    }
    return rule as NextRule;
  });

const defArb: fc.Arbitrary<WorkflowDefinition> = fc
  .record({
    rules: fc.array(ruleArb, { maxLength: 6 }),
    maxVisits: fc.record({
      a: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
      b: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
      c: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    }),
    gated: fc.record({ a: fc.boolean(), b: fc.boolean(), c: fc.boolean() }),
    maximumAttempts: fc.integer({ min: 0, max: 4 }),
    nonRetryable: fc.subarray(['E1', 'E2', 'E3']),
  })
  .map(({ rules, maxVisits, gated, maximumAttempts, nonRetryable }) => {
    const stages: Record<string, unknown> = {};
    for (const s of STAGES) {
      stages[s] = {
        role: `r-${s}`,
        next: s === 'a' ? rules : [],
        ...(maxVisits[s] === undefined ? {} : { maxVisits: maxVisits[s] }),
        ...(gated[s] ? { approval: { approvers: ['lead'] } } : {}),
        ...(s === 'a'
          ? { retry: { maximumAttempts, nonRetryableErrorTypes: nonRetryable, initialIntervalMs: 100 } }
          : {}),
      };
    }
    return { id: 'routing', version: 3, start: 'a', stages } as unknown as WorkflowDefinition;
  });

const ctxArb = (def: WorkflowDefinition) =>
  fc
    .record({
      attempt: fc.integer({ min: 1, max: 5 }),
      hop: fc.integer({ min: 1, max: 9 }),
      visits: fc.record({ a: fc.nat(4), b: fc.nat(4), c: fc.nat(4) }),
      traversals: fc.dictionary(
        fc.integer({ min: 0, max: 5 }).map((i) => ruleKey('a', i)),
        fc.nat(4),
      ),
    })
    .map(
      (c) =>
        ({
          runId: 'run',
          workflow: { id: def.id, version: def.version },
          definition: def,
          stage: 'a',
          ...c,
        }) as unknown as WorkflowRunContext,
    );

const reportArb: fc.Arbitrary<HopOutcomeReport> = fc.oneof(
  fc.record({
    outcome: fc.constant('succeeded' as const),
    output: fc.option(
      fc.oneof(
        fc.record({ v: fc.integer({ min: 0, max: 2 }) }).map((o) => o as JsonValue),
        fc.constant('text' as JsonValue),
      ),
      { nil: undefined },
    ),
  }),
  fc.record({
    outcome: fc.constant('failed' as const),
    errorType: fc.constantFrom('E1', 'E2', 'E3'),
    message: fc.option(fc.constantFrom('it broke'), { nil: undefined }),
    final: fc.option(fc.constantFrom<NoRetryReason>('non-retryable', 'exhausted'), { nil: undefined }),
    deliveries: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
    join: fc.option(fc.boolean(), { nil: undefined }),
  }),
);

/** The outcome as a route's text names it. */
const described = (r: HopOutcomeReport) =>
  r.outcome === 'succeeded' ? 'success' : r.message ? `${r.errorType}: ${r.message}` : r.errorType;

/** Where the rules say the outcome leads: the reference model. */
function expected(ctx: WorkflowRunContext, report: HopOutcomeReport): Route {
  const def = ctx.definition;
  const stage = def.stages.a!;
  const policy = stageRetryPolicy(def, 'a');
  let why: NoRetryReason | null = null;
  if (report.outcome === 'failed') {
    let final = report.final;
    if (final === undefined && report.deliveries !== undefined) {
      const spent = policy.maximumAttempts > 0 && report.deliveries >= policy.maximumAttempts;
      final = !policy.nonRetryableErrorTypes.includes(report.errorType) && spent ? 'exhausted' : 'non-retryable';
    }
    const retry = decideRetry(policy, { attempt: ctx.attempt, errorType: report.errorType, final });
    if (retry.retry) return { kind: 'retry', attempt: ctx.attempt + 1, delayMs: retry.delayMs };
    why = retry.why;
  }
  const output = report.outcome === 'succeeded' ? report.output : undefined;
  let matched = false;
  for (let i = 0; i < stage.next.length; i++) {
    const rule = stage.next[i]!;
    if (rule.on !== report.outcome) continue;
    if (rule.errorType !== undefined && (report.outcome !== 'failed' || report.errorType !== rule.errorType)) continue;
    const read =
      output !== null && typeof output === 'object' && !Array.isArray(output) && 'v' in output ? output.v : undefined;
    if (rule.when !== undefined && read !== rule.when.equals) continue;
    matched = true;
    if (rule.goto !== undefined) {
      const taken = ctx.traversals[`a.next[${i}]`] ?? 0;
      if (rule.maxTraversals !== undefined && taken >= rule.maxTraversals) continue;
      const max = def.stages[rule.goto]!.maxVisits;
      if (max !== undefined && (ctx.visits[rule.goto] ?? 0) >= max) continue;
    }
    const condition = rule.when === undefined ? undefined : { pointer: '/v', read: (read ?? null) as JsonValue };
    if (rule.end === 'completed') return { kind: 'complete', output, condition };
    if (rule.end === 'failed') {
      return {
        kind: 'fail',
        code: 'RULE_ENDED',
        reason: rule.reason ?? `stage a ended the run on ${described(report)}`,
      };
    }
    return {
      kind: 'enter',
      stage: rule.goto!,
      gated: def.stages[rule.goto!]!.approval !== undefined,
      via: { from: 'a', index: i },
      output,
      condition,
    };
  }
  if (matched) {
    return {
      kind: 'fail',
      code: 'LOOP_BOUND',
      reason: `stage a: every rule for ${described(report)} is used up (maxTraversals or maxVisits reached)`,
    };
  }
  if (report.outcome === 'succeeded') return { kind: 'complete', output };
  if (report.join === true) return { kind: 'fail', code: 'JOIN_FAILED', reason: described(report) };
  const attempts = report.deliveries ?? ctx.attempt;
  const exhausted = why === 'exhausted';
  return {
    kind: 'fail',
    code: exhausted ? 'RETRIES_EXHAUSTED' : 'NON_RETRYABLE',
    reason: `hop ${ctx.hop} (a) failed with ${described(report)}${exhausted ? ` after ${attempts} attempt${attempts === 1 ? '' : 's'}` : ''}`,
  };
}

describe('where a hop outcome leads', () => {
  test.prop([defArb.chain((def) => fc.tuple(fc.constant(def), ctxArb(def))), reportArb], { numRuns: 400 })(
    'the route the rules give: retry, the first matching rule not used up, LOOP_BOUND, or the outcome itself',
    ([, ctx], report) => {
      expect(routeOutcome(ctx, report)).toEqual(expected(ctx, report));
    },
  );

  it('a run at no stage, or at one its definition lacks, fails saying so', () => {
    const def = {
      id: 'w',
      version: 2,
      start: 'a',
      stages: { a: { role: 'r', next: [] } },
    } as unknown as WorkflowDefinition;
    const base = { definition: def, attempt: 1, hop: 1, visits: {}, traversals: {} };
    for (const stage of [null, 'gone']) {
      expect(routeOutcome({ ...base, stage } as unknown as WorkflowRunContext, { outcome: 'succeeded' })).toEqual({
        kind: 'fail',
        code: 'RULE_ENDED',
        reason: 'the run is at no stage of w@2',
      });
    }
  });
});

describe('the start, the kinds of route, and what a failure is', () => {
  test.prop([defArb, fc.option(fc.constantFrom('a', 'b', 'c', 'zz', 'toString'), { nil: undefined })])(
    'a run enters the stage it is told to start at when the definition has it, else the start; gated by its approval',
    (def, from) => {
      const stage = from !== undefined && from in def.stages && Object.hasOwn(def.stages, from) ? from : 'a';
      expect(routeStart(def, from)).toEqual({
        kind: 'enter',
        stage,
        gated: def.stages[stage]!.approval !== undefined,
        via: null,
      });
    },
  );

  it('names each kind of route, a gated entry apart', () => {
    expect(routeKind({ kind: 'enter', stage: 'a', gated: true, via: null })).toBe('enter-gated');
    expect(routeKind({ kind: 'enter', stage: 'a', gated: false, via: null })).toBe('enter');
    expect(routeKind({ kind: 'retry', attempt: 2, delayMs: 1 })).toBe('retry');
    expect(routeKind({ kind: 'complete' })).toBe('complete');
    expect(routeKind({ kind: 'fail', code: 'LOOP_BOUND', reason: 'r' })).toBe('fail');
    expect(ruleKey('review', 3)).toBe('review.next[3]');
  });

  it('a failure is handled when it is retried or a rule takes it, ending the run included; not otherwise', () => {
    expect(routesFailure(null)).toBe(false);
    expect(routesFailure({ kind: 'retry', attempt: 2, delayMs: 0 })).toBe(true);
    expect(routesFailure({ kind: 'enter', stage: 'a', gated: false, via: { from: 'a', index: 0 } })).toBe(true);
    expect(routesFailure({ kind: 'complete' })).toBe(true);
    expect(routesFailure({ kind: 'fail', code: 'RULE_ENDED', reason: 'r' })).toBe(true);
    for (const code of ['LOOP_BOUND', 'NON_RETRYABLE', 'RETRIES_EXHAUSTED', 'JOIN_FAILED'] as const) {
      expect(routesFailure({ kind: 'fail', code, reason: 'r' })).toBe(false);
    }
  });

  test.prop([
    fc.integer({ min: 0, max: 5 }),
    fc.subarray(['E1', 'E2']),
    fc.constantFrom('E1', 'E2', 'E3'),
    fc.integer({ min: 0, max: 7 }),
  ])(
    'a failure the bus delivered n times is exhausted when its type is retried and the attempts are spent',
    (maximumAttempts, nonRetryableErrorTypes, errorType, deliveries) => {
      const policy = { ...stageRetryPolicy({ stages: { a: {} } } as unknown as WorkflowDefinition, 'a') };
      const p = { ...policy, maximumAttempts, nonRetryableErrorTypes };
      const spent = maximumAttempts > 0 && deliveries >= maximumAttempts;
      expect(finalAfterDeliveries(p, errorType, deliveries)).toBe(
        !nonRetryableErrorTypes.includes(errorType) && spent ? 'exhausted' : 'non-retryable',
      );
    },
  );

  it("a timeout's message: the timeout, how often, what the policy allows; a lost question said so", () => {
    const def = {
      id: 'w',
      version: 1,
      start: 'a',
      stages: { a: { role: 'r', next: [], timeout: 5000, retry: { maximumAttempts: 3 } } },
    } as unknown as WorkflowDefinition;
    expect(timeoutMessage(def, 'a', 2, 'hop')).toBe('out longer than 5000 ms 2 times: its retry policy allows 3');
    expect(timeoutMessage(def, 'a', 2, 'hop', true, 750)).toBe(
      'out longer than 750 ms 2 times: its retry policy allows 3',
    );
    expect(timeoutMessage(def, 'a', 1, 'query')).toBe(
      'out longer than 5000 ms 1 times: the retry policy of stage a allows 3',
    );
    expect(timeoutMessage(def, 'a', 1, 'query', false)).toBe(
      'out longer than 5000 ms, and its question was not kept to publish it again',
    );
  });
});

describe('the outcome an event reports', () => {
  const NO_USE = { inputTokens: 0, outputTokens: 0, costUsd: 0 };
  const eventArb: fc.Arbitrary<WorkflowRunEvent> = fc.oneof(
    fc.record({
      type: fc.constant('HOP_SUCCEEDED' as const),
      hop: fc.constant(1),
      attempt: fc.constant(1),
      output: fc.option(fc.record({ v: fc.integer({ min: 0, max: 2 }) }), { nil: undefined }),
    }),
    fc.record({
      type: fc.constant('HOP_FAILED' as const),
      hop: fc.constant(1),
      attempt: fc.constant(1),
      errorType: fc.constantFrom('E1', 'E3'),
      message: fc.option(fc.constantFrom('no'), { nil: undefined }),
      final: fc.option(fc.constantFrom('non-retryable' as const, 'exhausted' as const), { nil: undefined }),
      deliveries: fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }),
    }),
    fc.record({
      type: fc.constant('HOP_TIMED_OUT' as const),
      hop: fc.constant(1),
      attempt: fc.constant(1),
      timeouts: fc.integer({ min: 1, max: 3 }),
      timeoutMs: fc.option(fc.integer({ min: 1, max: 9000 }), { nil: undefined }),
      continuation: fc.option(fc.constantFrom('k-1'), { nil: undefined }),
    }),
    fc.record({
      type: fc.constant('CHILD_SETTLED' as const),
      hop: fc.integer({ min: 1, max: 2 }),
      branch: fc.constantFrom('0', '1', '2', '9'),
      outcome: fc.constantFrom('completed' as const, 'failed' as const, 'canceled' as const),
      output: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined }),
      error: fc.option(fc.record({ type: fc.constantFrom('X'), message: fc.constantFrom('bad') }), {
        nil: undefined,
      }),
    }),
    fc.constant({ type: 'TICK' as const, now: 5 }),
  ) as fc.Arbitrary<WorkflowRunEvent>;

  /** What the event reports, by the rules (null: it decides nothing now). */
  function reported(ctx: WorkflowRunContext, event: WorkflowRunEvent): HopOutcomeReport | null {
    switch (event.type) {
      case 'HOP_SUCCEEDED':
        return { outcome: 'succeeded', output: event.output as JsonValue | undefined };
      case 'HOP_FAILED':
        return {
          outcome: 'failed',
          errorType: event.errorType,
          message: event.message,
          final: event.final,
          deliveries: event.deliveries,
        };
      case 'HOP_TIMED_OUT':
        if (event.continuation !== undefined) return null;
        return {
          outcome: 'failed',
          errorType: 'HopTimedOut',
          message: timeoutMessage(ctx.definition, 'a', event.timeouts, 'hop', true, event.timeoutMs),
          final: 'exhausted',
        };
      case 'CHILD_SETTLED': {
        const join = ctx.join ?? null;
        const at = join?.branches.find((b) => b.key === event.branch);
        if (join === null || join.hop !== event.hop || at?.state !== 'running') return null;
        const decided = joinOutcome(
          settleBranch(join, event.branch, {
            outcome: event.outcome,
            ...(event.output === undefined ? {} : { output: event.output as JsonValue }),
            ...(event.error === undefined ? {} : { error: event.error }),
          }),
        );
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
      default:
        return null;
    }
  }

  test.prop(
    [
      defArb.chain((def) => fc.tuple(fc.constant(def), ctxArb(def))),
      eventArb,
      fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }),
      fc.boolean(),
      fc.boolean(),
    ],
    { numRuns: 400 },
  )(
    'a hop or a join that decides is routed as its outcome; anything else is not routed',
    ([, base], event, n, all, collect) => {
      const join =
        n === null
          ? null
          : {
              ...spawnJoin(
                'a',
                2,
                Array.from({ length: n }, (_, i) => ({ key: String(i) })),
                null,
                NO_USE,
              ),
              ...(all ? {} : { need: 1, all: false }),
              collect,
            };
      const ctx = { ...base, hop: 2, join } as WorkflowRunContext;
      const report = reported(ctx, event);
      expect(routeOf(ctx, event)).toEqual(report === null ? null : routeOutcome(ctx, report));
    },
  );

  it("a join that fails with no rule to take it fails the run as the join's failure, never retried", () => {
    const def = {
      id: 'w',
      version: 1,
      start: 'a',
      stages: { a: { role: 'r', next: [], retry: { maximumAttempts: 5 } } },
    } as unknown as WorkflowDefinition;
    // A parallel stage's join: a branch's failure fails it (a hop's own children's join collects them).
    const join = { ...spawnJoin('a', 2, [{ key: '0' }, { key: '1' }], null, NO_USE), collect: false };
    const ctx = { definition: def, stage: 'a', hop: 2, attempt: 1, visits: {}, traversals: {}, join };
    const route = routeOf(ctx as unknown as WorkflowRunContext, {
      type: 'CHILD_SETTLED',
      hop: 2,
      branch: '1',
      outcome: 'failed',
      error: { type: 'X', message: 'bad' },
    });
    expect(route).toMatchObject({ kind: 'fail', code: 'JOIN_FAILED' });
    // A child's end with no join open reports nothing.
    const settled = { type: 'CHILD_SETTLED', hop: 2, branch: '1', outcome: 'completed' } as const;
    expect(routeOf({ ...ctx, join: null } as unknown as WorkflowRunContext, settled)).toBeNull();
  });

  it('a start enters its stage; a timeout at no stage is not routed', () => {
    const def = {
      id: 'w',
      version: 1,
      start: 'a',
      stages: { a: { role: 'r', next: [] }, undefined: { role: 'r', next: [] } },
    } as unknown as WorkflowDefinition;
    const ctx = {
      definition: def,
      stage: null,
      hop: 1,
      attempt: 1,
      visits: {},
      traversals: {},
    } as unknown as WorkflowRunContext;
    expect(routeOf(ctx, { type: 'START' })).toEqual({ kind: 'enter', stage: 'a', gated: false, via: null });
    // A stage that happens to be named "undefined" is not where a start with no stage goes.
    expect(routeStart(def)).toEqual({ kind: 'enter', stage: 'a', gated: false, via: null });
    expect(routeOf(ctx, { type: 'HOP_TIMED_OUT', hop: 1, attempt: 1, timeouts: 1 })).toBeNull();
  });
});
