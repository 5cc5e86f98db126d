import type { RunUsage } from '../protocol/workflow.js';
import { addRunUsage, ZERO_RUN_USAGE } from '../protocol/workflow.js';
import type { HopRecord, ItemRecord } from './records.js';

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

/** One row of a tree: the item and how deep it sits (0: a root, or a child whose parent is not listed). */
export interface TreeRow {
  item: ItemRecord;
  depth: number;
}

/** The items in tree order: each parent followed by its children (by hop, then as started), depth-first. */
export function treeOrder(items: readonly ItemRecord[]): TreeRow[] {
  const listed = new Set(items.map((i) => i.id));
  const children = new Map<string, ItemRecord[]>();
  const roots: ItemRecord[] = [];
  for (const item of items) {
    const parent = parentOf(item);
    if (parent === null || !listed.has(parent)) roots.push(item);
    else children.set(parent, [...(children.get(parent) ?? []), item]);
  }
  const out: TreeRow[] = [];
  const visit = (item: ItemRecord, depth: number) => {
    out.push({ item, depth });
    const mine = (children.get(item.id) ?? []).sort(
      (a, b) => hopOf(a) - hopOf(b) || a.createdAt - b.createdAt || a.id.localeCompare(b.id),
    );
    for (const child of mine) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return out;
}

function hopOf(item: ItemRecord): number {
  const at = branchOf(item);
  return at === null ? 0 : Number(at.slice(0, at.indexOf(':')));
}

/** An item's own usage: what its own hops cost (its `usage` is the rollup, its children's in it). */
export function ownUsage(hops: readonly HopRecord[]): RunUsage {
  return hops.reduce((s, h) => addRunUsage(s, h.usage), { ...ZERO_RUN_USAGE });
}
