import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  INITIAL_LEASE_STATE,
  type LeaseAction,
  type LeaseObservation,
  type LeaseRoleChange,
  type LeaseState,
  type LeaseTiming,
  decideLease,
  leaseBackoff,
} from '../../src/decisions/lease-decision.js';

/**
 * The lease's pure decisions, driven by a simulation of what surrounds them:
 * one attempt in flight at a time, sent when the decision scheduled it and
 * answered after a random latency; the database executes its statement at a
 * random moment between send and answer (so its expiry is later than the
 * local deadline); the local deadline timer fires when time passes it; and
 * another Coordinator takes the lease whenever it has lapsed by the database's
 * clock. After every step: a lease that believes it leads holds the epoch the
 * database has (no takeover while it believes it leads), its deadline is never
 * past its last success plus the lease, the role changes it announces form a
 * well-formed history, and every answer schedules exactly one next attempt.
 */

const timing: fc.Arbitrary<LeaseTiming> = fc
  .record({
    leaseMs: fc.integer({ min: 20, max: 20_000 }),
    renewRatio: fc.double({ min: 0.05, max: 0.5, noNaN: true }),
    backoffMinMs: fc.integer({ min: 1, max: 500 }),
  })
  .map(({ leaseMs, renewRatio, backoffMinMs }) => {
    const renewMs = Math.max(1, Math.floor(leaseMs * renewRatio));
    return { leaseMs, renewMs, backoffMinMs: Math.min(backoffMinMs, renewMs), backoffMaxMs: renewMs };
  });

type Step =
  | { t: 'answer'; latency: number; outcome: 'ok' | 'held' | 'failed'; exec: number }
  | { t: 'wait'; dt: number }
  | { t: 'steal' }
  | { t: 'close' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant('answer' as const),
      latency: fc.integer({ min: 0, max: 30_000 }),
      outcome: fc.constantFrom('ok' as const, 'ok' as const, 'held' as const, 'failed' as const),
      exec: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('wait' as const), dt: fc.integer({ min: 0, max: 30_000 }) }) },
  { weight: 2, arbitrary: fc.constant({ t: 'steal' as const }) },
  { weight: 1, arbitrary: fc.constant({ t: 'close' as const }) },
);

interface Database {
  epoch: number;
  holder: 'me' | 'other' | null;
  expiresAt: number;
}

function checkHistory(changes: LeaseRoleChange[], acquiredEpochs: Set<number>): void {
  let leading: number | undefined;
  for (const [i, change] of changes.entries()) {
    if (change.role === 'leader') {
      expect(leading, 'a second leader announce without a loss between').toBeUndefined();
      expect(acquiredEpochs.has(change.epoch), 'leads only an epoch it acquired').toBe(true);
      leading = change.epoch;
    } else if (change.role === 'lost') {
      expect(change.epoch).toBe(leading);
      leading = undefined;
      if (change.reason !== 'closed') expect(changes[i + 1]).toEqual({ role: 'standby' });
    }
  }
}

