/**
 * The broker's task actors, driven through random creations, moves, undos
 * and restores and compared after every step with a reference model written
 * from docs/protocol.md's table (test/machines/task-spec.ts): the same accepted
 * moves, the same refusals, the persisted snapshots XState writes (byte for
 * byte as JSON), undo, restore and rebuild, and which tasks were moved since
 * their restore; uninspected (pure transitions) and inspected (actors) alike.
 */
import { fc, test as fcTest } from '@fast-check/vitest';
import type { InspectionEvent } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type MoveResult, TaskActorError, TaskActors } from '../../src/actors/broker/task-actors.js';
import { TASK_MACHINE_VERSION } from '../../src/machines/task-machine.js';
import { LIVE_TASK_STATES } from '../../src/machines/task-transitions.js';
import type { TaskState } from '../../src/protocol/task.js';
import { ALL_STATES, MOVERS, type SpecMove, TERMINALS, VIAS, specMove } from '../machines/task-spec.js';

const TASK_IDS = ['t-1', 't-2', 't-3'];

type Step =
  | { kind: 'create'; task: number }
  | { kind: 'move'; task: number; move: SpecMove; from: number }
  | { kind: 'undo' }
  | { kind: 'restore'; task: number; state: number; version: number; snapshot: number };

const moveArb = fc.record({
  to: fc.constantFrom(...ALL_STATES),
  by: fc.constantFrom(...MOVERS),
  via: fc.constantFrom(...VIAS),
});

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('create' as const), task: fc.nat(2) }) },
  {
    weight: 6,
    arbitrary: fc.record({ kind: fc.constant('move' as const), task: fc.nat(2), move: moveArb, from: fc.nat(7) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('undo' as const) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('restore' as const),
      task: fc.nat(2),
      state: fc.nat(7),
      version: fc.nat(2),
      snapshot: fc.nat(4),
    }),
  },
);

interface ModelContext {
  taskId: string;
  moves: number;
  lastMove: (SpecMove & { from: TaskState }) | null;
  refusal: null;
}

/** A live task as the reference model holds it; `started`: it has a running actor. */
interface ModelTask {
  state: TaskState;
  context: ModelContext;
  started: boolean;
}

/** The persisted snapshot XState writes for the task machine (same keys, same order). */
function persistedOf(task: ModelTask): string {
  return JSON.stringify({ status: 'active', value: task.state, historyValue: {}, context: task.context, children: {} });
}

function fresh(taskId: string, state: TaskState, started: boolean): ModelTask {
  return { state, context: { taskId, moves: 0, lastMove: null, refusal: null }, started };
}

function view(actors: TaskActors) {
  return {
    size: actors.size,
    tasks: TASK_IDS.map((id) => ({
      has: actors.has(id),
      state: actors.state(id) ?? null,
      started: actors.has(id) ? actors.started(id) : null,
      persisted: JSON.stringify(actors.persisted(id) ?? null),
    })),
  };
}

function modelView(model: Map<string, ModelTask>) {
  return {
    size: model.size,
    tasks: TASK_IDS.map((id) => {
      const task = model.get(id);
      return {
        has: task !== undefined,
        state: task?.state ?? null,
        started: task?.started ?? null,
        persisted: task === undefined ? 'null' : persistedOf(task),
      };
    }),
  };
}

/** Snapshots to restore from: one this task had earlier, others of its shape, and garbage. */
function snapshotText(kind: number, id: string, state: TaskState, earlier: Map<string, string>): string | null {
  switch (kind) {
    case 0:
      return null;
    case 1:
      return earlier.get(id) ?? null;
    case 2:
      return JSON.stringify({
        status: 'active',
        value: state,
        historyValue: {},
        context: {
          taskId: id,
          moves: 3,
          lastMove: { from: 'submitted', to: state, by: 'worker', via: 'status' },
          refusal: null,
        },
        children: {},
      });
    case 3:
      return '{not json';
    default:
      return JSON.stringify({ value: state });
  }
}

