import {
  type Decision,
  type ItemView,
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
 * Children created in the commit of the decision that started them.
 *
 * A decision that starts a stage's children writes one `spawn` row for each;
 * carried out after the commit, each row is a turn and a commit of its own.
 * A child whose branch this very decision started cannot exist yet, so the
 * engine decides its creation in the same batch and commits both together:
 * its row, run and first hop are written with the decision that asked for
 * it, and its `spawn` row is not written at all. Anything else (a row whose
 * branch was running already, a child whose workflow cannot be found, a
 * parent whose budget the batch has not read) stays a row, carried out as
 * before.
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

/** `decision` without the `spawn` rows of the children created with it. */
export function withoutSpawns(decision: Decision, created: ReadonlySet<SpawnBody>): Decision {
  const changes = decision.changes;
  if (changes === null || created.size === 0) return decision;
  const outbox = changes.outbox.filter((row) => !(row.kind === 'spawn' && created.has(row.body as SpawnBody)));
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
