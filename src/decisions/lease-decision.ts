/**
 * The leader lease's decisions, as one pure function: `decideLease(timing,
 * state, observation)` takes what one Coordinator believes about the lease
 * (standby, or leader of an epoch until a local deadline) and one thing it
 * observed (an attempt on the database took, renewed or lost the lease, or
 * failed; the local clock passed a deadline; the caller closes) and returns
 * its next belief and what to do: announce a role change, reset the
 * connection, schedule the next attempt, release the lease. It does no I/O and
 * reads no clock: times come in the observations. `PostgresLease` runs the
 * attempts and the timers around it.
 *
 * The deadline is local: the send time of the last attempt that took or
 * renewed the lease, plus the lease's length. The database computes the
 * lease's expiry from its own clock when the statement runs, which is after the
 * send, so a leader cut off from the database stops believing it leads before
 * any standby can see the lease lapse and take it.
 */

/** The lease's length and pace, in milliseconds. */
export interface LeaseTiming {
  /** How long a taken or renewed lease holds. */
  readonly leaseMs: number;
  /** How often a leader renews and a standby looks for a lapsed lease. */
  readonly renewMs: number;
  /** The first wait after a failed attempt; it doubles with each failure in a row. */
  readonly backoffMinMs: number;
  /** The longest wait after failures. */
  readonly backoffMaxMs: number;
}

/** What one Coordinator believes about the lease. */
export type LeaseState =
  | { readonly role: 'standby'; readonly failures: number }
  | { readonly role: 'leader'; readonly epoch: number; readonly deadline: number; readonly failures: number }
  | { readonly role: 'closed' };

/** The state a lease starts in. */
export const INITIAL_LEASE_STATE: LeaseState = { role: 'standby', failures: 0 };

/** One thing the lease observed; `now` is the local time it was observed at. */
export type LeaseObservation =
  /** An acquire attempt took the lease: its epoch; `sentAt` is when its statement was sent. */
  | { readonly kind: 'acquired'; readonly epoch: number; readonly sentAt: number; readonly now: number }
  /** An acquire attempt found the lease held by another, live Coordinator. */
  | { readonly kind: 'held'; readonly now: number }
  /** A renew attempt extended this leader's epoch; `sentAt` is when its statement was sent. */
  | { readonly kind: 'renewed'; readonly epoch: number; readonly sentAt: number; readonly now: number }
  /** A renew attempt found the epoch no longer this Coordinator's. */
  | { readonly kind: 'replaced'; readonly now: number }
  /** An attempt failed (the database could not be reached in time, or refused). */
  | { readonly kind: 'failed'; readonly now: number }
  /** The local clock, when a deadline may have passed. */
  | { readonly kind: 'tick'; readonly now: number }
  /** The caller closes the lease. */
  | { readonly kind: 'close' };

/** A role change, as the lease announces it. */
export type LeaseRoleChange =
  | { readonly role: 'leader'; readonly epoch: number }
  | { readonly role: 'standby' }
  /** Leadership of `epoch` ended: `replaced` (another took the lease), `expired` (not renewed in time), `closed`. */
  | { readonly role: 'lost'; readonly epoch: number; readonly reason: 'replaced' | 'expired' | 'closed' };

/** What the effectful side does after a decision, in order. */
export type LeaseAction =
  | { readonly kind: 'announce'; readonly change: LeaseRoleChange }
  /** Drop the connection (its state is unknown after a failure); the next attempt opens a new one. */
  | { readonly kind: 'reset-connection' }
  /** Run the next attempt after `inMs`. */
  | { readonly kind: 'attempt'; readonly what: 'acquire' | 'renew'; readonly inMs: number }
  /** Give up the epoch (set its expiry to now) so a standby takes over at its next look. */
  | { readonly kind: 'release'; readonly epoch: number };

export interface LeaseDecision {
  readonly state: LeaseState;
  readonly actions: readonly LeaseAction[];
}

/** The wait after `failures` failed attempts in a row (at least one). */
export function leaseBackoff(timing: LeaseTiming, failures: number): number {
  const doubled = timing.backoffMinMs * 2 ** Math.min(Math.max(failures - 1, 0), 30);
  return Math.min(timing.backoffMaxMs, doubled);
}

function standby(failures: number): LeaseState {
  return { role: 'standby', failures };
}

