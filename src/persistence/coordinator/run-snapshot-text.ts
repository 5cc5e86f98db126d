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
    let text = branchTexts.get(branch);
    if (text === undefined) {
      text = JSON.stringify(branch);
      branchTexts.set(branch, text);
    }
    texts[i] = text;
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
