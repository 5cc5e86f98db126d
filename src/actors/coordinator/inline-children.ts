import {
  type Decision,
  type ItemView,
  type SettleBody,
  type SpawnBody,
  ZERO_TREE_USAGE,
} from '../../decisions/coordinator-decisions.js';
import { branchRunning } from '../../machines/workflow-run-join.js';
import type { Context } from '../../telemetry/tracing.js';
import { parentOf } from '../../workflow/item-tree.js';
import type { AncestorRollup } from '../../workflow/records.js';
import type { ChildParams, Step } from './engine-step.js';
import type { Ancestor } from './item-lineage.js';

/**
 * Children made and settled in the commit of the decision that leads to it.
 *
 * A decision that starts a stage's children writes one `spawn` row for each,
 * and a child's end a `settle` row for its parent; carried out after the
 * commit, each row is a turn and a commit of its own. A child whose branch
 * this very decision started cannot exist yet, so the engine decides its
 * creation in the same batch; a child's end is settled in its parent in the
 * same batch when the parent is live (in memory), as the row's turn would
 * have settled it. Each is committed with the decision that led to it, and
 * its row is not written at all. Anything else (a row whose branch was
 * running already, a child whose workflow cannot be found, a parent not in
 * memory, one whose budget the batch has not read) stays a row, carried out
 * as before.
 */

/** What the Coordinator gives the engine for a child created in its parent's commit. */
export interface InlineChild {
  /** The child's creation, as a carried-out `spawn` row would ask for it. */
  params: ChildParams;
  /** The context the child's decisions continue (its item's trace). */
  trace: Context | undefined;
  /** Told once the commit is decided: committed (no error) or not. */
  finish(error?: unknown): void;
}

/** Prepares a `spawn` row's child for creation now (undefined: it stays a row). */
export type InlineChildren = (body: SpawnBody) => InlineChild | undefined;

/**
 * The `spawn` rows of `decision` whose branch it started: not running in its
 * parent's run before the decision (`before`), running after it. Their
 * children cannot exist yet.
 */
export function freshSpawns(before: ItemView | undefined, decision: Decision): SpawnBody[] {
  const changes = decision.changes;
  if (changes === null || decision.view?.run === null || decision.view?.run === undefined) return [];
  const after = decision.view.run.context.join ?? null;
  const prior = before?.run?.context.join ?? null;
  const fresh: SpawnBody[] = [];
  for (const row of changes.outbox) {
    if (row.kind !== 'spawn') continue;
    const body = row.body as SpawnBody;
    if (body.parentId !== changes.itemId) continue;
    if (branchRunning(prior, body.hop, body.branch) || !branchRunning(after, body.hop, body.branch)) continue;
    fresh.push(body);
  }
  return fresh;
}

/** The `settle` rows of `decision`: its item's end, for its parent. */
export function settlesOf(decision: Decision): SettleBody[] {
  const changes = decision.changes;
  if (changes === null) return [];
  const settles: SettleBody[] = [];
  for (const row of changes.outbox) if (row.kind === 'settle') settles.push(row.body as SettleBody);
  return settles;
}

/**
 * The parent's state a child's end is settled in within the batch, as the
 * carried-out `settle` row's turn would see it (its ancestors and its own
 * subtree's usage from what the batch has read and charged, `childChain`
 * being the settling child's ancestors): undefined when the parent is not
 * live here, or the batch has not read what it needs (the row is then
 * carried out after the commit).
 */
export function settlingView(
  state: ItemView | undefined,
  parentId: string,
  childChain: readonly Ancestor[] | undefined,
  charged: ReadonlyMap<string, AncestorRollup>,
): { view: ItemView; chain: Ancestor[] } | undefined {
  if (state === undefined || state.run === null || state.item.finishedAt !== null) return undefined;
  if (childChain === undefined || childChain[0]?.id !== parentId) return undefined;
  const chain = childChain.slice(1).map((a) => ({ id: a.id, budget: a.budget }));
  const ancestors: AncestorRollup[] = [];
  for (const a of chain) {
    const known = charged.get(a.id);
    if (known === undefined) return undefined;
    ancestors.push(known);
  }
  let view: ItemView = ancestors.length === 0 ? state : { ...state, ancestors };
  if (state.item.budget !== null) {
    const own = charged.get(parentId);
    if (own === undefined) return undefined;
    view = { ...view, tree: own.tree };
  }
  return { view, chain };
}

/** `decision` without the rows (`spawn`, `settle`) whose bodies this batch carried out itself. */
export function withoutRows(decision: Decision, done: ReadonlySet<unknown>): Decision {
  const changes = decision.changes;
  if (changes === null || done.size === 0) return decision;
  const outbox = changes.outbox.filter((row) => !done.has(row.body));
  return { ...decision, changes: { ...changes, outbox } };
}

/**
 * The ancestors of a child that `decision` (its parent's) started, as a
 * carried-out `spawn` row's creation would have them, from what the batch
 * has read (`chains`) and charged so far (`charged`): undefined when the
 * batch has not read them (the child is then created from its row).
 */
export function inlineAncestors(
  parentId: string,
  decision: Decision,
  chains: ReadonlyMap<string, readonly Ancestor[]>,
  charged: ReadonlyMap<string, AncestorRollup>,
): AncestorRollup[] | undefined {
  const item = decision.view?.item;
  if (item === undefined || item.id !== parentId) return undefined;
  // A parent with a budget is charged by the batch (read before it); one without has nothing to govern.
  const parent =
    charged.get(parentId) ?? (item.budget === null ? { id: parentId, budget: null, tree: ZERO_TREE_USAGE } : undefined);
  if (parent === undefined) return undefined;
  if (parentOf(item) === null) return [parent];
  const above = chains.get(parentId);
  if (above === undefined) return undefined;
  const rest: AncestorRollup[] = [];
  for (const a of above) {
    const known = charged.get(a.id);
    if (known === undefined) return undefined;
    rest.push(known);
  }
  return [parent, ...rest];
}

/** `step` with `more` (a child created in its commit) added: its rows continue `more`'s context. */
export function withStep(step: Step, more: Step): void {
  step.events.push(...more.events);
  for (const [id, item] of more.items) step.items.set(id, item);
  step.rows.push(...more.rows);
  if (more.outbox.length === 0) return;
  step.outbox = [...step.outbox, ...more.outbox];
  if (more.trace === step.trace) return;
  step.rowTraces ??= new Map();
  for (const row of more.outbox) step.rowTraces.set(row.id, more.trace);
}
