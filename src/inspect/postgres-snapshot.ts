import type { PostgresCoordinatorStore } from '../persistence/coordinator/postgres-store.js';
import { isTerminalState } from '../protocol/task.js';
import { taskStateCounts, taskViewsOfItems } from '../workflow/task-view.js';
import { type SnapshotOptions, type SystemSnapshot, inTree, itemRowOf } from './system-snapshot.js';

/**
 * What `switchboard top` shows of a Coordinator on PostgreSQL: there is no
 * broker file, so the tasks are the A2A view derived from the item and hop
 * rows (`workflow/task-view.ts`); the items are the same columns as on a
 * file. There are no bus tables (the queues are on Redis): `queues` is null.
 * The caller runs it in one snapshot transaction.
 */
export async function readPostgresSnapshot(
  store: PostgresCoordinatorStore,
  options: SnapshotOptions = {},
): Promise<SystemSnapshot> {
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 20;
  const totals = await store.readItemTotals();
  const hopCounts = await store.countHopsByState();
  const live = await store.readLiveItems();
  const finished = live.length < limit ? await store.readLatestFinished(limit - live.length) : [];
  const hopsOf = await store.readHopsOfItems(live.map((item) => item.id));
  const byState = taskStateCounts(totals.byState, hopCounts);
  const liveTasks = taskViewsOfItems(live, (itemId) => hopsOf.get(itemId) ?? [])
    .filter((view) => !isTerminalState(view.state))
    .sort((a, b) => a.updatedAt - b.updatedAt)
    .slice(0, limit);
  return {
    at: now,
    tasks: {
      total: Object.values(byState).reduce((sum, n) => sum + n, 0),
      byState,
      live: liveTasks.map((view) => ({
        taskId: view.id,
        state: view.state,
        worker: view.worker,
        requester: view.requester,
        idleMs: Math.max(0, now - view.updatedAt),
      })),
    },
    queues: null,
    items: {
      byState: totals.byState,
      costUsd: totals.costUsd,
      inputTokens: totals.inputTokens,
      outputTokens: totals.outputTokens,
      rows: inTree([...live.slice(0, limit), ...finished].map((item) => itemRowOf(item, now))),
    },
  };
}
