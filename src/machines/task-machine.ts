import { assign, setup } from 'xstate';
import { TASK_STATES, type TaskState, isTerminalState } from '../protocol/task.js';
import {
  TASK_TRANSITIONS,
  type TaskMove,
  type TaskMoveCheck,
  type TaskMoveRefusal,
  type TaskTransition,
  checkTaskMove,
} from './task-transitions.js';

/** Bumped whenever a persisted task snapshot would no longer restore. */
export const TASK_MACHINE_VERSION = 1;

export interface TaskMachineContext {
  taskId: string;
  /** Accepted moves so far. */
  moves: number;
  lastMove: (TaskMove & { from: TaskState }) | null;
  /** The last refused move, cleared by the next accepted one. */
  refusal: TaskMoveRefusal | null;
}

export type TaskMachineEvent = { type: 'MOVE' } & TaskMove;

export interface TaskMachineInput {
  taskId: string;
}

function stateConfig(state: TaskState) {
  if (isTerminalState(state)) return { type: 'final' as const };
  const rows = TASK_TRANSITIONS.filter((t) => t.from === state);
  return {
    on: {
      MOVE: [
        ...rows.map((row: TaskTransition) => ({
          guard: { type: 'isMove' as const, params: { to: row.to, by: row.by, via: row.via } },
          target: row.to,
          actions: { type: 'accept' as const, params: { from: row.from } },
        })),
        { actions: { type: 'refuse' as const, params: { from: state } } },
      ],
    },
  };
}

const states = Object.fromEntries(TASK_STATES.map((s) => [s, stateConfig(s)])) as Record<
  TaskState,
  ReturnType<typeof stateConfig>
>;

/**
 * The A2A task lifecycle. Pure: no clock, no I/O. Every legal move is a row of
 * `TASK_TRANSITIONS`; any other move leaves the state as it is and is recorded
 * in `context.refusal` (with the error code the broker answers).
 */
export const taskMachine = setup({
  types: {
    context: {} as TaskMachineContext,
    events: {} as TaskMachineEvent,
    input: {} as TaskMachineInput,
  },
  guards: {
    isMove: ({ event }, params: TaskMove) =>
      event.to === params.to && event.by === params.by && event.via === params.via,
  },
  actions: {
    accept: assign(({ context, event }, params: { from: TaskState }) => ({
      moves: context.moves + 1,
      lastMove: { from: params.from, to: event.to, by: event.by, via: event.via },
      refusal: null,
    })),
    refuse: assign(({ event }, params: { from: TaskState }) => {
      // Only a move that no row of its state takes is refused, and the table's check refuses it too.
      const check = checkTaskMove(params.from, event) as Extract<TaskMoveCheck, { ok: false }>;
      return { refusal: stripOk(check) };
    }),
  },
}).createMachine({
  id: 'task',
  initial: 'submitted',
  context: ({ input }) => ({ taskId: input.taskId, moves: 0, lastMove: null, refusal: null }),
  states,
});

function stripOk(refusal: TaskMoveRefusal & { ok?: boolean }): TaskMoveRefusal {
  const { ok: _ok, ...rest } = refusal;
  return rest as TaskMoveRefusal;
}

export type TaskMachine = typeof taskMachine;
