import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  type BranchState,
  type JoinBranch,
  type RunJoin,
  abandonedBranches,
  branchRunning,
  joinOutcome,
  joinOutput,
  runningBranches,
  settleBranch,
  startBranches,
} from '../../src/machines/workflow-run-join.js';
import { changedSince, joinIndex, samePositions, withBranches } from '../../src/machines/workflow-run-join-index.js';
import { joinSettledBy } from '../../src/machines/workflow-run-routing.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';

/**
 * The join functions read a join through an index kept beside each join
 * object (counts, key positions, where the waiting branches begin) and
 * derive the index of the joins they return. Against plain passes over the
 * branches: random joins (keys that may repeat, any states), random
 * sequences of starts and settles on the joins they return (no JSON round
 * trip between steps: the derived indexes are what is read), and the same
 * reads on a copy of each join (an index built afresh).
 */

const STATES: BranchState[] = ['waiting', 'running', 'succeeded', 'failed', 'canceled'];

function settleRef(join: RunJoin, key: string, outcome: 'completed' | 'failed' | 'canceled'): RunJoin {
  const state: BranchState = outcome === 'completed' ? 'succeeded' : outcome === 'failed' ? 'failed' : 'canceled';
  return {
    ...join,
    branches: join.branches.map((b) =>
      b.key === key
        ? {
            ...b,
            state,
            output: outcome === 'completed' ? { key } : null,
            error: state === 'succeeded' ? null : { type: 'ChildCanceled', message: `branch ${key} was canceled` },
          }
        : b,
    ),
  };
}

function startRef(join: RunJoin): { join: RunJoin; started: string[] } {
  let running = join.branches.filter((b) => b.state === 'running').length;
  const started: string[] = [];
  const branches = join.branches.map((b) => {
    if (b.state !== 'waiting' || running >= join.maxConcurrency) return b;
    running++;
    started.push(b.key);
    return { ...b, state: 'running' as const };
  });
  return started.length === 0 ? { join, started } : { join: { ...join, branches }, started };
}

const runningRef = (join: RunJoin) => join.branches.filter((b) => b.state === 'running').map((b) => b.key);

function outcomeRef(join: RunJoin): string {
  const n = join.branches.length;
  const succeeded = join.branches.filter((b) => b.state === 'succeeded').length;
  const failed = join.branches.filter((b) => b.state === 'failed' || b.state === 'canceled').length;
  const pending = n - succeeded - failed;
  if (join.collect && join.all) return pending === 0 ? 'succeeded' : 'open';
  if (succeeded >= join.need) return 'succeeded';
  if (!join.collect && join.all && failed > 0) return 'failed';
  if (succeeded + pending < join.need) return 'failed';
  return 'open';
}

function abandonedRef(before: RunJoin, after: RunJoin | null, settled: string | null): string[] {
  const still = new Set(after !== null && after.hop === before.hop ? runningRef(after) : []);
  return runningRef(before).filter((key) => !still.has(key) && key !== settled);
}

/** A copy of the join: the same value, another object (its index is built afresh). */
const copy = (join: RunJoin): RunJoin => JSON.parse(JSON.stringify(join)) as RunJoin;

function checkReads(join: RunJoin): void {
  for (const j of [join, copy(join)]) {
    expect(runningBranches(j)).toEqual(runningRef(j));
    const outcome = joinOutcome(j);
    expect(outcome.status).toBe(outcomeRef(j));
    if (outcome.status === 'succeeded') expect(outcome.output).toEqual(joinOutput(j));
    for (const b of j.branches) {
      expect(branchRunning(j, j.hop, b.key)).toBe(j.branches.some((x) => x.key === b.key && x.state === 'running'));
      expect(branchRunning(j, j.hop + 1, b.key)).toBe(false);
    }
    expect(branchRunning(j, j.hop, 'no-such-key')).toBe(false);
  }
}

