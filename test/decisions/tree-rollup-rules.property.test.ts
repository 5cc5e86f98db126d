import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  ZERO_TREE_USAGE,
  addTreeUsage,
  spentAncestor,
  treeRollup,
  withCharge,
} from '../../src/decisions/coordinator/tree-rollup.js';
import type { RunUsage } from '../../src/protocol/workflow.js';
import { budgetStatus } from '../../src/workflow/governance.js';
import type { AncestorRollup, ItemBudget, TreeUsage, UsageRow } from '../../src/workflow/records.js';

/**
 * The rules of the live rollup over a tree of work items, each stated on its
 * own: what one decision charges (its usage rows summed, the hops it took,
 * for the item and every ancestor, root last), how a charge adds to a
 * subtree's usage, and which ancestor's spent budget stops a hop under it
 * (the first, at or over any of its limits).
 */

const usageArb: fc.Arbitrary<RunUsage> = fc.record({
  inputTokens: fc.nat({ max: 10_000 }),
  outputTokens: fc.nat({ max: 10_000 }),
  costUsd: fc.integer({ min: 0, max: 1_000_000 }).map((n) => n / 1e6),
  elapsedMs: fc.nat({ max: 100_000 }),
});

const treeArb: fc.Arbitrary<TreeUsage> = fc.record({ usage: usageArb, hops: fc.nat({ max: 50 }) });

const rowArb: fc.Arbitrary<UsageRow> = fc.record({
  hopId: fc.string({ maxLength: 4 }),
  itemId: fc.string({ maxLength: 4 }),
  agent: fc.constantFrom('a', 'b'),
  model: fc.constantFrom('m', 'n'),
  inputTokens: fc.nat({ max: 10_000 }),
  outputTokens: fc.nat({ max: 10_000 }),
  costUsd: fc.integer({ min: 0, max: 1_000_000 }).map((n) => n / 1e6),
  elapsedMs: fc.nat({ max: 100_000 }),
  at: fc.nat(),
});

const budgetArb: fc.Arbitrary<ItemBudget | null> = fc.option(
  fc.record(
    {
      maxTokens: fc.integer({ min: 1, max: 20_000 }),
      maxCostUsd: fc.integer({ min: 1, max: 1_000_000 }).map((n) => n / 1e6),
      maxHops: fc.integer({ min: 1, max: 50 }),
    },
    { requiredKeys: [] },
  ),
  { nil: null },
);

const ancestorArb: fc.Arbitrary<AncestorRollup> = fc.record({
  id: fc.string({ minLength: 1, maxLength: 6 }),
  budget: budgetArb,
  tree: treeArb,
});

/** The sum of each usage field over the rows (cost to the nano-dollar). */
function summed(rows: readonly UsageRow[]): RunUsage {
  const sum = (f: (r: UsageRow) => number) => rows.reduce((s, r) => s + f(r), 0);
  return {
    inputTokens: sum((r) => r.inputTokens),
    outputTokens: sum((r) => r.outputTokens),
    costUsd: sum((r) => r.costUsd),
    elapsedMs: sum((r) => r.elapsedMs),
  };
}

/** Whether a subtree has spent a budget: at or over any of its limits (tokens are input and output). */
function spent(budget: ItemBudget, tree: TreeUsage): boolean {
  const tokens = tree.usage.inputTokens + tree.usage.outputTokens;
  return (
    (budget.maxTokens !== undefined && tokens >= budget.maxTokens) ||
    (budget.maxCostUsd !== undefined && tree.usage.costUsd >= budget.maxCostUsd) ||
    (budget.maxHops !== undefined && tree.hops >= budget.maxHops)
  );
}

