import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  DELIVERY_EVENTS,
  DELIVERY_STATES,
  type DeliveryEvent,
  type DeliveryState,
  LEASE_EXPIRED_ERROR,
  type NackInput,
  attemptsExhausted,
  backoffDelay,
  decideExpiry,
  decideNack,
  deliveryMove,
  jittered,
} from '../../src/machines/delivery-machine.js';
import type { RetryPolicy } from '../../src/protocol/work-envelope.js';

/**
 * The bus's delivery rules, which the SQLite and Redis queues both take
 * (docs/bus.md): the life of a message, the backoff of
 * `RetryPolicySchema`'s comment, the jitter's bounds, and when a nack or an
 * expired lease dead-letters.
 */

/** The life of a message as docs/bus.md draws it; every pair not listed is refused. */
const LIFE: Partial<Record<DeliveryState, Partial<Record<DeliveryEvent, DeliveryState | null>>>> = {
  ready: { consume: 'leased', purge: null },
  leased: {
    ack: 'done',
    'nack-retry': 'ready',
    'nack-dead': 'dead',
    expire: 'ready',
    'expire-dead': 'dead',
    release: 'ready',
  },
  dead: { replay: 'ready', purge: null },
};

const policyArb: fc.Arbitrary<RetryPolicy> = fc.record({
  initialInterval: fc.integer({ min: 0, max: 10_000 }),
  backoffCoefficient: fc.integer({ min: 1, max: 4 }),
  maximumInterval: fc.integer({ min: 0, max: 600_000 }),
  maximumAttempts: fc.integer({ min: 0, max: 8 }),
  nonRetryableErrorTypes: fc.uniqueArray(fc.constantFrom('A', 'B', 'C'), { maxLength: 2 }),
});

function nack(overrides: Partial<NackInput>): NackInput {
  return {
    policy: {
      initialInterval: 100,
      backoffCoefficient: 2,
      maximumInterval: 10_000,
      maximumAttempts: 0,
      nonRetryableErrorTypes: [],
    },
    deliveries: 1,
    maxDeliveries: 10,
    error: { type: 'Transient', message: 'x' },
    retryable: true,
    jitterRatio: 0,
    random: () => 0,
    ...overrides,
  };
}

describe('the life of a message', () => {
  it('moves exactly as docs/bus.md draws it, and nowhere else', () => {
    for (const state of DELIVERY_STATES) {
      for (const event of DELIVERY_EVENTS) {
        const to = LIFE[state]?.[event];
        expect(deliveryMove(state, event), `${state} --${event}-->`).toBe(to);
      }
    }
  });

  it('dead-letters an expired lease with the LeaseExpired error type the docs name', () => {
    expect(LEASE_EXPIRED_ERROR).toBe('LeaseExpired');
  });
});

describe('backoff and jitter', () => {
  test.prop([policyArb, fc.integer({ min: 1, max: 30 })])(
    'retry n waits min(initialInterval * backoffCoefficient^(n-1), maximumInterval)',
    (policy, n) => {
      const raw = policy.initialInterval * policy.backoffCoefficient ** (n - 1);
      expect(backoffDelay(policy, n)).toBe(Math.round(Math.min(raw, policy.maximumInterval)));
    },
  );

  test.prop([policyArb, fc.double({ min: -5, max: 30, noNaN: true })])(
    'a retry number below 1 counts as the first retry, a fraction as the whole retry below it',
    (policy, n) => {
      expect(backoffDelay(policy, n)).toBe(backoffDelay(policy, Math.max(1, Math.floor(n))));
    },
  );

  it('a backoff too large for a number still waits maximumInterval, a whole number of milliseconds', () => {
    const policy = {
      initialInterval: 0,
      backoffCoefficient: 1e300,
      maximumInterval: 5_000,
      maximumAttempts: 0,
      nonRetryableErrorTypes: [],
    };
    // 0 * Infinity is no number at all: the delay is still the cap.
    expect(backoffDelay(policy, 5)).toBe(5_000);
    expect(backoffDelay({ ...policy, initialInterval: 10 }, 5)).toBe(5_000);
    expect(backoffDelay({ ...policy, initialInterval: 1.4, backoffCoefficient: 1 }, 1)).toBe(1);
  });

  test.prop([
    fc.integer({ min: 0, max: 1_000_000 }),
    fc.double({ min: -1, max: 2, noNaN: true }),
    fc.double({ min: -1, max: 2, noNaN: true }),
  ])('jitter takes delay * ratio * random off the delay, each clamped to [0, 1]', (delay, ratio, u) => {
    const clamp = (x: number) => Math.min(1, Math.max(0, x));
    expect(jittered(delay, ratio, () => u)).toBe(Math.round(delay - delay * clamp(ratio) * clamp(u)));
  });

  it('no jitter keeps the delay; full jitter with the top draw takes all of it', () => {
    expect(jittered(1_000, 0, () => 0.99)).toBe(1_000);
    expect(jittered(1_000, 1, () => 1)).toBe(0);
    expect(jittered(1_000, 5, () => 0.5)).toBe(500);
    expect(jittered(1_000, 0.5, () => 7)).toBe(500);
    expect(jittered(1_000, -1, () => 0.5)).toBe(1_000);
    expect(jittered(1_000, 0.5, () => -3)).toBe(1_000);
  });
});

