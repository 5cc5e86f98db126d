import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  INITIAL_LEASE_STATE,
  type LeaseAction,
  type LeaseObservation,
  type LeaseState,
  type LeaseTiming,
  decideLease,
} from '../../src/decisions/lease-decision.js';

/**
 * A model-based run of the lease decision against a small reference model
 * of the lease, written as its rules read rather than as the code is
 * shaped: random observations (answers of every kind, early, late and
 * failed; the clock; a close) are given to both, and after each the
 * decision's state and actions must be the model's. Midway the decision's
 * state is snapshotted (JSON, as a process would keep it), restored, and the
 * run continues from the copy.
 */

interface Model {
  closed: boolean;
  /** The epoch led and until when, or none (standby). */
  lead: { epoch: number; until: number } | null;
  /** Failed attempts in a row. */
  failures: number;
  now: number;
}

/** The backoff by doubling step by step from the minimum (a second way to compute it). */
function backoffOf(time: LeaseTiming, failures: number): number {
  let wait = time.backoffMinMs;
  for (let i = 1; i < failures && wait < time.backoffMaxMs; i++) wait *= 2;
  return Math.min(wait, time.backoffMaxMs);
}

const lost = (epoch: number, reason: 'replaced' | 'expired'): LeaseAction[] => [
  { kind: 'announce', change: { role: 'lost', epoch, reason } },
  { kind: 'announce', change: { role: 'standby' } },
];
const acquireIn = (inMs: number): LeaseAction => ({ kind: 'attempt', what: 'acquire', inMs });
const renewIn = (inMs: number): LeaseAction => ({ kind: 'attempt', what: 'renew', inMs });
const RESET: LeaseAction = { kind: 'reset-connection' };

/** The reference: what the lease does on one observation, by its rules. */
function expected(time: LeaseTiming, m: Model, o: LeaseObservation): LeaseAction[] {
  if (m.closed) return [];
  if (o.kind === 'close') {
    const lead = m.lead;
    m.closed = true;
    m.lead = null;
    return lead
      ? [
          { kind: 'announce', change: { role: 'lost', epoch: lead.epoch, reason: 'closed' } },
          { kind: 'release', epoch: lead.epoch },
        ]
      : [];
  }
  m.now = o.now;
  const lead = m.lead;
  // Rule 1: nothing lets a lead outlive its deadline.
  if (lead && o.now >= lead.until) {
    m.lead = null;
    if (o.kind === 'tick') {
      m.failures = 0;
      return lost(lead.epoch, 'expired');
    }
    m.failures = o.kind === 'failed' ? m.failures + 1 : 0;
    return o.kind === 'failed'
      ? [...lost(lead.epoch, 'expired'), RESET, acquireIn(backoffOf(time, m.failures))]
      : [...lost(lead.epoch, 'expired'), acquireIn(time.renewMs)];
  }
  // Rule 2: the clock alone changes nothing else.
  if (o.kind === 'tick') return [];
  // Rule 3: a failure counts, resets the connection and retries after the backoff (a leader: before its deadline).
  if (o.kind === 'failed') {
    m.failures += 1;
    if (lead) return [RESET, renewIn(Math.min(backoffOf(time, m.failures), time.renewMs, lead.until - o.now))];
    return [RESET, acquireIn(backoffOf(time, m.failures))];
  }
  // Rule 4: a leader keeps its epoch only on a renewal of that epoch. An acquire answer is a stray
  // that changes nothing (not even the failures in a row): renew on.
  if (lead && o.kind === 'acquired') return [renewIn(Math.min(time.renewMs, lead.until - o.now))];
  m.failures = 0;
  if (lead) {
    if (o.kind === 'renewed' && o.epoch === lead.epoch) {
      lead.until = Math.max(lead.until, o.sentAt + time.leaseMs);
      return [renewIn(Math.min(time.renewMs, lead.until - o.now))];
    }
    m.lead = null;
    return [...lost(lead.epoch, 'replaced'), acquireIn(time.renewMs)];
  }
  // Rule 5: a standby leads an epoch it acquired, if the lease still holds when the answer comes.
  if (o.kind === 'acquired' && o.sentAt + time.leaseMs > o.now) {
    m.lead = { epoch: o.epoch, until: o.sentAt + time.leaseMs };
    return [
      { kind: 'announce', change: { role: 'leader', epoch: o.epoch } },
      renewIn(Math.min(time.renewMs, m.lead.until - o.now)),
    ];
  }
  return [acquireIn(time.renewMs)];
}

/** The model's view of a decision's state. */
function stateOf(m: Model): LeaseState {
  if (m.closed) return { role: 'closed' };
  return m.lead
    ? { role: 'leader', epoch: m.lead.epoch, deadline: m.lead.until, failures: m.failures }
    : { role: 'standby', failures: m.failures };
}

const timing: fc.Arbitrary<LeaseTiming> = fc
  .record({
    leaseMs: fc.integer({ min: 20, max: 5_000 }),
    renewMs: fc.integer({ min: 1, max: 2_000 }),
    backoffMinMs: fc.integer({ min: 1, max: 300 }),
    backoffMaxMs: fc.integer({ min: 1, max: 5_000 }),
  })
  .map((t) => ({ ...t, backoffMaxMs: Math.max(t.backoffMinMs, t.backoffMaxMs) }));

/** An observation at `dt` after the last one; answers are sent `ago` ms before they are observed. */
const observation = fc.oneof(
  fc.record({
    kind: fc.constantFrom('acquired' as const, 'renewed' as const),
    epochDelta: fc.integer({ min: -1, max: 2 }),
    dt: fc.nat(3_000),
    ago: fc.nat(6_000),
  }),
  fc.record({
    kind: fc.constantFrom('held' as const, 'replaced' as const, 'failed' as const, 'tick' as const),
    dt: fc.nat(3_000),
  }),
  fc.constant({ kind: 'close' as const }),
);

describe('the lease decision against its reference model', () => {
  test.prop([timing, fc.array(observation, { maxLength: 60 }), fc.nat(60)], { numRuns: 300 })(
    'every decision is the model’s, across a snapshot and restore of the state',
    (time, steps, restoreAt) => {
      const model: Model = { closed: false, lead: null, failures: 0, now: 0 };
      let state: LeaseState = INITIAL_LEASE_STATE;
      let lastEpoch = 0;
      for (const [i, s] of steps.entries()) {
        if (i === restoreAt) state = JSON.parse(JSON.stringify(state)) as LeaseState;
        let o: LeaseObservation;
        if (s.kind === 'close') o = { kind: 'close' };
        else {
          const now = model.now + s.dt;
          if (s.kind === 'acquired' || s.kind === 'renewed') {
            // Epochs near the one led (or the last seen): its own, an older one, a newer one.
            const base = model.lead?.epoch ?? lastEpoch;
            const epoch = Math.max(1, base + s.epochDelta);
            lastEpoch = Math.max(lastEpoch, epoch);
            o = { kind: s.kind, epoch, sentAt: Math.max(0, now - s.ago), now };
          } else o = { kind: s.kind, now };
        }
        const actions = expected(time, model, o);
        const decision = decideLease(time, state, o);
        expect(decision.actions, `step ${i}: ${JSON.stringify(o)}`).toEqual(actions);
        expect(decision.state, `step ${i}: ${JSON.stringify(o)}`).toEqual(stateOf(model));
        state = decision.state;
      }
    },
  );
});
