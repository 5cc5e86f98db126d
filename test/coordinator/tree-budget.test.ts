import { afterEach, describe, expect, it } from 'vitest';
import { type WorkHandler, complete } from '../../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, deployments, openFixture, until } from './helpers.js';

/**
 * Budgets down a tree of child work items, in a Coordinator: a child that
 * runs out of its carved hops is denied its next hop (its hops roll up into
 * its parent's count), and a parent past its deadline fails its whole
 * subtree, each child audited.
 */

const usage = { model: 'm', inputTokens: 10, outputTokens: 1, costUsd: 0.0001 };

/** A child that loops on one role until something stops it. */
const loop = parseWorkflowDefinition({
  id: 'loop',
  version: 1,
  start: 'work',
  stages: { work: { role: 'worker', maxVisits: 50, next: [{ on: 'succeeded', goto: 'work' }] } },
});
/** A child whose role never answers. */
const stuck = parseWorkflowDefinition({
  id: 'stuck',
  version: 1,
  start: 'wait',
  stages: { wait: { role: 'sleeper' } },
});
/** Two looping children: one with 3 hops carved, one with an equal share of what is left. */
const hopsTree = parseWorkflowDefinition({
  id: 'hops-tree',
  version: 1,
  start: 'fan',
  stages: {
    fan: {
      parallel: {
        branches: { a: { workflow: 'loop@1', budget: { maxHops: 3 } }, b: { workflow: 'loop@1' } },
        join: 'all',
        onBranchFailure: 'collect',
      },
    },
  },
});
/** A parent with a short deadline over children that never end; one child carves an earlier one. */
const deadlineTree = parseWorkflowDefinition({
  id: 'deadline-tree',
  version: 1,
  start: 'fan',
  deadline: 600,
  stages: {
    fan: {
      parallel: {
        branches: { a: { workflow: 'stuck@1' }, b: { workflow: 'stuck@1', budget: { deadline: '300ms' } } },
        join: 'all',
        // b's earlier deadline fails b alone; the parent waits on for a.
        onBranchFailure: 'collect',
      },
    },
  },
});

const handlers: Record<string, WorkHandler> = {
  worker: () => complete({ parts: [{ kind: 'text', text: 'again' }], usage }),
  sleeper: () => new Promise(() => {}),
};

describe('budgets down the tree of child work items', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('a child that runs out of its carved hops is denied the next; hops roll up into the parent', async () => {
    f = await openFixture({ definitions: [loop, hopsTree], deployments: deployments(handlers) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'hops-tree', input: 'go', budget: { maxHops: 11 } });
    const done = await coordinator.settled(id);
    const items = await coordinator.listItems();
    const a = items.find((i) => i.id === `${id}.1.a`)!;
    const b = items.find((i) => i.id === `${id}.1.b`)!;
    // a's explicit carve; b's what a's leaves of what was left (11 less the fan-out hop, less a's 3).
    expect(a.budget).toEqual({ maxHops: 3 });
    expect(b.budget).toEqual({ maxHops: 7 });
    for (const [child, max] of [
      [a, 3],
      [b, 7],
    ] as const) {
      expect(child.state).toBe('failed');
      expect(child.failure?.code).toBe('BUDGET_EXCEEDED');
      expect(child.failure?.reason).toContain(`${max} of ${max} hops`);
      const hops = await coordinator.listHops(child.id);
      // No child spent past its carve: its hops are exactly its carve.
      expect(hops.filter((h) => h.kind === 'stage')).toHaveLength(max);
      // The denial's audit row names the limit and what was spent.
      const denied = (await coordinator.audit.list({ itemId: child.id })).filter(
        (r) => r.kind === 'governance' && (r.data as { decision?: string }).decision === 'deny',
      );
      expect(denied).toHaveLength(1);
      expect(denied[0]!.data).toMatchObject({ budget: { limit: 'maxHops', maxHops: max, spent: max } });
    }
    // The parent's join collected both failures; the children's hops are in the parent's count.
    expect(done.state).toBe('completed');
    const rows = await coordinator.audit.list({ itemId: id });
    const settled = rows.filter((r) => r.kind === 'child-settled');
    expect(settled).toHaveLength(2);
    const spawnRow = rows.find((r) => r.kind === 'spawn')!;
    expect(spawnRow.data).toMatchObject({
      children: [
        { branch: 'a', budget: { maxHops: 3 } },
        { branch: 'b', budget: { maxHops: 7 } },
      ],
    });
  }, 60_000);

  it('a parent past its deadline fails its whole subtree, each child audited', async () => {
    f = await openFixture({
      definitions: [stuck, deadlineTree],
      deployments: deployments(handlers),
      timerIntervalMs: 50,
    });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'deadline-tree', input: 'go' });
    const done = await coordinator.settled(id);
    expect(done.state).toBe('failed');
    expect(done.failure?.code).toBe('DEADLINE_EXCEEDED');
    await until(
      async () =>
        (await coordinator.listItems()).filter((i) => i.id.startsWith(`${id}.`)).every((i) => i.finishedAt !== null),
      20_000,
      'the children to end',
    );
    const children = (await coordinator.listItems()).filter((i) => i.id.startsWith(`${id}.`));
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect(child.state).toBe('failed');
      expect(child.failure?.code).toBe('DEADLINE_EXCEEDED');
      const rows = await coordinator.audit.list({ itemId: child.id });
      expect(rows.filter((r) => r.kind === 'timeout').map((r) => r.data.what)).toEqual(['deadline']);
    }
    // The carved deadline is the child's own, no later than its parent's.
    const spawnRow = (await coordinator.audit.list({ itemId: id })).find((r) => r.kind === 'spawn')!;
    const at = (spawnRow.data as { children: { branch: string; deadlineAt: number }[] }).children;
    const parentAt = done.createdAt + 600;
    expect(at.find((c) => c.branch === 'a')!.deadlineAt).toBe(parentAt);
    expect(at.find((c) => c.branch === 'b')!.deadlineAt).toBeLessThanOrEqual(parentAt);
  }, 60_000);
});
