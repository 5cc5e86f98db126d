import type { JsonValue } from '../protocol/audit.js';
import type { BudgetCarve, Stage, WorkflowDefinition } from '../protocol/workflow.js';
import { readPointer } from '../workflow/conditions.js';
import type { ItemBudget } from '../workflow/records.js';
import { changedSince, joinIndex, samePositions, withBranches } from './workflow-run-join-index.js';
import type { BranchState, JoinBranch, RunJoin } from './workflow-run-join-shapes.js';

export type { BranchState, JoinBranch, JoinKind, RunJoin } from './workflow-run-join-shapes.js';

/**
 * The children of a parallel, map or workflow stage, as the run keeps them:
 * which branch runs, waits or settled, what each may spend, and when the
 * join is decided (`all`, `any`, `atLeast`). Pure: the run machine opens a
 * join when it enters such a stage, settles a branch per `CHILD_SETTLED`,
 * and routes the stage's outcome once `joinOutcome` says it is decided.
 */

/** How a decided join ends the stage: its output, or why it failed. */
export type JoinOutcome =
  | { status: 'open' }
  | { status: 'succeeded'; output: JsonValue }
  | { status: 'failed'; errorType: string; message: string };

/** The default of a map stage's `maxConcurrency`. */
export const DEFAULT_MAP_CONCURRENCY = 8;
/** The default of a map stage's `maxItems`. */
export const DEFAULT_MAP_MAX_ITEMS = 1_000;

/** Whether a stage runs children (parallel branches, a map, another workflow) instead of one hop. */
export function isFanOutStage(stage: Stage | undefined): boolean {
  return (
    stage !== undefined && (stage.parallel !== undefined || stage.forEach !== undefined || stage.role === undefined)
  );
}

/** What opening a join gives: the join, or a failure of the stage at once (a map over something not a list). */
export type JoinOpening =
  | { kind: 'open'; join: RunJoin }
  | { kind: 'empty'; output: JsonValue }
  | { kind: 'invalid'; errorType: string; message: string };

/** What a parent has used, its children's settled usage and hops counted in. */
export interface ParentUsed {
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  /** Hops taken: the parent's own (the fan-out stage's or the suspended hop's counted) and its children's. */
  hops?: number;
}

/** The remaining budget of a parent: what its budget allows past what it used (`null`: no bound). */
function remaining(budget: ItemBudget | null, used: ParentUsed): ItemBudget | null {
  if (budget === null) return null;
  const out: ItemBudget = {};
  if (budget.maxTokens !== undefined) out.maxTokens = budget.maxTokens - used.inputTokens - used.outputTokens;
  if (budget.maxCostUsd !== undefined) out.maxCostUsd = Math.round((budget.maxCostUsd - used.costUsd) * 1e9) / 1e9;
  if (budget.maxHops !== undefined) out.maxHops = budget.maxHops - (used.hops ?? 0);
  return out;
}

/**
 * A child's budget: its explicit carve (capped at what the parent has left),
 * or an equal share of what the parent has left among `n` children; no
 * bound when the parent has none and no carve is given. A carve's
 * `deadline` is not a budget: see `carvedBranches`.
 */
export function carve(explicit: BudgetCarve | undefined, left: ItemBudget | null, n: number): ItemBudget | null {
  if (explicit === undefined && left === null) return null;
  const out: ItemBudget = {};
  const share = (total: number | undefined) => (total === undefined ? undefined : Math.floor(total / n));
  const tokens = explicit?.maxTokens ?? share(left?.maxTokens);
  const cost =
    explicit?.maxCostUsd ??
    (left?.maxCostUsd === undefined ? undefined : Math.floor((left.maxCostUsd / n) * 1e9) / 1e9);
  const hops = explicit?.maxHops ?? share(left?.maxHops);
  if (tokens !== undefined) out.maxTokens = Math.max(1, Math.min(tokens, left?.maxTokens ?? tokens));
  if (cost !== undefined) out.maxCostUsd = Math.max(1e-9, Math.min(cost, left?.maxCostUsd ?? cost));
  if (hops !== undefined) out.maxHops = Math.max(1, Math.min(hops, left?.maxHops ?? hops));
  return Object.keys(out).length === 0 ? null : out;
}

/**
 * The carves of `n` children in order: each its explicit carve, or an equal
 * share of what the explicit carves leave of what the parent has left; each
 * capped at what the carves before it left, so that the children's carves
 * together never pass what the parent has left (but each child gets at least
 * 1 token, 1e-9 USD, 1 hop: one hop in flight per branch at most past the
 * parent's budget).
 */
