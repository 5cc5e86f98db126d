import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { RunUsage } from '../../src/protocol/workflow.js';
import {
  type TreeNode,
  branchOf,
  compareSiblings,
  ownUsage,
  parentOf,
  positionOf,
  siblingOrder,
  subtreeHops,
  treeOrder,
} from '../../src/workflow/item-tree.js';
import type { HopRecord, ItemRecord } from '../../src/workflow/records.js';

// The rules of work items as a tree: who is whose child, the order children are listed in (by the
// hop that started them, then their position, then creation and id), depth-first rows, and what
// rolls up from a subtree.

interface Spec {
  /** Index of the parent among the items before it, or -1 for a root, or -2 for a parent not listed. */
  parent: number;
  hop: number;
  position: number | null;
  createdAt: number;
  hops: number;
}

const specs = fc.array(
  fc.record({
    parent: fc.integer({ min: -2, max: 30 }),
    hop: fc.integer({ min: 1, max: 4 }),
    position: fc.option(fc.integer({ min: 0, max: 5 }), { nil: null }),
    createdAt: fc.integer({ min: 0, max: 3 }),
    hops: fc.integer({ min: 0, max: 9 }),
  }),
  { maxLength: 25 },
);

/** Items from specs: item i's parent is an earlier item (so the tree has no cycle), or none, or one not listed. */
function itemsOf(list: readonly Spec[]): ItemRecord[] {
  return list.map((s, i) => {
    const parent = s.parent === -1 || i === 0 ? null : s.parent === -2 ? 'gone' : `i${s.parent % i}`;
    const attributes: Record<string, unknown> =
      parent === null
        ? {}
        : {
            'switchboard.parent': parent,
            'switchboard.branch': `${s.hop}:b${i}`,
            ...(s.position === null ? {} : { 'switchboard.position': s.position }),
          };
    // Ids that do not sort as the items were made: the id is the last tie-breaker only.
    return { id: `i${i}`, attributes, createdAt: s.createdAt, hops: s.hops } as unknown as ItemRecord;
  });
}

const node = (id: string, branch: string | null, position: number | null, createdAt: number): TreeNode => ({
  id,
  parent: 'p',
  branch,
  position,
  createdAt,
});

