import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { createActor } from 'xstate';
import { type TaskMachineEvent, taskMachine } from '../../src/machines/task-machine.js';
import { type TaskMove, findTransition } from '../../src/machines/task-transitions.js';
import type { TaskState } from '../../src/protocol/task.js';
import { ALL_STATES, MOVERS, VIAS } from './task-spec.js';

/**
 * The task machine's record of its moves: `lastMove` is the last move the
 * table accepted, with the state it left (the broker reports it), and a
 * refused move leaves it as it was. The reference is the table itself
 * (`findTransition`), walked from `submitted`.
 */
const moveArb: fc.Arbitrary<TaskMove> = fc.record({
  to: fc.constantFrom(...ALL_STATES),
  by: fc.constantFrom(...MOVERS),
  via: fc.constantFrom(...VIAS),
});

describe('task machine: the last accepted move', () => {
  test.prop([fc.array(moveArb, { maxLength: 12 })], { numRuns: 300 })(
    'is the last move the table accepted, from the state it left; refusals keep it',
    (moves) => {
      const actor = createActor(taskMachine, { input: { taskId: 't-1' } }).start();
      let state: TaskState = 'submitted';
      let last: (TaskMove & { from: TaskState }) | null = null;
      let accepted = 0;
      for (const move of moves) {
        if (actor.getSnapshot().status !== 'active') break;
        actor.send({ type: 'MOVE', ...move } as TaskMachineEvent);
        if (findTransition(state, move)) {
          last = { from: state, to: move.to, by: move.by, via: move.via };
          state = move.to;
          accepted++;
        }
        const s = actor.getSnapshot();
        expect(s.value).toBe(state);
        expect(s.context.moves).toBe(accepted);
        expect(s.context.lastMove).toEqual(last);
      }
      actor.stop();
    },
  );
});