export function carveAll(
  explicit: readonly (BudgetCarve | undefined)[],
  left: ItemBudget | null,
): (ItemBudget | null)[] {
  // Each dimension's share: what the explicit values leave, split among the children without one.
  const shares: ItemBudget = {};
  for (const key of ['maxTokens', 'maxCostUsd', 'maxHops'] as const) {
    const total = left?.[key];
    if (total === undefined) continue;
    const given = explicit.filter((e) => e?.[key] !== undefined);
    const sharers = explicit.length - given.length;
    if (sharers === 0) continue;
    const free = Math.max(0, total - given.reduce((sum, e) => sum + e![key]!, 0)) / sharers;
    shares[key] = key === 'maxCostUsd' ? Math.floor(free * 1e9) / 1e9 : Math.floor(free);
  }
  const rest = left === null ? null : { ...left };
  return explicit.map((e) => {
    if (e === undefined && left === null) return null;
    const wanted: BudgetCarve = {};
    for (const key of ['maxTokens', 'maxCostUsd', 'maxHops'] as const) {
      const value = e?.[key] ?? shares[key];
      if (value !== undefined) wanted[key] = value;
    }
    const capped = rest === null ? carve(wanted, null, 1) : carve(wanted, rest, 1);
    if (capped !== null && rest !== null) {
      if (rest.maxTokens !== undefined) rest.maxTokens -= capped.maxTokens ?? 0;
      if (rest.maxCostUsd !== undefined)
        rest.maxCostUsd = Math.round((rest.maxCostUsd - (capped.maxCostUsd ?? 0)) * 1e9) / 1e9;
      if (rest.maxHops !== undefined) rest.maxHops -= capped.maxHops ?? 0;
    }
    return capped;
  });
}

/** What a previous output holds, for a map's refusal: its fields, or what kind of value it is. */
function outputShape(output: unknown): string {
  if (output === null || output === undefined) return 'there is none';
  if (Array.isArray(output)) return 'a list';
  if (typeof output !== 'object') return typeof output === 'string' ? 'a text' : `a ${typeof output}`;
  const keys = Object.keys(output);
  if (keys.length === 0) return 'an empty object';
  return `an object with ${keys.slice(0, 8).join(', ')}${keys.length > 8 ? ', ...' : ''}`;
}

/**
 * The join a run opens on entering a fan-out stage at `hop`, from the
 * previous stage's `output` (a map reads its list there), the parent's
 * budget and what it has used so far.
 */
export function openJoin(
  def: WorkflowDefinition,
  stageName: string,
  hop: number,
  output: unknown,
  budget: ItemBudget | null,
  used: ParentUsed,
): JoinOpening {
  const stage = def.stages[stageName]!;
  const left = remaining(budget, used);
  const branches = (keys: readonly string[], explicit: readonly (BudgetCarve | undefined)[]): JoinBranch[] =>
    carvedBranches(keys, explicit, left, 'waiting');
  if (stage.forEach !== undefined) {
    const list = readPointer(output ?? null, stage.forEach);
    if (!list.found || !Array.isArray(list.value)) {
      return {
        kind: 'invalid',
        errorType: 'MapInputInvalid',
        message: `stage ${stageName}: forEach "${stage.forEach}" ${list.found ? 'is not a list' : `is not in the previous output (${outputShape(output)})`}: the data part of the stage run just before this one must hold a list there`,
      };
    }
    const max = stage.maxItems ?? DEFAULT_MAP_MAX_ITEMS;
    if (list.value.length > max) {
      return {
        kind: 'invalid',
        errorType: 'MapTooLarge',
        message: `stage ${stageName}: forEach "${stage.forEach}" has ${list.value.length} elements, over its maxItems of ${max}: raise maxItems or split the list`,
      };
    }
    const n = list.value.length;
    if (n === 0) return { kind: 'empty', output: [] };
    const keys = list.value.map((_, i) => String(i));
    return {
      kind: 'open',
      join: {
        stage: stageName,
        hop,
        kind: 'map',
        need: n,
        all: true,
        collect: false,
        maxConcurrency: stage.maxConcurrency ?? DEFAULT_MAP_CONCURRENCY,
        branches: branches(
          keys,
          keys.map(() => stage.budget),
        ),
      },
    };
  }
  if (stage.parallel !== undefined) {
    const names = Object.keys(stage.parallel.branches);
    const n = names.length;
    const mode = stage.parallel.join;
    const need = mode === 'all' ? n : mode === 'any' ? 1 : Math.min(mode.atLeast, n);
    return {
      kind: 'open',
      join: {
        stage: stageName,
        hop,
        kind: 'parallel',
        need,
        all: mode === 'all',
        collect: stage.parallel.onBranchFailure === 'collect',
        maxConcurrency: n,
        branches: branches(
          names,
          names.map((name) => stage.parallel!.branches[name]!.budget ?? stage.budget),
        ),
      },
    };
  }
  return {
    kind: 'open',
    join: {
      stage: stageName,
      hop,
      kind: 'workflow',
      need: 1,
      all: true,
      collect: false,
      maxConcurrency: 1,
      branches: branches(['child'], [stage.budget]),
    },
  };
}