describe('work items as a tree', () => {
  const attribute = fc.oneof(fc.jsonValue(), fc.integer({ min: -2, max: 2 }), fc.double(), fc.string());

  test.prop([attribute, attribute, attribute])(
    'a parent and a branch are strings, a position a whole number of 0 or more; anything else is none',
    (parent, branch, position) => {
      const item = {
        attributes: {
          'switchboard.parent': parent,
          'switchboard.branch': branch,
          'switchboard.position': position,
        },
      } as unknown as ItemRecord;
      expect(parentOf(item)).toBe(typeof parent === 'string' ? parent : null);
      expect(branchOf(item)).toBe(typeof branch === 'string' ? branch : null);
      const whole = typeof position === 'number' && Number.isInteger(position) && position >= 0;
      expect(positionOf(item)).toBe(whole ? position : null);
      const bare = { attributes: null } as unknown as ItemRecord;
      expect([parentOf(bare), branchOf(bare), positionOf(bare)]).toEqual([null, null, null]);
    },
  );

  test.prop([specs])(
    'every item is listed once, each child after its parent one level deeper, its subtree right under it',
    (list) => {
      const items = itemsOf(list);
      const rows = treeOrder(items);
      expect(rows.map((r) => r.item.id).sort()).toEqual(items.map((i) => i.id).sort());
      const at = new Map(rows.map((r, k) => [r.item.id, k]));
      for (const [k, row] of rows.entries()) {
        const parent = parentOf(row.item);
        const p = parent === null ? undefined : at.get(parent);
        if (p === undefined) {
          expect(row.depth).toBe(0);
          continue;
        }
        expect(p).toBeLessThan(k);
        expect(row.depth).toBe((rows[p] as (typeof rows)[number]).depth + 1);
        // Every row between the parent and this child is deeper than the parent: its subtree.
        for (let j = p + 1; j < k; j++) expect((rows[j] as (typeof rows)[number]).depth).toBeGreaterThan(row.depth - 1);
      }
      // Roots (and children whose parent is not listed) keep the order they were given in.
      const roots = rows.filter((r) => r.depth === 0).map((r) => r.item.id);
      const given = items.filter((i) => parentOf(i) === null || !at.has(parentOf(i) as string)).map((i) => i.id);
      expect(roots).toEqual(given);
    },
  );

  test.prop([specs])("a parent's children are listed in sibling order", (list) => {
    const items = itemsOf(list);
    const rows = treeOrder(items);
    for (const parent of items) {
      const children = items.filter((i) => parentOf(i) === parent.id);
      const listed = rows.filter((r) => parentOf(r.item) === parent.id).map((r) => r.item.id);
      expect(listed).toEqual(siblingOrder(children).map((c) => c.id));
    }
  });

  test.prop([
    fc.integer({ min: 1, max: 9 }),
    fc.integer({ min: 1, max: 9 }),
    fc.option(fc.nat(9), { nil: null }),
    fc.option(fc.nat(9), { nil: null }),
    fc.nat(3),
    fc.nat(3),
  ])(
    'siblings: an earlier hop first, then a lower position (one with none last), then the earlier made, then by id',
    (hopA, hopB, posA, posB, madeA, madeB) => {
      const a = node('a', `${hopA}:x`, posA, madeA);
      const b = node('b', `${hopB}:y`, posB, madeB);
      const sign = Math.sign(compareSiblings(a, b));
      expect(Math.sign(compareSiblings(b, a))).toBe(-sign);
      const rank = (p: number | null) => p ?? Number.POSITIVE_INFINITY;
      const expected =
        hopA !== hopB
          ? Math.sign(hopA - hopB)
          : rank(posA) !== rank(posB)
            ? rank(posA) < rank(posB)
              ? -1
              : 1
            : madeA !== madeB
              ? Math.sign(madeA - madeB)
              : -1;
      expect(sign).toBe(expected);
    },
  );

  test.prop([fc.nat(9), fc.constantFrom(null, 'x', 'abc:z', ':z')])(
    'a branch without a hop counts as hop 0: before every hop of 1 or more',
    (hop, odd) => {
      const plain = node('a', odd, null, 0);
      const later = node('b', `${hop + 1}:y`, null, 0);
      expect(compareSiblings(plain, later)).toBeLessThan(0);
      expect(compareSiblings(later, plain)).toBeGreaterThan(0);
    },
  );

  const usage = fc.record({
    inputTokens: fc.nat(1000),
    outputTokens: fc.nat(1000),
    costUsd: fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1000),
    elapsedMs: fc.nat(10_000),
  });

  test.prop([fc.array(usage, { maxLength: 8 })])("an item's own usage is the sum of its own hops' usage", (usages) => {
    const own = ownUsage(usages.map((u) => ({ usage: u }) as unknown as HopRecord));
    const sum = (k: keyof RunUsage) => usages.reduce((s, u) => s + u[k], 0);
    expect(own.inputTokens).toBe(sum('inputTokens'));
    expect(own.outputTokens).toBe(sum('outputTokens'));
    expect(own.elapsedMs).toBe(sum('elapsedMs'));
    expect(own.costUsd).toBeCloseTo(sum('costUsd'), 9);
  });

  test.prop([specs, fc.nat(24)])(
    "an item's hops rolled up are its own and every descendant's, each once",
    (list, pick) => {
      const items = itemsOf(list);
      if (items.length === 0) return;
      const item = items[pick % items.length] as ItemRecord;
      const under = (id: string): ItemRecord[] =>
        items.filter((i) => parentOf(i) === id).flatMap((c) => [c, ...under(c.id)]);
      const expected = item.hops + under(item.id).reduce((s, i) => s + i.hops, 0);
      expect(subtreeHops(item, items)).toBe(expected);
      // Listed twice, an item still counts once.
      expect(subtreeHops(item, [...items, ...items])).toBe(expected);
    },
  );

  test.prop([fc.array(fc.nat(9), { minLength: 2, maxLength: 6 })])(
    'parents that name each other in a ring (data no decision writes) still count each item once',
    (hops) => {
      const ring = hops.map(
        (h, i) =>
          ({
            id: `r${i}`,
            attributes: { 'switchboard.parent': `r${(i + 1) % hops.length}`, 'switchboard.branch': '1:x' },
            createdAt: 0,
            hops: h,
          }) as unknown as ItemRecord,
      );
      const total = hops.reduce((s, h) => s + h, 0);
      for (const item of ring) expect(subtreeHops(item, ring)).toBe(total);
    },
  );
});
