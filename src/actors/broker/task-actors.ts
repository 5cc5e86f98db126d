import { type Actor, type SnapshotFrom, createActor } from 'xstate';
import { TASK_MACHINE_VERSION, type TaskMachine, taskMachine } from '../../machines/task-machine.js';
import type { TaskMove } from '../../machines/task-transitions.js';
import { type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';
import { type TaskState, isTerminalState } from '../../protocol/task.js';
import type { ActorInspector } from '../inspection.js';

type TaskActor = Actor<TaskMachine>;
type TaskSnapshot = SnapshotFrom<TaskMachine>;
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
  /** Puts the task back as it was before the move. */
  undo: () => void;
}

type TaskContext = TaskSnapshot['context'];

/**
 * A live task: its XState actor, or (restored on open, or put back by an
 * undo or a refusal, and not moved since) the state and context its actor
 * will start from.
 */
type PendingTask = { actor?: undefined; state: TaskState; context: TaskContext };
type LiveTask = { actor: TaskActor } | PendingTask;

/**
 * The live tasks of a broker: each non-terminal task is an actor of
 * `taskMachine` (its own root, given the inspector if there is one), keyed by
 * task id. A task restored on open keeps only its machine snapshot until its
 * first move, when its actor starts from it; a task that reaches a terminal
 * state is stopped and dropped (its history lives in SQLite only). A move the
 * machine refuses stops the actor that refused it and puts the task back as
 * it was (XState's pure `transition()` would decide it first, but it builds an
 * actor and a system per call: dearer than the move).
 */
export class TaskActors {
  private readonly live = new Map<string, LiveTask>();

  /** `inspect`: given to every task actor (each is its own root). */
  constructor(private readonly inspect?: ActorInspector) {}

  get size(): number {
    return this.live.size;
  }

  has(taskId: string): boolean {
    return this.live.has(taskId);
  }

  state(taskId: string): TaskState | undefined {
    const task = this.live.get(taskId);
    if (task === undefined) return undefined;
    return task.actor === undefined ? task.state : (task.actor.getSnapshot().value as TaskState);
  }

  /** Whether the task has a running actor (false for one restored and not moved since). */
  started(taskId: string): boolean {
    return this.live.get(taskId)?.actor !== undefined;
  }

  /** Starts the actor of a new task (in `submitted`). */
  create(taskId: string): { snapshot: PersistedTaskSnapshot; undo: () => void } {
    const actor = this.start(taskId, undefined);
    this.live.set(taskId, { actor });
    return {
      snapshot: actor.getPersistedSnapshot() as PersistedTaskSnapshot,
      undo: () => {
        actor.stop();
        this.live.delete(taskId);
      },
    };
  }

  /**
   * Restores a task from its persisted snapshot; its actor starts on first
   * use. A snapshot from another machine version, or one that disagrees with
   * the task row, is rebuilt from the row's state (the row is the record of truth).
   */
  restore(taskId: string, state: TaskState, machineVersion: number, snapshot: string | null): 'restored' | 'rebuilt' {
    if (isTerminalState(state)) return 'rebuilt';
    if (snapshot !== null && machineVersion === TASK_MACHINE_VERSION) {
      const parsed = parseSnapshot(snapshot);
      // Only a snapshot of the machine's shape is given to XState: one without
      // a context makes an actor report an uncaught error besides throwing.
      if (parsed !== undefined && isRestorable(parsed, state)) {
        this.live.set(taskId, { state, context: parsed.context });
        return 'restored';
      }
    }
    this.live.set(taskId, { state, context: freshContext(taskId) });
    return 'rebuilt';
  }

  /** The persisted snapshot of a live task (to write after a rebuild). */
  persisted(taskId: string): PersistedTaskSnapshot | undefined {
    const task = this.live.get(taskId);
    if (task === undefined) return undefined;
    return (
      task.actor === undefined
        ? taskMachine.getPersistedSnapshot(resolved(task.state, task.context))
        : task.actor.getPersistedSnapshot()
    ) as PersistedTaskSnapshot;
  }

  /**
   * Sends an already-checked move to the task's actor (started first if the
   * task has none yet; a task not live at all, never expected, is rebuilt
   * from `from`). Throws `TaskActorError`, changing nothing, if the machine
   * refuses the move.
   */
  move(taskId: string, from: TaskState, move: TaskMove): MoveResult {
    const had = this.live.get(taskId);
    let actor = had?.actor;
    // Snapshots are immutable: the one before the move is what an undo or a refusal puts back.
    const before: PendingTask =
      had === undefined
        ? { state: from, context: freshContext(taskId) }
        : had.actor === undefined
          ? had
          : { state: had.actor.getSnapshot().value as TaskState, context: had.actor.getSnapshot().context };
    if (actor === undefined) actor = this.start(taskId, resolved(before.state, before.context));
    actor.send({ type: 'MOVE', to: move.to, by: move.by, via: move.via });
    const after = actor.getSnapshot();
    const undo = () => {
      this.live.get(taskId)?.actor?.stop();
      if (had === undefined) this.live.delete(taskId);
      else this.live.set(taskId, before);
    };
    if (after.context.refusal !== null || after.value !== move.to) {
      actor.stop();
      if (had === undefined) this.live.delete(taskId);
      else this.live.set(taskId, before);
      throw new TaskActorError(taskId, from, move.to);
    }
    if (after.status === 'done') {
      actor.stop();
      this.live.delete(taskId);
      return { snapshot: null, undo };
    }
    if (had?.actor === undefined) this.live.set(taskId, { actor });
    return { snapshot: actor.getPersistedSnapshot() as PersistedTaskSnapshot, undo };
  }

  stopAll(): void {
    for (const task of this.live.values()) task.actor?.stop();
    this.live.clear();
  }

  private start(taskId: string, snapshot: TaskSnapshot | undefined): TaskActor {
    return createActor(taskMachine, {
      input: { taskId },
      ...(snapshot === undefined ? {} : { snapshot }),
      ...(this.inspect === undefined ? {} : { inspect: this.inspect }),
    }).start();
  }
}

function freshContext(taskId: string): TaskContext {
  return { taskId, moves: 0, lastMove: null, refusal: null };
}

/** The machine snapshot of a task in `state` with `context` (a rebuilt one has a fresh context: the row is the record of truth). */
function resolved(state: TaskState, context: TaskContext): TaskSnapshot {
  return taskMachine.resolveState({ value: state, context });
}

type ParsedSnapshot = { value?: unknown; status?: unknown; context?: unknown };

/** A persisted snapshot of the task machine, active in `state` (the task row's state). */
function isRestorable(parsed: ParsedSnapshot, state: TaskState): parsed is ParsedSnapshot & { context: TaskContext } {
  return parsed.value === state && parsed.status === 'active' && isTaskContext(parsed.context);
}

function isTaskContext(value: unknown): value is TaskContext {
  if (value === null || typeof value !== 'object') return false;
  const c = value as Partial<TaskContext>;
  return (
    typeof c.taskId === 'string' && typeof c.moves === 'number' && c.lastMove !== undefined && c.refusal !== undefined
  );
}

function parseSnapshot(text: string): ParsedSnapshot | undefined {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed !== null && typeof parsed === 'object' ? (parsed as ParsedSnapshot) : undefined;
  } catch {
    return undefined;
  }
}
