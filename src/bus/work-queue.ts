import type { BusEnvelope, RetryPolicy, WorkError } from '../protocol/work-envelope.js';
import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../protocol/switchboard-error.js';

/**
 * The work bus: role-keyed queues with at-least-once delivery. Every backend
 * (the embedded SQLite one, Redis Streams) implements this interface and
 * passes the contract suite in `test/bus/contract.ts`. Everything is async.
 *
 * Semantics (each is a test of the contract suite):
 * - `publish` stores a message for a role durably before it resolves. A second
 *   publish with the same idempotency key to the same role (while the first is
 *   retained) is a no-op that returns the first id with `duplicate: true`.
 * - `consume` leases up to `max` ready messages to `consumer` for
 *   `visibilityTimeoutMs`; no other consumer sees them until the lease ends.
 *   `heartbeat` extends a lease. Each lease has its own fencing `leaseId`: once
 *   a lease has ended (expired and redelivered, released, acked, nacked),
 *   `ack`/`nack`/`heartbeat` with it are refused (return false / `lease-lost`),
 *   so a late consumer can never complete a message twice.
 * - A lease that expires returns the message to the queue (redelivery), and
 *   counts as a failed attempt: past the attempts it goes to the dead-letter
 *   queue with a `LeaseExpired` error.
 * - `nack` retries after an exponential backoff with jitter (the retry policy),
 *   or dead-letters when the error is not retryable, its type is listed in
 *   `nonRetryableErrorTypes`, or attempts are exhausted.
 * - Per-task serialization: of the messages published with the same
 *   `taskKey` (across roles), at most one is leased at any moment.
 */
export interface WorkQueue {
  /** The backend's name (`sqlite`, `redis`): for logs and benchmarks. */
  readonly backend: string;

  /** Publishes an envelope to a role's queue (once per idempotency key). */
  publish(role: string, envelope: BusEnvelope, options: PublishOptions): Promise<PublishResult>;
  /** Publishes several messages; atomically where the backend can. Same semantics, one result per message. */
  publishMany(messages: readonly PublishRequest[]): Promise<PublishResult[]>;

  /**
   * Leases up to `max` (default 1) ready messages of `role`. Resolves with an
   * empty array when none is ready, after waiting up to `waitMs` (default 0)
   * for one to become ready; `signal` ends the wait early (already aborted:
   * nothing is leased).
   */
  consume(role: string, options: ConsumeOptions): Promise<Delivery[]>;
  /** Extends the lease by the delivery's visibility timeout (or `extendMs`). Null when the lease is lost. */
  heartbeat(delivery: Delivery, extendMs?: number): Promise<number | null>;
  /** Completes a delivery. False when its lease was lost (the message is someone else's now). */
  ack(delivery: Delivery): Promise<boolean>;
  /** Acks several deliveries in one round trip / transaction. */
  ackMany(deliveries: readonly Delivery[]): Promise<boolean[]>;
  /** Fails a delivery: retry after a backoff, or dead-letter. */
  nack(delivery: Delivery, options: NackOptions): Promise<NackResult>;
  /** Gives a lease back without failing it: the message is ready again at once (the delivery still counts). */
  release(delivery: Delivery): Promise<boolean>;
  /**
   * Ends every live lease of `role` now, as if each had run out: the
   * messages are ready again at once for whoever consumes next (each
   * delivery counts, as an expiry does), and acks, nacks and heartbeats with
   * the ended leases are refused. For a consumer that takes over a role from
   * one that died (a new Coordinator leader taking back the results its dead
   * predecessor held) instead of waiting for those leases to run out. On
   * Redis, what another consumer read but had not leased yet (a blocking
   * read answered as it died) is claimed by this queue's next consume of
   * `role`, at once too. Resolves with how many leases it ended.
   */
  expireLeases(role: string): Promise<number>;
  /**
   * What the bus's state is a generation of: the same string while the bus
   * keeps what it was given; another one once it lost it (a Redis server
   * restarted empty, a FLUSHALL, the deployment's keys deleted). A
   * Coordinator compares it as it runs and, when it changes, publishes again
   * everything it holds as outstanding. Null for a bus that never loses
   * state by itself: the SQLite bus lives in a file backed up and restored
   * with the Coordinator's own tables (in the embedded default, the same
   * file).
   */
  generation(): Promise<string | null>;

  /** The dead letters: listed, replayed, purged. */
  readonly deadLetters: DeadLetterQueue;
  /** A role's queue now: ready, delayed, in flight, the oldest ready message's age, dead letters. */
  stats(role: string): Promise<QueueStats>;

  /** Stops waits in progress and refuses further calls with `BUS_CLOSED`. Leases held stay until they expire. */
  close(): Promise<void>;
}

/** Options of `WorkQueue.publish`: the idempotency key, and an optional delay, task key and retry policy. */
export interface PublishOptions {
  /** Required: a second publish with the same key to the same role is a no-op. */
  idempotencyKey: string;
  /** Not deliverable before this many milliseconds from now. */
  delayMs?: number;
  /** Messages with the same task key are never leased at the same time (per-task serialization). */
  taskKey?: string;
  /** Overrides the role's retry policy for this message (fields not given keep the role's). */
  retryPolicy?: Partial<RetryPolicy>;
}

