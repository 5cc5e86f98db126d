import { ATTR, OFF_SPAN, SPAN, SpanKind, activeContext, endSpanWithError, startSpan } from '../../telemetry/tracing.js';
import type { Observable } from 'rxjs';
import { throwError } from 'rxjs';
import { type Logger, silentLogger } from '../../log/logger.js';
import { TASK_MACHINE_VERSION } from '../../machines/task-machine.js';
import { type TaskMove, type TaskMover, checkTaskMove } from '../../machines/task-transitions.js';
import { type AgentCard, foldAgentName } from '../../protocol/agent.js';
import {
  A2A_MAX_SENDS_PER_RUN,
  A2A_MAX_TASK_HISTORY,
  A2A_MAX_TASKS_PER_CONTEXT,
  DEFAULT_EVENTS_LIMIT,
  MAX_LINE_BYTES,
} from '../../protocol/bounds.js';
import {
  BrokerError,
  a2aError,
  answerTooLarge,
  boundError,
  invalidParams,
  methodNotFound,
} from '../../protocol/broker-error.js';
import type { DurableEvent, PushNotification, TaskEvent } from '../../protocol/events.js';
import { answerHandshake } from '../../protocol/handshake.js';
import {
  type ArtifactSend,
  METHODS,
  type MethodName,
  type MethodParams,
  type MethodResult,
  isMethodName,
} from '../../protocol/methods.js';
import { parseParams } from '../../protocol/parse.js';
import type { Artifact, Message, MessageSend, Task, TaskState, TaskStatus } from '../../protocol/task.js';
import { isTerminalState } from '../../protocol/task.js';
import { A2A_MIGRATION_SET } from '../../persistence/a2a/schema.js';
import { type BrokerOwner, type OwnershipClaim, claimOwnership } from '../../persistence/a2a/owner.js';
import { A2AStore, type Party, type TaskHead, agentCard } from '../../persistence/a2a/store.js';
import { type Clock, systemClock } from '../../persistence/kernel/clock.js';
import {
  DEFAULT_DURABILITY,
  type Durability,
  type SqliteDatabase,
  isInMemoryPath,
  openDatabase,
} from '../../persistence/kernel/database.js';
import { type IdSource, createUuidV7Source } from '../../persistence/kernel/ids.js';
import { migrate } from '../../persistence/kernel/migrations.js';
import { WalCheckpointer } from '../../persistence/a2a/wal-checkpointer.js';
import { VERSION } from '../../version.js';
import { AgentOutbox } from './agent-outbox.js';
import { startAgentActor } from './agents.js';
import type { BrokerApi, BrokerMethod } from './api.js';
import { type CallScope, CommitQueue } from './commit-queue.js';
import { TokenAuthority } from './tokens.js';
import { type ActorInspector, inspectStore } from '../inspection.js';
import { type Registration, type Registry, createRegistry, foldedPartyKey, partyKey } from './registry.js';
import { TaskActors } from './task-actors.js';

/** Options of `createBroker`: the SQLite file, its durability, and the clock, ids and logger it uses. */
export interface BrokerOptions {
  /** The SQLite file (created if missing). */
  path: string;
  /** `normal` (default: survives a killed process) or `full` (survives power loss). */
  durability?: Durability;
  clock?: Clock;
  ids?: IdSource;
  logger?: Logger;
  /**
   * An inspector (`--inspect`) given to every root actor the broker creates:
   * its registry (shown as `broker`), each agent actor and each task actor.
   * Absent (the default), nothing is inspected.
   */
  inspect?: ActorInspector;
  /**
   * The local socket this broker listens on (`serve --listen`), recorded
   * with its ownership of the file so that a broker refused the file can
   * name where to reach the owner.
   */
  socket?: string;
}

/** What `createBroker` found and did when it opened the database. */
export interface BrokerOpenReport {
  schema: { from: number; to: number };
  /** Live task actors restored from their snapshots. */
  restoredTasks: number;
  /** Live task actors rebuilt from their task row (snapshot missing or from another machine version). */
  rebuiltTasks: number;
  /** Registrations left open by the previous run, now ended (their tokens died with it). */
  endedRegistrations: number;
  /** The owner whose process was gone (killed, crashed) when this broker took the file over. */
  tookOverFrom?: BrokerOwner;
}

/** The embedded broker: `BrokerApi` plus what an embedding runtime inspects. */
export interface Broker extends BrokerApi {
  readonly path: string;
  readonly durability: Durability;
  readonly opened: BrokerOpenReport;
  /** Non-terminal tasks (each an actor of the task machine; one restored on open starts it on first move). */
  liveTaskCount(): number;
  /** Live registrations. */
  liveAgentCount(): number;
  /** Whether `close()` was called. */
  readonly closed: boolean;
  /** Group-commit figures: transactions committed and calls they carried. */
  stats(): { commits: number; calls: number; failedCommits: number };
}

type Role = 'requester' | 'worker';

/** Methods that write nothing: answered without the commit queue when it is quiet. */
const READS: ReadonlySet<BrokerMethod> = new Set<BrokerMethod>([
  'a2a.agents.list',
  'a2a.tasks.get',
  'a2a.tasks.list',
  'a2a.tasks.pushNotificationConfig.get',
  'a2a.events.since',
]);

