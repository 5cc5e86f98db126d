import { type RunUsage, ZERO_RUN_USAGE, addRunUsage } from '../../protocol/workflow.js';
import { budgetStatus } from '../../workflow/governance.js';
import type { AncestorRollup, ItemBudget, TreeRollup, TreeUsage, UsageRow } from '../../workflow/records.js';

/**
 * Budgets over a tree of work items, live: what a decision charged (its
 * usage rows, the run hops it took) rolls up into the item's subtree usage
 * and every ancestor's in the same commit, and a hop anywhere in the tree is
 * governed against every ancestor's budget as that rollup stands. Pure.
 */

/** What a decision charged, for the item and its ancestors (null: nothing charged). */
export function treeRollup(
  itemId: string,
  ancestors: readonly AncestorRollup[],
  rows: readonly UsageRow[],
  hopsTaken: number,
): TreeRollup | null {
  const hops = Math.max(0, hopsTaken);
  if (rows.length === 0 && hops === 0) return null;
  let usage: RunUsage = { ...ZERO_RUN_USAGE };
  for (const r of rows) {
    usage = addRunUsage(usage, {
      inputTokens: r.inputTokens,
      outputTokens: r.outputTokens,
      costUsd: r.costUsd,
      elapsedMs: r.elapsedMs,
    });
  }
  return { itemIds: [itemId, ...ancestors.map((a) => a.id)], usage, hops };
}

/** A subtree's usage with a charge added. */
export function addTreeUsage(tree: TreeUsage, charge: TreeUsage): TreeUsage {
  return { usage: addRunUsage(tree.usage, charge.usage), hops: tree.hops + charge.hops };
}

/** An ancestor with a charge of its subtree added (the state a later decision of the same batch sees). */
export function withCharge(ancestor: AncestorRollup, charge: TreeUsage): AncestorRollup {
  return { ...ancestor, tree: addTreeUsage(ancestor.tree, charge) };
}

/** The subtree usage of an item nothing was charged to yet. */
export const ZERO_TREE_USAGE: TreeUsage = Object.freeze({ usage: ZERO_RUN_USAGE, hops: 0 });

/**
 * The first ancestor whose budget its subtree has spent (at or over a limit,
 * as the live rollup stands), and why: a hop under it is denied and fails
 * its item `BUDGET_EXCEEDED`. Null when every ancestor has budget left.
 */
export function spentAncestor(
  ancestors: readonly AncestorRollup[],
): { ancestor: AncestorRollup; reason: string } | null {
  for (const ancestor of ancestors) {
    if (ancestor.budget === null) continue;
    const status = budgetStatus(ancestor.budget, ancestor.tree.usage, ancestor.tree.hops);
    if (status !== null) return { ancestor, reason: `${ancestor.id}: ${status.reason}` };
  }
  return null;
}

/**
 * Why an item's own budget is spent by its subtree's live usage (its hops'
 * and every descendant's, children still running included), or null. Tokens
 * and dollars: its hops are counted by its budget policy (its own and its
 * ended children's), and each child's by its carve and every ancestor's.
 */
export function spentSubtree(budget: ItemBudget | null, tree: TreeUsage | undefined): string | null {
  if (budget === null || tree === undefined) return null;
  return budgetStatus(budget, tree.usage)?.reason ?? null;
}
