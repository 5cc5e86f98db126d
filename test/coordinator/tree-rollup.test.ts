import { afterEach, describe, expect, it } from 'vitest';
import { type WorkHandler, complete } from '../../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { TreeUsage } from '../../src/workflow/records.js';
import { type Fixture, deployments, openFixture, until } from './helpers.js';

/**
 * Live rollup down a tree of work items, in a Coordinator on the suite's
 * store: a grandchild's charges are in its parent's and its root's subtree
 * usage while it still runs (the same commit adds them), nothing is counted
 * twice when it ends, a root whose subtree has spent its budget stops a
 * grandchild that its own carve would still let run, and an item's own next
 * hop is governed against its subtree's usage (a canceled child's late hop
 * included), not only against its own and its ended children's.
 */

const charge = { model: 'm', inputTokens: 10, outputTokens: 2, costUsd: 0.001 };

/** Charges once, then waits at a stage whose role answers when the test says so. */
const twoStep = parseWorkflowDefinition({
  id: 'two-step',
  version: 1,
  start: 'charge',
  stages: { charge: { role: 'charger', next: [{ on: 'succeeded', goto: 'hold' }] }, hold: { role: 'holder' } },
});
/** One child running `child` (a workflow by reference). */
const over = (id: string, child: string) =>
  parseWorkflowDefinition({
    id,
    version: 1,
    start: 'fan',
    stages: { fan: { parallel: { branches: { only: { workflow: child } }, join: 'all' } } },
  });
/** A loop on a role that charges 10 tokens a hop. */
const loop = parseWorkflowDefinition({
  id: 'slow-loop',
  version: 1,
  start: 'work',
  stages: { work: { role: 'looper', maxVisits: 50, next: [{ on: 'succeeded', goto: 'work' }] } },
});
const burst = parseWorkflowDefinition({ id: 'burst', version: 1, start: 'b', stages: { b: { role: 'burster' } } });
/** Two branches: one bursts past its carve at once, the other runs a loop a level down. */
const race = parseWorkflowDefinition({
  id: 'race',
  version: 1,
  start: 'fan',
  stages: {
    fan: {
      parallel: {
        branches: { a: { workflow: 'burst@1' }, b: { workflow: 'deep-loop@1' } },
        join: 'all',
        onBranchFailure: 'collect',
      },
    },
  },
});

/**
 * Two branches, one enough for the join: `slow` charges 44 tokens and holds,
 * `fast` ends with 5 once that charge is in its parent. The join goes on
 * with `fast`, `slow` is canceled with a hop in flight that charges 10 more
 * after its end, and the parent has two stages left.
 */
const oneGoesOn = parseWorkflowDefinition({
  id: 'one-goes-on',
  version: 1,
  start: 'fan',
  stages: {
    fan: {
      parallel: {
        branches: {
          slow: { workflow: 'charge-hold@1', budget: { maxTokens: 45 } },
          fast: { workflow: 'quick@1', budget: { maxTokens: 5 } },
        },
        join: 'any',
      },
      next: [{ on: 'succeeded', goto: 'after' }],
    },
    after: { role: 'afterwards', next: [{ on: 'succeeded', goto: 'last' }] },
    last: { role: 'last' },
  },
});
const chargeHold = parseWorkflowDefinition({
  id: 'charge-hold',
  version: 1,
  start: 'charge',
  stages: { charge: { role: 'big-charger', next: [{ on: 'succeeded', goto: 'hold' }] }, hold: { role: 'holder' } },
});
const quick = parseWorkflowDefinition({ id: 'quick', version: 1, start: 'q', stages: { q: { role: 'quick' } } });