/** Contexts whose task count the broker keeps in memory (`A2A_MAX_TASKS_PER_CONTEXT` checks). */
const TASK_COUNTS_KEPT = 4096;

/** The error of a call made after `close()`. */
export function brokerClosedError(): BrokerError {
  return new BrokerError('INTERNAL_ERROR', 'the broker is closed');
}

/**
 * Opens (creating or migrating) the broker's database, takes ownership of it,
 * restores every live task actor from its snapshot, and returns the broker.
 * A file owned by another live broker is refused with `BrokerOwnershipError`
 * (`BROKER_FILE_OWNED`, naming its pid, host and socket); one whose owner
 * died is taken over at once. Registrations of a previous run are over:
 * their agents register again under the same `(contextId, name)` and regain
 * their tasks with a new token.
 */
export function createBroker(options: BrokerOptions): Broker {
  const durability = options.durability ?? DEFAULT_DURABILITY;
  const db = openDatabase(options.path, { durability });
  try {
    return new EmbeddedBroker(db, options.path, durability, options);
  } catch (error) {
    db.close();
    throw error;
  }
}

class EmbeddedBroker implements Broker {
  readonly opened: BrokerOpenReport;
  private readonly clock: Clock;
  private readonly ids: IdSource;
  private readonly logger: Logger;
  private readonly store: A2AStore;
  private readonly queue: CommitQueue;
  /** None for a database in memory: it has no WAL to checkpoint. */
  private readonly checkpointer: WalCheckpointer | undefined;
  private readonly tokens = new TokenAuthority();
  /** None for a database in memory: nobody else can open it. */
  private readonly ownership: OwnershipClaim | undefined;
  private readonly registry: Registry = createRegistry();
  private readonly tasks: TaskActors;
  private readonly inspect: ActorInspector | undefined;
  private isClosed = false;
  private closing: Promise<void> | null = null;
  /** Tasks created per contextId, for the contexts seen lately (see `countTask`). */
  private readonly taskCounts = new Map<string, number>();

  constructor(
    private readonly db: SqliteDatabase,
    readonly path: string,
    readonly durability: Durability,
    options: BrokerOptions,
  ) {
    this.clock = options.clock ?? systemClock;
    this.ids = options.ids ?? createUuidV7Source(() => this.clock.now());
    this.logger = options.logger ?? silentLogger();
    this.inspect = options.inspect;
    this.tasks = new TaskActors(options.inspect);
    if (options.inspect !== undefined) inspectStore(this.registry, 'broker', options.inspect);
    const schema = migrate(db, A2A_MIGRATION_SET);
    // Before anything is written: a refused broker leaves the file as it was.
    this.ownership = isInMemoryPath(path)
      ? undefined
      : claimOwnership(db, path, { socket: options.socket ?? null, now: () => this.now() });
    this.store = new A2AStore(db);
    this.checkpointer = isInMemoryPath(path)
      ? undefined
      : new WalCheckpointer(db, {
          path,
          synchronous: durability === 'full' ? 'FULL' : 'NORMAL',
          onFailure: (message) =>
            this.logger.warn(
              { err: { message } },
              'a2a checkpoint thread failed: SQLite checkpoints inside commits again',
            ),
        });
    const checkpointer = this.checkpointer;
    this.queue = new CommitQueue(
      db,
      this.logger,
      checkpointer === undefined ? undefined : () => checkpointer.committed(),
    );
    try {
      const tookOver = this.ownership?.tookOverFrom;
      this.opened = { schema, ...this.restore(), ...(tookOver === undefined ? {} : { tookOverFrom: tookOver }) };
    } catch (error) {
      this.ownership?.release();
      throw error;
    }
    if (this.opened.tookOverFrom !== undefined) {
      this.logger.warn({ previous: this.opened.tookOverFrom }, 'took the file over from a broker that is gone');
    }
    this.logger.info({ path, durability, ...this.opened, liveTasks: this.tasks.size }, 'a2a broker open');
  }

  get closed(): boolean {
    return this.isClosed;
  }

  liveTaskCount(): number {
    return this.tasks.size;
  }

  stats(): { commits: number; calls: number; failedCommits: number } {
    return this.queue.stats();
  }

  liveAgentCount(): number {
    return this.registry.getSnapshot().context.byId.size;
  }

  // ---- the public methods: each parses its params, then queues its call ----