describe('nack and expiry', () => {
  test.prop([policyArb, fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 })])(
    'out of attempts once deliveries reach maxDeliveries, or maximumAttempts when it is not 0',
    (policy, deliveries, maxDeliveries) => {
      const exhausted =
        deliveries >= maxDeliveries || (policy.maximumAttempts !== 0 && deliveries >= policy.maximumAttempts);
      expect(attemptsExhausted(policy, deliveries, maxDeliveries)).toBe(exhausted);
      expect(decideExpiry(policy, deliveries, maxDeliveries)).toBe(exhausted ? 'dead' : 'ready');
    },
  );

  test.prop([
    policyArb,
    fc.integer({ min: 1, max: 12 }),
    fc.integer({ min: 1, max: 12 }),
    fc.constantFrom('A', 'B', 'Transient'),
    fc.boolean(),
    fc.option(fc.double({ min: -100, max: 100_000, noNaN: true }), { nil: undefined }),
    fc.constantFrom(true, false, undefined),
  ])(
    'a nack dead-letters for the first reason that applies (spent attempts only when counted), else retries after the asked delay or the backoff',
    (policy, deliveries, maxDeliveries, type, retryable, delayMs, counted) => {
      const decision = decideNack(
        nack({
          policy,
          deliveries,
          maxDeliveries,
          error: { type, message: 'x' },
          retryable,
          delayMs,
          ...(counted === undefined ? {} : { counted }),
        }),
      );
      if (!retryable) expect(decision).toEqual({ to: 'dead', reason: 'non-retryable' });
      else if (policy.nonRetryableErrorTypes.includes(type)) {
        expect(decision).toEqual({ to: 'dead', reason: 'non-retryable-type' });
      } else if (counted !== false && attemptsExhausted(policy, deliveries, maxDeliveries)) {
        expect(decision).toEqual({ to: 'dead', reason: 'attempts-exhausted' });
      } else if (delayMs !== undefined) {
        expect(decision).toEqual({ to: 'ready', delayMs: Math.max(0, Math.round(delayMs)) });
      } else expect(decision).toEqual({ to: 'ready', delayMs: backoffDelay(policy, deliveries) });
    },
  );

  it('the backoff of a nack is jittered by the ratio and the draw it is given', () => {
    const decision = decideNack(nack({ deliveries: 3, jitterRatio: 0.5, random: () => 0.5 }));
    // Retry 3 of 100 ms doubling: 400 ms, less a quarter.
    expect(decision).toEqual({ to: 'ready', delayMs: 300 });
    expect(decideNack(nack({ delayMs: -5 }))).toEqual({ to: 'ready', delayMs: 0 });
    expect(decideNack(nack({ delayMs: 2.6 }))).toEqual({ to: 'ready', delayMs: 3 });
  });
});