describe('live rollup of usage into every ancestor', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it("a grandchild's usage is in its parent's and root's rollup before it ends, and counted once after", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const handlers: Record<string, WorkHandler> = {
      charger: () => complete({ parts: [{ kind: 'text', text: 'charged' }], usage: charge }),
      holder: async () => {
        await held;
        return complete({ parts: [{ kind: 'text', text: 'done' }], usage: charge });
      },
    };
    f = await openFixture({
      definitions: [twoStep, over('middle', 'two-step@1'), over('top', 'middle@1')],
      deployments: deployments(handlers),
    });
    const { coordinator } = f;
    const root = await coordinator.createWorkItem({ workflow: 'top', input: 'go' });
    const middle = `${root}.1.only`;
    const leaf = `${middle}.1.only`;
    const tree = async (): Promise<Map<string, TreeUsage>> => coordinator.tables.readTreeUsage([root, middle, leaf]);
    // The leaf charged its first hop and waits at its second: its charge is in every ancestor already.
    await until(async () => (await tree()).get(root)?.usage.inputTokens === 10, 20_000, 'the charge in the root');
    const mid = await tree();
    for (const id of [leaf, middle, root]) {
      expect(mid.get(id)?.usage).toMatchObject({ inputTokens: 10, outputTokens: 2, costUsd: 0.001 });
    }
    // Hops: the leaf's charge hop and its held hop; each fan-out's hop above it.
    expect(mid.get(leaf)?.hops).toBe(2);
    expect(mid.get(middle)?.hops).toBe(3);
    expect(mid.get(root)?.hops).toBe(4);
    const items = new Map((await coordinator.listItems()).map((i) => [i.id, i]));
    expect(items.get(leaf)?.finishedAt).toBeNull();
    // The items' own usage (children's added when they end) has none of it yet.
    expect(items.get(root)?.usage.inputTokens).toBe(0);

    release();
    const done = await coordinator.settled(root);
    expect(done.state).toBe('completed');
    const end = await tree();
    // Two charges of the leaf, once each, in every ancestor: the children's ends added nothing to the rollup.
    for (const id of [leaf, middle, root]) {
      expect(end.get(id)?.usage).toMatchObject({ inputTokens: 20, outputTokens: 4, costUsd: 0.002 });
    }
    // Every subtree's rollup is the sum of the usage rows of the items in it.
    const rows = await coordinator.tables.readUsageRows();
    const sum = (prefix: string) =>
      rows
        .filter((r) => r.itemId === prefix || r.itemId.startsWith(`${prefix}.`))
        .reduce((s, r) => s + r.inputTokens, 0);
    for (const id of [leaf, middle, root]) expect(end.get(id)?.usage.inputTokens).toBe(sum(id));
    expect((await coordinator.listItems()).find((i) => i.id === root)?.usage.inputTokens).toBe(20);
  }, 60_000);

  it("an item's own budget counts what its subtree charged, a canceled child's late hop included", async () => {
    let rootId = '';
    let last = 0;
    const tokens = (n: number) => ({ model: 'm', inputTokens: n, outputTokens: 0, costUsd: 0 });
    const rootTree = async () =>
      (await f!.coordinator.tables.readTreeUsage([rootId])).get(rootId)?.usage.inputTokens ?? 0;
    const handlers: Record<string, WorkHandler> = {
      'big-charger': () => complete({ parts: [{ kind: 'text', text: 'charged' }], usage: tokens(44) }),
      // In flight when its item is canceled; its 10 tokens are charged after the end.
      holder: async () => {
        await until(
          async () => (await f!.coordinator.getItem(`${rootId}.1.slow`))?.state === 'canceled',
          20_000,
          'the slow branch canceled',
        );
        return complete({ parts: [{ kind: 'text', text: 'held' }], usage: tokens(10) });
      },
      quick: async () => {
        await until(async () => (await rootTree()) >= 44, 20_000, 'the slow charge in the root');
        return complete({ parts: [{ kind: 'text', text: 'quick' }], usage: tokens(5) });
      },
      afterwards: async () => {
        await until(async () => (await rootTree()) >= 59, 20_000, 'the late charge in the root');
        return complete({ parts: [{ kind: 'text', text: 'after' }] });
      },
      last: () => {
        last++;
        return complete({ parts: [{ kind: 'text', text: 'last' }] });
      },
    };
    f = await openFixture({ definitions: [oneGoesOn, chargeHold, quick], deployments: deployments(handlers) });
    const { coordinator } = f;
    rootId = await coordinator.createWorkItem({ workflow: 'one-goes-on', input: 'go', budget: { maxTokens: 50 } });
    const done = await coordinator.settled(rootId);
    // Its own usage has its children's as they ended (the fast one's 5 tokens); its subtree spent 59.
    expect(done.usage.inputTokens).toBeLessThan(50);
    expect(done.state).toBe('failed');
    expect(done.failure?.code).toBe('BUDGET_EXCEEDED');
    expect(done.failure?.reason).toContain(
      `tree-budget: ${rootId} with its children: budget exceeded: 59 of 50 tokens`,
    );
    expect(last).toBe(0);
    expect((await coordinator.listHops(rootId)).filter((h) => h.stage === 'last')).toEqual([]);
    expect((await coordinator.tables.readTreeUsage([rootId])).get(rootId)?.usage.inputTokens).toBe(59);
    const denied = (await coordinator.audit.list({ itemId: rootId })).find(
      (r) => r.kind === 'governance' && (r.data as { decision?: string }).decision === 'deny',
    );
    expect(denied?.data).toMatchObject({
      stage: 'last',
      budget: { limit: 'subtree', itemId: rootId, maxTokens: 50, spent: { tokens: 59 } },
    });
  }, 60_000);

  it('a root whose tree has spent its budget stops a grandchild its own carve would let run', async () => {
    let rootId = '';
    const handlers: Record<string, WorkHandler> = {
      // 95 tokens against a carve of 50: the branch fails BUDGET_EXCEEDED, one hop in flight past it.
      burster: () =>
        complete({
          parts: [{ kind: 'text', text: 'burst' }],
          usage: { model: 'm', inputTokens: 95, outputTokens: 0, costUsd: 0 },
        }),
      looper: async () => {
        // The loop's first hop ends once the burst is charged to the root.
        await until(
          async () => ((await f!.coordinator.tables.readTreeUsage([rootId])).get(rootId)?.usage.inputTokens ?? 0) >= 95,
          20_000,
          'the burst in the root',
        );
        return complete({
          parts: [{ kind: 'text', text: 'again' }],
          usage: { model: 'm', inputTokens: 10, outputTokens: 0, costUsd: 0 },
        });
      },
    };
    f = await openFixture({
      definitions: [loop, burst, over('deep-loop', 'slow-loop@1'), race],
      deployments: deployments(handlers),
    });
    const { coordinator } = f;
    rootId = await coordinator.createWorkItem({ workflow: 'race', input: 'go', budget: { maxTokens: 100 } });
    const done = await coordinator.settled(rootId);
    // The children's usage, settled into the root (105 of 100 tokens), fails it too.
    expect(done.state).toBe('failed');
    expect(done.failure?.code).toBe('BUDGET_EXCEEDED');
    const leaf = `${rootId}.1.b.1.only`;
    const items = new Map((await coordinator.listItems()).map((i) => [i.id, i]));
    expect(items.get(`${rootId}.1.a`)?.failure?.code).toBe('BUDGET_EXCEEDED');
    // The grandchild's carve (50 tokens) had room for four more hops; the root's spent budget stopped it at one.
    expect(items.get(leaf)?.budget).toEqual({ maxTokens: 50 });
    expect(items.get(leaf)?.failure?.code).toBe('BUDGET_EXCEEDED');
    expect(items.get(leaf)?.failure?.reason).toContain(`tree-budget: ${rootId}`);
    expect((await coordinator.listHops(leaf)).filter((h) => h.kind === 'stage')).toHaveLength(1);
    const denied = (await coordinator.audit.list({ itemId: leaf })).find(
      (r) => r.kind === 'governance' && (r.data as { decision?: string }).decision === 'deny',
    );
    expect(denied?.data).toMatchObject({ budget: { limit: 'ancestor', itemId: rootId, maxTokens: 100 } });
    // The tree went past its root's budget by no more than the hop in flight of each branch.
    const rootTree = (await coordinator.tables.readTreeUsage([rootId])).get(rootId)!;
    expect(rootTree.usage.inputTokens).toBe(105);
  }, 60_000);
});
