import type { RunUsage } from '../protocol/workflow.js';
import { addRunUsage, ZERO_RUN_USAGE } from '../protocol/workflow.js';
import type { HopRecord, ItemRecord } from './records.js';

/**
 * Work items as a tree: a child work item (a branch, an element, a workflow
 * stage's child) under its parent, in the order its parent started them
 * (by hop, then by its `switchboard.position`, written when it was made).
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

/**
 * Where a child sits among the siblings of its hop (its `switchboard.position`
 * attribute: its branch's place in the stage, its element's in the list, its
 * place among the children a handler spawned), or null for a root.
 */
export function positionOf(item: ItemRecord): number | null {
  const at = item.attributes?.['switchboard.position'];
  return typeof at === 'number' && Number.isInteger(at) && at >= 0 ? at : null;
}

/** The node of an item: its id, parent, branch, position and creation. */
export function treeNodeOf(item: ItemRecord): TreeNode {
  return {
    id: item.id,
    parent: parentOf(item),
    branch: branchOf(item),
    position: positionOf(item),
    createdAt: item.createdAt,
  };
}

/** The items in tree order: each parent followed by its children (by hop, then as started), depth-first. */
export function treeOrder(items: readonly ItemRecord[]): TreeRow[] {
  return treeOrderBy(items, treeNodeOf);
}

/** A parent's children in the order it started them (by hop, then position), as the tree lists them. */
export function siblingOrder(children: readonly ItemRecord[]): ItemRecord[] {
  const nodes = new Map(children.map((c) => [c, treeNodeOf(c)]));
  return [...children].sort((a, b) => compareSiblings(nodes.get(a)!, nodes.get(b)!));
}

/**
 * The order of two children of one parent: by the hop that started them,
 * then by their position in it (children made in one commit share their
 * creation time: the position keeps the order their parent gave them), then
 * by creation and id (rows without a position).
 */
export function compareSiblings(a: TreeNode, b: TreeNode): number {
  return (
    hopOfBranch(a.branch) - hopOfBranch(b.branch) ||
    (a.position ?? Number.MAX_SAFE_INTEGER) - (b.position ?? Number.MAX_SAFE_INTEGER) ||
    a.createdAt - b.createdAt ||
    a.id.localeCompare(b.id)
  );
}

/** The hop of a `<hop>:<branch>` (0 for none). */
function hopOfBranch(at: string | null): number {
  if (at === null) return 0;
  const hop = Number(at.slice(0, at.indexOf(':')));
  return Number.isFinite(hop) ? hop : 0;
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
  /** Where it sits among its hop's children (its `switchboard.position` attribute), or null (a root, or a row from before positions). */
  position: number | null;
  /** When it was made (ms since the epoch): orders children without a position. */
  createdAt: number;
}

/** One row of a tree: the node and how deep it sits (0: a root, or a child whose parent is not listed). */
export interface TreeRow<T = ItemRecord> {
  item: T;
  depth: number;
}

/** The rows in tree order: each parent followed by its children (`compareSiblings`), depth-first; roots keep their order. */
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
  const out: TreeRow<T>[] = [];
  const visit = (item: T, depth: number) => {
    out.push({ item, depth });
    const id = nodes.get(item)!.id;
    const mine = (children.get(id) ?? []).sort((a, b) => compareSiblings(nodes.get(a)!, nodes.get(b)!));
    for (const child of mine) visit(child, depth + 1);
  };
  for (const root of roots) visit(root, 0);
  return out;
}
