/**
 * Work items as a tree: a child work item (a branch, an element, a workflow
 * stage's child) under its parent, in the order its parent started them.
 * Pure, over any row that knows its id, its parent and where it sits in it:
 * `items list --tree`, `items show` and `top` order their rows with it.
 */

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
export interface TreeRow<T> {
  item: T;
  depth: number;
}

/** The rows in tree order: each parent followed by its children (by hop, then as started), depth-first; roots keep their order. */
export function treeOrder<T>(items: readonly T[], node: (item: T) => TreeNode): TreeRow<T>[] {
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
