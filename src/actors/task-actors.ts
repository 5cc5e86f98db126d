import { type Actor, type SnapshotFrom, createActor } from 'xstate';
import type { ActorInspector } from './inspection.js';
import { TASK_MACHINE_VERSION, type TaskMachine, taskMachine } from '../machines/task-machine.js';
import type { TaskMove } from '../machines/task-transitions.js';
import { type TaskState, isTerminalState } from '../protocol/task.js';

type TaskActor = Actor<TaskMachine>;
type PersistedTaskSnapshot = ReturnType<TaskActor['getPersistedSnapshot']>;

/** A task actor refused a move the broker had already checked: a defect, never a user error. */
export class TaskActorError extends Error {
  readonly code = 'TASK_ACTOR_REFUSED' as const;
  constructor(
    readonly taskId: string,
    readonly from: string,
    readonly to: string,
  ) {
    super(`task actor ${taskId} refused ${from} -> ${to}`);
    this.name = 'TaskActorError';
  }
}

export interface MoveResult {
  /** The persisted snapshot after the move, or null when the task became terminal (actor stopped). */
  snapshot: PersistedTaskSnapshot | null;
  /** Puts the actor back as it was before the move. */
  undo: () => void;
}

/**
 * The live task actors: one independent root actor per non-terminal task
 * (`createActor(taskMachine)`), keyed by task id. A task that reaches a
 * terminal state is stopped and dropped: its history lives in SQLite only.
 * Nothing else is kept per task, so memory holds the live work.
 */
export class TaskActors {
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
      if (parsed !== undefined && (parsed as { value?: unknown }).value === state) {
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
