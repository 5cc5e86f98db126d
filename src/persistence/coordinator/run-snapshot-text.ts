import { randomUUID } from 'node:crypto';

/**
 * A run snapshot's JSON text, as `JSON.stringify` writes it, with the
 * branches of its open join written from a cache: a join's branch is a value
 * (the join functions replace a branch that changes and share the rest), so
 * its text is written once, and a snapshot written again after one branch
 * changed writes only that branch anew. A map's parent holds up to
 * `maxItems` branches and its snapshot is written after each of its
 * children's ends: the cache keeps that write from costing a pass over every
 * branch's fields.
 */

/** Branch texts by branch object (a branch is never changed in place: a changed one is a new object). */
const branchTexts = new WeakMap<object, string>();

/** Joins with fewer branches are written whole (nothing to gain). */
const CACHED_FROM = 16;

/** What stands for the branches while the rest is written: a string no snapshot holds (a value made per process). */
const PLACEHOLDER = `switchboard-branches-${randomUUID()}`;
const PLACEHOLDER_JSON = JSON.stringify(PLACEHOLDER);

/** `JSON.stringify(snapshot)`, its join's branches written from the cache. */
export function runSnapshotText(snapshot: unknown): string {
  const context = (snapshot as { context?: unknown } | null | undefined)?.context;
  const join = (context as { join?: unknown } | null | undefined)?.join as { branches?: unknown } | null | undefined;
  const branches = join?.branches;
  if (!Array.isArray(branches) || branches.length < CACHED_FROM) return JSON.stringify(snapshot);
  const texts: string[] = new Array(branches.length);
  for (let i = 0; i < branches.length; i++) {
    const branch: unknown = branches[i];
    if (branch === null || typeof branch !== 'object') return JSON.stringify(snapshot);
    texts[i] = branchText(branch);
  }
  // The same keys in the same order, the branches replaced by the placeholder: written once, then swapped.
  const rest = JSON.stringify({
    ...(snapshot as object),
    context: { ...(context as object), join: { ...join, branches: PLACEHOLDER } },
  });
  const at = rest.indexOf(PLACEHOLDER_JSON);
  if (at < 0 || rest.indexOf(PLACEHOLDER_JSON, at + 1) >= 0) return JSON.stringify(snapshot);
  return `${rest.slice(0, at)}[${texts.join(',')}]${rest.slice(at + PLACEHOLDER_JSON.length)}`;
}

/** A branch's JSON text, from the cache (written once per branch object). */
export function branchText(branch: object): string {
  let text = branchTexts.get(branch);
  if (text === undefined) {
    text = JSON.stringify(branch);
    branchTexts.set(branch, text);
  }
  return text;
}

/** What stands for an open join's branches in a snapshot's text when they are kept in rows of their own. */
export interface BranchRowsMark {
  rows: number;
}

/**
 * A run snapshot to write with its open join's branches apart (the SQLite
 * store keeps them in rows of their own, one per branch, and writes a
 * branch's row only when the branch changed): `text` is the snapshot's JSON
 * with the branches replaced by `{"rows": n}`, and `branches` the branch
 * objects in their order. A join of fewer than 16 branches, or none, is kept
 * in the text (`branches` null).
 */
export function splitRunSnapshot(snapshot: unknown): { text: string; branches: readonly object[] | null } {
  const context = (snapshot as { context?: unknown } | null | undefined)?.context;
  const join = (context as { join?: unknown } | null | undefined)?.join as { branches?: unknown } | null | undefined;
  const branches = join?.branches;
  if (!Array.isArray(branches) || branches.length < CACHED_FROM) {
    return { text: runSnapshotText(snapshot), branches: null };
  }
  for (const branch of branches) {
    if (branch === null || typeof branch !== 'object') return { text: JSON.stringify(snapshot), branches: null };
  }
  const mark: BranchRowsMark = { rows: branches.length };
  const text = JSON.stringify({
    ...(snapshot as object),
    context: { ...(context as object), join: { ...join, branches: mark } },
  });
  return { text, branches: branches as object[] };
}

/**
 * The number of branch rows a parsed snapshot's text stands for (`{"rows":
 * n}` in place of its open join's branches), or null when its branches (if
 * any) are in the text.
 */
export function branchRowsOf(snapshot: unknown): number | null {
  const context = (snapshot as { context?: unknown } | null | undefined)?.context;
  const join = (context as { join?: unknown } | null | undefined)?.join as { branches?: unknown } | null | undefined;
  const branches = join?.branches;
  if (branches === null || typeof branches !== 'object' || Array.isArray(branches)) return null;
  const rows = (branches as Partial<BranchRowsMark>).rows;
  return typeof rows === 'number' && Number.isInteger(rows) && rows >= 0 ? rows : null;
}
