import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { childDeadline } from '../../src/decisions/coordinator/child-spawn.js';
import { carveAll } from '../../src/machines/workflow-run-join.js';
import { type RunState, initialRun, persistRun, restoreRun, stepRun } from '../../src/machines/workflow-run-machine.js';
import type { RunUsage, WorkflowDefinition, WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * The run machine's joins against a reference model: parallel stages
 * (all, any, atLeast; failures failing or collected), maps with a bound on
 * concurrency, a workflow stage, conditions on the joined output; random
 * child outcomes, duplicates, late and stale results, cancels, ticks past a
 * deadline, budgets, and snapshot, restore, continue.
 */

const USE = (tokens: number): RunUsage => ({ inputTokens: tokens, outputTokens: 0, costUsd: 0, elapsedMs: 1 });

type Mode = 'all' | 'any' | { atLeast: number };

function fanOut(mode: Mode, collect: boolean, n: number, maxConcurrency: number, map: boolean): WorkflowDefinition {
  const branches: Record<string, { role: string }> = {};
  for (let i = 0; i < n; i++) branches[`b${i}`] = { role: `r${i}` };
  return parseWorkflowDefinition({
    id: 'fan',
    version: 1,
    start: 'first',
    deadline: 10_000,
    stages: {
      first: { role: 'lead', next: [{ on: 'succeeded', goto: 'fan' }] },
      fan: map
        ? { role: 'worker', forEach: '/list', maxConcurrency, next: [{ on: 'succeeded', goto: 'last' }] }
        : {
            parallel: {
              branches,
              join: typeof mode === 'object' ? { atLeast: Math.min(mode.atLeast, n) } : mode,
              onBranchFailure: collect ? 'collect' : 'fail',
            },
            next: [
              { on: 'succeeded', when: { pointer: '/b0', exists: true }, goto: 'last' },
              { on: 'succeeded', end: 'completed' },
              { on: 'failed', errorType: 'BranchFailed', goto: 'last' },
            ],
          },
      last: { role: 'lead', maxVisits: 1 },
    },
  });
}

/** One step of a scenario: a child's end (by index into the branches), a stale or duplicate one, a cancel, a tick. */
type Act =
  | {
      kind: 'settle';
      branch: number;
      outcome: 'completed' | 'failed' | 'canceled';
      tokens: number;
      /** Absent: a child that reports no hops (counted as none). */
      hops: number | undefined;
      staleHop: boolean;
      /**
       * The driver settles the next end before it writes the children this one started (the Coordinator
       * settles a batch's ends in one decision): what is asked for accumulates, nothing asked for is lost.
       */
      deferDrive: boolean;
    }
  | { kind: 'cancel' }
  | { kind: 'tick'; late: boolean }
  | { kind: 'restore' }
  /** The bus delivers the spawn's confirmation again, after the run took it. */
  | { kind: 'spawned-again' }
  /** A timeout of the fan-out stage's own hop (which has nothing out: its children do the work). */
  | { kind: 'hop-timeout' };

const actArb: fc.Arbitrary<Act> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      branch: fc.nat({ max: 7 }),
      outcome: fc.constantFrom('completed', 'completed', 'failed', 'canceled') as fc.Arbitrary<
        'completed' | 'failed' | 'canceled'
      >,
      tokens: fc.nat({ max: 300 }),
      hops: fc.option(fc.nat({ max: 6 }), { nil: undefined, freq: 4 }),
      staleHop: fc.boolean().map((b) => b && Math.random() < 0.2),
      deferDrive: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'cancel' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('tick' as const), late: fc.boolean() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'restore' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'spawned-again' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'hop-timeout' as const }) },
);

