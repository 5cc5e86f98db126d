import {
  type AskedBy,
  type ItemBudgetHeader,
  RESULTS_ROLE,
  type ResultEnvelope,
  type RetryPolicy,
  type TraceFields,
  type WorkEnvelope,
  type WorkHeaders,
  type WorkMessage,
} from '../protocol/work-envelope.js';
import { type ArtifactChunk, chunkOf } from '../protocol/artifact-chunk.js';
import { type DeliveriesOptions, deliveries } from './deliveries.js';
import { replyDispatch } from './reply-routing.js';
import type { DeadLetter, Delivery, NackOptions, QueueStats, WorkQueue } from './work-queue.js';

/**
 * The Coordinator's side of the bus, Temporal-shaped: `start` schedules an
 * activity (a hop) on a role's task queue with its retry policy, `signal`
 * delivers a reply to a suspended hop, `query` reads a role's queue, and
 * `results` is the stream of hop results to react to, and `purgeDeadLetter`
 * drops the dead letter of a failure the workflow handled. It holds no state
 * of its own; a Temporal backend can implement the same calls.
 */
export interface StartHop {
  role: string;
  taskId: string;
  runId: string;
  hop: number;
  /** The Coordinator's attempt number of this hop (default 1). */
  attempt?: number;
  message: WorkMessage;
  /** Default `<runId>/<hop>/<attempt>`: starting the same hop attempt twice schedules it once. */
  idempotencyKey?: string;
  /** Per-task serialization key (e.g. the work item's task id). */
  taskKey?: string;
  retryPolicy?: Partial<RetryPolicy>;
  delayMs?: number;
  /** Where the hop's result goes (default the dispatcher's results role). */
  resultRole?: string;
  /** On a query a suspended hop asks: the hop its answer resumes. */
  askedBy?: AskedBy;
  metadata?: Record<string, unknown>;
  /** The trace the hop continues (`headers.trace`): what the publisher's span injected. */
  trace?: TraceFields;
  /** The work item's budget and what it had spent (`headers.itemBudget`). */
  itemBudget?: ItemBudgetHeader;
}

export interface Started {
  messageId: string;
  idempotencyKey: string;
  /** The hop attempt was already scheduled: nothing new was published. */
  duplicate: boolean;
}

export interface RoleQuery extends QueueStats {
  /** The oldest dead letters (up to `deadLetterLimit`). */
  deadLetterSample: DeadLetter[];
}

export interface ResultDelivery {
  result: ResultEnvelope;
  delivery: Delivery;
  ack(): Promise<boolean>;
  nack(options: NackOptions): ReturnType<WorkQueue['nack']>;
}

export interface Dispatcher {
  start(hop: StartHop): Promise<Started>;
  /** Re-dispatches a result that answers a suspended hop's query; `resumed: false` when it answers none. */
  signal(
    result: ResultEnvelope,
    trace?: TraceFields,
  ): Promise<{ resumed: boolean; messageId?: string; duplicate?: boolean }>;
  query(role: string, options?: { deadLetterLimit?: number }): Promise<RoleQuery>;
  /** Hop results (from the results role) as they arrive; the caller acks each once it has recorded it. */
  results(
    options: Omit<DeliveriesOptions, 'visibilityTimeoutMs'> & {
      visibilityTimeoutMs?: number;
      /**
       * Told each artifact chunk a hop sent beside its results (acked at once:
       * chunks are previews, not durable work), in the order they came, before
       * the results that came after them are yielded. Without it a chunk is
       * acked and dropped.
       */
      chunks?: (chunk: ArtifactChunk, headers: WorkHeaders) => void;
    },
  ): AsyncGenerator<ResultDelivery>;
  /**
   * Purges one dead letter of a role: a hop's failure the run routed on
   * purpose is handled, not dead. Idempotent: false when it is not (or no
   * longer) there, e.g. replayed or purged already.
   */
  purgeDeadLetter(role: string, id: string): Promise<boolean>;
}

