import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  INITIAL_LEASE_STATE,
  type LeaseAction,
  type LeaseObservation,
  type LeaseState,
  type LeaseTiming,
  decideLease,
  leaseBackoff,
} from '../../src/decisions/lease-decision.js';

/**
 * The lease's liveness and schedule, beside the safety the simulation in
 * lease-decision.property.test.ts holds it to: a leader whose renewals
 * succeed stays leader; a standby that acquires leads at once and says so;
 * every failure resets the connection before the next attempt, which backs
 * off within bounds; attempts come no later than the renew interval while
 * leading; a renewal of another epoch, or any answer after the deadline, is
 * a loss. Each property states a rule of the lease, not the code's steps.
 */

const timing: fc.Arbitrary<LeaseTiming> = fc
  .record({
    leaseMs: fc.integer({ min: 20, max: 20_000 }),
    renewRatio: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
    backoffMin: fc.integer({ min: 1, max: 500 }),
    backoffMaxFactor: fc.integer({ min: 1, max: 64 }),
  })
  .map(({ leaseMs, renewRatio, backoffMin, backoffMaxFactor }) => {
    const renewMs = Math.max(1, Math.floor(leaseMs * renewRatio));
    // The backoff's bounds are independent of the renew interval here (a standby may wait longer).
    return { leaseMs, renewMs, backoffMinMs: backoffMin, backoffMaxMs: backoffMin * backoffMaxFactor };
  });

const failures = fc.integer({ min: 0, max: 40 });

/** A leader of `epoch` at `now`, its deadline `left` ms ahead (at least 1). */
function leaderAt(epoch: number, now: number, left: number, failed = 0): LeaseState {
  return { role: 'leader', epoch, deadline: now + left, failures: failed };
}

/** Leadership of `epoch` ends: the loss, then standby, announced in that order. */
function lost(epoch: number, reason: 'replaced' | 'expired'): LeaseAction[] {
  return [
    { kind: 'announce', change: { role: 'lost', epoch, reason } },
    { kind: 'announce', change: { role: 'standby' } },
  ];
}

function attemptsOf(actions: readonly LeaseAction[]) {
  return actions.filter((a): a is Extract<LeaseAction, { kind: 'attempt' }> => a.kind === 'attempt');
}

function announcesOf(actions: readonly LeaseAction[]) {
  return actions.filter((a) => a.kind === 'announce').map((a) => (a as { change: unknown }).change);
}

describe('the lease keeps leading while its renewals succeed', () => {
  test.prop([
    timing,
    fc.integer({ min: 1, max: 1_000 }),
    fc.array(fc.record({ latency: fc.double({ min: 0, max: 0.99, noNaN: true }), early: fc.boolean() }), {
      minLength: 1,
      maxLength: 60,
    }),
  ])(
    'from an acquire, every renewal answered before the deadline keeps the epoch, says nothing and schedules the next renewal',
    (time, epoch, answers) => {
      let now = 0;
      let step = decideLease(time, INITIAL_LEASE_STATE, { kind: 'acquired', epoch, sentAt: 0, now: 0 });
      expect(step.state).toEqual({ role: 'leader', epoch, deadline: time.leaseMs, failures: 0 });
      expect(announcesOf(step.actions)).toEqual([{ role: 'leader', epoch }]);
      for (const answer of answers) {
        const [attempt] = attemptsOf(step.actions);
        expect(attempt?.what).toBe('renew');
        const state = step.state as Extract<LeaseState, { role: 'leader' }>;
        // The renewal is sent when scheduled: never later than the renew interval, never past the deadline.
        expect(attempt!.inMs).toBeGreaterThanOrEqual(0);
        expect(attempt!.inMs).toBeLessThanOrEqual(time.renewMs);
        expect(now + attempt!.inMs).toBeLessThanOrEqual(state.deadline);
        const sentAt = now + (answer.early ? 0 : attempt!.inMs);
        // Answered before the deadline passes.
        const answeredAt = sentAt + Math.floor(answer.latency * (state.deadline - sentAt));
        if (answeredAt >= state.deadline) continue;
        const tick = decideLease(time, state, { kind: 'tick', now: answeredAt });
        expect(tick).toEqual({ state, actions: [] });
        now = answeredAt;
        step = decideLease(time, state, { kind: 'renewed', epoch, sentAt, now });
        expect(step.state).toEqual({
          role: 'leader',
          epoch,
          deadline: Math.max(state.deadline, sentAt + time.leaseMs),
          failures: 0,
        });
        expect(announcesOf(step.actions)).toEqual([]);
        expect(attemptsOf(step.actions)).toHaveLength(1);
      }
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 0, max: 100_000 }), failures])(
    'a standby whose acquire is answered in time leads that epoch at once: it announces, then schedules a renewal',
    (time, epoch, sentAt, failed) => {
      const latency = Math.floor(time.leaseMs / 2);
      const now = sentAt + latency;
      const { state, actions } = decideLease(
        time,
        { role: 'standby', failures: failed },
        { kind: 'acquired', epoch, sentAt, now },
      );
      expect(state).toEqual({ role: 'leader', epoch, deadline: sentAt + time.leaseMs, failures: 0 });
      expect(actions).toEqual([
        { kind: 'announce', change: { role: 'leader', epoch } },
        { kind: 'attempt', what: 'renew', inMs: Math.min(time.renewMs, sentAt + time.leaseMs - now) },
      ]);
    },
  );

  // Its end itself (late 0) drawn as often as any later time: the bound is where a mistake would be.
  test.prop([
    timing,
    fc.integer({ min: 1, max: 1_000 }),
    fc.integer({ min: 0, max: 100_000 }),
    fc.oneof(fc.constant(0), fc.nat(50_000)),
  ])(
    'an acquire answered at or past the end of its lease does not lead: the standby looks again after the renew interval',
    (time, epoch, sentAt, late) => {
      const now = sentAt + time.leaseMs + late;
      const { state, actions } = decideLease(
        time,
        { role: 'standby', failures: 3 },
        { kind: 'acquired', epoch, sentAt, now },
      );
      expect(state).toEqual({ role: 'standby', failures: 0 });
      expect(actions).toEqual([{ kind: 'attempt', what: 'acquire', inMs: time.renewMs }]);
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 20_000 }), failures])(
    'an acquire answered to a leader changes nothing: it keeps its epoch and renews on schedule',
    (time, epoch, left, failed) => {
      const state = leaderAt(epoch, 1_000, left, failed);
      const decision = decideLease(time, state, { kind: 'acquired', epoch: epoch + 1, sentAt: 900, now: 1_000 });
      expect(decision).toEqual({
        state,
        actions: [{ kind: 'attempt', what: 'renew', inMs: Math.min(time.renewMs, left) }],
      });
    },
  );
});

