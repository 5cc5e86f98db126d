import { afterEach, describe, expect, it } from 'vitest';
import { type WorkHandler, complete, spawn } from '../../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { positionOf, siblingOrder, treeOrder } from '../../src/workflow/item-tree.js';
import type { ItemRecord } from '../../src/workflow/records.js';
import { type Fixture, deployments, openFixture } from './helpers.js';

/**
 * Siblings are listed in the order their parent started them, whatever
 * their ids and however many were made in one commit: each child carries
 * its place among its hop's children (`switchboard.position`). The names
 * here sort against that order: the branches `zeta, alpha, mid`, a list of
 * twelve elements (`10` and `11` sort before `2`), and a handler's twelve
 * children (`s10` before `s2`).
 */

const fan = parseWorkflowDefinition({
  id: 'order-flow',
  version: 1,
  start: 'review',
  stages: {
    review: {
      parallel: { branches: { zeta: { role: 'worker' }, alpha: { role: 'worker' }, mid: { role: 'worker' } } },
      next: [{ on: 'succeeded', goto: 'plan' }],
    },
    plan: { role: 'planner', next: [{ on: 'succeeded', goto: 'each' }] },
    each: { role: 'worker', forEach: '/list', maxConcurrency: 12, next: [{ on: 'succeeded', goto: 'lead' }] },
    lead: { role: 'lead' },
  },
});
const leaf = parseWorkflowDefinition({ id: 'leaf', version: 1, start: 'do', stages: { do: { role: 'worker' } } });

const LIST = Array.from({ length: 12 }, (_, i) => `element ${i}`);
const handlers: Record<string, WorkHandler> = {
  worker: () => complete({ parts: [{ kind: 'text', text: 'done' }] }),
  planner: () => complete({ parts: [{ kind: 'data', data: { list: LIST } }] }),
  lead: ({ resume }) =>
    resume === undefined
      ? spawn(LIST.map((input) => ({ workflow: 'leaf@1', input })))
      : complete({ parts: [{ kind: 'text', text: 'led' }] }),
};

describe('siblings in the order their parent started them', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('each child carries its place in its hop; tree order and sibling order follow it, not ids', async () => {
    f = await openFixture({ definitions: [fan, leaf], deployments: deployments(handlers) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'order-flow', input: 'go' });
    expect((await coordinator.settled(id)).state).toBe('completed');
    const all = await coordinator.listItems();
    const children = all.filter((i) => i.attributes?.['switchboard.parent'] === id);
    const branchOf = (i: ItemRecord) => String(i.attributes?.['switchboard.branch']);
    const expected = [
      '1:zeta',
      '1:alpha',
      '1:mid',
      ...LIST.map((_, i) => `3:${i}`),
      // The handler's children (keys s0, s1, ...), spawned under the lead stage's hop.
      ...LIST.map((_, i) => `4:s${i}`),
    ];
    expect(children.map(branchOf).sort()).toEqual([...expected].sort());
    for (const child of children) {
      const [hop, key] = branchOf(child).split(':') as [string, string];
      const inHop = expected.filter((b) => b.startsWith(`${hop}:`));
      expect(positionOf(child), branchOf(child)).toBe(inHop.indexOf(`${hop}:${key}`));
    }
    // Listed in reverse, sorted back by position: the order does not come from the input's.
    expect(siblingOrder([...children].reverse()).map(branchOf)).toEqual(expected);
    const root = all.find((i) => i.id === id)!;
    expect(
      treeOrder([...children.reverse(), root])
        .filter((r) => r.depth === 1)
        .map((r) => branchOf(r.item)),
    ).toEqual(expected);
  });
});
