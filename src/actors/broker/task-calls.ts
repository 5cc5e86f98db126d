import { type TaskMove, type TaskMover, checkTaskMove } from '../../machines/task-transitions.js';
import { A2A_MAX_SENDS_PER_RUN, A2A_MAX_TASK_HISTORY, A2A_MAX_TASKS_PER_CONTEXT } from '../../protocol/bounds.js';
import { type BrokerError, a2aError, boundError } from '../../protocol/broker-error.js';
import type { ArtifactSend, MethodParams, MethodResult } from '../../protocol/methods.js';
import type { Artifact, Message, MessageSend, TaskState, TaskStatus } from '../../protocol/task.js';
import { isTerminalState } from '../../protocol/task.js';
import type { TaskHead } from '../../persistence/a2a/store.js';
import { startAgentActor } from './agents.js';
import { type BrokerState, type Role, counterpart } from './broker-state.js';
import type { CallScope } from './commit-queue.js';
import { type EventRouter, statusEvent } from './event-routing.js';
import { resolveTo } from './addressing.js';
import type { Registration } from './registry.js';

/** Contexts whose task count the broker keeps in memory (`A2A_MAX_TASKS_PER_CONTEXT` checks). */
const TASK_COUNTS_KEPT = 4096;

/**
 * The calls that write a task: a message (a new task, or a follow-up), a
 * status, an artifact, a cancel, a resubscription and a push config. Each
 * counts its sends and tasks against the bounds, moves the task through its
 * actor and commits the events of its parties.
 */
export class TaskCalls {
  /** Tasks created per contextId, for the contexts seen lately (see `countTask`). */
  private readonly taskCounts = new Map<string, number>();

  constructor(
    private readonly state: BrokerState,
    private readonly events: EventRouter,
  ) {}

  send(p: MethodParams<'a2a.message.send'>, scope: CallScope): MethodResult<'a2a.message.send'> {
    const caller = this.state.caller(p.token);
    if (p.taskId === undefined) return this.createTask(caller, p, scope);
    return this.followUp(caller, p.taskId, p.message, scope, p.historyLength);
  }

  private createTask(
    caller: Registration,
    p: MethodParams<'a2a.message.send'>,
    scope: CallScope,
  ): MethodResult<'a2a.message.send'> {
    // A creation retried with the same messageId returns the task it created.
    if (p.message.messageId !== undefined) {
      const existing = this.state.store.createdTaskId(caller.party, p.message.messageId);
      const head = existing === undefined ? undefined : this.state.store.taskHead(existing);
      if (head !== undefined) return { task: this.state.answer(scope, head, p.historyLength) };
    }
    const worker = resolveTo(this.state.registry, caller, p.to ?? '');
    const contextId = caller.party.contextId;
    const tasksInContext = this.taskCounts.get(contextId) ?? this.state.store.countTasksInContext(contextId);
    if (tasksInContext >= A2A_MAX_TASKS_PER_CONTEXT) {
      throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASKS_PER_CONTEXT');
    }
    this.checkSendCap(caller);
    const taskId = this.state.ids.next();
    const at = this.state.now();
    const message = this.stamp(caller, 'requester', { taskId, contextId: caller.party.contextId }, p.message);
    const status: TaskStatus = { state: 'submitted', timestamp: at };
    const head: TaskHead = {
      taskId,
      contextId: caller.party.contextId,
      requesterName: caller.party.name,
      agentContextId: worker.party.contextId,
      agentName: worker.party.name,
      state: 'submitted',
      status,
      historyCount: 1,
      createdAt: at,
      updatedAt: at,
    };
    this.state.store.insertTask(head, message.messageId);
    this.countTask(scope, contextId, tasksInContext);
    this.state.store.appendMessage(message, 1, head.contextId);
    // Its snapshot is the machine's initial one: no row until its first move (see `BrokerState.moveTask`).
    scope.onUndo(this.state.tasks.create(taskId).undo);
    this.countSend(scope, caller);
    // Task creation addresses the worker; the event carries the first message.
    this.events.notify(scope, worker.party, head, statusEvent(head, false, message));
    // The new task is known whole: no need to read it back.
    return {
      task: {
        kind: 'task',
        id: taskId,
        contextId: head.contextId,
        agentName: head.agentName,
        agentContextId: head.agentContextId,
        requesterName: head.requesterName,
        status,
        history: p.historyLength === 0 ? [] : [message],
        artifacts: [],
        createdAt: at,
        updatedAt: at,
      },
    };
  }