/**
 * The join of a hop that started `children` itself (a handler's `spawn`): all
 * running at once, every outcome kept (the handler decides what a failure
 * means), each budget its explicit carve or an equal share of what is left.
 */
export function spawnJoin(
  stage: string,
  hop: number,
  children: readonly { key: string; budget?: BudgetCarve | undefined }[],
  budget: ItemBudget | null,
  used: ParentUsed,
): RunJoin {
  const left = remaining(budget, used);
  return {
    stage,
    hop,
    kind: 'spawn',
    need: children.length,
    all: true,
    collect: true,
    maxConcurrency: children.length,
    branches: carvedBranches(
      children.map((c) => c.key),
      children.map((c) => c.budget),
      left,
      'running',
    ),
  };
}

/** Branches of these keys, each with its carve of what the parent has left (`carveAll`) and its carve's deadline. */
function carvedBranches(
  keys: readonly string[],
  explicit: readonly (BudgetCarve | undefined)[],
  left: ItemBudget | null,
  state: 'waiting' | 'running',
): JoinBranch[] {
  const budgets = carveAll(explicit, left);
  return keys.map((key, i) => ({
    key,
    state,
    output: null,
    error: null,
    budget: budgets[i] ?? null,
    ...(explicit[i]?.deadline === undefined ? {} : { deadlineMs: explicit[i]!.deadline! }),
  }));
}

/** The join with its next waiting branches started, up to `maxConcurrency` running; and the keys it started. */
export function startBranches(join: RunJoin): { join: RunJoin; started: string[] } {
  const index = joinIndex(join);
  let running = index.running;
  const n = join.branches.length;
  if (running >= join.maxConcurrency || index.firstWaiting >= n) return { join, started: [] };
  // No branch before `firstWaiting` waits: the pass starts there and stops once `maxConcurrency` run.
  const started: string[] = [];
  const changed: number[] = [];
  let branches: JoinBranch[] | undefined;
  let i = index.firstWaiting;
  for (; i < n && running < join.maxConcurrency; i++) {
    const b = join.branches[i]!;
    if (b.state !== 'waiting') continue;
    branches ??= join.branches.slice();
    branches[i] = { ...b, state: 'running' as const };
    running++;
    started.push(b.key);
    changed.push(i);
  }
  if (branches === undefined) return { join, started };
  return { join: withBranches(join, index, branches, changed, i), started };
}

/** Where branch `key` sits in the join (its place in the stage, the list or the spawn), or undefined. */
export function branchPosition(join: RunJoin, key: string): number | undefined {
  const at = joinIndex(join).at;
  if (at !== null) return at.get(key);
  const i = join.branches.findIndex((b) => b.key === key);
  return i < 0 ? undefined : i;
}

/** Whether `key` names a running branch of the join. */
export function branchRunning(join: RunJoin | null, hop: number, key: string): boolean {
  if (join === null || join.hop !== hop) return false;
  const at = joinIndex(join).at;
  if (at === null) return join.branches.some((b) => b.key === key && b.state === 'running');
  const i = at.get(key);
  return i !== undefined && join.branches[i]!.state === 'running';
}

/** The join with branch `key` settled. */
export function settleBranch(
  join: RunJoin,
  key: string,
  settled: {
    outcome: 'completed' | 'failed' | 'canceled';
    output?: JsonValue;
    error?: { type: string; message: string };
  },
): RunJoin {
  const state: BranchState =
    settled.outcome === 'completed' ? 'succeeded' : settled.outcome === 'failed' ? 'failed' : 'canceled';
  const settle = (b: JoinBranch): JoinBranch => ({
    ...b,
    state,
    output: settled.output ?? null,
    error:
      state === 'succeeded'
        ? null
        : (settled.error ?? { type: 'ChildCanceled', message: `branch ${key} was canceled` }),
  });
  const index = joinIndex(join);
  const i = index.at?.get(key);
  if (index.at === null || i === undefined) {
    return { ...join, branches: join.branches.map((b) => (b.key === key ? settle(b) : b)) };
  }
  const branches = join.branches.slice();
  branches[i] = settle(join.branches[i]!);
  // The branch no longer waits (if it did): no branch before the first waiting one waits still.
  return withBranches(join, index, branches, [i], index.firstWaiting);
}

