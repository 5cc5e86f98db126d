import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';
import type { RunUsage } from '../../protocol/workflow.js';
import type { ItemRecord } from '../../workflow/records.js';

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
/** What happened to a work item, as an `ItemEvent` names it (one of `ITEM_EVENT_KINDS`). */
export type ItemEventKind = (typeof ITEM_EVENT_KINDS)[number];

/** One thing that happened to a work item: which hop, stage and role, a readable line, and what it cost. */
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

/** The fields of an `ItemRecord` that a status carries, in the order it carries them. */
const ITEM_STATUS_FIELDS = [
  'id',
  'taskId',
  'workflow',
  'state',
  'stage',
  'hop',
  'hops',
  'usage',
  'failure',
  'approval',
  'createdAt',
  'finishedAt',
  'output',
] as const satisfies readonly (keyof ItemRecord)[];

/** A work item's status as `watch` streams it: a view of the item (with its `output` once it ended), and the event that changed it. */
export type ItemStatus = Pick<ItemRecord, (typeof ITEM_STATUS_FIELDS)[number]> & { event: ItemEvent };

export function statusOf(item: ItemRecord, event: ItemEvent): ItemStatus {
  const status: Partial<Record<keyof ItemRecord, unknown>> = {};
  for (const field of ITEM_STATUS_FIELDS) status[field] = item[field];
  return { ...(status as Pick<ItemRecord, (typeof ITEM_STATUS_FIELDS)[number]>), event };
}

/** Every code a `CoordinatorError` carries. */
export const COORDINATOR_ERROR_CODES = ERROR_CODES.CoordinatorError;
/** One code a `CoordinatorError` carries (one of `COORDINATOR_ERROR_CODES`). */
export type CoordinatorErrorCode = ErrorCodeOf<'CoordinatorError'>;

/** A refused Coordinator call: nothing changed. */
export class CoordinatorError extends SwitchboardError {
  declare readonly code: CoordinatorErrorCode;
  constructor(code: CoordinatorErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