const scenarioArb = fc.record({
  mode: fc.oneof(
    fc.constant('all' as Mode),
    fc.constant('any' as Mode),
    fc.integer({ min: 1, max: 4 }).map((k) => ({ atLeast: k }) as Mode),
  ),
  collect: fc.boolean(),
  n: fc.integer({ min: 1, max: 6 }),
  map: fc.boolean(),
  maxConcurrency: fc.integer({ min: 1, max: 4 }),
  budget: fc.option(fc.integer({ min: 100, max: 2_000 }), { nil: null }),
  maxHops: fc.option(fc.integer({ min: 2, max: 40 }), { nil: null }),
  acts: fc.array(actArb, { maxLength: 40 }),
});

/** The reference: what a join of `n` branches needing `need` decides from the outcomes so far. */
function referenceOutcome(
  outcomes: Map<number, 'completed' | 'failed' | 'canceled'>,
  n: number,
  need: number,
  collect: boolean,
  all: boolean,
): 'open' | 'succeeded' | 'failed' {
  const ok = [...outcomes.values()].filter((o) => o === 'completed').length;
  const bad = outcomes.size - ok;
  const pending = n - outcomes.size;
  if (collect && all) return pending === 0 ? 'succeeded' : 'open';
  if (ok >= need) return 'succeeded';
  if (!collect && all && bad > 0) return 'failed';
  if (ok + pending < need) return 'failed';
  return 'open';
}

function start(
  def: WorkflowDefinition,
  budget: number | null,
  list: { i: number }[],
  maxHops: number | null = null,
): RunState {
  const limits = {
    ...(budget === null ? {} : { maxTokens: budget }),
    ...(maxHops === null ? {} : { maxHops }),
  };
  let run = initialRun({
    runId: 'item',
    definition: def,
    budget: Object.keys(limits).length === 0 ? null : limits,
    deadline: { at: 10_000, ms: 10_000 },
  });
  run = stepRun(run, { type: 'START' });
  run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage: USE(10), output: { list } });
  return run;
}

