import { TASK_MACHINE_VERSION } from '../../machines/task-machine.js';
import type { TaskMove } from '../../machines/task-transitions.js';
import { MAX_LINE_BYTES } from '../../protocol/bounds.js';
import { a2aError, answerTooLarge } from '../../protocol/broker-error.js';
import type { Task, TaskStatus } from '../../protocol/task.js';
import type { A2AStore, Party, TaskHead } from '../../persistence/a2a/store.js';
import type { Clock } from '../../persistence/kernel/clock.js';
import type { IdSource } from '../../persistence/kernel/ids.js';
import type { Logger } from '../../log/logger.js';
import type { ActorInspector } from '../inspection.js';
import type { CallScope } from './commit-queue.js';
import type { Registration, Registry } from './registry.js';
import type { TaskActors } from './task-actors.js';
import type { TokenAuthority } from './tokens.js';

/** A party's role in a task. */
export type Role = 'requester' | 'worker';

/** The ISO time of a clock's current millisecond, made once per millisecond (a call stamps several rows within one). */
export class IsoClock {
  #lastMs = Number.NaN;
  #lastIso = '';
  constructor(private readonly clock: Clock) {}

  now(): string {
    const ms = this.clock.now();
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#lastIso = new Date(ms).toISOString();
    }
    return this.#lastIso;
  }
}

/**
 * What every broker call reads (the store, the live registrations and their
 * tokens, the task actors, the clock and ids) and the steps calls begin
 * with: who calls (`caller`), which task and in what role (`partyTask`),
 * the task as an answer carries it (`answer`), a task moved through its
 * actor (`moveTask`).
 */

export class BrokerState {
  constructor(
    readonly store: A2AStore,
    readonly registry: Registry,
    readonly tokens: TokenAuthority,
    readonly tasks: TaskActors,
    readonly ids: IdSource,
    readonly time: IsoClock,
    readonly logger: Logger,
    readonly inspect: ActorInspector | undefined,
  ) {}

  /** The ISO time of the clock's current millisecond. */
  now(): string {
    return this.time.now();
  }

  /** The live registration of a call's token, or `A2A_UNKNOWN_TOKEN`. */
  caller(token: string): Registration {
    const agentId = this.tokens.resolve(token);
    const registration = agentId === undefined ? undefined : this.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) throw a2aError('A2A_UNKNOWN_TOKEN', 'unknown or revoked token');
    return registration;
  }

  /** The task and the caller's role in it; a stranger is refused whatever its context. */
  partyTask(caller: Registration, taskId: string): { head: TaskHead; role: Role } {
    const head = this.store.taskHead(taskId);
    if (head === undefined) throw a2aError('A2A_UNKNOWN_TASK', 'no such task', { taskId });
    const role = roleOf(head, caller.party);
    if (role === undefined) throw a2aError('A2A_CROSS_CONTEXT_DENIED', 'not a party to this task', { taskId });
    return { head, role };
  }

  /**
   * The task as a call's answer carries it. One that would be longer than a
   * line may be is not loaded: the call's changes stand and its caller is
   * told to read the task with a smaller historyLength.
   */
  answer(scope: CallScope, head: TaskHead, historyLength?: number): Task {
    const task = this.store.taskWithin(head, historyLength, MAX_LINE_BYTES);
    if (typeof task !== 'number') return task;
    scope.answerWith(answerTooLarge(task));
    // Never seen by the caller (`answerWith` replaced the answer): the head alone.
    const { taskId, contextId, agentName, agentContextId, requesterName, status, createdAt, updatedAt } = head;
    return {
      kind: 'task',
      id: taskId,
      contextId,
      agentName,
      agentContextId,
      requesterName,
      status,
      history: [],
      artifacts: [],
      createdAt,
      updatedAt,
    };
  }

  /**
   * Moves a task through its actor and writes the actor's snapshot; returns
   * the new head, which the caller writes (`writeHead`) once it is complete.
   */
  moveTask(scope: CallScope, head: TaskHead, move: TaskMove, status: TaskStatus): TaskHead {
    const moved = this.tasks.move(head.taskId, head.state, move);
    scope.onUndo(moved.undo);
    if (moved.snapshot === null) this.store.deleteActorSnapshot(head.taskId);
    else this.store.putActorSnapshot(head.taskId, TASK_MACHINE_VERSION, moved.snapshot);
    return { ...head, state: status.state, status, updatedAt: status.timestamp };
  }
}

/** The party's role in the task: its requester, its worker, or neither. */
export function roleOf(head: TaskHead, party: Party): Role | undefined {
  if (head.contextId === party.contextId && head.requesterName === party.name) return 'requester';
  if (head.agentContextId === party.contextId && head.agentName === party.name) return 'worker';
  return undefined;
}

/** The other party of the task, seen from `role`. */
export function counterpart(head: TaskHead, role: Role): Party {
  return role === 'requester'
    ? { contextId: head.agentContextId, name: head.agentName }
    : { contextId: head.contextId, name: head.requesterName };
}