describe('what one decision charges: its rows summed and its hops, for the item and every ancestor', () => {
  test.prop([
    fc.string({ minLength: 1, maxLength: 6 }),
    fc.array(ancestorArb, { maxLength: 5 }),
    fc.array(rowArb, { maxLength: 6 }),
    fc.integer({ min: -3, max: 5 }),
  ])('null when nothing is charged, else the rows summed and the hops taken', (itemId, ancestors, rows, hops) => {
    const rollup = treeRollup(itemId, ancestors, rows, hops);
    if (rows.length === 0 && hops <= 0) {
      expect(rollup).toBeNull();
      return;
    }
    expect(rollup).not.toBeNull();
    // The item first, then each ancestor in the order given (the root last).
    expect(rollup!.itemIds).toEqual([itemId, ...ancestors.map((a) => a.id)]);
    // A negative count of hops taken charges none.
    expect(rollup!.hops).toBe(Math.max(0, hops));
    const want = summed(rows);
    expect(rollup!.usage.inputTokens).toBe(want.inputTokens);
    expect(rollup!.usage.outputTokens).toBe(want.outputTokens);
    expect(rollup!.usage.elapsedMs).toBe(want.elapsedMs);
    expect(rollup!.usage.costUsd).toBeCloseTo(want.costUsd, 8);
  });

  it('a decision that took hops but charged no rows rolls up the hops with zero usage', () => {
    expect(treeRollup('c', [{ id: 'p', budget: null, tree: ZERO_TREE_USAGE }], [], 2)).toEqual({
      itemIds: ['c', 'p'],
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
      hops: 2,
    });
  });

  test.prop([fc.array(rowArb, { maxLength: 6 }), fc.integer({ min: -3, max: 5 })])(
    'the charge never changes the shared zero usage',
    (rows, hops) => {
      treeRollup('x', [], rows, hops);
      expect(ZERO_TREE_USAGE).toEqual({
        usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
        hops: 0,
      });
      expect(Object.isFrozen(ZERO_TREE_USAGE)).toBe(true);
    },
  );
});

describe('a charge adds to a subtree', () => {
  test.prop([treeArb, treeArb])('each field and the hops add; zero adds nothing', (tree, charge) => {
    const sum = addTreeUsage(tree, charge);
    expect(sum.hops).toBe(tree.hops + charge.hops);
    expect(sum.usage.inputTokens).toBe(tree.usage.inputTokens + charge.usage.inputTokens);
    expect(sum.usage.outputTokens).toBe(tree.usage.outputTokens + charge.usage.outputTokens);
    expect(sum.usage.elapsedMs).toBe(tree.usage.elapsedMs + charge.usage.elapsedMs);
    expect(sum.usage.costUsd).toBeCloseTo(tree.usage.costUsd + charge.usage.costUsd, 8);
    expect(addTreeUsage(tree, ZERO_TREE_USAGE)).toEqual(tree);
    expect(addTreeUsage(ZERO_TREE_USAGE, charge)).toEqual(charge);
  });

  test.prop([ancestorArb, treeArb])(
    'an ancestor with a charge keeps its id and budget, its subtree the charge added',
    (ancestor, charge) => {
      const was = structuredClone(ancestor);
      const next = withCharge(ancestor, charge);
      expect(next.id).toBe(ancestor.id);
      expect(next.budget).toEqual(ancestor.budget);
      expect(next.tree).toEqual(addTreeUsage(ancestor.tree, charge));
      // The ancestor given is a value: it is not changed.
      expect(ancestor).toEqual(was);
    },
  );
});

describe('the first ancestor whose subtree has spent its budget stops a hop under it', () => {
  test.prop([fc.array(ancestorArb, { maxLength: 6 })])(
    'the first with a budget at or over a limit, named in the reason; null when every one has budget left',
    (ancestors) => {
      const got = spentAncestor(ancestors);
      const first = ancestors.find((a) => a.budget !== null && spent(a.budget, a.tree));
      if (first === undefined) {
        expect(got).toBeNull();
        return;
      }
      expect(got).not.toBeNull();
      expect(got!.ancestor).toBe(first);
      const status = budgetStatus(first.budget!, first.tree.usage, first.tree.hops);
      expect(got!.reason).toBe(`${first.id}: ${status!.reason}`);
    },
  );

  it('an ancestor without a budget never stops a hop, however much its subtree spent', () => {
    const huge: TreeUsage = { usage: { inputTokens: 1e9, outputTokens: 1e9, costUsd: 1e6, elapsedMs: 1e9 }, hops: 1e6 };
    expect(spentAncestor([{ id: 'a', budget: null, tree: huge }])).toBeNull();
    const capped: AncestorRollup = { id: 'b', budget: { maxHops: 3 }, tree: { ...ZERO_TREE_USAGE, hops: 3 } };
    expect(spentAncestor([{ id: 'a', budget: null, tree: huge }, capped])).toEqual({
      ancestor: capped,
      reason: 'b: budget spent: 3 of 3 hops',
    });
  });

  it('a subtree one under every limit has budget left; at a limit it is spent', () => {
    const budget = { maxTokens: 10, maxCostUsd: 0.5, maxHops: 4 };
    const under: TreeUsage = { usage: { inputTokens: 5, outputTokens: 4, costUsd: 0.4, elapsedMs: 9 }, hops: 3 };
    expect(spentAncestor([{ id: 'a', budget, tree: under }])).toBeNull();
    const atTokens = { ...under, usage: { ...under.usage, outputTokens: 5 } };
    expect(spentAncestor([{ id: 'a', budget, tree: atTokens }])?.reason).toBe('a: budget spent: 10 of 10 tokens');
  });
});