describe('joins of the run machine against a reference model', () => {
  test.prop([scenarioArb], { numRuns: 400 })('every join decides once, as the reference says', (s) => {
    const n = s.map ? s.n : s.n;
    const def = fanOut(s.mode, s.collect, s.n, s.maxConcurrency, s.map);
    const list = Array.from({ length: n }, (_, i) => ({ i }));
    let run = start(def, s.budget, list, s.maxHops);
    expect(run.value).toBe('running');
    const join = run.context.join!;
    expect(join).not.toBeNull();
    // The children's carves together never pass what the parent has left (10 tokens and 2 hops used),
    // but for the least unit each child gets (one hop in flight per branch).
    const carved = (f: (b: NonNullable<(typeof join.branches)[number]['budget']>) => number | undefined) =>
      join.branches.reduce((sum, b) => sum + (b.budget === null ? 0 : (f(b.budget) ?? 0)), 0);
    if (s.budget !== null) expect(carved((b) => b.maxTokens)).toBeLessThanOrEqual(Math.max(s.budget - 10, n));
    if (s.maxHops !== null) expect(carved((b) => b.maxHops)).toBeLessThanOrEqual(Math.max(s.maxHops - 2, n));
    if (s.budget === null && s.maxHops === null) expect(join.branches.every((b) => b.budget === null)).toBe(true);
    const keys = join.branches.map((b) => b.key);
    const all = s.map || s.mode === 'all';
    const need = s.map ? n : s.mode === 'all' ? n : s.mode === 'any' ? 1 : Math.min(s.mode.atLeast, n);
    const collect = s.map ? false : s.collect;
    const maxRunning = s.map ? s.maxConcurrency : n;

    // What the driver does: answers every spawn at once.
    const spawnedKeys: string[] = [];
    const drive = () => {
      const d = run.context.directive;
      if (d.kind === 'spawn' && d.immediate === null) {
        // A spawn asks for at least one child; once written, the run waits for the stage's children.
        expect(d.branches.length).toBeGreaterThan(0);
        spawnedKeys.push(...d.branches);
        run = stepRun(run, { type: 'CHILDREN_SPAWNED', hop: d.hop });
        expect(run.context.refusal).toBeNull();
        expect(run.context.directive).toEqual({ kind: 'await-children', stage: d.stage, hop: d.hop });
      }
      // Every branch the join holds as running was asked for.
      for (const b of run.context.join?.branches ?? []) {
        if (b.state === 'running') expect(spawnedKeys).toContain(b.key);
      }
    };
    drive();

    const outcomes = new Map<number, 'completed' | 'failed' | 'canceled'>();
    let accepted = 0;
    let usage = 10;
    let childHops = 0;
    let decided: 'succeeded' | 'failed' | null = null;
    let ended = false;
    const canceled = new Set<string>();

    // A spawn the driver has not answered yet (the last settle deferred it): answered before anything but a settle.
    let deferred = false;
    for (const act of s.acts) {
      if (deferred && act.kind !== 'settle') {
        drive();
        deferred = false;
      }
      const before = run;
      if (act.kind === 'restore') {
        run = restoreRun(JSON.parse(JSON.stringify(persistRun(run))));
        expect(run).toEqual(before);
        continue;
      }
      if (act.kind === 'spawned-again') {
        // The driver answered the spawn when it was asked: a confirmation of the current hop again is a
        // duplicate, refused (a live run) or ignored (a final one), changing nothing but the refusal.
        run = stepRun(run, { type: 'CHILDREN_SPAWNED', hop: before.context.hop });
        expect(run.value).toBe(before.value);
        expect({ ...run.context, refusal: null }).toEqual({ ...before.context, refusal: null });
        if (!ended) expect(run.context.refusal?.reason).toBe('stale-hop');
        continue;
      }
      if (act.kind === 'hop-timeout') {
        // While the join is open the stage's hop is not out: a timeout of it is refused, whatever it says.
        if (before.value !== 'running' || (before.context.join ?? null) === null) continue;
        const { hop, attempt } = before.context;
        run = stepRun(run, { type: 'HOP_TIMED_OUT', hop, attempt, timeouts: 1 });
        expect(run.value).toBe('running');
        expect({ ...run.context, refusal: null }).toEqual({ ...before.context, refusal: null });
        expect(run.context.refusal?.reason).toBe('wrong-continuation');
        continue;
      }
      if (act.kind === 'cancel') {
        run = stepRun(run, { type: 'CANCEL', by: 'op' });
      } else if (act.kind === 'tick') {
        run = stepRun(run, { type: 'TICK', now: act.late ? 10_000 : 5_000 });
      } else {
        const index = act.branch % n;
        const key = keys[index]!;
        const event: WorkflowRunEvent = {
          type: 'CHILD_SETTLED',
          hop: act.staleHop ? 1 : 2,
          branch: key,
          outcome: act.outcome,
          ...(act.outcome === 'completed' ? { output: { from: key } } : {}),
          ...(act.outcome === 'failed' ? { error: { type: 'X', message: 'x' } } : {}),
          usage: USE(act.tokens),
          ...(act.hops === undefined ? {} : { hops: act.hops }),
        };
        run = stepRun(run, event);
        const wasRunning = before.context.join?.branches.find((b) => b.key === key)?.state === 'running';
        const shouldTake = !ended && decided === null && !act.staleHop && wasRunning;
        if (!shouldTake) {
          // A stale, duplicate, late or never-started branch's result changes nothing but the refusal.
          if (before.value === 'running' || before.value === 'suspended' || before.value === 'awaiting-approval') {
            expect(run.context.refusal).not.toBeNull();
          }
          expect({ ...run.context, refusal: null }).toEqual({ ...before.context, refusal: null });
          expect(run.value).toBe(before.value);
          if (canceled.has(key)) expect(run.context.usage).toEqual(before.context.usage);
          continue;
        }
        accepted++;
        usage += act.tokens;
        childHops += act.hops ?? 0;
        outcomes.set(index, act.outcome);
        expect(run.context.usage.inputTokens).toBe(usage);
        if (s.budget !== null && usage > s.budget) {
          expect(run.value).toBe('failed');
          expect(run.context.failure?.code).toBe('BUDGET_EXCEEDED');
          ended = true;
        } else {
          const expected = referenceOutcome(outcomes, n, need, collect, all);
          if (expected !== 'open') {
            decided = expected;
            // Decided once: the run left the join.
            expect(run.context.join ?? null).toBeNull();
            expect(run.context.hop === 3 || run.value === 'completed' || run.value === 'failed').toBe(true);
            if (expected === 'succeeded' && !s.map) {
              // The joined output holds each branch under its name, in definition order.
              const out = run.context.output as Record<string, unknown>;
              expect(Object.keys(out)).toEqual(keys);
            }
            if (expected === 'succeeded' && s.map) {
              expect((run.context.output as unknown[]).length).toBe(n);
            }
          } else {
            expect(run.context.join).not.toBeNull();
          }
        }
      }
      // Children still running when the run left the join are canceled, once.
      const took = run !== before && run.context.refusal === null;
      // A step names children to cancel only when it abandoned some.
      if (run.context.cancelChildren != null) expect(run.context.cancelChildren.branches.length).toBeGreaterThan(0);
      for (const key of took ? (run.context.cancelChildren?.branches ?? []) : []) {
        expect(canceled.has(key)).toBe(false);
        canceled.add(key);
      }
      if (run.value !== 'running' || run.context.join === null || run.context.join === undefined) {
        if (run.value === 'failed' || run.value === 'canceled' || run.value === 'completed') ended = true;
      }
      if (before.value === 'completed' || before.value === 'failed' || before.value === 'canceled') {
        // A final run never moves.
        expect(run).toBe(before);
      }
      if (act.kind === 'settle' && act.deferDrive) deferred = true;
      else {
        drive();
        deferred = false;
      }
      const j = run.context.join ?? null;
      if (j !== null) {
        // At most the bound at once, and never fewer while branches wait: the join keeps its children going.
        const runningNow = j.branches.filter((b) => b.state === 'running').length;
        const waiting = j.branches.filter((b) => b.state === 'waiting').length;
        expect(runningNow).toBeLessThanOrEqual(maxRunning);
        if (waiting > 0) expect(runningNow).toBe(maxRunning);
      }
    }
    if (deferred) drive();
    // No branch was asked for twice.
    expect(new Set(spawnedKeys).size).toBe(spawnedKeys.length);
    // The rollup is the sum of what was taken: tokens and hops, the children's hops counted in.
    expect(run.context.usage.inputTokens).toBe(usage);
    expect(run.context.childHops ?? 0).toBe(childHops);
    expect(accepted).toBeLessThanOrEqual(n);
  });

  it('an empty map succeeds at once with an empty list; a map over no list fails the stage', () => {
    const def = fanOut('all', false, 1, 2, true);
    let run = initialRun({ runId: 'x', definition: def });
    run = stepRun(run, { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { list: [] } });
    // Nothing to start: no branch, the stage's outcome at once.
    expect(run.context.directive).toEqual({
      kind: 'spawn',
      stage: 'fan',
      hop: 2,
      branches: [],
      immediate: { outcome: 'succeeded', output: [] },
    });
    let bad = initialRun({ runId: 'y', definition: def });
    bad = stepRun(bad, { type: 'START' });
    bad = stepRun(bad, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { list: 'nope' } });
    expect(bad.context.directive).toMatchObject({
      kind: 'spawn',
      stage: 'fan',
      hop: 2,
      branches: [],
      immediate: { outcome: 'failed', errorType: 'MapInputInvalid' },
    });
    expect((bad.context.directive as { branches: unknown[] }).branches).toEqual([]);
  });

  it('a map longer than maxItems fails the stage with MapTooLarge', () => {
    const def = parseWorkflowDefinition({
      id: 'm',
      version: 1,
      start: 'a',
      stages: {
        a: { role: 'lead', next: [{ on: 'succeeded', goto: 'b' }] },
        b: { role: 'w', forEach: '/xs', maxItems: 3 },
      },
    });
    let run = initialRun({ runId: 'x', definition: def });
    run = stepRun(run, { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { xs: [1, 2, 3, 4] } });
    expect(run.context.directive).toMatchObject({ kind: 'spawn', immediate: { errorType: 'MapTooLarge' } });
  });

  it('carves an equal share of what is left for each child, and an explicit carve no larger than what is left', () => {
    const def = fanOut('all', false, 4, 4, false);
    const run = start(def, 410, []);
    expect(run.context.join!.branches.map((b) => b.budget)).toEqual([
      { maxTokens: 100 },
      { maxTokens: 100 },
      { maxTokens: 100 },
      { maxTokens: 100 },
    ]);
  });

  const carveArb = fc.option(
    fc.record(
      {
        maxTokens: fc.integer({ min: 1, max: 5_000 }),
        maxCostUsd: fc.integer({ min: 1, max: 5_000 }).map((c) => c / 1000),
        maxHops: fc.integer({ min: 1, max: 50 }),
      },
      { requiredKeys: [] },
    ),
    { nil: undefined },
  );
  const leftArb = fc.option(
    fc.record(
      {
        maxTokens: fc.integer({ min: 0, max: 10_000 }),
        maxCostUsd: fc.integer({ min: 0, max: 10_000 }).map((c) => c / 1000),
        maxHops: fc.integer({ min: 0, max: 100 }),
      },
      { requiredKeys: [] },
    ),
    { nil: null },
  );

  test.prop([fc.array(carveArb, { minLength: 1, maxLength: 12 }), leftArb])(
    'carves together never pass what is left but for one unit per branch; an explicit carve is never raised',
    (explicit, left) => {
      const carves = carveAll(explicit, left);
      expect(carves).toHaveLength(explicit.length);
      const n = explicit.length;
      for (const key of ['maxTokens', 'maxHops'] as const) {
        if (left?.[key] === undefined) continue;
        const total = carves.reduce((s, c) => s + (c?.[key] ?? 0), 0);
        expect(total).toBeLessThanOrEqual(Math.max(left[key]!, 0) + n);
        // Equal shares alone of enough to go round never pass it at all.
        if (left[key]! >= n && explicit.every((e) => e?.[key] === undefined)) {
          expect(total).toBeLessThanOrEqual(left[key]!);
        }
      }
      if (left?.maxCostUsd !== undefined) {
        const total = carves.reduce((s, c) => s + (c?.maxCostUsd ?? 0), 0);
        expect(total).toBeLessThanOrEqual(left.maxCostUsd + n * 1e-9 + 1e-6);
      }
      for (const [i, c] of carves.entries()) {
        const e = explicit[i];
        if (e === undefined && left === null) expect(c).toBeNull();
        for (const key of ['maxTokens', 'maxCostUsd', 'maxHops'] as const) {
          if (e?.[key] !== undefined) expect(c?.[key]).toBeLessThanOrEqual(e[key]!);
          if (c?.[key] !== undefined) expect(c[key]).toBeGreaterThan(0);
        }
      }
    },
  );

  test.prop([
    fc.option(fc.integer({ min: 0, max: 1e9 }), { nil: null }),
    fc.option(fc.integer({ min: 1, max: 1e7 }), { nil: null }),
    fc.integer({ min: 0, max: 1e9 }),
  ])(
    "a child's deadline is its carve's from now, never later than its parent's; the parent's by default",
    (parentAt, carveMs, now) => {
      const at = childDeadline(parentAt, carveMs, now);
      if (carveMs === null) expect(at).toBe(parentAt);
      else if (parentAt === null) expect(at).toBe(now + carveMs);
      else expect(at).toBe(Math.min(parentAt, now + carveMs));
      if (parentAt !== null) expect(at!).toBeLessThanOrEqual(parentAt);
    },
  );
});