  private followUp(
    caller: Registration,
    taskId: string,
    m: MessageSend,
    scope: CallScope,
    historyLength: number | undefined,
  ): MethodResult<'a2a.message.send'> {
    const { head, role } = this.state.partyTask(caller, taskId);
    // A retry is recognised before any other check.
    if (m.messageId !== undefined && this.state.store.hasMessage(taskId, m.messageId)) {
      return { task: this.state.answer(scope, head, historyLength) };
    }
    if (isTerminalState(head.state)) {
      throw a2aError('A2A_TASK_TERMINAL', `task is ${head.state}`, { from: head.state, to: head.state });
    }
    if (head.historyCount >= A2A_MAX_TASK_HISTORY) throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASK_HISTORY');
    this.checkSendCap(caller);
    const message = this.stamp(caller, role, head, m);
    this.state.store.appendMessage(message, head.historyCount + 1, head.contextId);
    this.countSend(scope, caller);
    let current: TaskHead = { ...head, historyCount: head.historyCount + 1, updatedAt: message.timestamp };
    if (role === 'requester' && (head.state === 'input-required' || head.state === 'auth-required')) {
      const status: TaskStatus = { state: 'working', message, timestamp: message.timestamp };
      current = this.state.moveTask(scope, current, { to: 'working', by: 'broker', via: 'follow-up' }, status);
    }
    this.state.store.writeHead(current);
    this.events.notify(scope, counterpart(current, role), current, statusEvent(current, false, message));
    return { task: this.state.answer(scope, current, historyLength) };
  }

  setStatus(p: MethodParams<'a2a.tasks.status'>, scope: CallScope): MethodResult<'a2a.tasks.status'> {
    const caller = this.state.caller(p.token);
    const { head, role } = this.state.partyTask(caller, p.id);
    if (p.message?.messageId !== undefined && this.state.store.hasMessage(head.taskId, p.message.messageId)) {
      return { task: this.state.answer(scope, head, p.historyLength) };
    }
    const check = checkTaskMove(head.state, { to: p.state, by: role as TaskMover, via: 'status' });
    if (!check.ok) throw moveRefusal(check);
    let current = head;
    let message: Message | undefined;
    if (p.message !== undefined) {
      if (head.historyCount >= A2A_MAX_TASK_HISTORY) throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASK_HISTORY');
      message = this.stamp(caller, role, head, p.message);
      this.state.store.appendMessage(message, head.historyCount + 1, head.contextId);
      current = { ...current, historyCount: current.historyCount + 1 };
    }
    const status: TaskStatus = { state: p.state, timestamp: message?.timestamp ?? this.state.now() };
    if (message !== undefined) status.message = message;
    current = this.state.moveTask(scope, current, { to: p.state, by: 'worker', via: 'status' }, status);
    this.state.store.writeHead(current);
    const final = isTerminalState(p.state);
    const requester = counterpart(current, role);
    this.events.notify(scope, requester, current, statusEvent(current, final));
    if (final) this.events.push(scope, requester, current, status);
    return { task: this.state.answer(scope, current, p.historyLength) };
  }

  addArtifact(p: MethodParams<'a2a.tasks.artifact'>, scope: CallScope): MethodResult<'a2a.tasks.artifact'> {
    const caller = this.state.caller(p.token);
    const { head, role } = this.state.partyTask(caller, p.id);
    if (isTerminalState(head.state)) {
      throw a2aError('A2A_TASK_TERMINAL', `task is ${head.state}`, { from: head.state, to: head.state });
    }
    if (role !== 'worker') {
      throw a2aError('A2A_INVALID_TRANSITION', 'only the worker adds artifacts', {
        from: head.state,
        to: head.state,
        reason: 'worker-only',
      });
    }
    const at = this.state.now();
    const chunk = artifactOf(p.artifact, p.artifact.artifactId ?? this.state.ids.next());
    const append = p.append ?? false;
    const existing = this.state.store.artifact(head.taskId, chunk.artifactId);
    const stored = append && existing !== undefined ? appended(existing, chunk) : chunk;
    this.state.store.putArtifact(head.taskId, stored, existing !== undefined, at);
    const current: TaskHead = { ...head, updatedAt: at };
    this.state.store.writeHead(current);
    this.events.notify(scope, counterpart(current, role), current, {
      kind: 'artifact-update',
      taskId: head.taskId,
      contextId: head.contextId,
      artifact: chunk,
      append,
      lastChunk: p.lastChunk ?? false,
    });
    return { task: this.state.answer(scope, current) };
  }

  cancel(p: MethodParams<'a2a.tasks.cancel'>, scope: CallScope): MethodResult<'a2a.tasks.cancel'> {
    const caller = this.state.caller(p.token);
    const { head, role } = this.state.partyTask(caller, p.id);
    const move: TaskMove = { to: 'canceled', by: role, via: 'cancel' };
    const check = checkTaskMove(head.state, move);
    if (!check.ok) throw moveRefusal(check);
    const status: TaskStatus = { state: 'canceled', timestamp: this.state.now() };
    const current = this.state.moveTask(scope, head, move, status);
    this.state.store.writeHead(current);
    const other = counterpart(current, role);
    this.events.notify(scope, other, current, statusEvent(current, true));
    this.events.push(scope, other, current, status);
    return { task: this.state.answer(scope, current) };
  }

