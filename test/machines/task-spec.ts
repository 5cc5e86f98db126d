/**
 * The task lifecycle written out from docs/protocol.md ("Task states"), by hand and
 * independently of src/machines: the reference the property tests hold the
 * machine and its exported table to.
 */
import type { TaskState } from '../../src/protocol/task.js';

export const ALL_STATES: TaskState[] = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
];
export const TERMINALS: TaskState[] = ['completed', 'canceled', 'failed', 'rejected'];
export const MOVERS = ['worker', 'requester', 'broker'] as const;
export const VIAS = ['status', 'cancel', 'follow-up', 'deregistration'] as const;

/** docs/protocol.md's table, row by row: where the worker may move a task with tasks.status. */
export const SPEC_WORKER_STATUS: Record<string, TaskState[]> = {
  submitted: ['working', 'input-required', 'auth-required', 'completed', 'failed', 'rejected'],
  working: ['working', 'input-required', 'auth-required', 'completed', 'failed'],
  'input-required': ['working', 'auth-required', 'completed', 'failed'],
  'auth-required': ['working', 'input-required', 'completed', 'failed'],
};

export interface SpecMove {
  to: TaskState;
  by: (typeof MOVERS)[number];
  via: (typeof VIAS)[number];
}

export type SpecOutcome =
  | { ok: true; to: TaskState }
  | { ok: false; errorCode: 'A2A_TASK_TERMINAL' | 'A2A_INVALID_TRANSITION'; reason: string };

/** The reference model: what the page says a move from `state` does. */
export function specMove(state: TaskState, move: SpecMove): SpecOutcome {
  if (TERMINALS.includes(state)) return { ok: false, errorCode: 'A2A_TASK_TERMINAL', reason: 'terminal' };
  const refuse = (reason: string): SpecOutcome => ({ ok: false, errorCode: 'A2A_INVALID_TRANSITION', reason });
  switch (move.via) {
    case 'status':
      if (move.by !== 'worker') return refuse('worker-only');
      return SPEC_WORKER_STATUS[state]?.includes(move.to) ? { ok: true, to: move.to } : refuse('not-in-table');
    case 'cancel':
      // tasks.cancel, by either party.
      return move.to === 'canceled' && (move.by === 'requester' || move.by === 'worker')
        ? { ok: true, to: 'canceled' }
        : refuse('not-in-table');
    case 'deregistration':
      // The requester leaving cancels; the worker leaving fails.
      return move.by === 'broker' && (move.to === 'canceled' || move.to === 'failed')
        ? { ok: true, to: move.to }
        : refuse('not-in-table');
    case 'follow-up':
      // The requester's follow-up wakes a paused task.
      return move.by === 'broker' && move.to === 'working' && (state === 'input-required' || state === 'auth-required')
        ? { ok: true, to: 'working' }
        : refuse('not-in-table');
  }
}

export function allMoves(): SpecMove[] {
  const out: SpecMove[] = [];
  for (const to of ALL_STATES) for (const by of MOVERS) for (const via of VIAS) out.push({ to, by, via });
  return out;
}