  register(params: MethodParams<'a2a.agents.register'>) {
    return this.invoke('a2a.agents.register', params);
  }
  deregister(params: MethodParams<'a2a.agents.deregister'>) {
    return this.invoke('a2a.agents.deregister', params);
  }
  listAgents(params: MethodParams<'a2a.agents.list'>) {
    return this.invoke('a2a.agents.list', params);
  }
  send(params: MethodParams<'a2a.message.send'>) {
    return this.invoke('a2a.message.send', params);
  }
  getTask(params: MethodParams<'a2a.tasks.get'>) {
    return this.invoke('a2a.tasks.get', params);
  }
  listTasks(params: MethodParams<'a2a.tasks.list'>) {
    return this.invoke('a2a.tasks.list', params);
  }
  setStatus(params: MethodParams<'a2a.tasks.status'>) {
    return this.invoke('a2a.tasks.status', params);
  }
  addArtifact(params: MethodParams<'a2a.tasks.artifact'>) {
    return this.invoke('a2a.tasks.artifact', params);
  }
  cancel(params: MethodParams<'a2a.tasks.cancel'>) {
    return this.invoke('a2a.tasks.cancel', params);
  }
  resubscribe(params: MethodParams<'a2a.tasks.resubscribe'>) {
    return this.invoke('a2a.tasks.resubscribe', params);
  }
  setPushConfig(params: MethodParams<'a2a.tasks.pushNotificationConfig.set'>) {
    return this.invoke('a2a.tasks.pushNotificationConfig.set', params);
  }
  getPushConfig(params: MethodParams<'a2a.tasks.pushNotificationConfig.get'>) {
    return this.invoke('a2a.tasks.pushNotificationConfig.get', params);
  }
  eventsSince(params: MethodParams<'a2a.events.since'>) {
    return this.invoke('a2a.events.since', params);
  }

  dispatch(method: string, params: unknown): Promise<unknown> {
    if (!isMethodName(method)) return Promise.reject(methodNotFound(method));
    if (method === 'app.handshake') {
      try {
        return Promise.resolve(answerHandshake(params, VERSION));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    // `invoke` never throws: it rejects.
    return this.invoke(method, params);
  }

  events(agentId: string): Observable<DurableEvent> {
    const registration = this.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) {
      return throwError(() => a2aError('A2A_UNKNOWN_AGENT', 'no live registration with this agentId'));
    }
    return registration.outbox.observable();
  }

  endRegistrations(tokens: readonly string[]): Promise<number> {
    if (this.isClosed || tokens.length === 0) return Promise.resolve(0);
    return this.queue.enqueue((scope) => {
      let ended = 0;
      for (const token of tokens) if (this.endRegistration(token, scope)) ended++;
      return ended;
    });
  }

  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.isClosed = true;
    this.closing = this.queue.idle().then(async () => {
      await this.checkpointer?.close();
      const { byId } = this.registry.getSnapshot().context;
      for (const registration of byId.values()) {
        registration.actor.stop();
        registration.outbox.complete();
      }
      this.registry.trigger.cleared();
      this.tokens.clear();
      this.tasks.stopAll();
      try {
        this.ownership?.release();
      } catch (error) {
        this.logger.warn({ err: { message: (error as Error).message } }, 'could not release the file ownership');
      }
      this.db.close();
      this.logger.info({ path: this.path, ...this.queue.stats() }, 'a2a broker closed');
    });
    return this.closing;
  }

  // ---- plumbing ----

  /** A broker call under its span (the method and its outcome or error code; never a param: tokens and bodies travel there). */
  private invoke<M extends BrokerMethod>(method: M, raw: unknown): Promise<MethodResult<M>> {
    const span = startSpan(SPAN.brokerCall, activeContext(), SpanKind.SERVER);
    if (span === OFF_SPAN) return this.call(method, raw);
    if (span.isRecording()) {
      span.setAttribute(ATTR.rpcSystem, 'jsonrpc');
      span.setAttribute(ATTR.rpcMethod, method);
    }
    return this.call(method, raw).then(
      (result) => {
        if (span.isRecording()) span.setAttribute(ATTR.callOutcome, 'ok');
        span.end();
        return result;
      },
      (error: unknown) => {
        if (span.isRecording()) span.setAttribute(ATTR.callOutcome, 'error');
        endSpanWithError(span, error);
        throw error;
      },
    );
  }

  private call<M extends BrokerMethod>(method: M, raw: unknown): Promise<MethodResult<M>> {
    if (this.isClosed) return Promise.reject(brokerClosedError());
    let params: MethodParams<M>;
    try {
      params = parseParams(METHODS[method].params, raw) as MethodParams<M>;
    } catch (error) {
      return Promise.reject(error);
    }
    const handler = this.handlers[method] as (p: MethodParams<M>, scope: CallScope) => MethodResult<M>;
    // A read is answered from committed state when nothing is queued; behind a queued call it waits for it.
    if (READS.has(method)) return this.queue.read((scope) => handler(params, scope));
    return this.queue.enqueue((scope) => handler(params, scope));
  }

  private readonly handlers: { [M in BrokerMethod]: (p: MethodParams<M>, scope: CallScope) => MethodResult<M> } = {
    'a2a.agents.register': (p, scope) => this.doRegister(p, scope),
    'a2a.agents.deregister': (p, scope) => this.doDeregister(p, scope),
    'a2a.agents.list': (p) => this.doListAgents(p),
    'a2a.message.send': (p, scope) => this.doSend(p, scope),
    'a2a.tasks.get': (p, scope) => this.doGetTask(p, scope),
    'a2a.tasks.list': (p, scope) => this.doListTasks(p, scope),
    'a2a.tasks.status': (p, scope) => this.doSetStatus(p, scope),
    'a2a.tasks.artifact': (p, scope) => this.doAddArtifact(p, scope),
    'a2a.tasks.cancel': (p, scope) => this.doCancel(p, scope),
    'a2a.tasks.resubscribe': (p, scope) => this.doResubscribe(p, scope),
    'a2a.tasks.pushNotificationConfig.set': (p) => this.doSetPushConfig(p),
    'a2a.tasks.pushNotificationConfig.get': (p) => this.doGetPushConfig(p),
    'a2a.events.since': (p) => this.doEventsSince(p),
  };

