import { z } from 'zod';

/**
 * The operator's control messages for a work item, carried on the bus's
 * control role `$controls` to the Coordinator that leads (`switchboard items
 * cancel`, `switchboard items retry`, the console's Cancel button).
 *
 * - `switchboard.cancel`: cancel an item that has not ended, with its whole
 *   subtree of child items; who canceled and why are audited.
 * - `switchboard.retry`: run a failed item again as a NEW work item on the
 *   same workflow version and input, linked to the failed one (the attribute
 *   `switchboard.retry-of`), from the workflow's start or from the stage
 *   named. The failed item stays failed: its history and audit are never
 *   rewritten. One retry per failed item: the retry's request id is
 *   `retry:ITEM`, so sending it again creates nothing more (retry the new
 *   item if it fails in turn).
 */

export const CONTROLS_ROLE = '$controls';
/** The attribute of a retry: the item it retries. */
export const RETRY_OF_ATTRIBUTE = 'switchboard.retry-of';

const ItemIdSchema = z.string().min(1).max(200);
const NameSchema = z.string().min(1).max(128);

export const CancelRequestSchema = z.strictObject({
  type: z.literal('switchboard.cancel'),
  itemId: ItemIdSchema,
  by: NameSchema.optional(),
  reason: z.string().min(1).max(2000).optional(),
});
export type CancelRequest = z.infer<typeof CancelRequestSchema>;

export const RetryRequestSchema = z.strictObject({
  type: z.literal('switchboard.retry'),
  itemId: ItemIdSchema,
  /** The stage to start from (default: the workflow's start stage). */
  from: z.string().min(1).max(128).optional(),
  by: NameSchema.optional(),
});
export type RetryRequest = z.infer<typeof RetryRequestSchema>;

export const ItemControlSchema = z.discriminatedUnion('type', [CancelRequestSchema, RetryRequestSchema]);
export type ItemControl = z.infer<typeof ItemControlSchema>;

/** The request id of the retry of an item (its idempotency key, and the new item's `switchboard.request`). */
export function retryRequestId(itemId: string): string {
  return `retry:${itemId}`;
}