/** What the model says a restore does: the snapshot's context if it is of the machine's shape in `state`. */
function modelRestore(
  id: string,
  state: TaskState,
  version: number,
  text: string | null,
): { task: ModelTask; how: 'restored' | 'rebuilt' } | 'terminal' {
  if (TERMINALS.includes(state)) return 'terminal';
  if (text !== null && version === TASK_MACHINE_VERSION) {
    let parsed: { value?: unknown; status?: unknown; context?: ModelContext } | undefined;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    const c = parsed?.context;
    if (
      parsed?.value === state &&
      parsed.status === 'active' &&
      c !== undefined &&
      typeof c.taskId === 'string' &&
      typeof c.moves === 'number'
    ) {
      return { task: { state, context: c, started: false }, how: 'restored' };
    }
  }
  return { task: fresh(id, state, false), how: 'rebuilt' };
}

/** Uninspected, tasks step by the machine's pure transitions; inspected, each is an actor. */
const MODES = [
  { name: 'pure transitions', make: () => new TaskActors(), inspected: false },
  { name: 'actors (inspected)', make: () => new TaskActors({ next: () => {} }), inspected: true },
];

describe.each(MODES)('task actors, $name', ({ make, inspected }) => {
  fcTest.prop([fc.array(stepArb, { minLength: 1, maxLength: 60 })], { numRuns: 300 })(
    'answer as the reference model after every step: moves, refusals, snapshots, undo, restore',
    (steps) => {
      const actors = make();
      const model = new Map<string, ModelTask>();
      const earlier = new Map<string, string>();
      const undos: [() => void, () => void][] = [];
      const putBack = (id: string, task: ModelTask | undefined) => () => {
        if (task === undefined) model.delete(id);
        else model.set(id, { ...task, started: false });
      };
      for (const step of steps) {
        if (step.kind === 'undo') {
          const pair = undos.pop();
          if (pair === undefined) continue;
          pair[0]();
          pair[1]();
        } else if (step.kind === 'create') {
          const id = TASK_IDS[step.task] as string;
          if (actors.has(id)) continue;
          const created = actors.create(id);
          // Inspected, its actor starts; else it waits for its first move, as a restored task does.
          const task = fresh(id, 'submitted', inspected);
          model.set(id, task);
          expect(JSON.stringify(actors.persisted(id))).toBe(persistedOf(task));
          undos.push([created.undo, () => model.delete(id)]);
        } else if (step.kind === 'move') {
          const id = TASK_IDS[step.task] as string;
          // The broker moves only tasks it found live (checkTaskMove refuses a terminal one first).
          const from = actors.state(id) ?? LIVE_TASK_STATES[step.from % LIVE_TASK_STATES.length] ?? 'submitted';
          const before = model.get(id);
          const spec = specMove(from, step.move);
          let result: MoveResult | undefined;
          let refused: unknown;
          try {
            result = actors.move(id, from, step.move);
          } catch (error) {
            refused = error;
          }
          if (!spec.ok) {
            // Refused: a defect the broker never commits. The task is as it was, its
            // actor (which refused) stopped: the next move starts another.
            expect(refused).toBeInstanceOf(TaskActorError);
            expect(refused).toMatchObject({ taskId: id, from, to: step.move.to });
            if (before !== undefined) model.set(id, { ...before, started: false });
          } else {
            expect(refused).toBeUndefined();
            const base = before ?? fresh(id, from, false);
            const after: ModelTask = {
              state: step.move.to,
              context: {
                ...base.context,
                moves: base.context.moves + 1,
                lastMove: { from, to: step.move.to, by: step.move.by, via: step.move.via },
                refusal: null,
              },
              started: true,
            };
            if (TERMINALS.includes(step.move.to)) {
              model.delete(id);
              expect(result?.snapshot).toBeNull();
            } else {
              model.set(id, after);
              expect(JSON.stringify(result?.snapshot)).toBe(persistedOf(after));
            }
            if (result !== undefined) undos.push([result.undo, putBack(id, before)]);
          }
        } else {
          const id = TASK_IDS[step.task] as string;
          if (actors.has(id)) continue;
          const state = ALL_STATES[step.state] ?? 'submitted';
          const version = step.version === 0 ? TASK_MACHINE_VERSION : TASK_MACHINE_VERSION + step.version;
          const text = snapshotText(step.snapshot, id, state, earlier);
          const expected = modelRestore(id, state, version, text);
          const how = actors.restore(id, state, version, text);
          if (expected === 'terminal') expect(how).toBe('rebuilt');
          else {
            model.set(id, expected.task);
            expect(how).toBe(expected.how);
          }
        }
        expect(view(actors)).toEqual(modelView(model));
        for (const id of TASK_IDS) {
          const persisted = actors.persisted(id);
          if (persisted !== undefined) earlier.set(id, JSON.stringify(persisted));
        }
      }
      actors.stopAll();
      expect(view(actors)).toEqual(modelView(new Map()));
    },
  );

  it('a full life: submitted, working, input-required, working, completed', () => {
    const actors = make();
    actors.create('t-1');
    const moves: SpecMove[] = [
      { to: 'working', by: 'worker', via: 'status' },
      { to: 'input-required', by: 'worker', via: 'status' },
      { to: 'working', by: 'broker', via: 'follow-up' },
    ];
    for (const move of moves)
      expect(actors.move('t-1', actors.state('t-1') ?? 'submitted', move).snapshot).not.toBeNull();
    expect(actors.persisted('t-1')).toMatchObject({
      status: 'active',
      value: 'working',
      context: { moves: 3, lastMove: { from: 'input-required', to: 'working', by: 'broker', via: 'follow-up' } },
    });
    const done = actors.move('t-1', 'working', { to: 'completed', by: 'worker', via: 'status' });
    expect(done.snapshot).toBeNull();
    expect(actors.has('t-1')).toBe(false);
    expect(actors.state('t-1')).toBeUndefined();
    expect(actors.persisted('t-1')).toBeUndefined();
    expect(actors.size).toBe(0);
  });
});

