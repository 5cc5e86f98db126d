import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';
import type { ItemEvent, ItemRecord } from '../../workflow/records.js';

export { ITEM_EVENT_KINDS, type ItemEvent, type ItemEventKind } from '../../workflow/records.js';

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
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: CoordinatorErrorCode;
  constructor(code: CoordinatorErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A refusal of a bad argument or option (`COORD_INVALID_ARGUMENT`), with what caused it. */
export function invalid(message: string, cause?: unknown): CoordinatorError {
  return new CoordinatorError('COORD_INVALID_ARGUMENT', message, cause === undefined ? {} : { cause });
}
