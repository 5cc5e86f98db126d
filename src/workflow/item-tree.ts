import type { RunUsage } from '../protocol/workflow.js';
import { addRunUsage, ZERO_RUN_USAGE } from '../protocol/workflow.js';
import type { HopRecord, ItemRecord } from './records.js';

/**
 * Work items as a tree: a child work item (a branch, an element, a workflow
 * stage's child) under its parent, in the order its parent started them.
 * Pure: `items list --tree`, `items show`, `top` and the console's item view
 * order their rows with it (`treeOrderBy` over any row that knows its id,
 * its parent and where it sits in it).
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
export function treeOrder(items: readonly ItemRecord[]): TreeRow[] {
  return treeOrderBy(items, (item) => ({
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

/**
 * An item's hops rolled up: its own hop rows and those of every item under
 * it among `items` (children, theirs, ...), as its usage rolls up.
 */
export function subtreeHops(item: ItemRecord, items: readonly ItemRecord[]): number {
  const children = new Map<string, ItemRecord[]>();
  for (const i of items) {
    const parent = parentOf(i);
    if (parent !== null) children.set(parent, [...(children.get(parent) ?? []), i]);
  }
  const seen = new Set<string>([item.id]);
  let total = item.hops;
  const stack = [...(children.get(item.id) ?? [])];
  while (stack.length > 0) {
    const next = stack.pop()!;
    if (seen.has(next.id)) continue;
    seen.add(next.id);
    total += next.hops;
    stack.push(...(children.get(next.id) ?? []));
  }
  return total;
}

/** What the tree needs of a row. */
export interface TreeNode {
  id: string;
  /** The parent's id (its `switchboard.parent` attribute), or null for a root. */
  parent: string | null;
  /** Where it sits in its parent: `<hop>:<branch>` (its `switchboard.branch` attribute), or null. */
  branch: string | null;
  /** When it was made (ms since the epoch), to order a parent's children of one hop. */
  createdAt: number;
}

/** One row of a tree: the node and how deep it sits (0: a root, or a child whose parent is not listed). */
export interface TreeRow<T = ItemRecord> {
  item: T;
  depth: number;
}

/** The rows in tree order: each parent followed by its children (by hop, then as started), depth-first; roots keep their order. */
export function treeOrderBy<T>(items: readonly T[], node: (item: T) => TreeNode): TreeRow<T>[] {
  const nodes = new Map(items.map((item) => [item, node(item)]));
  const listed = new Set([...nodes.values()].map((n) => n.id));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const item of items) {
    const parent = nodes.get(item)!.parent;
    if (parent === null || !listed.has(parent)) roots.push(item);
    else children.set(parent, [...(children.get(parent) ?? []), item]);
  }
  const hopOf = (item: T): number => {
    const at = nodes.get(item)!.branch;
    return at === null ? 0 : Number(at.slice(0, at.indexOf(':')));
  };
  const out: TreeRow<T>[] = [];
  const visit = (item: T, depth: number) => {
    out.push({ item, depth });
    const id = nodes.get(item)!.id;
    const mine = (children.get(id) ?? []).sort(
      (a, b) =>
        hopOf(a) - hopOf(b) ||
        nodes.get(a)!.createdAt - nodes.get(b)!.createdAt ||
        nodes.get(a)!.id.localeCompare(nodes.get(b)!.id),
    );
    for (const child of mine) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return out;
}
