import type { BranchState, JoinBranch, RunJoin } from './workflow-run-join-shapes.js';

/**
 * What the join functions read of a join's branches without a pass over
 * them: each key's position, how many branches are in each state, and where
 * the waiting ones begin. A join of a map holds up to `maxItems` branches and
 * its run takes one `CHILD_SETTLED` per branch: reading these in constant
 * time keeps a branch's end from costing a pass over all of them.
 *
 * An index is derived from a join's branches, once per join object (a join is
 * a value: the functions that change one return a new one), and kept beside it
 * in a `WeakMap`; the join functions derive the index of the joins they return
 * from the one they read, without a pass. The joins stay plain JSON (what a
 * persisted snapshot holds), and every function that reads an index gives what
 * a pass over the branches would.
 */
export interface JoinIndex {
  /** Each key's position; `null` when two branches share a key (the join functions then read the branches). */
  at: ReadonlyMap<string, number> | null;
  running: number;
  succeeded: number;
  /** Branches failed or canceled. */
  failed: number;
  /** No branch before this position is waiting. */
  firstWaiting: number;
}

/** How many calls of the join functions back `changedSince` can look. */
const DERIVATION_STEPS = 4;

/**
 * What is kept beside one join object, in one `WeakMap` entry (a `WeakMap`
 * entry costs far more than a field; a settle reads and makes several joins):
 *
 * - `index`: its index;
 * - `token`: an object that names it in later joins' derivations, made the
 *   first time one is made from it;
 * - `derivation`: for a join made by `withBranches`, the joins it was made
 *   from, the latest first (at most `DERIVATION_STEPS`), each by its token
 *   with the positions replaced since it. Tokens, never the joins themselves:
 *   a join that held the one it was made from would keep every earlier join
 *   of the run alive (a map's thousand settles, a thousand copies of its
 *   branches);
 * - `settled`: the latest join made from it by settling one branch, with the
 *   event that asked (`settledOnce`): the routing, the run machine's guard and
 *   its effect each ask it of one event. It holds a join made from this one,
 *   never an earlier one, so no chain of joins is kept alive through it.
 */
interface JoinRecord {
  index: JoinIndex;
  token?: object;
  derivation: readonly { from: object; changed: readonly number[] }[];
  settled?: { by: object; join: RunJoin };
}

const records = new WeakMap<RunJoin, JoinRecord>();

/** The record of a join: made with its index (one pass) the first time a join object is read. */
function recordOf(join: RunJoin): JoinRecord {
  const known = records.get(join);
  if (known !== undefined) return known;
  const at = new Map<string, number>();
  let running = 0;
  let succeeded = 0;
  let failed = 0;
  let firstWaiting = -1;
  for (const [i, b] of join.branches.entries()) {
    at.set(b.key, i);
    if (b.state === 'running') running++;
    else if (b.state === 'succeeded') succeeded++;
    else if (b.state === 'failed' || b.state === 'canceled') failed++;
    else if (firstWaiting < 0) firstWaiting = i;
  }
  const record: JoinRecord = {
    index: {
      at: at.size === join.branches.length ? at : null,
      running,
      succeeded,
      failed,
      firstWaiting: firstWaiting < 0 ? join.branches.length : firstWaiting,
    },
    derivation: [],
  };
  records.set(join, record);
  return record;
}

/** The index of a join's branches (one pass the first time a join object is read, none after). */
export function joinIndex(join: RunJoin): JoinIndex {
  return recordOf(join).index;
}

/**
 * The join `make()` gives for `join` and `by` (an event), made once per join
 * and event, the latest event only: for a branch settled by an event, asked
 * of one join by several readers in turn.
 */
export function settledOnce(join: RunJoin, by: object, make: () => RunJoin): RunJoin {
  const record = recordOf(join);
  if (record.settled?.by === by) return record.settled.join;
  const settled = make();
  record.settled = { by, join: settled };
  return settled;
}

/** How a branch in `state` counts. */
function counted(state: BranchState): 'running' | 'succeeded' | 'failed' | null {
  if (state === 'running' || state === 'succeeded') return state;
  return state === 'failed' || state === 'canceled' ? 'failed' : null;
}

/**
 * The join `join` becomes with `branches` (the same keys in the same
 * positions, those at `changed` replaced), its index derived from `index`
 * (the index of `join`) without a pass; `firstWaiting`: a position before
 * which no branch of the new join waits.
 */
export function withBranches(
  join: RunJoin,
  index: JoinIndex,
  branches: JoinBranch[],
  changed: readonly number[],
  firstWaiting: number,
): RunJoin {
  const next: RunJoin = { ...join, branches };
  const derived = { ...index, firstWaiting };
  for (const i of changed) {
    const was = counted(join.branches[i]!.state);
    const now = counted(branches[i]!.state);
    if (was !== null) derived[was]--;
    if (now !== null) derived[now]++;
  }
  const from = recordOf(join);
  from.token ??= {};
  records.set(next, {
    index: derived,
    derivation: [{ from: from.token, changed }, ...from.derivation.slice(0, DERIVATION_STEPS - 1)],
  });
  return next;
}

/**
 * The positions whose branches may differ between `before` and `after`, when
 * `after` was made from `before` by at most `steps` calls of the join
 * functions (four at most, whatever `steps` says; each replacing the
 * branches at the positions it names, sharing the rest); null when it was
 * not (then only a pass over the branches tells).
 */
export function changedSince(before: RunJoin, after: RunJoin, steps = DERIVATION_STEPS): number[] | null {
  if (after === before) return [];
  // A join nothing was made from has no token: no step names it.
  const from = records.get(before)?.token;
  const made = records.get(after)?.derivation;
  if (made === undefined) return null;
  const changed: number[] = [];
  for (const step of made.slice(0, steps)) {
    changed.push(...step.changed);
    if (step.from === from) return changed;
  }
  return null;
}

/**
 * Whether the branches of `after` are those of `before` (the same keys in
 * the same positions): so when `after` was derived from `before` by the join
 * functions (an index's key map is shared along the way).
 */
export function samePositions(before: RunJoin, after: RunJoin): boolean {
  const a = records.get(before)?.index;
  const b = records.get(after)?.index;
  return a !== undefined && b !== undefined && a.at !== null && a.at === b.at;
}