/** One message of `WorkQueue.publishMany`: the role, the envelope and its publish options. */
export interface PublishRequest extends PublishOptions {
  /** The role's queue to publish to. */
  role: string;
  /** The envelope to publish. */
  envelope: BusEnvelope;
}

/** What a publish stored: the message id, and whether the idempotency key made it a duplicate. */
export interface PublishResult {
  /** The message's id on the bus. */
  id: string;
  /** True when the idempotency key was already used: nothing was stored, `id` is the first message's. */
  duplicate: boolean;
}

/** Options of `WorkQueue.consume`: the consumer, its lease, how many to take and how long to wait. */
export interface ConsumeOptions {
  /** Who holds the lease (a worker's id): reported in logs and stats only; fencing uses the lease id. */
  consumer: string;
  visibilityTimeoutMs: number;
  /** Most messages to lease at once (default 1). */
  max?: number;
  /** Wait up to this long for a message when none is ready (default 0: return at once). */
  waitMs?: number;
  signal?: AbortSignal;
}

/** One leased delivery of a message: its envelope, keys, lease (fencing) id and delivery count. */
export interface Delivery {
  /** The message id (stable across deliveries). */
  readonly id: string;
  readonly role: string;
  readonly envelope: BusEnvelope;
  readonly idempotencyKey: string;
  readonly taskKey: string | undefined;
  /** This lease's fencing token. */
  readonly leaseId: string;
  readonly consumer: string;
  /** Deliveries of this message so far, this one included (1 on the first). */
  readonly deliveries: number;
  readonly visibilityTimeoutMs: number;
  /** Epoch ms when the message was published. */
  readonly publishedAt: number;
  /** The error of the previous failed delivery, if any. */
  readonly lastError: WorkError | undefined;
}

/** Options of `WorkQueue.nack`: the error, whether it may be retried, and an optional exact delay. */
export interface NackOptions {
  error: WorkError;
  /** False: dead-letter now. */
  retryable: boolean;
  /** Retry after exactly this delay instead of the policy's backoff. */
  delayMs?: number;
  /**
   * False: the failure was the consumer's, not the message's (its database
   * was unreachable, it lost its leadership): the retry uses up none of the
   * message's attempts (`maximumAttempts`, `maxDeliveries`), so an outage
   * never dead-letters it. Needs `retryable: true`. Default true. A lease
   * that expires still counts its deliveries.
   */
  counted?: boolean;
}

/** What a nack did: scheduled a retry, dead-lettered the message, or found its lease lost. */
export type NackResult =
  | { outcome: 'retry'; availableAt: number; delayMs: number }
  | { outcome: 'dead-letter'; reason: string }
  | { outcome: 'lease-lost' };

/** A dead-lettered message: its envelope, keys, delivery count, last error and when it died. */
export interface DeadLetter {
  id: string;
  role: string;
  envelope: BusEnvelope;
  idempotencyKey: string;
  taskKey: string | undefined;
  /** Deliveries it took before it was dead-lettered. */
  deliveries: number;
  lastError: WorkError;
  publishedAt: number;
  deadAt: number;
}

/** A queue's dead letters: list, replay or purge them per role. */
export interface DeadLetterQueue {
  /** Oldest first. */
  list(role: string, options?: { limit?: number; offset?: number }): Promise<DeadLetter[]>;
  /** Moves dead letters (all of the role's, or those ids) back to ready with a fresh attempt count. Returns how many. */
  replay(role: string, options?: { ids?: readonly string[] }): Promise<number>;
  /** Deletes dead letters (all of the role's, or those ids). Returns how many. */
  purge(role: string, options?: { ids?: readonly string[] }): Promise<number>;
}

/** One role's queue now: ready, delayed, in-flight and dead-lettered counts, and the lag of the oldest ready. */
export interface QueueStats {
  role: string;
  /** Ready now. */
  depth: number;
  /** Ready later (retry backoff, `delayMs`). */
  delayed: number;
  /** Leased and not yet expired. */
  inFlight: number;
  /** Age in ms of the oldest message ready now (0 when none). */
  lag: number;
  deadLetters: number;
}

/** Per role settings of a queue. */
export interface RoleSettings {
  retryPolicy?: Partial<RetryPolicy>;
  /** Deliveries after which a message is dead-lettered whatever the policy says (default 10). */
  maxDeliveries?: number;
}

/** Deliveries after which a message is dead-lettered whatever its retry policy says. */
export const DEFAULT_MAX_DELIVERIES = 10;
/** Jitter takes up to this fraction off a backoff delay. */
export const DEFAULT_JITTER_RATIO = 0.2;
/**
 * How long an acked message's idempotency key keeps refusing a duplicate
 * publish: the window of a publisher's retries (a Coordinator restarted
 * mid-step). A hop's completion is remembered for longer by the Context
 * Engine (by the hop's key), so this window can stay short; at high rates a
 * long one costs a row (SQLite) or a key (Redis) per message for its length.
 */
export const DEFAULT_IDEMPOTENCY_RETENTION_MS = 60 * 60 * 1000;

/** Every code a `BusError` carries. */
export const BUS_ERROR_CODES = ERROR_CODES.BusError;
/** One code a `BusError` carries (one of `BUS_ERROR_CODES`). */
export type BusErrorCode = ErrorCodeOf<'BusError'>;

/** An error of the bus layer: a refused call changes nothing. */
export class BusError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: BusErrorCode;
  constructor(code: BusErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
