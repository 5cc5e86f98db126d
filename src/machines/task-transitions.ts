import { TASK_STATES, type TaskState, type TerminalState, isTerminalState } from '../protocol/task.js';

/** Who makes a move: the task's worker, its requester, or the broker itself. */
export type TaskMover = 'worker' | 'requester' | 'broker';
/** Which call or rule made it. */
export type TaskMoveVia = 'status' | 'cancel' | 'follow-up' | 'deregistration';

export type LiveTaskState = Exclude<TaskState, TerminalState>;
export const LIVE_TASK_STATES = TASK_STATES.filter((s) => !isTerminalState(s)) as LiveTaskState[];

export interface TaskTransition {
  from: LiveTaskState;
  to: TaskState;
  by: TaskMover;
  via: TaskMoveVia;
}

/**
 * The worker's moves through `a2a.tasks.status`, cell for cell the table of
 * docs/protocol.md ("Task states"): `WORKER_STATUS_TABLE[from][to]`.
 */
export const WORKER_STATUS_TABLE: Readonly<
  Record<
    LiveTaskState,
    Readonly<Record<'working' | 'input-required' | 'auth-required' | 'completed' | 'failed' | 'rejected', boolean>>
  >
> = {
  submitted: {
    working: true,
    'input-required': true,
    'auth-required': true,
    completed: true,
    failed: true,
    rejected: true,
  },
  working: {
    working: true,
    'input-required': true,
    'auth-required': true,
    completed: true,
    failed: true,
    rejected: false,
  },
  'input-required': {
    working: true,
    'input-required': false,
    'auth-required': true,
    completed: true,
    failed: true,
    rejected: false,
  },
  'auth-required': {
    working: true,
    'input-required': true,
    'auth-required': false,
    completed: true,
    failed: true,
    rejected: false,
  },
};

function buildTransitions(): TaskTransition[] {
  const rows: TaskTransition[] = [];
  for (const from of LIVE_TASK_STATES) {
    for (const [to, allowed] of Object.entries(WORKER_STATUS_TABLE[from])) {
      if (allowed) rows.push({ from, to: to as TaskState, by: 'worker', via: 'status' });
    }
    // Either party cancels through a2a.tasks.cancel.
    rows.push({ from, to: 'canceled', by: 'requester', via: 'cancel' });
    rows.push({ from, to: 'canceled', by: 'worker', via: 'cancel' });
    // The requester's deregistration cancels; the worker's fails.
    rows.push({ from, to: 'canceled', by: 'broker', via: 'deregistration' });
    rows.push({ from, to: 'failed', by: 'broker', via: 'deregistration' });
  }
  // A requester's follow-up wakes a paused task.
  rows.push({ from: 'input-required', to: 'working', by: 'broker', via: 'follow-up' });
  rows.push({ from: 'auth-required', to: 'working', by: 'broker', via: 'follow-up' });
  return rows;
}

/** Every legal move of a task, as data. The task machine is built from it. */
export const TASK_TRANSITIONS: readonly TaskTransition[] = Object.freeze(buildTransitions());

export interface TaskMove {
  to: TaskState;
  by: TaskMover;
  via: TaskMoveVia;
}

export type TaskMoveRefusal =
  | { errorCode: 'A2A_TASK_TERMINAL'; from: TaskState; to: TaskState; reason: 'terminal' }
  | { errorCode: 'A2A_INVALID_TRANSITION'; from: TaskState; to: TaskState; reason: 'worker-only' | 'not-in-table' };

export type TaskMoveCheck = { ok: true; from: TaskState; to: TaskState } | ({ ok: false } & TaskMoveRefusal);

export function findTransition(from: TaskState, move: TaskMove): TaskTransition | undefined {
  return TASK_TRANSITIONS.find((t) => t.from === from && t.to === move.to && t.by === move.by && t.via === move.via);
}

/** Decides a move against the table, without touching any actor. */
export function checkTaskMove(from: TaskState, move: TaskMove): TaskMoveCheck {
  if (isTerminalState(from)) {
    return { ok: false, errorCode: 'A2A_TASK_TERMINAL', from, to: move.to, reason: 'terminal' };
  }
  if (move.via === 'status' && move.by !== 'worker') {
    return { ok: false, errorCode: 'A2A_INVALID_TRANSITION', from, to: move.to, reason: 'worker-only' };
  }
  if (!findTransition(from, move)) {
    return { ok: false, errorCode: 'A2A_INVALID_TRANSITION', from, to: move.to, reason: 'not-in-table' };
  }
  return { ok: true, from, to: move.to };
}

/**
 * The state a requester's follow-up message leads to: it wakes a paused task
 * and leaves every other state as it is.
 */
export function followUpTarget(from: TaskState): TaskState {
  return from === 'input-required' || from === 'auth-required' ? 'working' : from;
}
