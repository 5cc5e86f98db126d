import { fc, test as fcTest } from '@fast-check/vitest';
import { type Actor, createActor } from 'xstate';
import { getShortestPaths } from 'xstate/graph';
import { describe, expect, it } from 'vitest';
import {
  LIVE_TASK_STATES,
  TASK_TRANSITIONS,
  WORKER_STATUS_TABLE,
  checkTaskMove,
  followUpTarget,
} from '../../src/machines/task-transitions.js';
import { type TaskMachineEvent, taskMachine } from '../../src/machines/task-machine.js';
import type { TaskState } from '../../src/protocol/task.js';
import {
  ALL_STATES,
  MOVERS,
  SPEC_WORKER_STATUS,
  type SpecMove,
  TERMINALS,
  VIAS,
  allMoves,
  specMove,
} from './task-spec.js';

type TaskActor = Actor<typeof taskMachine>;

/** Sends a move unless the actor has reached a final state (a done actor takes no events). */
function sendMove(actor: TaskActor, move: SpecMove): void {
  if (actor.getSnapshot().status === 'active') actor.send({ type: 'MOVE', ...move });
}

function start(): TaskActor {
  return createActor(taskMachine, { input: { taskId: 't-1' } }).start();
}

/** Restores an actor from a JSON round trip of its persisted snapshot. */
function restore(actor: TaskActor): TaskActor {
  const persisted = JSON.parse(JSON.stringify(actor.getPersistedSnapshot()));
  actor.stop();
  return createActor(taskMachine, { snapshot: persisted, input: { taskId: 't-1' } }).start();
}

/** Drives a fresh actor into `state` along legal moves. */
function actorIn(state: TaskState): TaskActor {
  const actor = start();
  const path: Record<TaskState, TaskMachineEvent[]> = {
    submitted: [],
    working: [{ type: 'MOVE', to: 'working', by: 'worker', via: 'status' }],
    'input-required': [{ type: 'MOVE', to: 'input-required', by: 'worker', via: 'status' }],
    'auth-required': [{ type: 'MOVE', to: 'auth-required', by: 'worker', via: 'status' }],
    completed: [{ type: 'MOVE', to: 'completed', by: 'worker', via: 'status' }],
    canceled: [{ type: 'MOVE', to: 'canceled', by: 'requester', via: 'cancel' }],
    failed: [{ type: 'MOVE', to: 'failed', by: 'worker', via: 'status' }],
    rejected: [{ type: 'MOVE', to: 'rejected', by: 'worker', via: 'status' }],
  };
  for (const e of path[state]) actor.send(e);
  expect(actor.getSnapshot().value).toBe(state);
  return actor;
}

describe('the exported table', () => {
  it('is docs/protocol.md cell for cell (worker moves through tasks.status)', () => {
    for (const from of LIVE_TASK_STATES) {
      for (const to of ALL_STATES) {
        const inTable = TASK_TRANSITIONS.some(
          (t) => t.from === from && t.to === to && t.by === 'worker' && t.via === 'status',
        );
        expect(inTable, `${from} -> ${to}`).toBe(SPEC_WORKER_STATUS[from]?.includes(to) ?? false);
      }
      for (const [to, allowed] of Object.entries(WORKER_STATUS_TABLE[from])) {
        expect(allowed, `WORKER_STATUS_TABLE[${from}][${to}]`).toBe(
          SPEC_WORKER_STATUS[from]?.includes(to as TaskState),
        );
      }
    }
  });

  it('agrees with the reference model on every (state, move) pair', () => {
    for (const from of ALL_STATES) {
      for (const move of allMoves()) {
        const spec = specMove(from, move);
        const check = checkTaskMove(from, move);
        expect(check.ok, `${from} ${JSON.stringify(move)}`).toBe(spec.ok);
        if (!check.ok && !spec.ok) {
          expect(check.errorCode).toBe(spec.errorCode);
          expect(check.reason).toBe(spec.reason);
          expect(check.from).toBe(from);
          expect(check.to).toBe(move.to);
        }
      }
    }
  });

  it('holds exactly the moves the reference model accepts, each once and nothing else', () => {
    const expected = new Set<string>();
    for (const from of ALL_STATES) {
      for (const move of allMoves()) {
        if (specMove(from, move).ok) expected.add(JSON.stringify([from, move.to, move.by, move.via]));
      }
    }
    const rows = TASK_TRANSITIONS.map((t) => JSON.stringify([t.from, t.to, t.by, t.via]));
    expect(new Set(rows).size).toBe(rows.length);
    expect(new Set(rows)).toEqual(expected);
  });

  it('has no move out of a terminal state and none into submitted', () => {
    for (const t of TASK_TRANSITIONS) {
      expect(TERMINALS).not.toContain(t.from);
      expect(t.to).not.toBe('submitted');
    }
  });

  it('follow-ups wake only paused tasks', () => {
    expect(followUpTarget('input-required')).toBe('working');
    expect(followUpTarget('auth-required')).toBe('working');
    for (const s of ['submitted', 'working', 'completed'] as const) expect(followUpTarget(s)).toBe(s);
  });
});

