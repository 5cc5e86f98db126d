import { RESULTS_ROLE, type ResultEnvelope, type WorkError, WorkEnvelopeSchema } from '../protocol/work-envelope.js';
import type { PublishRequest } from './work-queue.js';

/**
 * A dead work message is never silent. When a `work` envelope is
 * dead-lettered (a non-retryable failure, retries exhausted, or a lease that
 * expired once too often), the queue itself publishes a `failed` result for
 * it to `headers.resultRole` (default `$results`), in the same atomic step as
 * the dead-letter move (one SQLite transaction; one Lua script on Redis). So
 * whoever waits for the hop (the Coordinator) always learns of its end, even
 * when the worker that failed it dies before it can say so, or when no worker
 * is left to say it (an expired lease). This is BullMQ's "fail the parent" and
 * Temporal's activity timeout surfacing to the workflow, on a bus.
 *
 * The notice names the dead letter (`deadLetter`: its id on the role's
 * queue): a failure the workflow routes on purpose is handled, not dead, and
 * the Coordinator purges its letter once it has routed it.
 *
 * A result, query reply or anything else that dies stays a plain dead letter.
 */

/** The idempotency key of a notice: one per death of one message (a replayed message that dies again gets another). */
function deadLetterNoticeKey(messageId: string, deliveries: number, at: number): string {
  return `$dead:${messageId}:${deliveries}:${at}`;
}

export interface DeadLetterFacts {
  /** The dead message's envelope as stored. */
  envelope: unknown;
  /** The role it died on (the role that would have run it). */
  role: string;
  error: WorkError;
  deliveries: number;
  /** The backend's id of the message. */
  messageId: string;
  /** When it died (the queue's clock). */
  at: number;
}

/** The failure result a dead work message publishes, or `undefined` for any other envelope. */
export function deadLetterNotice(facts: DeadLetterFacts): PublishRequest | undefined {
  const work = WorkEnvelopeSchema.safeParse(facts.envelope);
  if (!work.success) return undefined;
  const { headers } = work.data;
  const failed: ResultEnvelope = {
    kind: 'result',
    headers,
    role: facts.role,
    outcome: 'failed',
    parts: [],
    artifacts: [],
    error: facts.error,
    deliveries: Math.max(1, facts.deliveries),
    deadLetter: facts.messageId,
  };
  return {
    role: headers.resultRole ?? RESULTS_ROLE,
    envelope: failed,
    idempotencyKey: deadLetterNoticeKey(facts.messageId, facts.deliveries, facts.at),
  };
}
