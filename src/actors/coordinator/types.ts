import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';
import type { RunUsage } from '../../protocol/workflow.js';
import type { ItemApproval, ItemFailure, ItemRecord, ItemState } from '../../workflow/records.js';

/** What just happened to a work item (the event of an `ItemStatus`). */
export const ITEM_EVENT_KINDS = [
  'created',
  'dispatched',
  'denied',
  'suspended',
  'answered',
  'resumed',
  'hop-completed',
  'hop-failed',
  'approval-requested',
  'approved',
  'approval-denied',
  'budget-exceeded',
  'completed',
  'failed',
  'canceled',
  /** A result that arrived after the item ended: its cost is accrued, nothing else changes. */
  'late-result',
  /** The item as it stands when `watch` starts (the first status it emits). */
  'current',
] as const;
export type ItemEventKind = (typeof ITEM_EVENT_KINDS)[number];

export interface ItemEvent {
  kind: ItemEventKind;
  itemId: string;
  /** The run's hop number, for hop events. */
  hop: number | null;
  stage: string | null;
  role: string | null;
  /** One readable line: what happened and why. */
  detail: string;
  /** What this event accrued (results only). */
  usage?: RunUsage;
  model?: string;
  at: number;
}

/** A work item's status as `watch` streams it: the item, and the event that changed it. */
export interface ItemStatus {
  id: string;
  /** The work item's A2A task in the broker. */
  taskId: string | null;
  workflow: { id: string; version: number };
  state: ItemState;
  stage: string | null;
  hop: number;
  hops: number;
  usage: RunUsage;
  failure: ItemFailure | null;
  approval: ItemApproval | null;
  createdAt: number;
  finishedAt: number | null;
  event: ItemEvent;
}

export function statusOf(item: ItemRecord, event: ItemEvent): ItemStatus {
  return {
    id: item.id,
    taskId: item.taskId,
    workflow: item.workflow,
    state: item.state,
    stage: item.stage,
    hop: item.hop,
    hops: item.hops,
    usage: item.usage,
    failure: item.failure,
    approval: item.approval,
    createdAt: item.createdAt,
    finishedAt: item.finishedAt,
    event,
  };
}

export const COORDINATOR_ERROR_CODES = ERROR_CODES.CoordinatorError;
export type CoordinatorErrorCode = ErrorCodeOf<'CoordinatorError'>;

/** A refused Coordinator call: nothing changed. */
export class CoordinatorError extends SwitchboardError {
  declare readonly code: CoordinatorErrorCode;
  constructor(code: CoordinatorErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