  /** The ISO time of the clock's current millisecond (a call stamps several rows within one). */
  private now(): string {
    const ms = this.clock.now();
    if (ms !== this.lastMs) {
      this.lastMs = ms;
      this.lastIso = new Date(ms).toISOString();
    }
    return this.lastIso;
  }
  private lastMs = Number.NaN;
  private lastIso = '';

  private caller(token: string): Registration {
    const agentId = this.tokens.resolve(token);
    const registration = agentId === undefined ? undefined : this.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) throw a2aError('A2A_UNKNOWN_TOKEN', 'unknown or revoked token');
    return registration;
  }

  /** The task and the caller's role in it; a stranger is refused whatever its context. */
  private partyTask(caller: Registration, taskId: string): { head: TaskHead; role: Role } {
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
  private answer(scope: CallScope, head: TaskHead, historyLength?: number): Task {
    const bytes = this.store.taskBytes(head, historyLength);
    if (bytes <= MAX_LINE_BYTES) return this.store.loadTask(head, historyLength);
    scope.answerWith(answerTooLarge(bytes));
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

  /** Commits a task event (and the push that may follow it) for one party. */
  private notify(scope: CallScope, party: Party, head: TaskHead, event: TaskEvent): void {
    const live = this.liveRegistrationOf(party);
    const recipient = live?.agentId ?? this.store.latestAgentIdOfParty(party) ?? party.name;
    const seq = this.nextSeq(scope, party, live);
    const durable: DurableEvent = {
      seq,
      method: 'a2a.task.event',
      params: { recipient, recipientName: party.name, contextId: head.contextId, seq, event },
    };
    this.store.appendEvent(party, durable, head.taskId, this.now());
    if (live !== undefined) scope.afterCommit(() => live.outbox.deliver(durable));
  }

  private push(scope: CallScope, party: Party, head: TaskHead, status: TaskStatus): void {
    const config = this.store.pushConfig(head.taskId);
    if (config === null) return;
    const live = this.liveRegistrationOf(party);
    const recipient = live?.agentId ?? this.store.latestAgentIdOfParty(party) ?? party.name;
    const seq = this.nextSeq(scope, party, live);
    const params: PushNotification = { recipient, contextId: head.contextId, taskId: head.taskId, status, seq };
    if (config.token !== undefined) params.token = config.token;
    const durable: DurableEvent = { seq, method: 'a2a.push', params };
    this.store.appendEvent(party, durable, head.taskId, this.now());
    if (live !== undefined) scope.afterCommit(() => live.outbox.deliver(durable));
  }

  /**
   * The party's next seq. A live registration remembers its party's last seq
   * (read from the log once, then counted: every event of a party is written
   * here, so nothing else moves it); a refused call puts it back.
   */
  private nextSeq(scope: CallScope, party: Party, live: Registration | undefined): number {
    if (live === undefined) return this.store.nextSeq(party);
    const last = live.lastSeq;
    const seq = last === undefined ? this.store.nextSeq(party) : last + 1;
    live.lastSeq = seq;
    scope.onUndo(() => {
      live.lastSeq = last;
    });
    return seq;
  }

  private liveRegistrationOf(party: Party): Registration | undefined {
    const { byParty, byId } = this.registry.getSnapshot().context;
    const agentId = byParty.get(partyKey(party));
    return agentId === undefined ? undefined : byId.get(agentId);
  }

  /**
   * Moves a task through its actor and writes the actor's snapshot; returns
   * the new head, which the caller writes (`writeHead`) once it is complete.
   */
  private moveTask(scope: CallScope, head: TaskHead, move: TaskMove, status: TaskStatus): TaskHead {
    const moved = this.tasks.move(head.taskId, head.state, move);
    scope.onUndo(moved.undo);
    if (moved.snapshot === null) this.store.deleteActorSnapshot(head.taskId);
    else this.store.putActorSnapshot(head.taskId, TASK_MACHINE_VERSION, moved.snapshot);
    return { ...head, state: status.state, status, updatedAt: status.timestamp };
  }

  private stamp(
    caller: Registration,
    role: Role,
    head: { taskId: string; contextId: string },
    m: MessageSend,
  ): Message {
    const message: Message = {
      kind: 'message',
      messageId: m.messageId ?? this.ids.next(),
      role: role === 'requester' ? 'user' : 'agent',
      from: caller.party.name,
      taskId: head.taskId,
      contextId: head.contextId,
      timestamp: this.now(),
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
      this.store.setAgentSends(caller.agentId, caller.actor.getSnapshot().context.sends),
    );
    scope.onUndo(() => {
      caller.actor.stop();
      caller.actor = startAgentActor({ input: { agentId: caller.agentId, sends: before }, inspect: this.inspect });
    });
  }

  /**
   * Remembers the tasks of a context after a creation (tasks are never
   * deleted and only `createTask` inserts them, so the count read once stays
   * true); a refused call puts the count back. At most
   * `TASK_COUNTS_KEPT` contexts are remembered: past it the map starts over.
   */
  private countTask(scope: CallScope, contextId: string, before: number): void {
    if (this.taskCounts.size >= TASK_COUNTS_KEPT && !this.taskCounts.has(contextId)) this.taskCounts.clear();
    this.taskCounts.set(contextId, before + 1);
    scope.onUndo(() => {
      this.taskCounts.set(contextId, before);
    });
  }

  private checkSendCap(caller: Registration): void {
    const { sends, sendCap } = caller.actor.getSnapshot().context;
    if (sends >= Math.min(sendCap, A2A_MAX_SENDS_PER_RUN)) throw boundError('A2A_SEND_CAP', 'A2A_MAX_SENDS_PER_RUN');
  }

  // ---- registration ----

  private doRegister(p: MethodParams<'a2a.agents.register'>, scope: CallScope): MethodResult<'a2a.agents.register'> {
    // `p.name` is NFKC-normalized and checked by the schema; names that fold alike are one name.
    const party: Party = { contextId: p.contextId, name: p.name };
    if (this.registry.getSnapshot().context.byFoldedParty.has(foldedPartyKey(party))) {
      throw invalidParams(
        'an agent with this name (compared case-insensitively after NFKC) is already live in this context',
        [{ path: ['name'], message: 'duplicate live name in this context', code: 'custom' }],
      );
    }
    const agentId = this.ids.next();
    const row = {
      agentId,
      contextId: p.contextId,
      name: p.name,
      kind: p.kind ?? 'subagent',
      description: p.description ?? '',
      skills: p.skills ?? [],
      sends: 0,
      registeredAt: this.now(),
    };
    this.store.insertAgent(row);
    const card: AgentCard = agentCard(row);
    const { token, entry } = this.tokens.mint(agentId);
    const actor = startAgentActor({ input: { agentId }, inspect: this.inspect });
    const registration: Registration = {
      agentId,
      party,
      kind: row.kind,
      card,
      token: entry,
      actor,
      outbox: new AgentOutbox(),
      lastSeq: undefined,
    };
    this.registry.trigger.added({ registration });
    scope.onUndo(() => {
      this.tokens.revoke(entry);
      actor.stop();
      this.registry.trigger.removed({ agentId });
    });
    this.logger.info({ agentId, contextId: p.contextId, name: p.name, kind: row.kind }, 'a2a agent registered');
    return { agentId, token, card };
  }

  private doDeregister(p: MethodParams<'a2a.agents.deregister'>, scope: CallScope): { deregistered: true } {
    const caller = this.caller(p.token);
    const at = this.now();
    // The broker's own moves: the worker's open tasks fail, the requester's are canceled.
    for (const head of this.store.openTasksOfParty(caller.party, 'worker')) {
      const status: TaskStatus = { state: 'failed', timestamp: at };
      const moved = this.moveTask(scope, head, { to: 'failed', by: 'broker', via: 'deregistration' }, status);
      this.store.writeHead(moved);
      const requester = { contextId: head.contextId, name: head.requesterName };
      this.notify(scope, requester, moved, statusEvent(moved, true));
      this.push(scope, requester, moved, status);
    }
    for (const head of this.store.openTasksOfParty(caller.party, 'requester')) {
      const status: TaskStatus = { state: 'canceled', timestamp: at };
      const moved = this.moveTask(scope, head, { to: 'canceled', by: 'broker', via: 'deregistration' }, status);
      this.store.writeHead(moved);
      const worker = { contextId: head.agentContextId, name: head.agentName };
      this.notify(scope, worker, moved, statusEvent(moved, true));
      this.push(scope, worker, moved, status);
    }
    this.store.endAgent(caller.agentId, at, 'deregistered');
    const order = this.registry.getSnapshot().context.order.get(caller.agentId);
    const actorBefore = caller.actor.getPersistedSnapshot();
    caller.actor.send({ type: 'DEREGISTER' });
    caller.actor.stop();
    this.tokens.revoke(caller.token);
    this.registry.trigger.removed({ agentId: caller.agentId });
    scope.onUndo(() => {
      caller.actor = startAgentActor({
        snapshot: actorBefore,
        input: { agentId: caller.agentId },
        inspect: this.inspect,
      });
      this.tokens.reinstate(caller.token);
      this.registry.trigger.added({ registration: caller, ...(order === undefined ? {} : { order }) });
    });
    scope.afterCommit(() => caller.outbox.complete());
    this.logger.info({ agentId: caller.agentId }, 'a2a agent deregistered');
    return { deregistered: true };
  }

  /** Ends one registration, its tasks untouched (`endRegistrations`); false for an unknown token. */
  private endRegistration(token: string, scope: CallScope): boolean {
    const agentId = this.tokens.resolve(token);
    const registration = agentId === undefined ? undefined : this.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) return false;
    this.store.endAgent(registration.agentId, this.now(), 'disconnected');
    const order = this.registry.getSnapshot().context.order.get(registration.agentId);
    const actorBefore = registration.actor.getPersistedSnapshot();
    registration.actor.stop();
    this.tokens.revoke(registration.token);
    this.registry.trigger.removed({ agentId: registration.agentId });
    scope.onUndo(() => {
      registration.actor = startAgentActor({
        snapshot: actorBefore,
        input: { agentId: registration.agentId },
        inspect: this.inspect,
      });
      this.tokens.reinstate(registration.token);
      this.registry.trigger.added({ registration, ...(order === undefined ? {} : { order }) });
    });
    scope.afterCommit(() => registration.outbox.complete());
    this.logger.info({ agentId: registration.agentId }, 'a2a agent disconnected: registration ended, tasks kept');
    return true;
  }

  private doListAgents(p: MethodParams<'a2a.agents.list'>): MethodResult<'a2a.agents.list'> {
    const caller = this.caller(p.token);
    const agents = this.addressable(caller).map((r) => r.card);
    if (agents.length === 0) throw a2aError('A2A_NO_PEERS', 'no addressable peers');
    return { agents };
  }

  /** Live agents of the caller's kind, in any context, except the caller. */
  private addressable(caller: Registration): Registration[] {
    const { byId, order } = this.registry.getSnapshot().context;
    const out: Registration[] = [];
    for (const r of byId.values()) {
      if (isAddressable(caller, r)) out.push(r);
    }
    return out.sort((a, b) => (order.get(a.agentId) ?? 0) - (order.get(b.agentId) ?? 0));
  }

  /**
   * `to` as an agentId, else a name in the caller's context, else a name
   * unique on the host, among the addressable agents only (indexed: no scan
   * of every live agent).
   */
  private resolveTo(caller: Registration, to: string): Registration {
    const { byId, byName } = this.registry.getSnapshot().context;
    const direct = byId.get(to);
    if (direct !== undefined && isAddressable(caller, direct)) return direct;
    const named: Registration[] = [];
    for (const agentId of byName.get(foldAgentName(to)) ?? []) {
      const r = byId.get(agentId);
      if (r !== undefined && isAddressable(caller, r)) named.push(r);
    }
    const local = named.find((r) => r.party.contextId === caller.party.contextId);
    if (local !== undefined) return local;
    if (named.length === 1 && named[0] !== undefined) return named[0];
    throw this.unresolved(caller, to, direct, named);
  }

  /** Why `to` resolves to no one: several agents of other contexts, an agent of the other kind, the caller, or nobody. */
  private unresolved(
    caller: Registration,
    to: string,
    direct: Registration | undefined,
    named: readonly Registration[],
  ): BrokerError {
    if (named.length > 1) {
      const agentIds = named.map((r) => r.agentId);
      const listed = named.map((r) => `${r.agentId} (context ${r.party.contextId})`).join(', ');
      return a2aError(
        'A2A_UNKNOWN_AGENT',
        `${named.length} agents of other contexts answer to "${to}": ${listed}; address one by its agentId`,
        { to, reason: 'ambiguous', agentIds },
      );
    }
    if (direct?.agentId === caller.agentId || (named.length === 0 && this.isCallerName(caller, to))) {
      return a2aError('A2A_UNKNOWN_AGENT', `"${to}" is the caller itself: address another agent`, {
        to,
        reason: 'self',
      });
    }
    const { byId, byName } = this.registry.getSnapshot().context;
    let other = direct !== undefined && direct.kind !== caller.kind ? direct : undefined;
    for (const agentId of other === undefined ? (byName.get(foldAgentName(to)) ?? []) : []) {
      const r = byId.get(agentId);
      if (r !== undefined && r.kind !== caller.kind) {
        other = r;
        break;
      }
    }
    if (other !== undefined) {
      return a2aError(
        'A2A_UNKNOWN_AGENT',
        `"${to}" is an agent of the other kind (${other.kind}; the caller is a ${caller.kind}): agents address only agents of their own kind`,
        { to, reason: 'other-kind', kind: other.kind },
      );
    }
    return a2aError(
      'A2A_UNKNOWN_AGENT',
      `no live agent answers to "${to}": list the addressable ones with a2a.agents.list, or wait for it to register`,
      { to, reason: 'none' },
    );
  }

  private isCallerName(caller: Registration, to: string): boolean {
    return foldAgentName(to) === foldAgentName(caller.party.name);
  }

  // ---- messages ----

  private doSend(p: MethodParams<'a2a.message.send'>, scope: CallScope): MethodResult<'a2a.message.send'> {
    const caller = this.caller(p.token);
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
      const existing = this.store.createdTaskId(caller.party, p.message.messageId);
      const head = existing === undefined ? undefined : this.store.taskHead(existing);
      if (head !== undefined) return { task: this.answer(scope, head, p.historyLength) };
    }
    const worker = this.resolveTo(caller, p.to ?? '');
    const contextId = caller.party.contextId;
    const tasksInContext = this.taskCounts.get(contextId) ?? this.store.countTasksInContext(contextId);
    if (tasksInContext >= A2A_MAX_TASKS_PER_CONTEXT) {
      throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASKS_PER_CONTEXT');
    }
    this.checkSendCap(caller);
    const taskId = this.ids.next();
    const at = this.now();
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
    this.store.insertTask(head, message.messageId);
    this.countTask(scope, contextId, tasksInContext);
    this.store.appendMessage(message, 1);
    const created = this.tasks.create(taskId);
    scope.onUndo(created.undo);
    this.store.putActorSnapshot(taskId, TASK_MACHINE_VERSION, created.snapshot);
    this.countSend(scope, caller);
    // Task creation addresses the worker; the event carries the first message.
    this.notify(scope, worker.party, head, statusEvent(head, false, message));
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
    const { head, role } = this.partyTask(caller, taskId);
    // A retry is recognised before any other check.
    if (m.messageId !== undefined && this.store.hasMessage(taskId, m.messageId)) {
      return { task: this.answer(scope, head, historyLength) };
    }
    if (isTerminalState(head.state)) {
      throw a2aError('A2A_TASK_TERMINAL', `task is ${head.state}`, { from: head.state, to: head.state });
    }
    if (head.historyCount >= A2A_MAX_TASK_HISTORY) throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASK_HISTORY');
    this.checkSendCap(caller);
    const message = this.stamp(caller, role, head, m);
    this.store.appendMessage(message, head.historyCount + 1);
    this.countSend(scope, caller);
    let current: TaskHead = { ...head, historyCount: head.historyCount + 1, updatedAt: message.timestamp };
    if (role === 'requester' && (head.state === 'input-required' || head.state === 'auth-required')) {
      const status: TaskStatus = { state: 'working', message, timestamp: message.timestamp };
      current = this.moveTask(scope, current, { to: 'working', by: 'broker', via: 'follow-up' }, status);
    }
    this.store.writeHead(current);
    this.notify(scope, counterpart(current, role), current, statusEvent(current, false, message));
    return { task: this.answer(scope, current, historyLength) };
  }

  // ---- tasks ----

  private doGetTask(p: MethodParams<'a2a.tasks.get'>, scope: CallScope): MethodResult<'a2a.tasks.get'> {
    const caller = this.caller(p.token);
    const { head } = this.partyTask(caller, p.id);
    return { task: this.answer(scope, head, p.historyLength) };
  }

  private doListTasks(p: MethodParams<'a2a.tasks.list'>, scope: CallScope): MethodResult<'a2a.tasks.list'> {
    const caller = this.caller(p.token);
    const states = p.states === undefined ? undefined : new Set<TaskState>(p.states);
    const heads = this.store
      .tasksOfParty(caller.party, p.role)
      .filter((head) => states === undefined || states.has(head.state));
    let bytes = 0;
    for (const head of heads) bytes += this.store.taskBytes(head);
    // A read: refused before anything is loaded.
    if (bytes > MAX_LINE_BYTES) {
      scope.answerWith(answerTooLarge(bytes));
      return { tasks: [] };
    }
    return { tasks: heads.map((head) => this.store.loadTask(head)) };
  }

  private doSetStatus(p: MethodParams<'a2a.tasks.status'>, scope: CallScope): MethodResult<'a2a.tasks.status'> {
    const caller = this.caller(p.token);
    const { head, role } = this.partyTask(caller, p.id);
    if (p.message?.messageId !== undefined && this.store.hasMessage(head.taskId, p.message.messageId)) {
      return { task: this.answer(scope, head, p.historyLength) };
    }
    const check = checkTaskMove(head.state, { to: p.state, by: role as TaskMover, via: 'status' });
    if (!check.ok) throw moveRefusal(check);
    let current = head;
    let message: Message | undefined;
    if (p.message !== undefined) {
      if (head.historyCount >= A2A_MAX_TASK_HISTORY) throw boundError('A2A_SEND_CAP', 'A2A_MAX_TASK_HISTORY');
      message = this.stamp(caller, role, head, p.message);
      this.store.appendMessage(message, head.historyCount + 1);
      current = { ...current, historyCount: current.historyCount + 1 };
    }
    const status: TaskStatus = { state: p.state, timestamp: message?.timestamp ?? this.now() };
    if (message !== undefined) status.message = message;
    current = this.moveTask(scope, current, { to: p.state, by: 'worker', via: 'status' }, status);
    this.store.writeHead(current);
    const final = isTerminalState(p.state);
    const requester = counterpart(current, role);
    this.notify(scope, requester, current, statusEvent(current, final));
    if (final) this.push(scope, requester, current, status);
    return { task: this.answer(scope, current, p.historyLength) };
  }

  private doAddArtifact(p: MethodParams<'a2a.tasks.artifact'>, scope: CallScope): MethodResult<'a2a.tasks.artifact'> {
    const caller = this.caller(p.token);
    const { head, role } = this.partyTask(caller, p.id);
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
    const at = this.now();
    const chunk = artifactOf(p.artifact, p.artifact.artifactId ?? this.ids.next());
    const append = p.append ?? false;
    const existing = this.store.artifact(head.taskId, chunk.artifactId);
    const stored = append && existing !== undefined ? appended(existing, chunk) : chunk;
    this.store.putArtifact(head.taskId, stored, existing !== undefined, at);
    const current: TaskHead = { ...head, updatedAt: at };
    this.store.writeHead(current);
    this.notify(scope, counterpart(current, role), current, {
      kind: 'artifact-update',
      taskId: head.taskId,
      contextId: head.contextId,
      artifact: chunk,
      append,
      lastChunk: p.lastChunk ?? false,
    });
    return { task: this.answer(scope, current) };
  }

  private doCancel(p: MethodParams<'a2a.tasks.cancel'>, scope: CallScope): MethodResult<'a2a.tasks.cancel'> {
    const caller = this.caller(p.token);
    const { head, role } = this.partyTask(caller, p.id);
    const move: TaskMove = { to: 'canceled', by: role, via: 'cancel' };
    const check = checkTaskMove(head.state, move);
    if (!check.ok) throw moveRefusal(check);
    const status: TaskStatus = { state: 'canceled', timestamp: this.now() };
    const current = this.moveTask(scope, head, move, status);
    this.store.writeHead(current);
    const other = counterpart(current, role);
    this.notify(scope, other, current, statusEvent(current, true));
    this.push(scope, other, current, status);
    return { task: this.answer(scope, current) };
  }

  private doResubscribe(
    p: MethodParams<'a2a.tasks.resubscribe'>,
    scope: CallScope,
  ): MethodResult<'a2a.tasks.resubscribe'> {
    const caller = this.caller(p.token);
    const { head } = this.partyTask(caller, p.id);
    this.notify(scope, caller.party, head, statusEvent(head, isTerminalState(head.state)));
    return { task: this.answer(scope, head) };
  }

  private doSetPushConfig(
    p: MethodParams<'a2a.tasks.pushNotificationConfig.set'>,
  ): MethodResult<'a2a.tasks.pushNotificationConfig.set'> {
    const caller = this.caller(p.token);
    const { head } = this.partyTask(caller, p.id);
    this.store.setPushConfig(head.taskId, p.config, caller.party, this.now());
    return { config: p.config };
  }

  private doGetPushConfig(
    p: MethodParams<'a2a.tasks.pushNotificationConfig.get'>,
  ): MethodResult<'a2a.tasks.pushNotificationConfig.get'> {
    const caller = this.caller(p.token);
    const { head } = this.partyTask(caller, p.id);
    return { config: this.store.pushConfig(head.taskId) };
  }

  private doEventsSince(p: MethodParams<'a2a.events.since'>): MethodResult<'a2a.events.since'> {
    const caller = this.caller(p.token);
    return { events: this.store.eventsSince(caller.party, p.after, p.limit ?? DEFAULT_EVENTS_LIMIT) };
  }

  // ---- opening ----

  private restore(): Omit<BrokerOpenReport, 'schema'> {
    const run = this.db.transaction(() => {
      const endedRegistrations = this.store.endAllAgents(this.now());
      let restoredTasks = 0;
      let rebuiltTasks = 0;
      for (const row of this.store.actorSnapshots()) {
        if (isTerminalState(row.state)) {
          this.store.deleteActorSnapshot(row.taskId);
          continue;
        }
        const how = this.tasks.restore(row.taskId, row.state, row.machineVersion, row.snapshot);
        if (how === 'restored') restoredTasks++;
        else {
          rebuiltTasks++;
          this.store.putActorSnapshot(row.taskId, TASK_MACHINE_VERSION, this.tasks.persisted(row.taskId));
        }
      }
      for (const row of this.store.liveTasksWithoutActor()) {
        this.tasks.restore(row.taskId, row.state, TASK_MACHINE_VERSION, null);
        this.store.putActorSnapshot(row.taskId, TASK_MACHINE_VERSION, this.tasks.persisted(row.taskId));
        rebuiltTasks++;
      }
      return { restoredTasks, rebuiltTasks, endedRegistrations };
    });
    try {
      return run.immediate();
    } catch (error) {
      this.tasks.stopAll();
      throw error;
    }
  }
}

/** Agents of the caller's kind, in any context, except the caller. */
function isAddressable(caller: Registration, r: Registration): boolean {
  return r.kind === caller.kind && r.agentId !== caller.agentId;
}

function roleOf(head: TaskHead, party: Party): Role | undefined {
  if (head.contextId === party.contextId && head.requesterName === party.name) return 'requester';
  if (head.agentContextId === party.contextId && head.agentName === party.name) return 'worker';
  return undefined;
}

function counterpart(head: TaskHead, role: Role): Party {
  return role === 'requester'
    ? { contextId: head.agentContextId, name: head.agentName }
    : { contextId: head.contextId, name: head.requesterName };
}

/** A status-update of the task's current status; `message` (a new message) rides in `status.message`. */
function statusEvent(head: TaskHead, final: boolean, message?: Message): TaskEvent {
  const status: TaskStatus = message === undefined ? head.status : { ...head.status, message };
  return { kind: 'status-update', taskId: head.taskId, contextId: head.contextId, status, final };
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

export type { BrokerApi, BrokerMethod, MethodName };
