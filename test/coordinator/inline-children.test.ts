import { afterEach, describe, expect, it } from 'vitest';
import { observeCommits } from '../../src/actors/coordinator/commit-timing.js';
import { type WorkHandler, complete } from '../../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { positionOf } from '../../src/workflow/item-tree.js';
import { type Fixture, auditRows, deployments, openFixture } from './helpers.js';

/**
 * A child whose branch a decision started is created in that decision's own
 * commit (no turn and no commit of its own, no `spawn` row to carry out
 * later), and a child's end is settled in its parent with the result that
 * ended it (no `settle` row). A child the batch cannot create with its
 * parent (a root with a budget that fans out in its first stage: its
 * subtree's usage is not read yet) is still created from its row, after the
 * commit, as before.
 */

const flow = parseWorkflowDefinition({
  id: 'inline-flow',
  version: 1,
  start: 'plan',
  stages: {
    plan: { role: 'planner', next: [{ on: 'succeeded', goto: 'each' }] },
    each: { role: 'worker', forEach: '/list', maxConcurrency: 2, next: [{ on: 'succeeded', goto: 'review' }] },
    review: { parallel: { branches: { a: { role: 'worker' }, b: { role: 'worker' }, c: { role: 'worker' } } } },
  },
});
const fanFirst = parseWorkflowDefinition({
  id: 'fan-first',
  version: 1,
  start: 'review',
  stages: {
    review: { parallel: { branches: { a: { role: 'worker' }, b: { role: 'worker' } } } },
  },
});

const LIST = ['one', 'two', 'three', 'four', 'five', 'six'];
const handlers: Record<string, WorkHandler> = {
  worker: () => complete({ parts: [{ kind: 'text', text: 'done' }] }),
  planner: () => complete({ parts: [{ kind: 'data', data: { list: LIST } }] }),
};

describe('children created and settled in the commit that led to it', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('a map and a parallel stage: no commit of their own for the children, each made once with its place', async () => {
    f = await openFixture({ definitions: [flow], deployments: deployments(handlers) });
    const creates: number[] = [];
    let settles = 0;
    observeCommits(f.coordinator, (_ns, what, _inner, _cpu, batch) => {
      if (what === 'create') creates.push(batch);
      // A child's end carried out from its row (no timer is due in this run, no command is given).
      if (what === 'decision') settles += 1;
    });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'inline-flow', input: 'go' });
    expect((await coordinator.settled(id)).state).toBe('completed');
    // Every child's end was settled in its parent with the result that ended it.
    expect(settles).toBe(0);
    // The root's creation is the only input of kind `create` (one call per input): every child came with a
    // decision of its parent's.
    expect(creates).toEqual([1]);
    const children = (await coordinator.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children).toHaveLength(LIST.length + 3);
    expect(children.every((c) => c.state === 'completed')).toBe(true);
    const map = children.filter((c) => String(c.attributes?.['switchboard.branch']).startsWith('2:'));
    expect(map.map(positionOf).sort((a, b) => a! - b!)).toEqual(LIST.map((_, i) => i));
    // Each element asked for once, whichever ends were settled together (their `spawn` entry lists them all).
    const spawned = (await auditRows(coordinator))
      .filter((r) => r.kind === 'spawn' && r.itemId === id)
      .flatMap((r) => (r.data as { children: { childId: string }[] }).children.map((c) => c.childId));
    expect(spawned.sort()).toEqual(children.map((c) => c.id).sort());
    // One `item-created` per child, and the audit holds together.
    const created = (await auditRows(coordinator)).filter((r) => r.kind === 'item-created');
    expect(created.map((r) => r.itemId).sort()).toEqual([id, ...children.map((c) => c.id)].sort());
    expect((await coordinator.audit.verifyChain({ expectedHead: await coordinator.audit.head() })).ok).toBe(true);
  });

  it('a root with a budget that fans out at once: its children are created from their rows, carved', async () => {
    f = await openFixture({ definitions: [fanFirst], deployments: deployments(handlers) });
    const creates: number[] = [];
    observeCommits(f.coordinator, (_ns, what, _inner, _cpu, batch) => {
      if (what === 'create') creates.push(batch);
    });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'fan-first', input: 'go', budget: { maxHops: 9 } });
    expect((await coordinator.settled(id)).state).toBe('completed');
    // The root's creation, then its two children's (alone or together): one call per input.
    expect(creates[0]).toBe(1);
    expect(creates).toHaveLength(3);
    const children = (await coordinator.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children.map((c) => c.state)).toEqual(['completed', 'completed']);
    // Each child's carve: an equal share of what the root had left (9 hops less the fan-out stage's own).
    expect(children.map((c) => c.budget?.maxHops)).toEqual([4, 4]);
  });
});