const branchArb: fc.Arbitrary<JoinBranch> = fc.record({
  key: fc.constantFrom('0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'a', 'b'),
  state: fc.constantFrom(...STATES, 'waiting', 'waiting'),
  output: fc.constant(null),
  error: fc.constant(null),
  budget: fc.constant(null),
});

const joinArb: fc.Arbitrary<RunJoin> = fc
  .record({
    // Unique keys mostly (as the run makes them); now and then a repeated one.
    branches: fc.oneof(
      { weight: 4, arbitrary: fc.uniqueArray(branchArb, { selector: (b) => b.key, minLength: 1, maxLength: 12 }) },
      { weight: 1, arbitrary: fc.array(branchArb, { minLength: 1, maxLength: 12 }) },
    ),
    kind: fc.constantFrom('parallel', 'map', 'spawn', 'workflow') as fc.Arbitrary<RunJoin['kind']>,
    need: fc.integer({ min: 1, max: 12 }),
    all: fc.boolean(),
    collect: fc.boolean(),
    maxConcurrency: fc.integer({ min: 1, max: 14 }),
  })
  .map((j) => ({ stage: 'fan', hop: 3, ...j }));

type Act = { kind: 'start' } | { kind: 'settle'; at: number; outcome: 'completed' | 'failed' | 'canceled' };

const actArb: fc.Arbitrary<Act> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'start' as const }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      at: fc.nat({ max: 13 }),
      outcome: fc.constantFrom('completed', 'completed', 'failed', 'canceled') as fc.Arbitrary<
        'completed' | 'failed' | 'canceled'
      >,
    }),
  },
);

describe('the join functions read through their index as through a pass over the branches', () => {
  test.prop([joinArb, fc.array(actArb, { maxLength: 30 })], { numRuns: 500 })(
    'starts, settles, outcomes, running and abandoned branches',
    (initial, acts) => {
      let join = initial;
      let ref = initial;
      checkReads(join);
      let earlier = initial;
      for (const act of acts) {
        const before = join;
        let settled: string | null = null;
        if (act.kind === 'start') {
          const got = startBranches(join);
          const want = startRef(ref);
          expect(got.started).toEqual(want.started);
          expect(got.join === join).toBe(want.join === ref);
          join = got.join;
          ref = want.join;
        } else {
          // A key of the join, or one it does not have.
          const key = join.branches[act.at]?.key ?? 'no-such-key';
          const settle = {
            outcome: act.outcome,
            ...(act.outcome === 'completed' ? { output: { key } } : {}),
          };
          join = settleBranch(join, key, settle);
          ref = settleRef(ref, key, act.outcome);
          settled = key;
        }
        expect(join).toEqual(ref);
        checkReads(join);
        expect(abandonedBranches(before, join, settled)).toEqual(abandonedRef(before, join, settled));
        expect(abandonedBranches(before, null, settled)).toEqual(abandonedRef(before, null, settled));
        expect(abandonedBranches(before, { ...join, hop: 4 }, settled)).toEqual(
          abandonedRef(before, { ...join, hop: 4 }, settled),
        );
        expect(abandonedBranches(before, copy(join), settled)).toEqual(abandonedRef(before, copy(join), settled));
        // The branch settled counted as abandoned too (when it was running), and over two steps at once.
        expect(abandonedBranches(before, join, null)).toEqual(abandonedRef(before, join, null));
        expect(abandonedBranches(earlier, join, settled)).toEqual(abandonedRef(earlier, join, settled));
        expect(abandonedBranches(earlier, join, null)).toEqual(abandonedRef(earlier, join, null));
        earlier = before;
      }
    },
  );
});