describe('failures', () => {
  test.prop([timing, failures, fc.integer({ min: 0, max: 100_000 })])(
    'a standby resets the connection, then tries to acquire after the backoff of its failures in a row',
    (time, failed, now) => {
      const { state, actions } = decideLease(time, { role: 'standby', failures: failed }, { kind: 'failed', now });
      expect(state).toEqual({ role: 'standby', failures: failed + 1 });
      expect(actions).toEqual([
        { kind: 'reset-connection' },
        { kind: 'attempt', what: 'acquire', inMs: leaseBackoff(time, failed + 1) },
      ]);
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 20_000 }), failures])(
    'a leader before its deadline keeps leading, resets the connection and retries the renewal within the backoff, the renew interval and the deadline',
    (time, epoch, left, failed) => {
      const now = 5_000;
      const state = leaderAt(epoch, now, left, failed);
      const decision = decideLease(time, state, { kind: 'failed', now });
      expect(decision.state).toEqual({ ...state, failures: failed + 1 });
      expect(decision.actions).toEqual([
        { kind: 'reset-connection' },
        {
          kind: 'attempt',
          what: 'renew',
          inMs: Math.min(leaseBackoff(time, failed + 1), time.renewMs, left),
        },
      ]);
    },
  );

  test.prop([
    timing,
    fc.array(fc.constantFrom('failed', 'held', 'acquired') as fc.Arbitrary<string>, { maxLength: 40 }),
  ])(
    'failures in a row count up and reset to none on any answer; each failure resets the connection first',
    (time, answers) => {
      let state: LeaseState = INITIAL_LEASE_STATE;
      let now = 0;
      let inARow = 0;
      for (const answer of answers) {
        now += time.leaseMs * 2;
        const observation: LeaseObservation =
          answer === 'failed'
            ? { kind: 'failed', now }
            : answer === 'held'
              ? { kind: 'held', now }
              : { kind: 'acquired', epoch: 1, sentAt: now - time.leaseMs * 3, now };
        const decision = decideLease(time, state, observation);
        state = decision.state;
        inARow = answer === 'failed' ? inARow + 1 : 0;
        expect(state).toEqual({ role: 'standby', failures: inARow });
        const kinds = decision.actions.map((a) => a.kind);
        expect(kinds).toEqual(answer === 'failed' ? ['reset-connection', 'attempt'] : ['attempt']);
      }
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 60 })])(
    'the backoff starts at its minimum, doubles with each failure and stops at its maximum',
    (time, failed) => {
      expect(leaseBackoff(time, 1)).toBe(Math.min(time.backoffMinMs, time.backoffMaxMs));
      expect(leaseBackoff(time, failed + 1)).toBe(Math.min(time.backoffMaxMs, 2 * leaseBackoff(time, failed)));
      expect(leaseBackoff(time, 0)).toBe(leaseBackoff(time, 1));
    },
  );

  test.prop([fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 31, max: 10_000 })])(
    'a long run of failures waits the maximum (no overflow to infinity or zero)',
    (min, failed) => {
      const time = { leaseMs: 10_000, renewMs: 1_000, backoffMinMs: min, backoffMaxMs: Number.MAX_SAFE_INTEGER };
      expect(leaseBackoff(time, failed)).toBe(min * 2 ** 30);
    },
  );
});

