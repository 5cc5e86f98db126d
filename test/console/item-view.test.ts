import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { childTree, itemPath, shownParts, workflowDiagram } from '../../src/console/item-view.js';
import { SQLITE_PLACEHOLDER, itemPageRead } from '../../src/persistence/coordinator/item-reads.js';
import type { HopRecord, ItemRecord } from '../../src/workflow/records.js';
import { itemRecord } from '../workflow/item-record.js';

// The item view's pure parts: the stages drawn from a definition, the path
// an item took (hops, routes, stages run as children), the child tree with
// own and rolled-up costs; and the list's search text in SQL.

const definition = {
  id: 'flow',
  version: 1,
  start: 'plan',
  stages: {
    plan: { role: 'architect', next: [{ on: 'succeeded', goto: 'fan' }] },
    fan: {
      parallel: { branches: { a: { role: 'x' }, b: { sequence: ['y', 'z'] } } },
      next: [
        { on: 'succeeded', when: { pointer: '/a/ok', equals: false }, goto: 'plan', maxTraversals: 2 },
        { on: 'succeeded', goto: 'ship' },
      ],
    },
    ship: {
      role: 'devops',
      approval: { approvers: ['alice'] },
      next: [
        { on: 'succeeded', end: 'completed' },
        { on: 'failed', end: 'failed' },
      ],
    },
  },
};

function item(over: Partial<ItemRecord>): ItemRecord {
  return itemRecord({ id: 'i', hops: 0, createdAt: 1, updatedAt: 1, ...over });
}

const hop = (n: number, stage: string, costUsd = 0): HopRecord =>
  ({ hop: n, stage, kind: 'stage', usage: { inputTokens: 0, outputTokens: 0, costUsd, elapsedMs: 0 } }) as HopRecord;

describe('the item view', () => {
  it('draws every stage with what it runs, its gate and its rules; refuses what is not a definition', () => {
    const d = workflowDiagram(definition);
    expect(d?.stages.map((s) => [s.name, s.kind, s.runs, s.approvers])).toEqual([
      ['plan', 'role', 'architect', null],
      ['fan', 'parallel', null, null],
      ['ship', 'role', 'devops', ['alice']],
    ]);
    expect(d?.stages[1]?.branches).toEqual(['a: x', 'b: y → z']);
    expect(d?.stages[1]?.next.map((r) => [r.to, r.when !== null])).toEqual([
      ['plan', true],
      ['ship', false],
    ]);
    expect(d?.stages[2]?.next.map((r) => [r.to, r.end])).toEqual([
      ['completed', true],
      ['failed', true],
    ]);
    expect(workflowDiagram({ id: 'x' })).toBeNull();
  });

  it('follows the path: a stage run as children named by the rule before it or by its route; current and failed', () => {
    const d = workflowDiagram(definition);
    // Hop 2 ran as children (no hop row): the route leaving it names it and where it went.
    const looped = itemPath(
      item({
        hop: 5,
        stage: 'ship',
        state: 'failed',
        finishedAt: 9,
        failure: { code: 'X', reason: 'r', stage: 'ship', hop: 5 },
      }),
      [hop(1, 'plan'), hop(3, 'plan'), hop(5, 'ship')],
      [{ hop: 2, kind: 'route', data: { stage: 'fan', to: 'plan' } }],
      d,
    );
    expect(looped.visits.map((v) => v.stage)).toEqual(['plan', 'fan', 'plan', 'fan', 'ship']);
    expect(looped).toMatchObject({ current: null, failed: 'ship' });
    const running = itemPath(item({ hop: 2, stage: 'fan' }), [hop(1, 'plan')], [], d);
    expect(running).toEqual({
      visits: [
        { hop: 1, stage: 'plan' },
        { hop: 2, stage: 'fan' },
      ],
      current: 'fan',
      failed: null,
    });
  });

  it('builds the child tree in order with own and rolled-up costs, grandchildren under their parent', () => {
    const child = (id: string, parent: string, branch: string, costUsd: number) =>
      item({
        id,
        attributes: { 'switchboard.parent': parent, 'switchboard.branch': branch },
        usage: { inputTokens: 0, outputTokens: 0, costUsd, elapsedMs: 0 },
      });
    const items = [
      item({ id: 'r' }),
      child('r.3.b', 'r', '3:b', 0.5),
      child('r.2.a', 'r', '2:a', 3),
      child('r.2.a.1.x', 'r.2.a', '1:x', 2),
      child('other.1.a', 'other', '1:a', 7),
    ];
    const hops: Record<string, HopRecord[]> = { 'r.2.a': [hop(1, 's', 1)], 'r.2.a.1.x': [hop(1, 's', 2)] };
    const tree = childTree('r', items, (id) => hops[id] ?? []);
    expect(tree.map((c) => [c.id, c.depth, c.branch, c.ownCostUsd, c.costUsd])).toEqual([
      ['r.2.a', 1, '2:a', 1, 3],
      ['r.2.a.1.x', 2, '1:x', 2, 2],
      ['r.3.b', 1, '3:b', 0, 0.5],
    ]);
  });

  it('shows parts readably: text clipped, data as it is, a file by name and type without its bytes', () => {
    const shown = shownParts(
      [
        { kind: 'text', text: 'abcdef' },
        { kind: 'data', data: { a: 1 } },
        { kind: 'file', file: { name: 'f.txt', mimeType: 'text/plain', bytes: 'c2VjcmV0' } },
      ] as never,
      3,
    );
    expect(shown).toEqual([
      { kind: 'text', text: 'abc…' },
      { kind: 'data', data: { a: 1 } },
      { kind: 'file', name: 'f.txt', mimeType: 'text/plain' },
    ]);
  });

  it('searches the list by id, workflow or state, any case; % and _ are plain text', () => {
    const db = new Database(':memory:');
    try {
      db.exec('CREATE TABLE coord_items (id TEXT, workflow_id TEXT, state TEXT, created_at INTEGER)');
      const insert = db.prepare('INSERT INTO coord_items VALUES (?, ?, ?, ?)');
      insert.run('abc-1', 'review-fanout', 'completed', 1);
      insert.run('x_2', 'dev-sdlc', 'failed', 2);
      insert.run('x92', 'dev-sdlc', 'running', 3);
      const ids = (search: string) => {
        const read = itemPageRead({ search }, SQLITE_PLACEHOLDER);
        return (db.prepare(read.text).all(...read.params) as { id: string }[]).map((r) => r.id);
      };
      expect(ids('ABC')).toEqual(['abc-1']);
      expect(ids('Fanout')).toEqual(['abc-1']);
      expect(ids('fail')).toEqual(['x_2']);
      expect(ids('x_')).toEqual(['x_2']);
      expect(ids('%')).toEqual([]);
      expect(ids('dev')).toEqual(['x92', 'x_2']);
    } finally {
      db.close();
    }
  });
});