/** The index a pass over the branches gives: counts by state, key positions (`null` on a repeated key), the first waiting. */
function indexRef(join: RunJoin) {
  const count = (...states: BranchState[]) => join.branches.filter((b) => states.includes(b.state)).length;
  const keys = join.branches.map((b) => b.key);
  const firstWaiting = join.branches.findIndex((b) => b.state === 'waiting');
  return {
    at: new Set(keys).size === keys.length ? new Map(keys.map((k, i) => [k, i])) : null,
    running: count('running'),
    succeeded: count('succeeded'),
    failed: count('failed', 'canceled'),
    firstWaiting: firstWaiting < 0 ? join.branches.length : firstWaiting,
  };
}

/**
 * The joins after each of `acts` (starts and settles), each step on the join
 * the last returned; `known`: each settle of a key the join has.
 */
function played(initial: RunJoin, acts: readonly Act[], known = false): RunJoin[] {
  const joins = [initial];
  let join = initial;
  for (const act of acts) {
    if (act.kind === 'start') join = startBranches(join).join;
    else {
      const at = known ? act.at % join.branches.length : act.at;
      const key = join.branches[at]?.key ?? 'no-such-key';
      join = settleBranch(join, key, { outcome: act.outcome });
    }
    joins.push(join);
  }
  return joins;
}

describe('the index of a join', () => {
  test.prop([joinArb])('a join read for the first time: its counts, key positions and first waiting branch', (join) => {
    const index = joinIndex(join);
    expect(index).toEqual(indexRef(join));
    // One pass the first time a join object is read, none after: the same index.
    expect(joinIndex(join)).toBe(index);
  });

  test.prop([joinArb, fc.array(actArb, { maxLength: 20 })], { numRuns: 300 })(
    'the index the join functions derive counts as a pass would; no branch before its first waiting one waits',
    (initial, acts) => {
      for (const join of played(initial, acts)) {
        const derived = joinIndex(join);
        const fresh = indexRef(join);
        expect({ ...derived, at: null, firstWaiting: 0 }).toEqual({ ...fresh, at: null, firstWaiting: 0 });
        expect(derived.at === null).toBe(fresh.at === null);
        if (derived.at !== null) expect(new Map(derived.at)).toEqual(fresh.at);
        expect(derived.firstWaiting).toBeLessThanOrEqual(fresh.firstWaiting);
        expect(join.branches.slice(0, derived.firstWaiting).some((b) => b.state === 'waiting')).toBe(false);
      }
    },
  );

  test.prop([
    joinArb,
    fc.array(fc.tuple(fc.nat({ max: 13 }), fc.constantFrom(...STATES)), { minLength: 1, maxLength: 6 }),
  ])(
    'a join with any of its branches replaced, in any state: its index derived as a pass would give it',
    (join, changes) => {
      const index = joinIndex(join);
      const branches = join.branches.slice();
      const changed: number[] = [];
      for (const [at, state] of changes) {
        const i = at % branches.length;
        if (changed.includes(i)) continue;
        branches[i] = { ...branches[i]!, state };
        changed.push(i);
      }
      const waiting = branches.findIndex((b) => b.state === 'waiting');
      const next = withBranches(join, index, branches, changed, waiting < 0 ? branches.length : waiting);
      expect(next.branches).toBe(branches);
      expect({ ...joinIndex(next), at: null }).toEqual({ ...indexRef(next), at: null });
      // The index it was derived from is unchanged.
      expect(joinIndex(join)).toEqual(indexRef(join));
      // Branches it stopped running are abandoned (read by position: the positions are kept).
      expect(abandonedBranches(join, next, null)).toEqual(abandonedRef(join, next, null));
      const settled = join.branches[0]!.key;
      expect(abandonedBranches(join, next, settled)).toEqual(abandonedRef(join, next, settled));
    },
  );

  test.prop([joinArb, fc.array(actArb, { minLength: 1, maxLength: 20 })], { numRuns: 300 })(
    'joins derived by the join functions keep their positions; a copy, a join never read, a repeated key do not',
    (initial, acts) => {
      const joins = played(initial, acts, true);
      const unique = indexRef(initial).at !== null;
      for (const join of joins.slice(1)) {
        // The functions keep every key at its position: so known without a pass, when the keys are unique.
        expect(samePositions(initial, join)).toBe(unique);
        expect(samePositions(join, initial)).toBe(unique);
        // A join another object (its index built afresh) is not known to keep them.
        const other = copy(join);
        expect(samePositions(initial, other)).toBe(false);
        joinIndex(other);
        expect(samePositions(initial, other)).toBe(false);
      }
      // A join never read has no index yet: nothing is known of it.
      const unread = copy(initial);
      expect(samePositions(unread, initial)).toBe(false);
      expect(samePositions(initial, unread)).toBe(false);
    },
  );

  test.prop([joinArb, joinArb, fc.option(fc.constantFrom('0', '1', 'a', 'b'), { nil: null })], { numRuns: 300 })(
    'the branches abandoned between any two joins of a hop are those running in the first and not in the second',
    (before, after, settled) => {
      joinIndex(before);
      joinIndex(after);
      expect(abandonedBranches(before, after, settled)).toEqual(abandonedRef(before, after, settled));
      expect(abandonedBranches(before, before, settled)).toEqual([]);
    },
  );
});

