import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DELIVERY_EVENTS,
  DELIVERY_STATES,
  DELIVERY_TRANSITIONS,
  attemptsExhausted,
  backoffDelay,
  decideExpiry,
  decideNack,
  deliveryMove,
  jittered,
} from '../../src/machines/delivery-machine.js';
import type { RetryPolicy } from '../../src/protocol/work-envelope.js';

const policyArb: fc.Arbitrary<RetryPolicy> = fc.record({
  initialInterval: fc.integer({ min: 0, max: 10_000 }),
  backoffCoefficient: fc.double({ min: 1, max: 10, noNaN: true }),
  maximumInterval: fc.integer({ min: 0, max: 600_000 }),
  maximumAttempts: fc.integer({ min: 0, max: 20 }),
  nonRetryableErrorTypes: fc.array(fc.constantFrom('A', 'B', 'C'), { maxLength: 2 }),
});

describe('delivery machine table', () => {
  it('has one row per (state, event) and only known states and events', () => {
    const keys = DELIVERY_TRANSITIONS.map((t) => `${t.from}/${t.event}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const t of DELIVERY_TRANSITIONS) {
      expect(DELIVERY_STATES).toContain(t.from);
      expect(DELIVERY_EVENTS).toContain(t.event);
      if (t.to !== null) expect(DELIVERY_STATES).toContain(t.to);
    }
  });

  it('done is terminal, and only a lease can be acked, nacked, released or expire', () => {
    for (const event of DELIVERY_EVENTS) expect(deliveryMove('done', event)).toBeUndefined();
    for (const event of ['ack', 'nack-retry', 'nack-dead', 'expire', 'expire-dead', 'release'] as const) {
      for (const state of DELIVERY_STATES) {
        expect(deliveryMove(state, event) !== undefined).toBe(state === 'leased');
      }
    }
    expect(deliveryMove('dead', 'replay')).toBe('ready');
    expect(deliveryMove('dead', 'purge')).toBeNull();
  });

  it('a message never reaches done without being leased first (random walks)', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...DELIVERY_EVENTS), { maxLength: 40 }), (events) => {
        let state: (typeof DELIVERY_STATES)[number] | null = 'ready';
        let leasedSinceReady = false;
        for (const event of events) {
          if (state === null) break;
          const next = deliveryMove(state, event);
          if (next === undefined) continue;
          if (next === 'done') expect(leasedSinceReady).toBe(true);
          if (next === 'leased') leasedSinceReady = true;
          if (next === 'ready') leasedSinceReady = false;
          state = next;
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe('retry decisions', () => {
  it('backoff grows geometrically, never shrinks and never passes maximumInterval', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 1, max: 60 }), (policy, retry) => {
        const a = backoffDelay(policy, retry);
        const b = backoffDelay(policy, retry + 1);
        expect(a).toBeLessThanOrEqual(policy.maximumInterval);
        expect(b).toBeGreaterThanOrEqual(a);
        expect(a).toBeGreaterThanOrEqual(Math.min(policy.initialInterval, policy.maximumInterval));
      }),
      { numRuns: 300 },
    );
    const p = {
      initialInterval: 100,
      backoffCoefficient: 2,
      maximumInterval: 1000,
      maximumAttempts: 0,
      nonRetryableErrorTypes: [],
    };
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelay(p, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('jitter stays within [(1 - ratio) * delay, delay]', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1_000_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 0.999999, noNaN: true }),
        (delay, ratio, u) => {
          const d = jittered(delay, ratio, () => u);
          expect(d).toBeLessThanOrEqual(delay);
          expect(d).toBeGreaterThanOrEqual(Math.floor(delay * (1 - ratio)));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a message that always fails is delivered exactly min(maximumAttempts, maxDeliveries) times', () => {
    fc.assert(
      fc.property(policyArb, fc.integer({ min: 1, max: 30 }), (policy, maxDeliveries) => {
        let deliveries = 0;
        for (;;) {
          deliveries++;
          const decision = decideNack({
            policy,
            deliveries,
            maxDeliveries,
            error: { type: 'Transient', message: 'x' },
            retryable: true,
            jitterRatio: 0.2,
            random: () => 0.5,
          });
          if (decision.to === 'dead') break;
          expect(decision.delayMs).toBeLessThanOrEqual(policy.maximumInterval);
        }
        const bound = policy.maximumAttempts === 0 ? maxDeliveries : Math.min(policy.maximumAttempts, maxDeliveries);
        expect(deliveries).toBe(bound);
        expect(attemptsExhausted(policy, deliveries, maxDeliveries)).toBe(true);
        expect(decideExpiry(policy, deliveries, maxDeliveries)).toBe('dead');
      }),
      { numRuns: 300 },
    );
  });

  it('non-retryable errors and listed error types are dead-lettered on the first delivery', () => {
    fc.assert(
      fc.property(policyArb, fc.constantFrom('A', 'B', 'C'), fc.boolean(), (policy, type, retryable) => {
        const decision = decideNack({
          policy,
          deliveries: 1,
          maxDeliveries: 100,
          error: { type, message: 'x' },
          retryable,
          jitterRatio: 0.2,
          random: () => 0,
        });
        const expectDead = !retryable || policy.nonRetryableErrorTypes.includes(type) || policy.maximumAttempts === 1;
        expect(decision.to === 'dead').toBe(expectDead);
      }),
      { numRuns: 300 },
    );
  });

  it('an explicit delay overrides the backoff', () => {
    const decision = decideNack({
      policy: {
        initialInterval: 1000,
        backoffCoefficient: 2,
        maximumInterval: 5000,
        maximumAttempts: 0,
        nonRetryableErrorTypes: [],
      },
      deliveries: 1,
      maxDeliveries: 10,
      error: { type: 'E', message: 'x' },
      retryable: true,
      delayMs: 7,
      jitterRatio: 0.2,
      random: () => 0.9,
    });
    expect(decision).toEqual({ to: 'ready', delayMs: 7 });
  });
});
