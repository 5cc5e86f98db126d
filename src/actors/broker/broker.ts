import type { Observable } from 'rxjs';
import { throwError } from 'rxjs';
import type { Logger } from '../../log/logger.js';
import { TASK_MACHINE_VERSION } from '../../machines/task-machine.js';
import { BrokerError, a2aError, methodNotFound } from '../../protocol/broker-error.js';
import type { DurableEvent } from '../../protocol/events.js';
import { answerHandshake } from '../../protocol/handshake.js';
import {
  METHODS,
  type MethodName,
  type MethodParams,
  type MethodResult,
  isMethodName,
} from '../../protocol/methods.js';
import { parseParams } from '../../protocol/parse.js';
import { plainParams } from '../../protocol/plain-params.js';
import { isTerminalState } from '../../protocol/task.js';
import { A2A_MIGRATION_SET } from '../../persistence/a2a/schema.js';
import { type BrokerOwner, type OwnershipClaim, claimOwnership } from '../../persistence/a2a/owner.js';
import { A2AStore } from '../../persistence/a2a/store.js';
import {
  type Durability,
  type SqliteDatabase,
  isInMemoryPath,
  openDatabase,
} from '../../persistence/kernel/database.js';
import { migrate } from '../../persistence/kernel/migrations.js';
import { WalCheckpointer } from '../../persistence/a2a/wal-checkpointer.js';
import { ensureIncrementalVacuum } from '../../persistence/a2a/space.js';
import type { PruneParams, PruneResult } from '../../protocol/retention.js';
import { VERSION } from '../../version.js';
import { AgentCalls } from './agent-calls.js';
import type { BrokerApi, BrokerMethod, CallOptions } from './api.js';
import { type BrokerOptions, type BrokerSettings, brokerSettings } from './broker-options.js';
import { BrokerState, IsoClock } from './broker-state.js';
import { tracedCall } from './call-spans.js';
import { type CallScope, CommitQueue } from './commit-queue.js';
import { EventRouter } from './event-routing.js';
import { READS, Reads } from './reads.js';
import { SettlingSends, settlesSend } from './settling-sends.js';
import { TaskCalls } from './task-calls.js';
import { TokenAuthority } from './tokens.js';
import { inspectStore } from '../inspection.js';
import { type Registry, createRegistry } from './registry.js';
import { TaskActors } from './task-actors.js';
import { TaskPruner } from './task-retention.js';

export type { BrokerOptions } from './broker-options.js';

/** The methods answered by one call of the commit queue (a prune is many). */
type QueuedMethod = Exclude<BrokerMethod, 'broker.tasks.prune'>;

/** What `createBroker` found and did when it opened the database. */
export interface BrokerOpenReport {
  /** The schema version the file had (`from`) and has now (`to`). */
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
  /** The database file the broker keeps its tables in (`:memory:` for none). */
  readonly path: string;
  /** How commits reach the disk (`normal` or `full`). */
  readonly durability: Durability;
  /** What opening the database found and did. */
  readonly opened: BrokerOpenReport;
  /** Non-terminal tasks (each an actor of the task machine; one restored on open starts it on first move). */
  liveTaskCount(): number;
  /** Live registrations. */
  liveAgentCount(): number;
  /** Whether `close()` was called. */
  readonly closed: boolean;
  /** Group-commit figures: transactions committed and calls they carried. */
  stats(): { commits: number; calls: number; failedCommits: number };
  /**
   * Removes the tasks that ended before `endedBefore` (an ISO instant) with
   * their messages, artifacts, push configs and events, in small batches
   * between the other calls, then gives the freed pages back to the file
   * system; with `dryRun` only counts them. A task named by a live task's
   * history, or of a Coordinator work item of this file that has not ended,
   * is kept. The `broker.tasks.prune` method.
   */
  pruneTasks(params: PruneParams): Promise<PruneResult>;
}

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
  const settings = brokerSettings(options);
  const db = openDatabase(settings.path, { durability: settings.durability });
  try {
    return new EmbeddedBroker(db, settings);
  } catch (error) {
    db.close();
    throw error;
  }
}

class EmbeddedBroker implements Broker {
  readonly opened: BrokerOpenReport;
  readonly path: string;
  readonly durability: Durability;
  private readonly logger: Logger;
  private readonly time: IsoClock;
  private readonly store: A2AStore;
  private readonly queue: CommitQueue;
  /** None for a database in memory: it has no WAL to checkpoint. */
  private readonly checkpointer: WalCheckpointer | undefined;
  private readonly tokens = new TokenAuthority();
  /** None for a database in memory: nobody else can open it. */
  private readonly ownership: OwnershipClaim | undefined;
  private readonly registry: Registry = createRegistry();
  private readonly tasks: TaskActors;
  private readonly agentCalls: AgentCalls;
  private readonly taskCalls: TaskCalls;
  private readonly reads: Reads;
  private readonly pruner: TaskPruner;
  private readonly settling: SettlingSends;
  private isClosed = false;
  private closing: Promise<void> | null = null;