/** Leadership ends: announce it, then the standby the lease becomes. */
function lose(epoch: number, reason: 'replaced' | 'expired'): LeaseAction[] {
  return [
    { kind: 'announce', change: { role: 'lost', epoch, reason } },
    { kind: 'announce', change: { role: 'standby' } },
  ];
}

export function decideLease(timing: LeaseTiming, state: LeaseState, observation: LeaseObservation): LeaseDecision {
  if (state.role === 'closed') return { state, actions: [] };
  if (observation.kind === 'close') {
    if (state.role === 'leader') {
      return {
        state: { role: 'closed' },
        actions: [
          { kind: 'announce', change: { role: 'lost', epoch: state.epoch, reason: 'closed' } },
          { kind: 'release', epoch: state.epoch },
        ],
      };
    }
    return { state: { role: 'closed' }, actions: [] };
  }
  const { now } = observation;
  if (observation.kind === 'tick') {
    if (state.role === 'leader' && now >= state.deadline) {
      // The attempt in flight (if any) schedules the next one when it returns.
      return { state: standby(0), actions: lose(state.epoch, 'expired') };
    }
    return { state, actions: [] };
  }
  if (state.role === 'standby') {
    switch (observation.kind) {
      case 'acquired': {
        const deadline = observation.sentAt + timing.leaseMs;
        if (deadline <= now) {
          // The answer came too late to lead on: look again (taking it anew, with a new epoch).
          return { state: standby(0), actions: [{ kind: 'attempt', what: 'acquire', inMs: timing.renewMs }] };
        }
        return {
          state: { role: 'leader', epoch: observation.epoch, deadline, failures: 0 },
          actions: [
            { kind: 'announce', change: { role: 'leader', epoch: observation.epoch } },
            { kind: 'attempt', what: 'renew', inMs: Math.min(timing.renewMs, deadline - now) },
          ],
        };
      }
      case 'failed': {
        const failures = state.failures + 1;
        return {
          state: standby(failures),
          actions: [
            { kind: 'reset-connection' },
            { kind: 'attempt', what: 'acquire', inMs: leaseBackoff(timing, failures) },
          ],
        };
      }
      default:
        // Held by another; or a renewal answered after this lease had stopped leading.
        return { state: standby(0), actions: [{ kind: 'attempt', what: 'acquire', inMs: timing.renewMs }] };
    }
  }
  // Leader. Past the deadline nothing extends it: leadership ended when it passed.
  if (now >= state.deadline) {
    const failed = observation.kind === 'failed';
    const failures = failed ? state.failures + 1 : 0;
    return {
      state: standby(failures),
      actions: [
        ...lose(state.epoch, 'expired'),
        ...(failed ? [{ kind: 'reset-connection' } as const] : []),
        { kind: 'attempt', what: 'acquire', inMs: failed ? leaseBackoff(timing, failures) : timing.renewMs },
      ],
    };
  }
  switch (observation.kind) {
    case 'renewed': {
      if (observation.epoch !== state.epoch) {
        return { state: standby(0), actions: [...lose(state.epoch, 'replaced'), acquireSoon(timing)] };
      }
      const deadline = Math.max(state.deadline, observation.sentAt + timing.leaseMs);
      return {
        state: { role: 'leader', epoch: state.epoch, deadline, failures: 0 },
        actions: [{ kind: 'attempt', what: 'renew', inMs: Math.min(timing.renewMs, deadline - now) }],
      };
    }
    case 'failed': {
      const failures = state.failures + 1;
      return {
        state: { ...state, failures },
        actions: [
          { kind: 'reset-connection' },
          {
            kind: 'attempt',
            what: 'renew',
            inMs: Math.min(leaseBackoff(timing, failures), timing.renewMs, state.deadline - now),
          },
        ],
      };
    }
    case 'acquired':
      // Only a standby acquires: keep leading the epoch held, renew on schedule.
      return {
        state,
        actions: [{ kind: 'attempt', what: 'renew', inMs: Math.min(timing.renewMs, state.deadline - now) }],
      };
    default:
      // Replaced, or held by another: the epoch is gone.
      return { state: standby(0), actions: [...lose(state.epoch, 'replaced'), acquireSoon(timing)] };
  }
}

function acquireSoon(timing: LeaseTiming): LeaseAction {
  return { kind: 'attempt', what: 'acquire', inMs: timing.renewMs };
}
