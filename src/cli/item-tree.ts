import type { RunUsage } from '../protocol/workflow.js';
import { addRunUsage, ZERO_RUN_USAGE } from '../protocol/workflow.js';
import type { HopRecord, ItemRecord } from '../workflow/records.js';
import { type TreeRow, treeOrder as orderTree } from '../workflow/item-tree.js';

/**
 * Work items as a tree: a child work item (a branch, an element, a workflow
 * stage's child) under its parent, in the order its parent started them.
 * Pure: `items list --tree` and `items show` render what this returns.
 */

/** The parent a child work item names (its `switchboard.parent` attribute), or null for a root. */
export function parentOf(item: ItemRecord): string | null {
  const parent = item.attributes?.['switchboard.parent'];
  return typeof parent === 'string' ? parent : null;
}

/** Where a child sits in its parent: `<hop>:<branch>` (its `switchboard.branch` attribute), or null. */
export function branchOf(item: ItemRecord): string | null {
  const at = item.attributes?.['switchboard.branch'];
  return typeof at === 'string' ? at : null;
}

/** The items in tree order: each parent followed by its children (by hop, then as started), depth-first. */
export function treeOrder(items: readonly ItemRecord[]): TreeRow<ItemRecord>[] {
  return orderTree(items, (item) => ({
    id: item.id,
    parent: parentOf(item),
    branch: branchOf(item),
    createdAt: item.createdAt,
  }));
}

/** An item's own usage: what its own hops cost (its `usage` is the rollup, its children's in it). */
export function ownUsage(hops: readonly HopRecord[]): RunUsage {
  return hops.reduce((s, h) => addRunUsage(s, h.usage), { ...ZERO_RUN_USAGE });
}