  constructor(
    private readonly db: SqliteDatabase,
    settings: BrokerSettings,
  ) {
    const { path, durability } = settings;
    this.path = path;
    this.durability = durability;
    this.logger = settings.logger;
    this.time = new IsoClock(settings.clock);
    this.tasks = new TaskActors(settings.inspect);
    if (settings.inspect !== undefined) inspectStore(this.registry, 'broker', settings.inspect);
    const schema = migrate(db, A2A_MIGRATION_SET);
    // Before anything is written: a refused broker leaves the file as it was.
    this.ownership = isInMemoryPath(path)
      ? undefined
      : claimOwnership(db, path, { socket: settings.socket, now: () => this.time.now() });
    if (!isInMemoryPath(path)) this.giveSpaceBackIncrementally(db);
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
      () => this.store.forgetHints(),
    );
    const state = new BrokerState(
      this.store,
      this.registry,
      this.tokens,
      this.tasks,
      settings.ids,
      this.time,
      this.logger,
      settings.inspect,
    );
    this.settling = new SettlingSends(this.store);
    const events = new EventRouter(state, this.settling);
    this.agentCalls = new AgentCalls(state, events);
    this.taskCalls = new TaskCalls(state, events);
    this.pruner = new TaskPruner(
      db,
      this.queue,
      this.logger,
      () => this.taskCalls.forgetTaskCounts(),
      () => this.store.forgetHints(),
    );
    this.reads = new Reads(state, (party) => this.pruner.eventFloor(party));
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
    if (settings.taskRetentionMs !== undefined) {
      const retention = settings.taskRetentionMs;
      this.pruner.every(retention, Math.min(Math.max(retention, 1000), 60_000), () => settings.clock.now());
    }
  }

  /**
   * Turns the file to incremental auto-vacuum (once: a `VACUUM`, every row
   * kept) so that a prune's freed pages can be given back. A file another
   * connection is reading cannot be vacuumed now: it is tried again at the
   * next open, and prunes still free pages for reuse meanwhile.
   */
  private giveSpaceBackIncrementally(db: SqliteDatabase): void {
    try {
      if (ensureIncrementalVacuum(db))
        this.logger.info({ path: this.path }, 'the file now uses incremental auto-vacuum');
    } catch (error) {
      this.logger.warn(
        { err: { message: (error as Error).message } },
        'could not turn the file to incremental auto-vacuum (VACUUM): tried again at the next open',
      );
    }
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
  send(params: MethodParams<'a2a.message.send'>, options?: CallOptions) {
    return this.invoke('a2a.message.send', params, options);
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
  pruneTasks(params: PruneParams) {
    return this.invoke('broker.tasks.prune', params);
  }

  dispatch(method: string, params: unknown, options?: CallOptions): Promise<unknown> {
    if (!isMethodName(method)) return Promise.reject(methodNotFound(method));
    if (method === 'app.handshake') {
      try {
        return Promise.resolve(answerHandshake(params, VERSION));
      } catch (error) {
        return Promise.reject(error);
      }
    }
    // `invoke` never throws: it rejects.
    return this.invoke(method, params, options);
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
      for (const token of tokens) if (this.agentCalls.endRegistration(token, scope)) ended++;
      return ended;
    });
  }

  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.isClosed = true;
    this.closing = this.pruner
      .stop()
      .then(() => this.queue.idle())
      .then(async () => {
        this.settling.refuseAll(
          new BrokerError(
            'INTERNAL_ERROR',
            'the broker closed before the task of this blocking send settled: the send stands; read the task with a2a.tasks.get once the broker is open again',
          ),
        );
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

  /** A broker call under its span (`call-spans.ts`). */
  private invoke<M extends BrokerMethod>(method: M, raw: unknown, options?: CallOptions): Promise<MethodResult<M>> {
    if (options === undefined) return tracedCall(method, raw, this.callNow);
    return tracedCall(method, raw, (m: M, r) => this.call(m, r, options));
  }

  /** `call`, bound once (a call allocates no closure to be traced). */
  private readonly callNow = <M extends BrokerMethod>(method: M, raw: unknown) => this.call(method, raw);

  private call<M extends BrokerMethod>(method: M, raw: unknown, options?: CallOptions): Promise<MethodResult<M>> {
    if (this.isClosed) return Promise.reject(brokerClosedError());
    let params: MethodParams<M>;
    try {
      // The common shape of a send or a status, without the generic parse (`plain-params.ts`).
      params = (plainParams(method, raw) ?? parseParams(METHODS[method].params, raw)) as MethodParams<M>;
    } catch (error) {
      return Promise.reject(error);
    }
    // A prune is many transactions, queued one after the other.
    if (method === 'broker.tasks.prune') return this.pruner.prune(params as PruneParams) as Promise<MethodResult<M>>;
    const handler = this.handlers[method as QueuedMethod] as unknown as (
      p: MethodParams<M>,
      scope: CallScope,
    ) => MethodResult<M>;
    if (method === 'a2a.message.send' && (params as MethodParams<'a2a.message.send'>).blocking === true) {
      return this.sendBlocking(params as MethodParams<'a2a.message.send'>, options) as Promise<MethodResult<M>>;
    }
    // A read is answered from committed state when nothing is queued; behind a queued call it waits for it.
    if (READS.has(method)) return this.queue.read((scope) => handler(params, scope));
    return this.queue.enqueue((scope) => handler(params, scope));
  }

  /**
   * A send answered once its task settles (`settlesSend`): at once when the
   * send finds it settled (a retry of a task that ended), else when a later
   * call commits the status that settles it, or, once `options.signal`
   * aborts, with the task as it is then.
   */
  private sendBlocking(
    p: MethodParams<'a2a.message.send'>,
    options: CallOptions | undefined,
  ): Promise<MethodResult<'a2a.message.send'>> {
    let waiting: ReturnType<SettlingSends['wait']> | undefined;
    return this.queue
      .enqueue((scope) => {
        const sent = this.taskCalls.send(p, scope);
        if (!settlesSend(sent.task.status.state)) waiting = this.settling.wait(scope, sent.task.id, p.historyLength);
        return sent;
      })
      .then(
        (sent) => {
          if (waiting === undefined) return sent;
          options?.onWaiting?.();
          return this.untilSettled(p, waiting, options?.signal);
        },
        (error: unknown) => {
          // Committed, but its answer could not be given (too large): nobody waits for the task.
          waiting?.cancel();
          throw error;
        },
      );
  }

  private async untilSettled(
    p: MethodParams<'a2a.message.send'>,
    waiting: ReturnType<SettlingSends['wait']>,
    signal: AbortSignal | undefined,
  ): Promise<MethodResult<'a2a.message.send'>> {
    if (signal === undefined) return { task: await waiting.settled };
    let stop = () => {};
    const aborted = new Promise<undefined>((resolve) => {
      stop = this.settling.onAbort(signal, () => resolve(undefined));
    });
    try {
      const task = await Promise.race([waiting.settled, aborted]);
      if (task !== undefined) return { task };
    } finally {
      stop();
    }
    waiting.cancel();
    return this.queue.read((scope) => this.reads.sentTask(waiting.taskId, p.historyLength, scope));
  }

  private readonly handlers: { [M in QueuedMethod]: (p: MethodParams<M>, scope: CallScope) => MethodResult<M> } = {
    'a2a.agents.register': (p, scope) => this.agentCalls.register(p, scope),
    'a2a.agents.deregister': (p, scope) => this.agentCalls.deregister(p, scope),
    'a2a.agents.list': (p) => this.reads.listAgents(p),
    'a2a.message.send': (p, scope) => this.taskCalls.send(p, scope),
    'a2a.tasks.get': (p, scope) => this.reads.getTask(p, scope),
    'a2a.tasks.list': (p, scope) => this.reads.listTasks(p, scope),
    'a2a.tasks.status': (p, scope) => this.taskCalls.setStatus(p, scope),
    'a2a.tasks.artifact': (p, scope) => this.taskCalls.addArtifact(p, scope),
    'a2a.tasks.cancel': (p, scope) => this.taskCalls.cancel(p, scope),
    'a2a.tasks.resubscribe': (p, scope) => this.taskCalls.resubscribe(p, scope),
    'a2a.tasks.pushNotificationConfig.set': (p) => this.taskCalls.setPushConfig(p),
    'a2a.tasks.pushNotificationConfig.get': (p) => this.reads.getPushConfig(p),
    'a2a.events.since': (p) => this.reads.eventsSince(p),
  };

  // ---- opening ----

  private restore(): Omit<BrokerOpenReport, 'schema'> {
    const run = this.db.transaction(() => {
      const endedRegistrations = this.store.endAllAgents(this.time.now());
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
        // A task still submitted never moved: its snapshot is the machine's initial one, never written.
        if (row.state === 'submitted') {
          restoredTasks++;
          continue;
        }
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

export type { BrokerApi, BrokerMethod, CallOptions, MethodName };
