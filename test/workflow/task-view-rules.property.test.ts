import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { TASK_STATES } from '../../src/protocol/task.js';
import { WORKFLOW_RUN_STATES, ZERO_RUN_USAGE } from '../../src/protocol/workflow.js';
import { type HopRecord, type HopState, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';
import {
  COORDINATOR_PARTY,
  EDGE_PARTY,
  HOP_TASK_STATE,
  ITEM_TASK_STATE,
  type TaskView,
  taskStateCounts,
  taskViewsOfItem,
  taskViewsOfItems,
} from '../../src/workflow/task-view.js';

/**
 * The derived A2A view (what `switchboard tasks` and the console show for a
 * Coordinator on PostgreSQL, and what the broker mirror moves tasks to) as
 * properties over any item and hops: docs/coordinator.md and docs/cli.md
 * state the mapping and the links.
 */

const HOP_STATES: readonly HopState[] = ['dispatched', 'suspended', 'completed', 'failed'];

const hopArb = (itemId: string, seq: number): fc.Arbitrary<HopRecord> =>
  fc
    .record({
      state: fc.constantFrom(...HOP_STATES),
      taskId: fc.option(fc.constant(`task-of-${itemId}-${seq}`), { nil: null }),
      dispatchedAt: fc.integer({ min: 0, max: 1_000 }),
      activeSince: fc.option(fc.integer({ min: 1_001, max: 2_000 }), { nil: null }),
      finishedAt: fc.option(fc.integer({ min: 2_001, max: 3_000 }), { nil: null }),
      stage: fc.constantFrom('plan', 'build', 'review'),
      role: fc.constantFrom('planner', 'coder', 'reviewer'),
      hop: fc.integer({ min: 1, max: 9 }),
    })
    .map(({ state, taskId, dispatchedAt, activeSince, finishedAt, stage, role, hop }) => ({
      ...dispatchedHop({
        id: `${itemId}-h${seq}`,
        itemId,
        seq,
        hop,
        attempt: 1,
        kind: 'stage',
        stage,
        role,
        idempotencyKey: `${itemId}:${seq}`,
        continuation: null,
        askedBy: null,
        dispatchedAt,
        activeSince,
      }),
      state,
      taskId,
      finishedAt,
    }));

const itemArb = (id: string): fc.Arbitrary<ItemRecord> =>
  fc
    .record({
      state: fc.constantFrom(...WORKFLOW_RUN_STATES),
      taskId: fc.option(fc.constant(`task-of-${id}`), { nil: null }),
      stage: fc.option(fc.constantFrom('plan', 'build'), { nil: null }),
      createdAt: fc.integer({ min: 0, max: 1_000 }),
      updatedAt: fc.integer({ min: 1_000, max: 5_000 }),
    })
    .map(({ state, taskId, stage, createdAt, updatedAt }) => ({
      id,
      taskId,
      workflow: { id: 'wf', version: 1 },
      state,
      stage,
      hop: 1,
      hops: 1,
      input: [],
      budget: null,
      attributes: null,
      usage: { ...ZERO_RUN_USAGE },
      failure: null,
      approval: null,
      createdAt,
      updatedAt,
      finishedAt: null,
      output: null,
      mirrored: false,
    }));

/** An item with its hops, handed over in any order (seq 1..n shuffled). */
const itemWithHopsArb = (id: string) =>
  fc
    .tuple(
      itemArb(id),
      fc
        .integer({ min: 0, max: 5 })
        .chain((n) =>
          fc
            .tuple(...Array.from({ length: n }, (_, i) => hopArb(id, i + 1)))
            .chain((hops) => fc.shuffledSubarray(hops, { minLength: hops.length })),
        ),
    )
    .map(([item, hops]) => ({ item, hops: hops as HopRecord[] }));

describe('task views of an item', () => {
  test.prop([itemWithHopsArb('i1')])(
    "the item's task first, then one child task per hop in seq order, linked both ways",
    ({ item, hops }) => {
      const given = hops.map((h) => h.seq);
      const views = taskViewsOfItem(item, hops);
      expect(views).toHaveLength(hops.length + 1);
      const [itemView, ...hopViews] = views as [TaskView, ...TaskView[]];
      const ordered = [...hops].sort((a, b) => a.seq - b.seq);
      expect(itemView).toEqual({
        id: item.taskId ?? item.id,
        kind: 'item',
        state: ITEM_TASK_STATE[item.state],
        itemId: item.id,
        parentId: null,
        childIds: ordered.map((h) => h.taskId ?? h.id),
        requester: EDGE_PARTY,
        worker: COORDINATOR_PARTY,
        hop: null,
        stage: item.stage,
        role: null,
        createdAt: item.createdAt,
        updatedAt: item.updatedAt,
      });
      hopViews.forEach((view, i) => {
        const h = ordered[i]!;
        expect(view).toEqual({
          id: h.taskId ?? h.id,
          kind: 'hop',
          state: HOP_TASK_STATE[h.state],
          itemId: item.id,
          parentId: itemView.id,
          childIds: [],
          requester: COORDINATOR_PARTY,
          worker: h.role,
          hop: h.hop,
          stage: h.stage,
          role: h.role,
          createdAt: h.dispatchedAt,
          // The last thing that happened to the hop: it finished, else it last ran, else it was dispatched.
          updatedAt: h.finishedAt ?? h.activeSince ?? h.dispatchedAt,
        });
      });
      // The hops handed over are left as they were.
      expect(hops.map((h) => h.seq)).toEqual(given);
    },
  );

  test.prop([itemWithHopsArb('a'), itemWithHopsArb('b')])(
    'many items: each item followed by its own hops, items in the order given',
    (a, b) => {
      const hopsOf = (id: string) => (id === 'a' ? a.hops : id === 'b' ? b.hops : []);
      expect(taskViewsOfItems([b.item, a.item], hopsOf)).toEqual([
        ...taskViewsOfItem(b.item, b.hops),
        ...taskViewsOfItem(a.item, a.hops),
      ]);
      expect(taskViewsOfItems([], hopsOf)).toEqual([]);
    },
  );

  it('the mapping of docs/coordinator.md: a hop is working, input-required while suspended, then completed or failed', () => {
    expect(HOP_TASK_STATE).toEqual({
      dispatched: 'working',
      suspended: 'input-required',
      completed: 'completed',
      failed: 'failed',
    });
    expect(ITEM_TASK_STATE).toEqual({
      pending: 'working',
      running: 'working',
      suspended: 'working',
      'awaiting-approval': 'auth-required',
      completed: 'completed',
      failed: 'failed',
      canceled: 'canceled',
    });
    // Every item state has a task state.
    for (const state of WORKFLOW_RUN_STATES) expect(TASK_STATES).toContain(ITEM_TASK_STATE[state]);
    expect([EDGE_PARTY, COORDINATOR_PARTY]).toEqual(['edge', 'coordinator']);
  });
});

describe('taskStateCounts', () => {
  const countsArb = <K extends string>(keys: readonly K[]) =>
    fc.record(Object.fromEntries(keys.map((k) => [k, fc.nat(20)])) as Record<K, fc.Arbitrary<number>>, {
      requiredKeys: [],
    });

  test.prop([countsArb(WORKFLOW_RUN_STATES), countsArb(HOP_STATES)])(
    'counts exactly what the views would show, every task state present',
    (itemCounts, hopCounts) => {
      const counts = taskStateCounts(itemCounts, hopCounts);
      expect(Object.keys(counts).sort()).toEqual([...TASK_STATES].sort());
      const expected = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<string, number>;
      for (const [state, n] of Object.entries(itemCounts) as [string, number][]) {
        expected[ITEM_TASK_STATE[state as keyof typeof ITEM_TASK_STATE]]! += n;
      }
      for (const [state, n] of Object.entries(hopCounts) as [string, number][])
        expected[HOP_TASK_STATE[state as HopState]]! += n;
      expect(counts).toEqual(expected);
    },
  );

  it('takes a state present with no count as none', () => {
    const counts = taskStateCounts({ running: undefined, completed: 2 }, { failed: undefined, dispatched: 1 });
    expect(counts.working).toBe(1);
    expect(counts.completed).toBe(2);
    expect(counts.failed).toBe(0);
    expect(Object.values(counts).every((n) => Number.isInteger(n))).toBe(true);
  });
});
