import { describe, expect, it } from 'vitest';
import { ZERO_RUN_USAGE } from '../../src/protocol/workflow.js';
import { type HopRecord, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';
import {
  HOP_TASK_STATE,
  ITEM_TASK_STATE,
  taskStateCounts,
  taskViewsOfItem,
  taskViewsOfItems,
} from '../../src/workflow/task-view.js';

function item(id: string, overrides: Partial<ItemRecord> = {}): ItemRecord {
  return {
    id,
    taskId: null,
    workflow: { id: 'wf', version: 1 },
    state: 'running',
    stage: 'build',
    hop: 2,
    hops: 2,
    input: [],
    budget: null,
    attributes: null,
    usage: { ...ZERO_RUN_USAGE },
    failure: null,
    approval: null,
    createdAt: 100,
    updatedAt: 300,
    finishedAt: null,
    output: null,
    mirrored: false,
    ...overrides,
  };
}

function hop(itemId: string, seq: number, overrides: Partial<HopRecord> = {}): HopRecord {
  return {
    ...dispatchedHop({
      id: `${itemId}-h${seq}`,
      itemId,
      seq,
      hop: seq,
      attempt: 1,
      kind: 'stage',
      stage: seq === 1 ? 'plan' : 'build',
      role: seq === 1 ? 'planner' : 'coder',
      idempotencyKey: `${itemId}:${seq}`,
      continuation: null,
      askedBy: null,
      dispatchedAt: 100 + seq * 10,
      activeSince: 100 + seq * 10,
    }),
    ...overrides,
  };
}

describe('the task view derived from item and hop rows', () => {
  it('makes the item a task of the edge to the Coordinator and each hop a child task of its role, in hop order', () => {
    const views = taskViewsOfItem(item('i1'), [hop('i1', 2), hop('i1', 1, { state: 'completed', finishedAt: 115 })]);
    expect(views.map((v) => [v.id, v.kind, v.state, v.requester, v.worker, v.parentId])).toEqual([
      ['i1', 'item', 'working', 'edge', 'coordinator', null],
      ['i1-h1', 'hop', 'completed', 'coordinator', 'planner', 'i1'],
      ['i1-h2', 'hop', 'working', 'coordinator', 'coder', 'i1'],
    ]);
    expect(views[0]?.childIds).toEqual(['i1-h1', 'i1-h2']);
    expect(views[1]?.updatedAt).toBe(115);
  });

  it("uses the broker's task ids where the rows carry them", () => {
    const views = taskViewsOfItem(item('i1', { taskId: 'task-1' }), [hop('i1', 1, { taskId: 'task-2' })]);
    expect(views.map((v) => v.id)).toEqual(['task-1', 'task-2']);
    expect(views[1]?.parentId).toBe('task-1');
  });

  it('maps every item and hop state, an approval gate to auth-required and a suspended hop to input-required', () => {
    expect(ITEM_TASK_STATE['awaiting-approval']).toBe('auth-required');
    expect(HOP_TASK_STATE.suspended).toBe('input-required');
    const states = taskViewsOfItems(
      [item('a', { state: 'awaiting-approval' }), item('b', { state: 'canceled' })],
      (id) => (id === 'a' ? [hop('a', 1, { state: 'suspended' })] : []),
    ).map((v) => v.state);
    expect(states).toEqual(['auth-required', 'input-required', 'canceled']);
  });
});

describe('taskStateCounts', () => {
  it('counts the derived tasks per task state from item and hop counts, as the views would', () => {
    const items = [
      item('a', { state: 'awaiting-approval' }),
      item('b', { state: 'completed' }),
      item('c', { state: 'running' }),
    ];
    const hops: Record<string, HopRecord[]> = {
      a: [hop('a', 1, { state: 'completed' }), hop('a', 2, { state: 'completed' })],
      b: [hop('b', 1, { state: 'failed' })],
      c: [hop('c', 1, { state: 'suspended' }), hop('c', 2)],
    };
    const views = taskViewsOfItems(items, (id) => hops[id] ?? []);
    const fromViews: Record<string, number> = {};
    for (const v of views) fromViews[v.state] = (fromViews[v.state] ?? 0) + 1;
    const counts = taskStateCounts(
      { 'awaiting-approval': 1, completed: 1, running: 1 },
      { completed: 2, failed: 1, suspended: 1, dispatched: 1 },
    );
    expect(Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0))).toEqual(fromViews);
    expect(counts.rejected).toBe(0);
    expect(counts['auth-required']).toBe(1);
    expect(counts.working).toBe(2);
  });
});