/** The distinct join objects of `joins` (a start that starts nothing returns the join it was given). */
const distinct = (joins: readonly RunJoin[]): RunJoin[] => joins.filter((j, i) => i === 0 || j !== joins[i - 1]);

/** The positions whose branch objects differ between two joins of the same branches. */
const differing = (a: RunJoin, b: RunJoin): number[] =>
  a.branches.flatMap((branch, i) => (branch === b.branches[i] ? [] : [i]));

describe('what changed between two joins', () => {
  test.prop([joinArb, fc.array(actArb, { maxLength: 12 })], { numRuns: 300 })(
    'is told within four steps of the join functions (every position that differs among them), and never beyond',
    (initial, acts) => {
      const joins = distinct(played(initial, acts, true));
      // Keys that repeat, or a settle of a key the join lacks: the functions then copy without deriving.
      const derivedAll = joinIndex(initial).at !== null;
      for (let i = 0; i < joins.length; i++) {
        for (let j = i; j < joins.length; j++) {
          const changed = changedSince(joins[i]!, joins[j]!);
          if (changed !== null) for (const at of differing(joins[i]!, joins[j]!)) expect(changed).toContain(at);
          // Only positions of the join are named.
          for (const at of changed ?? []) expect(joins[i]!.branches[at]).toBeDefined();
          if (derivedAll) expect(changed === null).toBe(j - i > 4);
          // Fewer steps back when asked; never more than four, whatever is asked.
          for (const steps of [1, 2, 10]) {
            const within = changedSince(joins[i]!, joins[j]!, steps);
            if (derivedAll) expect(within === null).toBe(j - i > Math.min(steps, 4));
            if (within !== null) expect(within).toEqual(changed);
          }
          // Another object of the same value was not made from it, nor was it made from one.
          if (j > i) expect(changedSince(copy(joins[i]!), joins[j]!)).toBeNull();
          expect(changedSince(joins[i]!, copy(joins[j]!))).toBeNull();
          if (j > i) expect(changedSince(joins[j]!, joins[i]!)).toBeNull();
        }
      }
    },
  );

  it('is told for each of two joins made from the same one, whichever was made first', () => {
    const join: RunJoin = {
      stage: 'fan',
      hop: 3,
      kind: 'parallel',
      need: 3,
      all: true,
      collect: false,
      maxConcurrency: 3,
      branches: ['a', 'b', 'c'].map((key) => ({
        key,
        state: 'waiting' as const,
        output: null,
        error: null,
        budget: null,
      })),
    };
    const started = startBranches(join).join;
    const first = settleBranch(started, 'a', { outcome: 'completed' });
    const second = settleBranch(started, 'c', { outcome: 'failed' });
    const later = settleBranch(first, 'b', { outcome: 'completed' });
    expect(changedSince(started, first)).toEqual([0]);
    expect(changedSince(started, second)).toEqual([2]);
    expect(changedSince(started, later)).toEqual([1, 0]);
    expect(changedSince(join, later)).toEqual([1, 0, 0, 1, 2]);
    expect(changedSince(first, second)).toBeNull();
  });

  it('keeps none of the joins a join was made from alive: a long map holds one copy of its branches', async () => {
    // The test asks the collector to run (node --expose-gc, set for this process from here).
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const n = 400;
    let join = mapJoin(n);
    const made: WeakRef<RunJoin>[] = [];
    join = startBranches(join).join;
    for (let i = 0; i < n; i++) {
      join = settleBranch(join, String(i), { outcome: 'completed', output: i });
      made.push(new WeakRef(join));
      join = startBranches(join).join;
      made.push(new WeakRef(join));
    }
    // A WeakRef keeps its target until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    const alive = made.filter((ref) => ref.deref() !== undefined).length;
    // The last join is alive (this test holds it); the collector may keep a few young ones.
    expect(alive).toBeGreaterThanOrEqual(1);
    expect(alive).toBeLessThan(made.length / 10);
    expect(joinOutcome(join).status).toBe('succeeded');
  });

  it('keeps none alive through the join a settle made, asked once per reader as the run machine asks it', async () => {
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void;
    const n = 400;
    let join: RunJoin = startBranches(mapJoin(n)).join;
    const made: WeakRef<RunJoin>[] = [];
    for (let i = 0; i < n; i++) {
      const event = settledEvent(String(i), i);
      // The routing, the guard and the effect each ask for the settled join: one is made.
      const settled = joinSettledBy(join, event);
      expect(joinSettledBy(join, event)).toBe(settled);
      expect(joinSettledBy(join, event)).toBe(settled);
      made.push(new WeakRef(join), new WeakRef(settled));
      join = startBranches(settled).join;
    }
    await new Promise((resolve) => setImmediate(resolve));
    collect();
    const alive = made.filter((ref) => ref.deref() !== undefined).length;
    expect(alive).toBeLessThan(made.length / 10);
    expect(joinOutcome(join).status).toBe('succeeded');
  });
});

