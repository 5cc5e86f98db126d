import type { Part } from '../protocol/parts.js';
import type { ResultEnvelope, WorkEnvelope, WorkError } from '../protocol/work-envelope.js';
import type { PublishRequest } from './work-queue.js';

/**
 * Suspend/resume on the bus. A hop of role A that needs role B's answer
 * publishes a query to B whose headers carry `askedBy: {role: A,
 * continuationToken, taskId, hop}`, checkpoints, and stands down. B's result
 * reaches the results role like any other; whoever consumes results (the
 * Coordinator) turns it into A's resume with `replyDispatch` and publishes
 * that: A's harness rehydrates the checkpoint and calls A's handler with the
 * reply. A query that fails (dead-lettered) still resumes A, with the error.
 */

/** Metadata key of a resume message: who answered and how. */
export const REPLY_METADATA_KEY = 'switchboardReply';

export interface ReplyInfo {
  role: string;
  outcome: 'completed' | 'failed';
  error?: WorkError;
}

/** The idempotency key of the resume of a continuation: one resume per suspension, however often it is dispatched. */
export function resumeKey(continuationToken: string): string {
  return `${continuationToken}:reply`;
}

function replyParts(result: ResultEnvelope): Part[] {
  if (result.parts.length > 0) return result.parts;
  const fromArtifacts = result.artifacts.flatMap((a) => a.parts);
  if (fromArtifacts.length > 0) return fromArtifacts;
  return [
    {
      kind: 'data',
      data: result.error === undefined ? { outcome: result.outcome } : { outcome: result.outcome, error: result.error },
    },
  ];
}

/**
 * The publish that resumes the hop a result answers, or `undefined` when the
 * result answers no query or is itself a suspension (the answering hop asked
 * someone else; its final result comes later).
 */
export function replyDispatch(result: ResultEnvelope): PublishRequest | undefined {
  const askedBy = result.headers.askedBy;
  if (askedBy === undefined || result.outcome === 'suspended') return undefined;
  const key = resumeKey(askedBy.continuationToken);
  const info: ReplyInfo = { role: result.role, outcome: result.outcome };
  if (result.error !== undefined) info.error = result.error;
  const envelope: WorkEnvelope = {
    kind: 'work',
    headers: {
      taskId: askedBy.taskId,
      runId: result.headers.runId,
      hop: askedBy.hop,
      attempt: 1,
      idempotencyKey: key,
      continuationToken: askedBy.continuationToken,
    },
    message: { role: 'agent', parts: replyParts(result), metadata: { [REPLY_METADATA_KEY]: info } },
  };
  return { role: askedBy.role, envelope, idempotencyKey: key };
}

/** Reads the reply info a resume message carries. */
export function replyInfo(metadata: Record<string, unknown> | undefined): ReplyInfo | undefined {
  const value = metadata?.[REPLY_METADATA_KEY];
  if (value === null || typeof value !== 'object') return undefined;
  const v = value as Partial<ReplyInfo>;
  if (typeof v.role !== 'string' || (v.outcome !== 'completed' && v.outcome !== 'failed')) return undefined;
  return v as ReplyInfo;
}