describe('decideLease', () => {
  test.prop([timing, fc.array(step, { maxLength: 80 })], { numRuns: 400 })(
    'a leader holds the database epoch whenever it believes it leads; histories are well formed',
    (time, steps) => {
      let state: LeaseState = INITIAL_LEASE_STATE;
      let now = 0;
      const db: Database = { epoch: 0, holder: null, expiresAt: 0 };
      let pending: { what: 'acquire' | 'renew'; at: number } | undefined = { what: 'acquire', at: 0 };
      let lastSuccess = Number.NEGATIVE_INFINITY;
      const changes: LeaseRoleChange[] = [];
      const acquired = new Set<number>();

      const apply = (observation: LeaseObservation): readonly LeaseAction[] => {
        const before = state;
        const { state: next, actions } = decideLease(time, before, observation);
        state = next;
        for (const action of actions) if (action.kind === 'announce') changes.push(action.change);
        const attempts = actions.filter((a) => a.kind === 'attempt');
        if (before.role === 'closed') expect(actions).toEqual([]);
        else if (observation.kind === 'tick' || observation.kind === 'close') expect(attempts).toEqual([]);
        else expect(attempts).toHaveLength(1);
        for (const attempt of attempts) {
          expect(attempt.inMs).toBeGreaterThanOrEqual(0);
          expect(attempt.inMs).toBeLessThanOrEqual(Math.max(time.renewMs, time.backoffMaxMs));
          pending = { what: attempt.what, at: (observation as { now: number }).now + attempt.inMs };
        }
        if (observation.kind === 'failed' && before.role !== 'closed') {
          expect(actions.some((a) => a.kind === 'reset-connection')).toBe(true);
        }
        const releases = actions.filter((a) => a.kind === 'release');
        if (observation.kind === 'close' && before.role === 'leader')
          expect(releases).toEqual([{ kind: 'release', epoch: before.epoch }]);
        else expect(releases).toEqual([]);
        return actions;
      };

      /** Time moves to `to`; the deadline timer fires on the way. */
      const advance = (to: number) => {
        if (state.role === 'leader' && state.deadline <= to)
          apply({ kind: 'tick', now: Math.max(now, state.deadline) });
        now = Math.max(now, to);
      };

      const check = () => {
        if (state.role !== 'leader') return;
        // Believing it leads: the database agrees, and will until past the local deadline.
        expect(db.holder).toBe('me');
        expect(db.epoch).toBe(state.epoch);
        expect(state.deadline).toBeLessThanOrEqual(db.expiresAt);
        expect(state.deadline).toBeLessThanOrEqual(lastSuccess + time.leaseMs);
        expect(now).toBeLessThan(state.deadline);
      };

      for (const s of steps) {
        if (state.role === 'closed') break;
        if (s.t === 'wait') advance(now + s.dt);
        else if (s.t === 'steal') {
          if (db.expiresAt <= now) {
            db.epoch += 1;
            db.holder = 'other';
            db.expiresAt = now + time.leaseMs;
          }
        } else if (s.t === 'close') {
          apply({ kind: 'close' });
        } else if (pending !== undefined) {
          const sentAt = Math.max(now, pending.at);
          advance(sentAt);
          const answeredAt = sentAt + s.latency;
          const execAt = sentAt + s.exec * s.latency;
          // The database runs the statement at execAt (another may have taken a lapsed lease by then).
          let observation: LeaseObservation;
          const what = pending.what;
          pending = undefined;
          advance(answeredAt);
          if (s.outcome === 'failed') observation = { kind: 'failed', now };
          else if (what === 'acquire') {
            const free = db.holder !== 'other' || db.expiresAt <= execAt;
            if (s.outcome === 'ok' && free) {
              db.epoch += 1;
              db.holder = 'me';
              db.expiresAt = execAt + time.leaseMs;
              acquired.add(db.epoch);
              observation = { kind: 'acquired', epoch: db.epoch, sentAt, now };
            } else observation = { kind: 'held', now };
          } else {
            const ours = state.role === 'leader' && db.holder === 'me' && db.epoch === state.epoch;
            const mine = db.holder === 'me' ? db.epoch : undefined;
            if (s.outcome === 'ok' && mine !== undefined && (ours || state.role !== 'leader')) {
              db.expiresAt = execAt + time.leaseMs;
              observation = { kind: 'renewed', epoch: mine, sentAt, now };
            } else observation = { kind: 'replaced', now };
          }
          if (observation.kind === 'acquired' || observation.kind === 'renewed') {
            if (state.role === 'standby' && observation.kind === 'acquired') lastSuccess = sentAt;
            if (state.role === 'leader' && observation.kind === 'renewed') lastSuccess = Math.max(lastSuccess, sentAt);
          }
          apply(observation);
          if (state.role === 'standby') lastSuccess = Number.NEGATIVE_INFINITY;
        }
        check();
        checkHistory(changes, acquired);
      }
    },
  );

  test.prop([timing, fc.integer({ min: 1, max: 60 })])(
    'the backoff doubles from its minimum up to its maximum',
    (time, failures) => {
      const wait = leaseBackoff(time, failures);
      expect(wait).toBeGreaterThanOrEqual(time.backoffMinMs);
      expect(wait).toBeLessThanOrEqual(time.backoffMaxMs);
      expect(leaseBackoff(time, failures + 1)).toBeGreaterThanOrEqual(wait);
    },
  );

  test.prop([timing])('closed is final: nothing after it does anything', (time) => {
    const closed = decideLease(time, { role: 'leader', epoch: 3, deadline: 100, failures: 0 }, { kind: 'close' });
    expect(closed.state).toEqual({ role: 'closed' });
    expect(closed.actions).toEqual([
      { kind: 'announce', change: { role: 'lost', epoch: 3, reason: 'closed' } },
      { kind: 'release', epoch: 3 },
    ]);
    for (const observation of [
      { kind: 'acquired', epoch: 4, sentAt: 0, now: 1 },
      { kind: 'tick', now: 1 },
      { kind: 'failed', now: 1 },
    ] as const) {
      expect(decideLease(time, closed.state, observation)).toEqual({ state: { role: 'closed' }, actions: [] });
    }
  });
});