describe('the join a settle makes', () => {
  it('is made once per join and event: the same for the same event, a new one for another', () => {
    const join = startBranches(mapJoin(4)).join;
    const first = settledEvent('0', 'a');
    const settled = joinSettledBy(join, first);
    expect(settled).toEqual(settleBranch(join, '0', { outcome: 'completed', output: 'a' }));
    expect(joinSettledBy(join, first)).toBe(settled);
    // An equal event that is another object is another ask: the join it gives is equal, not the same.
    const again = joinSettledBy(join, settledEvent('0', 'a'));
    expect(again).not.toBe(settled);
    expect(again).toEqual(settled);
    const other = joinSettledBy(join, settledEvent('1', 'b'));
    expect(other).toEqual(settleBranch(join, '1', { outcome: 'completed', output: 'b' }));
    expect(other.branches[0]!.state).toBe('running');
    // The join asked of is unchanged.
    expect(join.branches.filter((b) => b.state === 'running')).toHaveLength(4);
  });
});

/** A map's join of `n` waiting branches, 8 at once. */
function mapJoin(n: number): RunJoin {
  return {
    stage: 'work',
    hop: 2,
    kind: 'map',
    need: n,
    all: true,
    collect: false,
    maxConcurrency: 8,
    branches: Array.from({ length: n }, (_, i) => ({
      key: String(i),
      state: 'waiting' as const,
      output: null,
      error: null,
      budget: null,
    })),
  };
}

/** A completed child's `CHILD_SETTLED` for branch `key` of hop 2. */
function settledEvent(key: string, output: JsonValue): Extract<WorkflowRunEvent, { type: 'CHILD_SETTLED' }> {
  return { type: 'CHILD_SETTLED', hop: 2, branch: key, outcome: 'completed', output };
}