describe('the machine, move by move', () => {
  it('does exactly what the reference model says for every state and move', () => {
    for (const from of ALL_STATES) {
      for (const move of allMoves()) {
        const actor = actorIn(from);
        const before = actor.getSnapshot();
        sendMove(actor, move);
        const after = actor.getSnapshot();
        const spec = specMove(from, move);
        const label = `${from} ${JSON.stringify(move)}`;
        if (spec.ok) {
          expect(after.value, label).toBe(spec.to);
          expect(after.context.moves, label).toBe(before.context.moves + 1);
          expect(after.context.refusal, label).toBeNull();
          expect(after.status, label).toBe(TERMINALS.includes(spec.to) ? 'done' : 'active');
        } else {
          expect(after.value, label).toBe(from);
          expect(after.context.moves, label).toBe(before.context.moves);
          if (spec.errorCode === 'A2A_INVALID_TRANSITION') {
            expect(after.context.refusal, label).toEqual({
              errorCode: 'A2A_INVALID_TRANSITION',
              from,
              to: move.to,
              reason: spec.reason,
            });
          } else {
            expect(after.status, label).toBe('done');
          }
        }
        actor.stop();
      }
    }
  });
});

// ---------------------------------------------------------------------------
// Model-based run: random sequences of moves by random roles, with restarts.

interface Model {
  state: TaskState;
  moves: number;
}
interface Real {
  actor: TaskActor;
}

const moveArb: fc.Arbitrary<SpecMove> = fc.oneof(
  // Uniform over the whole space: mostly refusals.
  fc.record({ to: fc.constantFrom(...ALL_STATES), by: fc.constantFrom(...MOVERS), via: fc.constantFrom(...VIAS) }),
  // Biased toward the legal shapes so that runs travel deep into the graph.
  fc.record({
    to: fc.constantFrom(...ALL_STATES),
    by: fc.constant('worker' as const),
    via: fc.constant('status' as const),
  }),
  fc.record({
    to: fc.constant('working' as TaskState),
    by: fc.constant('broker' as const),
    via: fc.constant('follow-up' as const),
  }),
);

class MoveCommand implements fc.Command<Model, Real> {
  constructor(readonly move: SpecMove) {}
  check(): boolean {
    return true;
  }
  run(model: Model, real: Real): void {
    const spec = specMove(model.state, this.move);
    const check = checkTaskMove(model.state, this.move);
    expect(check.ok).toBe(spec.ok);
    const before = real.actor.getSnapshot();
    expect(before.value).toBe(model.state);
    sendMove(real.actor, this.move);
    const after = real.actor.getSnapshot();
    if (spec.ok) {
      model.state = spec.to;
      model.moves++;
      expect(after.context.refusal).toBeNull();
    } else {
      expect(check.ok ? undefined : check.errorCode).toBe(spec.errorCode);
      if (spec.errorCode === 'A2A_INVALID_TRANSITION') {
        expect(after.context.refusal).toMatchObject({ errorCode: spec.errorCode, from: model.state, to: this.move.to });
      }
    }
    expect(after.value).toBe(model.state);
    expect(after.context.moves).toBe(model.moves);
    expect(after.status).toBe(TERMINALS.includes(model.state) ? 'done' : 'active');
  }
  toString(): string {
    return `move(${this.move.by}:${this.move.via}->${this.move.to})`;
  }
}

class RestartCommand implements fc.Command<Model, Real> {
  check(): boolean {
    return true;
  }
  run(model: Model, real: Real): void {
    real.actor = restore(real.actor);
    const s = real.actor.getSnapshot();
    expect(s.value).toBe(model.state);
    expect(s.context.moves).toBe(model.moves);
    expect(s.status).toBe(TERMINALS.includes(model.state) ? 'done' : 'active');
  }
  toString(): string {
    return 'restart';
  }
}

const commandsArb = fc.commands([moveArb.map((m) => new MoveCommand(m)), fc.constant(new RestartCommand())], {
  maxCommands: 40,
});

describe('model-based', () => {
  fcTest.prop([commandsArb], { numRuns: 1500 })(
    'random moves by random roles (with snapshot/restore) agree with the reference model at every step',
    (cmds) => {
      const real: Real = { actor: start() };
      const model: Model = { state: 'submitted', moves: 0 };
      fc.modelRun(() => ({ model, real }), cmds);
      real.actor.stop();
    },
  );

  fcTest.prop([fc.array(moveArb, { maxLength: 30 }), fc.nat()], { numRuns: 500 })(
    'snapshot, restore, continue gives the same result as never stopping',
    (moves, cut) => {
      const at = moves.length === 0 ? 0 : cut % (moves.length + 1);
      const straight = start();
      for (const m of moves) sendMove(straight, m);
      let resumed = start();
      for (const m of moves.slice(0, at)) sendMove(resumed, m);
      resumed = restore(resumed);
      for (const m of moves.slice(at)) sendMove(resumed, m);
      const a = straight.getSnapshot();
      const b = resumed.getSnapshot();
      expect(b.value).toBe(a.value);
      expect(b.status).toBe(a.status);
      expect(b.context).toEqual(a.context);
      expect(resumed.getPersistedSnapshot()).toEqual(straight.getPersistedSnapshot());
      straight.stop();
      resumed.stop();
    },
  );
});

describe('graph', () => {
  it('shortest paths from submitted reach every state', () => {
    const events = allMoves().map((m) => ({ type: 'MOVE' as const, ...m }));
    const paths = getShortestPaths(taskMachine, {
      events,
      input: { taskId: 't-graph' },
      serializeState: (snapshot) => JSON.stringify(snapshot.value),
    });
    const reached = new Set(paths.map((p) => p.state.value as string));
    expect([...reached].sort()).toEqual([...ALL_STATES].sort());
    // Every terminal is one move away from submitted.
    for (const t of TERMINALS) {
      const p = paths.find((x) => x.state.value === t);
      expect(p?.steps.length, t).toBeLessThanOrEqual(2);
    }
  });
});
