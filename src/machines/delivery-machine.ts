import type { RetryPolicy, WorkError } from '../protocol/work-envelope.js';

/**
 * The life of one message on the work bus, as data, and the pure decisions
 * every backend (SQLite, Redis Streams) takes the same way: when a nacked
 * delivery is retried and after how long, when an expired lease is
 * redelivered, and when either goes to the dead-letter queue.
 *
 *   ready --consume--> leased --ack--> done
 *   leased --nack (retry) | lease expired | release--> ready
 *   leased --nack (unrecoverable, out of attempts) | lease expired past maxDeliveries--> dead
 *   dead --replay--> ready;  dead --purge--> (gone)
 *
 * `ready` includes delayed messages (available later). `done` rows keep the
 * idempotency key for the retention period, then are pruned.
 */
export const DELIVERY_STATES = ['ready', 'leased', 'done', 'dead'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

export const DELIVERY_EVENTS = [
  'consume',
  'ack',
  'nack-retry',
  'nack-dead',
  'expire',
  'expire-dead',
  'release',
  'replay',
  'purge',
] as const;
export type DeliveryEvent = (typeof DELIVERY_EVENTS)[number];

export interface DeliveryTransition {
  from: DeliveryState;
  event: DeliveryEvent;
  /** `null`: the message is deleted. */
  to: DeliveryState | null;
}

export const DELIVERY_TRANSITIONS: readonly DeliveryTransition[] = Object.freeze([
  { from: 'ready', event: 'consume', to: 'leased' },
  { from: 'leased', event: 'ack', to: 'done' },
  { from: 'leased', event: 'nack-retry', to: 'ready' },
  { from: 'leased', event: 'nack-dead', to: 'dead' },
  { from: 'leased', event: 'expire', to: 'ready' },
  { from: 'leased', event: 'expire-dead', to: 'dead' },
  { from: 'leased', event: 'release', to: 'ready' },
  { from: 'dead', event: 'replay', to: 'ready' },
  { from: 'dead', event: 'purge', to: null },
  { from: 'ready', event: 'purge', to: null },
]);

/** The state a message moves to, or `undefined` when the event is not allowed from `from`. */
export function deliveryMove(from: DeliveryState, event: DeliveryEvent): DeliveryState | null | undefined {
  const row = DELIVERY_TRANSITIONS.find((t) => t.from === from && t.event === event);
  return row === undefined ? undefined : row.to;
}

/** The bus's own error types: a lease ran out, and a message that is not valid work. */
export const LEASE_EXPIRED_ERROR = 'LeaseExpired';

/**
 * The delay before retry `retry` (1 = the first retry), before jitter:
 * `min(initialInterval * backoffCoefficient^(retry-1), maximumInterval)`.
 */
export function backoffDelay(policy: RetryPolicy, retry: number): number {
  const n = Math.max(1, Math.floor(retry));
  const raw = policy.initialInterval * policy.backoffCoefficient ** (n - 1);
  const capped = Math.min(Number.isFinite(raw) ? raw : Number.MAX_SAFE_INTEGER, policy.maximumInterval);
  return Math.max(0, Math.round(capped));
}

/**
 * Applies jitter: the delay is drawn uniformly from `[delay * (1 - ratio), delay]`,
 * so that retries of many failed messages spread out but never come earlier
 * than `(1 - ratio)` of the backoff nor later than it. `random` returns [0, 1).
 */
export function jittered(delay: number, ratio: number, random: () => number): number {
  const r = Math.min(1, Math.max(0, ratio));
  const u = Math.min(1, Math.max(0, random()));
  return Math.round(delay - delay * r * u);
}

export interface NackInput {
  policy: RetryPolicy;
  /** Deliveries so far, including the one being nacked (>= 1). */
  deliveries: number;
  /** The queue's ceiling on deliveries of one message. */
  maxDeliveries: number;
  error: WorkError;
  retryable: boolean;
  /** An explicit delay asked by the consumer; overrides the backoff. */
  delayMs?: number;
  /**
   * False: the failure was the consumer's, not the message's (its store was
   * down, it lost its leadership): the retry uses up none of the message's
   * attempts, however many deliveries it took. Default true.
   */
  counted?: boolean;
  jitterRatio: number;
  random: () => number;
}

export type NackDecision =
  | { to: 'ready'; delayMs: number }
  | { to: 'dead'; reason: 'non-retryable' | 'non-retryable-type' | 'attempts-exhausted' };

/** Whether out of attempts: `maximumAttempts` (0 = unlimited) and `maxDeliveries` both bound it. */
export function attemptsExhausted(policy: RetryPolicy, deliveries: number, maxDeliveries: number): boolean {
  if (deliveries >= maxDeliveries) return true;
  return policy.maximumAttempts > 0 && deliveries >= policy.maximumAttempts;
}

/** What a nack does: retry after a backoff, or dead-letter. */
export function decideNack(input: NackInput): NackDecision {
  if (!input.retryable) return { to: 'dead', reason: 'non-retryable' };
  if (input.policy.nonRetryableErrorTypes.includes(input.error.type))
    return { to: 'dead', reason: 'non-retryable-type' };
  if (input.counted !== false && attemptsExhausted(input.policy, input.deliveries, input.maxDeliveries)) {
    return { to: 'dead', reason: 'attempts-exhausted' };
  }
  if (input.delayMs !== undefined) return { to: 'ready', delayMs: Math.max(0, Math.round(input.delayMs)) };
  const delay = backoffDelay(input.policy, input.deliveries);
  return { to: 'ready', delayMs: jittered(delay, input.jitterRatio, input.random) };
}

/**
 * What an expired lease does: the message is redelivered at once, unless it is
 * out of attempts (a poison message that kills or stalls every consumer),
 * which dead-letters it with a `LeaseExpired` error. An expiry counts as a
 * failed attempt, as an activity timeout does in Temporal.
 */
export function decideExpiry(policy: RetryPolicy, deliveries: number, maxDeliveries: number): 'ready' | 'dead' {
  return attemptsExhausted(policy, deliveries, maxDeliveries) ? 'dead' : 'ready';
}
