import { z } from 'zod';
import { WORKFLOW_RUN_STATES } from './workflow.js';

/**
 * The bodies of the console's HTTP API calls that change something (each
 * needs the console's access token). Reads take query parameters only.
 */

/** `POST /api/approvals`: approve or deny a work item waiting at an approval gate, as a named approver. */
export const ConsoleApprovalSchema = z.strictObject({
  itemId: z.string().min(1).max(200),
  approver: z.string().min(1).max(128),
  decision: z.enum(['approve', 'deny']),
  reason: z.string().max(2000).optional(),
});
/** A console approval (inferred from `ConsoleApprovalSchema`). */
export type ConsoleApproval = z.infer<typeof ConsoleApprovalSchema>;

/** `POST /api/items/cancel`: cancels a work item that has not ended (with its child items), naming who and why. */
export const ConsoleCancelSchema = z.strictObject({
  itemId: z.string().min(1).max(200),
  by: z.string().min(1).max(128),
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
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  /** Skip this many of the newest (the next page starts where the last one ended). */
  offset: z.coerce.number().int().min(0).max(1_000_000).optional(),
});
