import { TASK_STATES, type TaskState } from '../protocol/task.js';
import type { HopRecord, HopState, ItemRecord, ItemState } from './records.js';

/**
 * The A2A view of the Coordinator's work, derived from its item and hop rows
 * alone: a work item is a task (requester: the human edge; worker: the
 * Coordinator) and each hop is a child task (requester: the Coordinator;
 * worker: the hop's role). The broker mirror moves the broker's tasks to
 * these states; readers of a store that has no broker beside it (PostgreSQL)
 * show the same view from the rows.
 */

/** The task state of a hop in each hop state. */
export const HOP_TASK_STATE: Readonly<Record<HopRecord['state'], TaskState>> = {
  dispatched: 'working',
  suspended: 'input-required',
  completed: 'completed',
  failed: 'failed',
};

/** The task state of a work item in each item state. */
export const ITEM_TASK_STATE: Readonly<Record<ItemRecord['state'], TaskState>> = {
  pending: 'working',
  running: 'working',
  suspended: 'working',
  'awaiting-approval': 'auth-required',
  completed: 'completed',
  failed: 'failed',
  canceled: 'canceled',
};

/** Who stands on each side of a derived task: the human edge, the Coordinator, or a role's agent. */
export const EDGE_PARTY = 'edge';
export const COORDINATOR_PARTY = 'coordinator';

/** One task of the derived view. */
export interface TaskView {
  /** The broker's task id when the rows carry one; otherwise the item's or hop's id. */
  id: string;
  kind: 'item' | 'hop';
  state: TaskState;
  /** The work item the task is for (the item itself, or the hop's item). */
  itemId: string;
  /** A hop's parent: its item's task id. */
  parentId: string | null;
  /** An item's hop tasks, in hop order. */
  childIds: string[];
  requester: string;
  worker: string;
  /** A hop's number, stage and role (null for an item). */
  hop: number | null;
  stage: string | null;
  role: string | null;
  createdAt: number;
  updatedAt: number;
}

function itemTaskId(item: ItemRecord): string {
  return item.taskId ?? item.id;
}

/** The derived view of one work item and its hops: the item's task first, then one task per hop in hop order. */
export function taskViewsOfItem(item: ItemRecord, hops: readonly HopRecord[]): TaskView[] {
  const ordered = [...hops].sort((a, b) => a.seq - b.seq);
  const parentId = itemTaskId(item);
  const hopViews = ordered.map(
    (hop): TaskView => ({
      id: hop.taskId ?? hop.id,
      kind: 'hop',
      state: HOP_TASK_STATE[hop.state],
      itemId: item.id,
      parentId,
      childIds: [],
      requester: COORDINATOR_PARTY,
      worker: hop.role,
      hop: hop.hop,
      stage: hop.stage,
      role: hop.role,
      createdAt: hop.dispatchedAt,
      updatedAt: hop.finishedAt ?? hop.activeSince ?? hop.dispatchedAt,
    }),
  );
  const itemView: TaskView = {
    id: parentId,
    kind: 'item',
    state: ITEM_TASK_STATE[item.state],
    itemId: item.id,
    parentId: null,
    childIds: hopViews.map((view) => view.id),
    requester: EDGE_PARTY,
    worker: COORDINATOR_PARTY,
    hop: null,
    stage: item.stage,
    role: null,
    createdAt: item.createdAt,
    updatedAt: item.updatedAt,
  };
  return [itemView, ...hopViews];
}

/** The derived view of many items: each item's tasks (`taskViewsOfItem`), items in the order given. */
export function taskViewsOfItems(
  items: readonly ItemRecord[],
  hopsOf: (itemId: string) => readonly HopRecord[],
): TaskView[] {
  return items.flatMap((item) => taskViewsOfItem(item, hopsOf(item.id)));
}

/**
 * How many derived tasks are in each task state, from how many items and
 * hops are in each of theirs (counts a store can total without reading the
 * rows): every task state is present, zero where none.
 */
export function taskStateCounts(
  itemCounts: Readonly<Partial<Record<ItemState, number>>>,
  hopCounts: Readonly<Partial<Record<HopState, number>>>,
): Record<TaskState, number> {
  const out = Object.fromEntries(TASK_STATES.map((state) => [state, 0])) as Record<TaskState, number>;
  for (const [state, n] of Object.entries(itemCounts)) out[ITEM_TASK_STATE[state as ItemState]] += n ?? 0;
  for (const [state, n] of Object.entries(hopCounts)) out[HOP_TASK_STATE[state as HopState]] += n ?? 0;
  return out;
}
