import { z } from 'zod';
import { WORKFLOW_RUN_STATES } from './workflow.js';

/**
 * The bodies of the console's HTTP API calls that change something (each
 * needs the console's access token). Reads take query parameters only.
 */

/** A console user's name (`switchboard console users add NAME`): the approver their decisions are audited as. */
export const ConsoleUserNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$/,
    'a name of letters, digits, . _ @ - (at most 128, starting with a letter or digit)',
  );

/**
 * `POST /api/approvals`: approve or deny a work item waiting at an approval
 * gate. With a user's token the approver is that user (`approver`, if
 * given, must be their name); with the shared token `approver` is required.
 */
export const ConsoleApprovalSchema = z.strictObject({
  itemId: z.string().min(1).max(200),
  approver: z.string().min(1).max(128).optional(),
  decision: z.enum(['approve', 'deny']),
  reason: z.string().max(2000).optional(),
});
/** A console approval (inferred from `ConsoleApprovalSchema`). */
export type ConsoleApproval = z.infer<typeof ConsoleApprovalSchema>;

/** `POST /api/items/cancel`: cancels a work item that has not ended (with its child items), naming who and why. */
export const ConsoleCancelSchema = z.strictObject({
  itemId: z.string().min(1).max(200),
  /** Who cancels: taken from a user's token; only the shared token names one here. */
  by: z.string().min(1).max(128).optional(),
  reason: z.string().min(1).max(2000).optional(),
});
/** A console cancel (inferred from `ConsoleCancelSchema`). */
export type ConsoleCancel = z.infer<typeof ConsoleCancelSchema>;

/** `POST /api/dead-letters/replay`: moves a role's dead letters (all, or those ids) back to ready. */
export const ConsoleReplaySchema = z.strictObject({
  role: z.string().min(1).max(128),
  ids: z.array(z.string().min(1).max(256)).min(1).max(1000).optional(),
});
/** A console replay (inferred from `ConsoleReplaySchema`). */
export type ConsoleReplay = z.infer<typeof ConsoleReplaySchema>;

/** The query of `GET /api/items`. */
export const ConsoleItemsQuerySchema = z.strictObject({
  state: z.enum(WORKFLOW_RUN_STATES).optional(),
  workflow: z.string().min(1).max(128).optional(),
  /** Text an item's id, workflow id or state contains (any case). */
  q: z.string().max(200).optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  /** Skip this many of the newest (the next page starts where the last one ended). */
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
});