/**
 * The query a suspended hop asks, as the Coordinator publishes it (a worker
 * never publishes a hop itself): to the asked role, under
 * `<continuationToken>:ask`, with `askedBy` naming the hop its answer resumes.
 * `undefined` for a result that is not a suspension with its question.
 */
export function questionHop(suspended: ResultEnvelope): StartHop | undefined {
  const ask = suspended.ask;
  if (suspended.outcome !== 'suspended' || ask === undefined) return undefined;
  const h = suspended.headers;
  return {
    role: ask.role,
    taskId: h.taskId,
    runId: h.runId,
    hop: h.hop,
    attempt: 1,
    idempotencyKey: `${ask.continuationToken}:ask`,
    askedBy: { role: suspended.role, continuationToken: ask.continuationToken, taskId: h.taskId, hop: h.hop },
    message: ask.message,
  };
}

export function createDispatcher(options: { bus: WorkQueue; resultsRole?: string }): Dispatcher {
  const { bus } = options;
  const resultsRole = options.resultsRole ?? RESULTS_ROLE;
  return {
    async start(hop) {
      const attempt = hop.attempt ?? 1;
      const idempotencyKey = hop.idempotencyKey ?? `${hop.runId}/${hop.hop}/${attempt}`;
      const envelope: WorkEnvelope = {
        kind: 'work',
        headers: {
          taskId: hop.taskId,
          runId: hop.runId,
          hop: hop.hop,
          attempt,
          idempotencyKey,
          ...(hop.resultRole === undefined ? {} : { resultRole: hop.resultRole }),
          ...(hop.askedBy === undefined ? {} : { askedBy: hop.askedBy }),
          ...(hop.trace === undefined ? {} : { trace: hop.trace }),
          ...(hop.itemBudget === undefined ? {} : { itemBudget: hop.itemBudget }),
        },
        message: hop.message,
        ...(hop.metadata === undefined ? {} : { metadata: hop.metadata }),
      };
      const published = await bus.publish(hop.role, envelope, {
        idempotencyKey,
        ...(hop.taskKey === undefined ? {} : { taskKey: hop.taskKey }),
        ...(hop.retryPolicy === undefined ? {} : { retryPolicy: hop.retryPolicy }),
        ...(hop.delayMs === undefined ? {} : { delayMs: hop.delayMs }),
      });
      return { messageId: published.id, idempotencyKey, duplicate: published.duplicate };
    },
    async signal(result, trace) {
      const dispatch = replyDispatch(result);
      if (dispatch === undefined) return { resumed: false };
      if (trace !== undefined && dispatch.envelope.kind === 'work') dispatch.envelope.headers.trace = trace;
      const published = await bus.publish(dispatch.role, dispatch.envelope, {
        idempotencyKey: dispatch.idempotencyKey,
      });
      return { resumed: true, messageId: published.id, duplicate: published.duplicate };
    },
    async query(role, queryOptions = {}) {
      const stats = await bus.stats(role);
      const limit = queryOptions.deadLetterLimit ?? 10;
      const deadLetterSample = stats.deadLetters > 0 ? await bus.deadLetters.list(role, { limit }) : [];
      return { ...stats, deadLetterSample };
    },
    async purgeDeadLetter(role, id) {
      return (await bus.deadLetters.purge(role, { ids: [id] })) > 0;
    },
    async *results(resultOptions) {
      for await (const delivery of deliveries(bus, resultsRole, {
        ...resultOptions,
        visibilityTimeoutMs: resultOptions.visibilityTimeoutMs ?? 30_000,
      })) {
        if (delivery.envelope.kind !== 'result') {
          const chunk = chunkOf(delivery.envelope);
          if (chunk !== undefined) {
            resultOptions.chunks?.(chunk, delivery.envelope.headers);
            await bus.ack(delivery);
            continue;
          }
          await bus.nack(delivery, {
            error: { type: 'InvalidResult', message: 'a work envelope on the results role' },
            retryable: false,
          });
          continue;
        }
        yield {
          result: delivery.envelope,
          delivery,
          ack: () => bus.ack(delivery),
          nack: (nackOptions) => bus.nack(delivery, nackOptions),
        };
      }
    },
  };
}