describe('losing the lease', () => {
  test.prop([
    timing,
    fc.integer({ min: 1, max: 1_000 }),
    fc.integer({ min: 1, max: 1_000 }),
    fc.integer({ min: 1, max: 20_000 }),
  ])(
    'a renewal of another epoch is a loss: replaced, then standby, then an acquire after the renew interval',
    (time, epoch, other, left) => {
      fc.pre(other !== epoch);
      const now = 2_000;
      const decision = decideLease(time, leaderAt(epoch, now, left, 2), {
        kind: 'renewed',
        epoch: other,
        sentAt: now - 1,
        now,
      });
      expect(decision).toEqual({
        state: { role: 'standby', failures: 0 },
        actions: [...lost(epoch, 'replaced'), { kind: 'attempt', what: 'acquire', inMs: time.renewMs }],
      });
    },
  );

  test.prop([
    timing,
    fc.integer({ min: 1, max: 1_000 }),
    fc.integer({ min: 1, max: 20_000 }),
    fc.constantFrom('held', 'replaced') as fc.Arbitrary<'held' | 'replaced'>,
  ])('a leader told the lease is another’s before its deadline is replaced', (time, epoch, left, kind) => {
    const now = 3_000;
    const decision = decideLease(time, leaderAt(epoch, now, left, 1), { kind, now });
    expect(decision).toEqual({
      state: { role: 'standby', failures: 0 },
      actions: [...lost(epoch, 'replaced'), { kind: 'attempt', what: 'acquire', inMs: time.renewMs }],
    });
  });

  test.prop([
    timing,
    fc.integer({ min: 1, max: 1_000 }),
    fc.nat(20_000),
    fc.constantFrom('renewed', 'acquired', 'held', 'replaced') as fc.Arbitrary<
      'renewed' | 'acquired' | 'held' | 'replaced'
    >,
  ])(
    'any answer at or past the deadline ends leadership as expired, a late renewal of its own epoch included',
    (time, epoch, late, kind) => {
      const deadline = 10_000;
      const now = deadline + late;
      const observation: LeaseObservation =
        kind === 'renewed' || kind === 'acquired' ? { kind, epoch, sentAt: now - 1, now } : { kind, now };
      const decision = decideLease(time, { role: 'leader', epoch, deadline, failures: 4 }, observation);
      expect(decision).toEqual({
        state: { role: 'standby', failures: 0 },
        actions: [...lost(epoch, 'expired'), { kind: 'attempt', what: 'acquire', inMs: time.renewMs }],
      });
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 1_000 }), fc.nat(20_000), failures])(
    'a failure at or past the deadline ends leadership, resets the connection, and backs off before acquiring',
    (time, epoch, late, failed) => {
      const deadline = 10_000;
      const decision = decideLease(
        time,
        { role: 'leader', epoch, deadline, failures: failed },
        { kind: 'failed', now: deadline + late },
      );
      expect(decision).toEqual({
        state: { role: 'standby', failures: failed + 1 },
        actions: [
          ...lost(epoch, 'expired'),
          { kind: 'reset-connection' },
          { kind: 'attempt', what: 'acquire', inMs: leaseBackoff(time, failed + 1) },
        ],
      });
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 1_000 }), fc.integer({ min: 1, max: 20_000 }), fc.nat(20_000)])(
    'the deadline timer: nothing before the deadline; at or past it, expired and standby with no attempt (the one in flight schedules the next)',
    (time, epoch, left, late) => {
      const now = 7_000;
      const state = leaderAt(epoch, now, left, 2);
      expect(decideLease(time, state, { kind: 'tick', now })).toEqual({ state, actions: [] });
      expect(decideLease(time, state, { kind: 'tick', now: now + left - 1 })).toEqual({ state, actions: [] });
      expect(decideLease(time, state, { kind: 'tick', now: now + left + late })).toEqual({
        state: { role: 'standby', failures: 0 },
        actions: [...lost(epoch, 'expired')],
      });
      const standby = { role: 'standby', failures: 2 } as const;
      expect(decideLease(time, standby, { kind: 'tick', now })).toEqual({ state: standby, actions: [] });
    },
  );

  test.prop([timing, failures, fc.constantFrom('held', 'replaced', 'renewed') as fc.Arbitrary<string>])(
    'a standby told the lease is held (or answered for a lease it no longer leads) looks again after the renew interval',
    (time, failed, kind) => {
      const now = 1_000;
      const observation = (
        kind === 'renewed' ? { kind, epoch: 2, sentAt: now - 1, now } : { kind, now }
      ) as LeaseObservation;
      expect(decideLease(time, { role: 'standby', failures: failed }, observation)).toEqual({
        state: { role: 'standby', failures: 0 },
        actions: [{ kind: 'attempt', what: 'acquire', inMs: time.renewMs }],
      });
    },
  );

  test.prop([timing, failures])('closing a standby closes it and does nothing else', (time, failed) => {
    expect(decideLease(time, { role: 'standby', failures: failed }, { kind: 'close' })).toEqual({
      state: { role: 'closed' },
      actions: [],
    });
  });
});
