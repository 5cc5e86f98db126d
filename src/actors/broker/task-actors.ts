import { type Actor, type ActorScope, type EventFromLogic, type SnapshotFrom, createActor } from 'xstate';
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
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
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
 * A live task: its XState actor (inspected brokers), its machine snapshot
 * (created or moved here, stepped through the machine's pure transition), or
 * (restored on open, or put back by an undo or a refusal, and not moved
 * since) the state and context its next move starts from.
 */
type PendingTask = { actor?: undefined; snapshot?: undefined; state: TaskState; context: TaskContext };
type SteppedTask = { actor?: undefined; snapshot: TaskSnapshot };
type LiveTask = { actor: TaskActor } | SteppedTask | PendingTask;

/**
 * The scope the task machine's pure transitions run in: one for all of them.
 * The machine has guards and `assign` only (no children, no delays, no
 * custom actions, no emitted events), so a transition reads the scope's
 * `self` and inspects through its system (an actor never started: nobody
 * listens) and calls nothing else of it. XState's `transition()` builds such
 * a scope (an actor and a system) on every call, the dearer part of a move.
 */
function inertTaskScope(): ActorScope<TaskSnapshot, EventFromLogic<TaskMachine>> {
  const self = createActor(taskMachine, { input: { taskId: '' } });
  return {
    self,
    id: '',
    sessionId: '',
    system: self.system,
    logger: () => {},
    defer: () => {},
    emit: () => {},
    stopChild: () => {},
    actionExecutor: () => {},
  };
}

/**
 * The live tasks of a broker, keyed by task id, each driven by `taskMachine`.
 * Inspected (`inspect` given), each non-terminal task is an actor of the
 * machine (its own root, given the inspector), so that the inspector sees it
 * start, take its moves and stop. Otherwise each move is the machine's pure
 * transition from the task's snapshot, in one shared scope: the same
 * machine, the same snapshots, without an actor's start and stop per task.
 * A task restored on open, and (uninspected) a new one, keeps only its
 * state and context until its first move; a task that reaches a terminal
 * state is dropped (its history lives in SQLite only). A move the machine
 * refuses puts the task back as it was (an actor that refused it is stopped).
 */
export class TaskActors {
  private readonly live = new Map<string, LiveTask>();
  private readonly scope: ActorScope<TaskSnapshot, EventFromLogic<TaskMachine>> | undefined;

  /** The machine's initial snapshot (for a task id of ''): a new or rebuilt task's state and context. */
  private readonly initial: TaskSnapshot;

  /** `inspect`: given to every task actor (each is its own root); without it, tasks step by pure transitions. */
  constructor(private readonly inspect?: ActorInspector) {
    const scope = inertTaskScope();
    this.initial = taskMachine.getInitialSnapshot(scope, { taskId: '' });
    this.scope = inspect === undefined ? scope : undefined;
  }

  /** The machine's initial context for a task: its only input is the task's id. */
  private freshContext(taskId: string): TaskContext {
    return { ...this.initial.context, taskId };
  }

  get size(): number {
    return this.live.size;
  }

  has(taskId: string): boolean {
    return this.live.has(taskId);
  }

  state(taskId: string): TaskState | undefined {
    const task = this.live.get(taskId);
    if (task === undefined) return undefined;
    return snapshotOf(task)?.value ?? (task as PendingTask).state;
  }

  /**
   * Whether the task was created or moved here since it was restored or put
   * back (an inspected broker's task then has a running actor); false for
   * one restored, refused or undone and not moved since.
   */
  started(taskId: string): boolean {
    const task = this.live.get(taskId);
    return task !== undefined && (task.actor !== undefined || task.snapshot !== undefined);
  }

  /**
   * A new task, in the machine's initial state: inspected, its actor
   * started; else its initial state and context (the machine's initial
   * snapshot for the task's id), stepped from on its first move. Its
   * snapshot is not written until then: the machine's initial one is what
   * a task restored in that state gets.
   */
  create(taskId: string): { undo: () => void } {
    if (this.scope !== undefined) {
      this.live.set(taskId, { state: this.initial.value, context: this.freshContext(taskId) });
      return {
        undo: () => {
          this.live.delete(taskId);
        },
      };
    }
    const actor = this.start(taskId, undefined);
    this.live.set(taskId, { actor });
    return {
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
    this.live.set(taskId, { state, context: this.freshContext(taskId) });
    return 'rebuilt';
  }

  /** The persisted snapshot of a live task (to write after a rebuild). */
  persisted(taskId: string): PersistedTaskSnapshot | undefined {
    const task = this.live.get(taskId);
    if (task === undefined) return undefined;
    return taskMachine.getPersistedSnapshot(
      snapshotOf(task) ?? resolved((task as PendingTask).state, (task as PendingTask).context),
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
    // Snapshots are immutable: the one before the move is what an undo or a refusal puts back.
    const current = had === undefined ? undefined : snapshotOf(had);
    const before: PendingTask =
      had === undefined
        ? { state: from, context: this.freshContext(taskId) }
        : current === undefined
          ? (had as PendingTask)
          : { state: current.value, context: current.context };
    const putBack = () => {
      if (had === undefined) this.live.delete(taskId);
      else this.live.set(taskId, before);
    };
    const event = { type: 'MOVE' as const, to: move.to, by: move.by, via: move.via };
    let actor: TaskActor | undefined;
    let after: TaskSnapshot;
    if (this.scope !== undefined) {
      after = taskMachine.transition(current ?? resolved(before.state, before.context), event, this.scope);
    } else {
      actor = had?.actor ?? this.start(taskId, resolved(before.state, before.context));
      actor.send(event);
      after = actor.getSnapshot();
    }
    const undo = () => {
      this.live.get(taskId)?.actor?.stop();
      putBack();
    };
    if (after.context.refusal !== null || after.value !== move.to) {
      actor?.stop();
      putBack();
      throw new TaskActorError(taskId, from, move.to);
    }
    if (after.status === 'done') {
      actor?.stop();
      this.live.delete(taskId);
      return { snapshot: null, undo };
    }
    if (actor === undefined) this.live.set(taskId, { snapshot: after });
    else if (had?.actor === undefined) this.live.set(taskId, { actor });
    return { snapshot: taskMachine.getPersistedSnapshot(after) as PersistedTaskSnapshot, undo };
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

/** The machine snapshot of a task that has one (its actor's, or the one its last move stepped to). */
function snapshotOf(task: LiveTask): TaskSnapshot | undefined {
  if (task.actor !== undefined) return task.actor.getSnapshot();
  return task.snapshot;
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
