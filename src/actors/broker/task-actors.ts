import { type Actor, type SnapshotFrom, createActor } from 'xstate';
import type { ActorInspector } from '../inspection.js';
import {
  TASK_MACHINE_VERSION,
  type TaskMachine,
  type TaskMachineContext,
  taskMachine,
} from '../../machines/task-machine.js';
import { type TaskMove, findTransition } from '../../machines/task-transitions.js';
import { type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';
import { type TaskState, isTerminalState } from '../../protocol/task.js';

type TaskActor = Actor<TaskMachine>;
type PersistedTaskSnapshot = ReturnType<TaskActor['getPersistedSnapshot']>;

/** A task actor refused a move the broker had already checked: a defect, never a user error. */
export class TaskActorError extends SwitchboardError {
  declare readonly code: ErrorCodeOf<'TaskActorError'>;
  constructor(
    readonly taskId: string,
    readonly from: string,
    readonly to: string,
  ) {
    super('TASK_ACTOR_REFUSED', `task actor ${taskId} refused ${from} -> ${to}`, { details: { taskId, from, to } });
  }
}

export interface MoveResult {
  /** The persisted snapshot after the move, or null when the task became terminal (actor stopped). */
  snapshot: PersistedTaskSnapshot | null;
  /** Puts the actor back as it was before the move. */
  undo: () => void;
}

/** The live tasks of a broker and the moves they accept. */
export interface TaskActors {
  readonly size: number;
  has(taskId: string): boolean;
  state(taskId: string): TaskState | undefined;
  /** Starts the task of a new task (in `submitted`). */
  create(taskId: string): { snapshot: PersistedTaskSnapshot; undo: () => void };
  /**
   * Restores a task from its persisted snapshot. A snapshot from another
   * machine version, or one that disagrees with the task row, is rebuilt from
   * the row's state (the row is the record of truth).
   */
  restore(taskId: string, state: TaskState, machineVersion: number, snapshot: string | null): 'restored' | 'rebuilt';
  /** The persisted snapshot of a live task (to write after a rebuild). */
  persisted(taskId: string): PersistedTaskSnapshot | undefined;
  /** Applies an already-checked move; throws `TaskActorError` if the machine refuses it. */
  move(taskId: string, from: TaskState, move: TaskMove): MoveResult;
  stopAll(): void;
}

/**
 * The task actors a broker runs: one XState actor per live task when an
 * inspector is given (it sees every task actor), else `TableTaskActors`, the
 * same machine applied as data (the persisted snapshots, the accepted moves
 * and the refusals are the same; test/broker/task-actors.test.ts drives both
 * through the same moves and compares them step by step).
 */
export function createTaskActors(inspect?: ActorInspector): TaskActors {
  return inspect === undefined ? new TableTaskActors() : new ActorTaskActors(inspect);
}

type TaskContext = TaskMachineContext;

/**
 * The task machine without an actor per task: each live task is its
 * persisted snapshot's context and state, moved by the rows of
 * `TASK_TRANSITIONS` (the rows the machine is built from), exactly as the
 * machine's `accept` action moves them. Nothing is created per move but the
 * new context: no actor, no inspection events (nobody is inspecting).
 */
export class TableTaskActors implements TaskActors {
  private readonly live = new Map<string, { state: TaskState; context: TaskContext }>();

  get size(): number {
    return this.live.size;
  }

  has(taskId: string): boolean {
    return this.live.has(taskId);
  }

  state(taskId: string): TaskState | undefined {
    return this.live.get(taskId)?.state;
  }

  create(taskId: string): { snapshot: PersistedTaskSnapshot; undo: () => void } {
    const entry = { state: 'submitted' as TaskState, context: initialContext(taskId) };
    this.live.set(taskId, entry);
    return {
      snapshot: persistedOf(entry.state, entry.context),
      undo: () => {
        this.live.delete(taskId);
      },
    };
  }

  restore(taskId: string, state: TaskState, machineVersion: number, snapshot: string | null): 'restored' | 'rebuilt' {
    if (isTerminalState(state)) return 'rebuilt';
    if (snapshot !== null && machineVersion === TASK_MACHINE_VERSION) {
      const parsed = parseSnapshot(snapshot);
      if (parsed !== undefined && isRestorable(parsed, state)) {
        this.live.set(taskId, { state, context: (parsed as unknown as { context: TaskContext }).context });
        return 'restored';
      }
    }
    this.live.set(taskId, { state, context: initialContext(taskId) });
    return 'rebuilt';
  }

  persisted(taskId: string): PersistedTaskSnapshot | undefined {
    const entry = this.live.get(taskId);
    return entry === undefined ? undefined : persistedOf(entry.state, entry.context);
  }

  move(taskId: string, from: TaskState, move: TaskMove): MoveResult {
    let entry = this.live.get(taskId);
    const had = entry;
    if (entry === undefined) {
      entry = { state: from, context: initialContext(taskId) };
      this.live.set(taskId, entry);
    }
    const undo = () => {
      if (had === undefined) this.live.delete(taskId);
      else this.live.set(taskId, had);
    };
    const row = isTerminalState(entry.state) ? undefined : findTransition(entry.state, move);
    if (row === undefined) {
      undo();
      throw new TaskActorError(taskId, from, move.to);
    }
    // The machine's `accept` action: an assign over the context, keys in place.
    const context: TaskContext = {
      ...entry.context,
      moves: entry.context.moves + 1,
      lastMove: { from: entry.state, to: move.to, by: move.by, via: move.via },
      refusal: null,
    };
    if (isTerminalState(move.to)) {
      this.live.delete(taskId);
      return { snapshot: null, undo };
    }
    const next = { state: move.to, context };
    this.live.set(taskId, next);
    return { snapshot: persistedOf(next.state, context), undo };
  }

  stopAll(): void {
    this.live.clear();
  }
}

function initialContext(taskId: string): TaskContext {
  return { taskId, moves: 0, lastMove: null, refusal: null };
}

/** The persisted snapshot XState gives for the task machine in `state` (same keys, same order). */
function persistedOf(state: TaskState, context: TaskContext): PersistedTaskSnapshot {
  return {
    status: 'active',
    value: state,
    historyValue: {},
    context,
    children: {},
  } as unknown as PersistedTaskSnapshot;
}

/** A persisted snapshot of the task machine, active in `state` (the task row's state). */
function isRestorable(parsed: PersistedTaskSnapshot, state: TaskState): boolean {
  const { value, status, context } = parsed as unknown as { value?: unknown; status?: unknown; context?: unknown };
  return value === state && status === 'active' && isTaskContext(context);
}

function isTaskContext(value: unknown): value is TaskContext {
  if (value === null || typeof value !== 'object') return false;
  const c = value as Partial<TaskContext>;
  return (
    typeof c.taskId === 'string' && typeof c.moves === 'number' && c.lastMove !== undefined && c.refusal !== undefined
  );
}

/**
 * The live task actors of an inspected broker: one independent root actor per non-terminal task
 * (`createActor(taskMachine)`), keyed by task id. A task that reaches a
 * terminal state is stopped and dropped: its history lives in SQLite only.
 * Nothing else is kept per task, so memory holds the live work.
 */
export class ActorTaskActors implements TaskActors {
  private readonly live = new Map<string, TaskActor>();

  /** `inspect`: given to every task actor (each is its own root). */
  constructor(private readonly inspect?: ActorInspector) {}

  get size(): number {
    return this.live.size;
  }

  has(taskId: string): boolean {
    return this.live.has(taskId);
  }

  state(taskId: string): TaskState | undefined {
    const actor = this.live.get(taskId);
    return actor === undefined ? undefined : (actor.getSnapshot().value as TaskState);
  }

  /** Starts the actor of a new task (in `submitted`). */
  create(taskId: string): { snapshot: PersistedTaskSnapshot; undo: () => void } {
    const actor = createActor(taskMachine, { input: { taskId }, inspect: this.inspect }).start();
    this.live.set(taskId, actor);
    return {
      snapshot: actor.getPersistedSnapshot() as PersistedTaskSnapshot,
      undo: () => {
        actor.stop();
        this.live.delete(taskId);
      },
    };
  }

  /**
   * Restores a task actor from its persisted snapshot. A snapshot from another
   * machine version, or one that disagrees with the task row, is rebuilt from
   * the row's state (the row is the record of truth).
   */
  restore(taskId: string, state: TaskState, machineVersion: number, snapshot: string | null): 'restored' | 'rebuilt' {
    if (isTerminalState(state)) return 'rebuilt';
    if (snapshot !== null && machineVersion === TASK_MACHINE_VERSION) {
      const parsed = parseSnapshot(snapshot);
      // Only a snapshot of the machine's shape is given to XState: one without
      // a context makes it report an uncaught error besides throwing.
      if (parsed !== undefined && isRestorable(parsed, state)) {
        try {
          const actor = createActor(taskMachine, {
            snapshot: parsed,
            input: { taskId },
            inspect: this.inspect,
          }).start();
          this.live.set(taskId, actor);
          return 'restored';
        } catch {
          // An unreadable snapshot is rebuilt from the row below.
        }
      }
    }
    this.live.set(taskId, this.rebuilt(taskId, state));
    return 'rebuilt';
  }

  /** The persisted snapshot of a live task (to write after a rebuild). */
  persisted(taskId: string): PersistedTaskSnapshot | undefined {
    return this.live.get(taskId)?.getPersistedSnapshot() as PersistedTaskSnapshot | undefined;
  }

  /**
   * Sends an already-checked move to the task's actor. A task without a live
   * actor (never expected) gets one rebuilt from `from` first.
   */
  move(taskId: string, from: TaskState, move: TaskMove): MoveResult {
    let actor = this.live.get(taskId);
    const hadActor = actor !== undefined;
    if (actor === undefined) {
      actor = this.rebuilt(taskId, from);
      this.live.set(taskId, actor);
    }
    // Snapshots are immutable: the one before the move is kept as is and only
    // turned into a persisted snapshot if the move has to be undone.
    const before = actor.getSnapshot();
    actor.send({ type: 'MOVE', ...move });
    const after: SnapshotFrom<TaskMachine> = actor.getSnapshot();
    const undo = () => {
      this.live.get(taskId)?.stop();
      if (hadActor) {
        this.live.set(
          taskId,
          createActor(taskMachine, {
            snapshot: taskMachine.getPersistedSnapshot(before) as PersistedTaskSnapshot,
            input: { taskId },
            inspect: this.inspect,
          }).start(),
        );
      } else {
        this.live.delete(taskId);
      }
    };
    if (after.context.refusal !== null || after.value !== move.to) {
      undo();
      throw new TaskActorError(taskId, from, move.to);
    }
    if (after.status === 'done') {
      actor.stop();
      this.live.delete(taskId);
      return { snapshot: null, undo };
    }
    return { snapshot: actor.getPersistedSnapshot() as PersistedTaskSnapshot, undo };
  }

  stopAll(): void {
    for (const actor of this.live.values()) actor.stop();
    this.live.clear();
  }

  private rebuilt(taskId: string, state: TaskState): TaskActor {
    const snapshot = taskMachine.resolveState({
      value: state,
      context: { taskId, moves: 0, lastMove: null, refusal: null },
    });
    return createActor(taskMachine, { snapshot, input: { taskId }, inspect: this.inspect }).start();
  }
}

function parseSnapshot(text: string): PersistedTaskSnapshot | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' ? (parsed as PersistedTaskSnapshot) : undefined;
  } catch {
    return undefined;
  }
}