describe('task actors under an inspector', () => {
  it('every moved task is an XState actor: the inspector sees it started, sent MOVE, and stopped when terminal or refused', () => {
    const events: InspectionEvent[] = [];
    const actors = new TaskActors({ next: (e) => events.push(e) });
    actors.create('t-new');
    const restored = actors.restore('t-old', 'working', TASK_MACHINE_VERSION, null);
    expect(restored).toBe('rebuilt');
    const actorsOf = () =>
      events
        .filter((e) => e.type === '@xstate.actor')
        .map((e) => (e.actorRef.getSnapshot() as { context: ModelContext }).context.taskId);
    // A restored task starts its actor on first use only.
    expect(actorsOf()).toEqual(['t-new']);
    expect(actors.started('t-new')).toBe(true);
    expect(actors.started('t-old')).toBe(false);
    // A refused move: the actor that refused it is stopped and the task is as it was.
    expect(() => actors.move('t-old', 'working', { to: 'rejected', by: 'worker', via: 'status' })).toThrow(
      TaskActorError,
    );
    expect(actors.started('t-old')).toBe(false);
    expect(actors.state('t-old')).toBe('working');
    expect(JSON.stringify(actors.persisted('t-old'))).toBe(
      persistedOf({
        state: 'working',
        context: { taskId: 't-old', moves: 0, lastMove: null, refusal: null },
        started: false,
      }),
    );
    const refusedBy = events.filter((e) => e.type === '@xstate.actor')[1]?.actorRef;
    expect(actorsOf()).toEqual(['t-new', 't-old']);
    expect(refusedBy?.getSnapshot().status).toBe('stopped');
    const moved = actors.move('t-old', 'working', { to: 'input-required', by: 'worker', via: 'status' });
    expect(actorsOf()).toEqual(['t-new', 't-old', 't-old']);
    expect(actors.started('t-old')).toBe(true);
    const sent = events.filter((e) => e.type === '@xstate.event' && e.event.type === 'MOVE');
    expect(sent).toHaveLength(2);
    // Undo puts the snapshot back; the actor that took the move is stopped.
    const oldActor = events.filter((e) => e.type === '@xstate.actor')[2]?.actorRef;
    moved.undo();
    expect(oldActor?.getSnapshot().status).toBe('stopped');
    expect(actors.state('t-old')).toBe('working');
    expect(actors.started('t-old')).toBe(false);
    const done = actors.move('t-new', 'submitted', { to: 'completed', by: 'worker', via: 'status' });
    expect(done.snapshot).toBeNull();
    const newActor = events.filter((e) => e.type === '@xstate.actor')[0]?.actorRef;
    expect(newActor?.getSnapshot().status).toBe('done');
    expect(actors.has('t-new')).toBe(false);
    actors.stopAll();
    expect(actors.size).toBe(0);
  });
});
