/**
 * The broker's two ways of running its task machines, driven through the
 * same steps and compared after every one: `ActorTaskActors` (an XState actor
 * per live task, what an inspected broker runs) and `TableTaskActors` (the
 * machine applied as data, the default). Same accepted moves, same refusals,
 * same persisted snapshots (byte for byte as JSON), same undo, same restore.
 */
import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  ActorTaskActors,
  type MoveResult,
  TableTaskActors,
  TaskActorError,
  type TaskActors,
  createTaskActors,
} from '../../src/actors/broker/task-actors.js';
import { TASK_MACHINE_VERSION } from '../../src/machines/task-machine.js';
import { LIVE_TASK_STATES } from '../../src/machines/task-transitions.js';
import { ALL_STATES, MOVERS, type SpecMove, VIAS, specMove } from '../machines/task-spec.js';

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

/** What a call on either implementation did, in comparable form. */
function outcome(run: () => unknown): unknown {
  try {
    const value = run();
    return { ok: true, value: JSON.parse(JSON.stringify(value ?? null)) };
  } catch (error) {
    if (error instanceof TaskActorError) return { ok: false, taskId: error.taskId, from: error.from, to: error.to };
    throw error;
  }
}

function view(actors: TaskActors) {
  return {
    size: actors.size,
    tasks: TASK_IDS.map((id) => ({
      has: actors.has(id),
      state: actors.state(id) ?? null,
      persisted: JSON.stringify(actors.persisted(id) ?? null),
    })),
  };
}

/** Snapshots to restore from: the other side's current one, others of its shape, and garbage. */
function snapshotText(kind: number, id: string, state: string, source: TaskActors): string | null {
  switch (kind) {
    case 0:
      return null;
    case 1:
      return JSON.stringify(source.persisted(id) ?? null);
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

describe('TableTaskActors behaves as ActorTaskActors', () => {
  fcTest.prop([fc.array(stepArb, { minLength: 1, maxLength: 60 })], { numRuns: 300 })(
    'same answers and snapshots after every step',
    (steps) => {
      const actors = new ActorTaskActors();
      const table = new TableTaskActors();
      const undos: [() => void, () => void][] = [];
      for (const step of steps) {
        if (step.kind === 'undo') {
          const pair = undos.pop();
          if (pair === undefined) continue;
          pair[0]();
          pair[1]();
        } else if (step.kind === 'create') {
          const id = TASK_IDS[step.task] as string;
          if (actors.has(id)) continue;
          const a = actors.create(id);
          const b = table.create(id);
          expect(JSON.stringify(b.snapshot)).toBe(JSON.stringify(a.snapshot));
          undos.push([a.undo, b.undo]);
        } else if (step.kind === 'move') {
          const id = TASK_IDS[step.task] as string;
          // The broker moves only tasks it found live (checkTaskMove refuses a terminal one first).
          const from = actors.state(id) ?? LIVE_TASK_STATES[step.from % LIVE_TASK_STATES.length] ?? 'submitted';
          let a: MoveResult | undefined;
          let b: MoveResult | undefined;
          const oa = outcome(() => {
            a = actors.move(id, from, step.move);
            return a.snapshot;
          });
          const ob = outcome(() => {
            b = table.move(id, from, step.move);
            return b.snapshot;
          });
          expect(ob).toEqual(oa);
          // The same decision as the table of PROTOCOL.md, whoever applies it.
          expect((oa as { ok: boolean }).ok).toBe(specMove(from, step.move).ok);
          if (a !== undefined && b !== undefined) undos.push([a.undo, b.undo]);
        } else {
          const id = TASK_IDS[step.task] as string;
          if (actors.has(id)) continue;
          const state = ALL_STATES[step.state] ?? 'submitted';
          const version = step.version === 0 ? TASK_MACHINE_VERSION : TASK_MACHINE_VERSION + step.version;
          const text = snapshotText(step.snapshot, id, state, actors);
          expect(table.restore(id, state, version, text)).toBe(actors.restore(id, state, version, text));
        }
        expect(view(table)).toEqual(view(actors));
      }
      actors.stopAll();
      table.stopAll();
      expect(view(table)).toEqual(view(actors));
    },
  );

  it('a full life: submitted, working, input-required, working, completed', () => {
    for (const actors of [new ActorTaskActors(), new TableTaskActors()]) {
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
    }
  });

  it('createTaskActors: actors when inspected, the table otherwise', () => {
    expect(createTaskActors()).toBeInstanceOf(TableTaskActors);
    expect(createTaskActors({ next: () => {} })).toBeInstanceOf(ActorTaskActors);
  });
});