  resubscribe(p: MethodParams<'a2a.tasks.resubscribe'>, scope: CallScope): MethodResult<'a2a.tasks.resubscribe'> {
    const caller = this.state.caller(p.token);
    const { head } = this.state.partyTask(caller, p.id);
    this.events.notify(scope, caller.party, head, statusEvent(head, isTerminalState(head.state)));
    return { task: this.state.answer(scope, head) };
  }

  setPushConfig(
    p: MethodParams<'a2a.tasks.pushNotificationConfig.set'>,
  ): MethodResult<'a2a.tasks.pushNotificationConfig.set'> {
    const caller = this.state.caller(p.token);
    const { head } = this.state.partyTask(caller, p.id);
    this.state.store.setPushConfig(head.taskId, p.config, caller.party, this.state.now());
    return { config: p.config };
  }

  private stamp(
    caller: Registration,
    role: Role,
    head: { taskId: string; contextId: string },
    m: MessageSend,
  ): Message {
    const message: Message = {
      kind: 'message',
      messageId: m.messageId ?? this.state.ids.next(),
      role: role === 'requester' ? 'user' : 'agent',
      from: caller.party.name,
      taskId: head.taskId,
      contextId: head.contextId,
      timestamp: this.state.now(),
      parts: m.parts,
    };
    if (m.metadata !== undefined) message.metadata = m.metadata;
    return message;
  }

  /** Counts an accepted new message against `A2A_MAX_SENDS_PER_RUN`. */
  private countSend(scope: CallScope, caller: Registration): void {
    const before = caller.actor.getSnapshot().context.sends;
    caller.actor.send({ type: 'SEND' });
    // The row is written once per transaction, with the count memory holds at its end.
    scope.beforeCommit(caller, () =>
      this.state.store.setAgentSends(caller.agentId, caller.actor.getSnapshot().context.sends),
    );
    scope.onUndo(() => {
      caller.actor.stop();
      caller.actor = startAgentActor({
        input: { agentId: caller.agentId, sends: before },
        inspect: this.state.inspect,
      });
    });
  }

  /**
   * Remembers the tasks of a context after a creation (only `createTask`
   * inserts them, and a prune that deletes some makes the broker forget every
   * count: `forgetTaskCounts`); a refused call puts the count back. At most
   * `TASK_COUNTS_KEPT` contexts are remembered: past it the map starts over.
   */
  private countTask(scope: CallScope, contextId: string, before: number): void {
    if (this.taskCounts.size >= TASK_COUNTS_KEPT && !this.taskCounts.has(contextId)) this.taskCounts.clear();
    this.taskCounts.set(contextId, before + 1);
    scope.onUndo(() => {
      this.taskCounts.set(contextId, before);
    });
  }

  /** Forgets the task counts remembered: a prune removed tasks, so a count is read again from the rows. */
  forgetTaskCounts(): void {
    this.taskCounts.clear();
  }

  private checkSendCap(caller: Registration): void {
    const { sends, sendCap } = caller.actor.getSnapshot().context;
    if (sends >= Math.min(sendCap, A2A_MAX_SENDS_PER_RUN)) throw boundError('A2A_SEND_CAP', 'A2A_MAX_SENDS_PER_RUN');
  }
}

function moveRefusal(check: { errorCode: string; from: TaskState; to: TaskState; reason: string }): BrokerError {
  if (check.errorCode === 'A2A_TASK_TERMINAL') {
    return a2aError('A2A_TASK_TERMINAL', `task is ${check.from}: it never moves again`, {
      from: check.from,
      to: check.to,
    });
  }
  const data: Record<string, unknown> = { from: check.from, to: check.to };
  if (check.reason === 'worker-only') data.reason = 'worker-only';
  const message =
    check.reason === 'worker-only'
      ? 'only the worker moves a task through tasks.status'
      : `${check.from} -> ${check.to} is not a legal move`;
  return a2aError('A2A_INVALID_TRANSITION', message, data);
}

function artifactOf(sent: ArtifactSend, artifactId: string): Artifact {
  const artifact: Artifact = { artifactId, parts: sent.parts };
  if (sent.name !== undefined) artifact.name = sent.name;
  if (sent.description !== undefined) artifact.description = sent.description;
  if (sent.metadata !== undefined) artifact.metadata = sent.metadata;
  return artifact;
}

/** `append: true` adds the chunk's parts to the stored artifact; its other fields win when given. */
function appended(existing: Artifact, chunk: Artifact): Artifact {
  const out: Artifact = { ...existing, parts: [...existing.parts, ...chunk.parts] };
  if (chunk.name !== undefined) out.name = chunk.name;
  if (chunk.description !== undefined) out.description = chunk.description;
  if (chunk.metadata !== undefined) out.metadata = chunk.metadata;
  return out;
}