/** The joined output: a map's outputs in the list's order, a parallel stage's by branch name, a workflow's child's output. */
export function joinOutput(join: RunJoin): JsonValue {
  const branchValue = (b: JoinBranch): JsonValue =>
    b.state === 'succeeded'
      ? b.output
      : b.error === null
        ? null
        : { error: { type: b.error.type, message: b.error.message } };
  if (join.kind === 'map' || join.kind === 'spawn') return join.branches.map(branchValue);
  if (join.kind === 'workflow') return branchValue(join.branches[0]!);
  const out: Record<string, JsonValue> = {};
  for (const b of join.branches) out[b.key] = branchValue(b);
  return out;
}

/** Whether the join is decided, and how. */
export function joinOutcome(join: RunJoin): JoinOutcome {
  const n = join.branches.length;
  const index = joinIndex(join);
  const succeeded = index.succeeded;
  const pending = n - succeeded - index.failed;
  const failure = (): JoinOutcome => {
    const failed = join.branches.filter((b) => b.state === 'failed' || b.state === 'canceled');
    return failureOf(join, failed, succeeded);
  };
  if (join.collect && join.all) {
    return pending === 0 ? { status: 'succeeded', output: joinOutput(join) } : { status: 'open' };
  }
  if (succeeded >= join.need) return { status: 'succeeded', output: joinOutput(join) };
  if (!join.collect && join.all && index.failed > 0) return failure();
  if (succeeded + pending < join.need) return failure();
  return { status: 'open' };
}

/** How a join failed: the failed branches (the first five named), the successes, what it needed. */
function failureOf(join: RunJoin, failed: readonly JoinBranch[], succeeded: number): JoinOutcome {
  const n = join.branches.length;
  return {
    status: 'failed',
    errorType: join.kind === 'workflow' ? (failed[0]?.error?.type ?? 'ChildFailed') : 'BranchFailed',
    message:
      join.kind === 'workflow'
        ? `the child work item of stage ${join.stage} ${failed[0]?.state === 'canceled' ? 'was canceled' : `failed: ${failed[0]?.error?.message ?? ''}`}`
        : `stage ${join.stage}: ${failed.length} of ${n} branch${n === 1 ? '' : 'es'} failed (${failed
            .slice(0, 5)
            .map((b) => `${b.key}: ${b.error?.type ?? b.state}`)
            .join(', ')}${failed.length > 5 ? ', ...' : ''}), ${succeeded} succeeded, ${join.need} needed`,
  };
}

/** The branches still running (to cancel when the join is decided or abandoned). */
export function runningBranches(join: RunJoin | null): string[] {
  return join === null || joinIndex(join).running === 0
    ? []
    : join.branches.filter((b) => b.state === 'running').map((b) => b.key);
}

/**
 * The branches running in `before` that are no longer running in `after`
 * (`null`: the run left the join; a join of another hop counts as none) but
 * `settled`, in order: the children to cancel when a run leaves or decides
 * a join.
 */
export function abandonedBranches(before: RunJoin, after: RunJoin | null, settled: string | null): string[] {
  if (after === before || joinIndex(before).running === 0) return [];
  if (after !== null && after.hop === before.hop && samePositions(before, after)) {
    const abandoned = (i: number) => {
      const b = before.branches[i]!;
      return b.state === 'running' && after.branches[i]!.state !== 'running' && b.key !== settled;
    };
    // Made from `before` by the join functions: only the positions they replaced can differ.
    const changed = changedSince(before, after);
    if (changed !== null) {
      return [...new Set(changed)]
        .sort((x, y) => x - y)
        .filter(abandoned)
        .map((i) => before.branches[i]!.key);
    }
    const out: string[] = [];
    for (let i = 0; i < before.branches.length; i++) if (abandoned(i)) out.push(before.branches[i]!.key);
    return out;
  }
  const still = new Set(after !== null && after.hop === before.hop ? runningBranches(after) : []);
  return runningBranches(before).filter((key) => !still.has(key) && key !== settled);
}

/** What a child of the join is given as input: its list element (a map), else the previous stage's output. */
export function branchInput(join: RunJoin, def: WorkflowDefinition, key: string, output: unknown): JsonValue | null {
  if (join.kind === 'map') {
    const list = readPointer(output ?? null, def.stages[join.stage]!.forEach!);
    return list.found && Array.isArray(list.value) ? ((list.value[Number(key)] ?? null) as JsonValue) : null;
  }
  return output === undefined ? null : (output as JsonValue);
}
