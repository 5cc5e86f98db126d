import { CancelTaskRequest } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import { type Logger, silentLogger } from '../log/logger.js';
import type { V1AgentCard } from '../protocol/a2a-v1/schemas.js';
import { RegisterSkillSchema } from '../protocol/agent.js';
import type { DurableEvent } from '../protocol/events.js';
import type { RegisterParams } from '../protocol/methods.js';
import { type Message, isTerminalState } from '../protocol/task.js';
import { type SwitchboardClient, connect } from '../transport/client.js';
import { VERSION } from '../version.js';
import {
  DEFAULT_REMOTE_TIMEOUT_MS,
  DEFAULT_STREAM_IDLE_MS,
  fetchRemoteCard,
  remoteClient,
} from './remote-connection.js';
import { type CarryContext, DEFAULT_POLL_MS, DEFAULT_RECONNECT_MS, carryTask } from './remote-task-carry.js';
import { RemoteTaskStore, defaultRemoteTasksFile } from './remote-task-store.js';
import { type RemoteAgentRow, defaultRemotesFile, readRemotes, replaceRemoteCard } from './remotes-file.js';

/** How long a remote that could not be started waits before it is tried again. */
const RETRY_MS = 10_000;
/** How long reading a remote's card again at the start of its bridge may take (at most the request timeout). */
const CARD_REFRESH_TIMEOUT_MS = 3000;

/** The broker context every remote's local agent registers in. */
export const REMOTE_CONTEXT_ID = 'remote';

/** Options of `startRemoteBridge`. */
export interface RemoteBridgeOptions {
  /** The broker's SQLite file: the remotes file and the task store are beside it. */
  db: string;
  /** A connected client of that broker (default: `connect({ db })`, closed by `stop`). */
  client?: SwitchboardClient;
  logger?: Logger;
  /** How long a request to a remote waits for its answer to start (default 10 s). */
  timeoutMs?: number;
  /** How long a remote that stopped answering mid-task is tried again before the local task fails (default 30 s). */
  reconnectMs?: number;
  /** How often a remote that does not stream is asked for its task (default 1 s). */
  pollMs?: number;
  /** How often the remotes file is read again, for remotes added or removed (default 1 s). */
  watchMs?: number;
  /** How long an open stream may stay silent before it is picked up again (default 60 s). */
  streamIdleMs?: number;
}

/** A running bridge: one local agent per remote of the remotes file. */
export interface RemoteBridge {
  /** The local names of the remotes bridged now. */
  agents(): string[];
  /** How many tasks are being carried now (a stream open or a poll running for each). */
  carrying(): number;
  /** Stops carrying (open tasks are picked up again by the next bridge); the broker keeps every task. */
  stop(): Promise<void>;
}

/** The registration of a remote's local agent: its card's description and skills (those the broker takes). */
export function remoteRegistration(row: RemoteAgentRow): RegisterParams {
  const card: V1AgentCard = row.card;
  const skills: RegisterParams['skills'] = [];
  for (const skill of card.skills.slice(0, 256)) {
    const parsed = RegisterSkillSchema.safeParse({
      id: skill.id,
      name: skill.name,
      ...(skill.description === undefined ? {} : { description: skill.description }),
      ...(skill.tags === undefined ? {} : { tags: skill.tags }),
      ...(skill.examples === undefined ? {} : { examples: skill.examples }),
    });
    if (parsed.success) skills.push(parsed.data);
  }
  const description = card.description.trim() === '' ? `the remote A2A agent at ${row.url}` : card.description;
  return { name: row.name, contextId: REMOTE_CONTEXT_ID, description: description.slice(0, 16_000), skills };
}

interface Pass {
  readonly abort: AbortController;
  readonly done: Promise<void>;
}

/** One remote: its local agent, the loop over that agent's events, and the tasks being carried. */
class RemoteLink {
  private token = '';
  private running = true;
  private loop: Promise<void> = Promise.resolve();
  private readonly passes = new Map<string, Pass>();
  private ctx!: CarryContext;

  /** How many of this remote's tasks are being carried now. */
  carrying(): number {
    return this.passes.size;
  }

  constructor(
    public row: RemoteAgentRow,
    private readonly file: string,
    private readonly broker: SwitchboardClient,
    private readonly store: RemoteTaskStore,
    private readonly logger: Logger,
    private readonly options: Required<
      Pick<RemoteBridgeOptions, 'timeoutMs' | 'reconnectMs' | 'pollMs' | 'streamIdleMs'>
    >,
  ) {}

  /**
   * The remote's card as it is now: read again when the bridge starts, kept
   * in the remotes file when it changed (its description, skills, streaming
   * and interfaces then count from this start); the card kept last when it
   * cannot be read (the remote may be down for now).
   */
  private async currentCard(): Promise<V1AgentCard> {
    try {
      const card = await fetchRemoteCard({
        url: this.row.url,
        timeoutMs: Math.min(this.options.timeoutMs, CARD_REFRESH_TIMEOUT_MS),
        ...(this.row.token === undefined ? {} : { token: this.row.token }),
      });
      if (replaceRemoteCard(this.file, this.row.name, this.row.url, card)) {
        this.logger.info(
          { agent: this.row.name, url: this.row.url },
          'remote agent: its card changed; the new one is kept',
        );
      }
      this.row = { ...this.row, card };
    } catch (error) {
      this.logger.warn(
        { agent: this.row.name, url: this.row.url, err: error },
        'remote agent: cannot read its card again; the card kept last is used',
      );
    }
    return this.row.card;
  }

  async start(): Promise<void> {
    const card = await this.currentCard();
    const remote: Client = await remoteClient(
      {
        url: this.row.url,
        timeoutMs: this.options.timeoutMs,
        streamIdleMs: this.options.streamIdleMs,
        ...(this.row.token === undefined ? {} : { token: this.row.token }),
      },
      card,
    );
    const { token } = await this.broker.register(remoteRegistration(this.row), {
      after: this.store.seq(this.row.name),
    });
    this.token = token;
    this.ctx = {
      broker: this.broker,
      token,
      agent: this.row.name,
      remote,
      url: this.row.url,
      streaming: this.row.card.capabilities.streaming === true,
      store: this.store,
      logger: this.logger,
      ...this.options,
    };
    // What was addressed to the agent while no bridge ran, first; then the tasks still open.
    await this.handleAll(await this.broker.wait({ token, timeoutSeconds: 0 }));
    await this.resume();
    this.loop = this.run().catch((error: unknown) => {
      if (this.running) this.logger.error({ agent: this.row.name, err: error }, 'remote agent: its loop failed');
    });
  }

  /** Stops the loop and every pass; with `leave`, deregisters the agent (its open tasks fail). */
  async stop(leave = false): Promise<void> {
    this.running = false;
    for (const pass of this.passes.values()) pass.abort.abort();
    await Promise.all([...this.passes.values()].map((p) => p.done));
    if (leave && this.token !== '' && this.broker.connected) {
      await this.broker.deregister({ token: this.token }).catch(() => {});
    }
    // The loop ends at its next wake (a wait of at most 2 s, or the client closing); what it has not
    // acted on is replayed to the next bridge.
    void this.loop;
  }

  private async run(): Promise<void> {
    while (this.running && this.broker.connected) {
      let events: DurableEvent[];
      try {
        events = await this.broker.wait({ token: this.token, timeoutSeconds: 2 });
      } catch (error) {
        if (!this.running || !this.broker.connected) return;
        this.logger.warn({ agent: this.row.name, err: error }, 'remote agent: reading its events failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      await this.handleAll(events);
    }
  }

  private async handleAll(events: readonly DurableEvent[]): Promise<void> {
    for (const event of events) {
      if (!this.running) return;
      try {
        await this.handle(event);
      } catch (error) {
        this.logger.error({ agent: this.row.name, err: error, seq: event.seq }, 'remote agent: an event failed');
      }
      // Stopped meanwhile: the event is replayed to the next bridge (its store may be closed now).
      if (!this.running) return;
      this.store.setSeq(this.row.name, event.seq);
    }
  }

  private async handle(event: DurableEvent): Promise<void> {
    if (event.method !== 'a2a.task.event') return;
    const e = event.params.event;
    if (e.kind !== 'status-update') return;
    const known = this.store.get(e.taskId);
    const state = e.status.state;
    this.logger.debug(
      { agent: this.row.name, task: e.taskId, state, seq: event.seq, carrying: this.passes.has(e.taskId) },
      'remote agent: a task event',
    );
    if (state === 'submitted') {
      if (known !== undefined) return;
      this.store.begin(e.taskId, this.row.name);
      this.carry(e.taskId, e.status.message);
    } else if (state === 'working') {
      // The requester's answer to a task that needed input: it goes to the remote task.
      if (known === undefined || known.ended || e.status.message === undefined) return;
      // The pass that wrote the question may still be winding down when the answer comes: the answer
      // goes once it has ended. Stopped meanwhile: the event is replayed to the next bridge.
      await this.passes.get(e.taskId)?.done;
      if (!this.running) return;
      this.carry(e.taskId, e.status.message);
    } else if (state === 'canceled') {
      await this.cancel(e.taskId);
    } else if (isTerminalState(state)) {
      const pass = this.passes.get(e.taskId);
      pass?.abort.abort();
      await pass?.done;
      if (known !== undefined) this.store.end(e.taskId);
    }
  }

  /** Picks up the tasks that had not ended when the last bridge stopped. */
  private async resume(): Promise<void> {
    for (const row of this.store.open(this.row.name)) {
      if (this.passes.has(row.localTaskId)) continue;
      let task: Awaited<ReturnType<SwitchboardClient['getTask']>>['task'];
      try {
        task = (await this.broker.getTask({ token: this.token, id: row.localTaskId })).task;
      } catch (error) {
        this.logger.warn({ task: row.localTaskId, err: error }, 'remote agent: a recorded task is gone; forgetting it');
        this.store.end(row.localTaskId);
        continue;
      }
      const state = task.status.state;
      if (isTerminalState(state)) {
        this.store.end(row.localTaskId);
      } else if (state === 'input-required' || state === 'auth-required') {
        // The remote waits for the requester's answer, which comes as an event.
      } else if (row.remoteTaskId === undefined) {
        // Stopped before the remote named the task: the first message is sent again.
        this.carry(row.localTaskId, task.history[0]);
      } else {
        this.carry(row.localTaskId, undefined);
      }
    }
  }

  private carry(taskId: string, message: Message | undefined): void {
    if (!this.running) return;
    if (this.passes.has(taskId)) {
      this.logger.warn({ task: taskId }, 'remote agent: the task is being carried already');
      return;
    }
    const abort = new AbortController();
    const done = carryTask(this.ctx, taskId, message, abort.signal)
      .catch((error: unknown) => {
        if (!abort.signal.aborted) {
          this.logger.error({ task: taskId, url: this.row.url, err: error }, 'remote agent: carrying a task failed');
        }
      })
      .finally(() => {
        this.logger.debug(
          { agent: this.row.name, task: taskId },
          'remote agent: carried the task until it ended or needed input',
        );
        if (this.passes.get(taskId) === pass) this.passes.delete(taskId);
      });
    const pass: Pass = { abort, done };
    this.passes.set(taskId, pass);
  }

  /** The requester canceled: the remote task is canceled too. */
  private async cancel(taskId: string): Promise<void> {
    const pass = this.passes.get(taskId);
    pass?.abort.abort();
    await pass?.done;
    const row = this.store.get(taskId);
    if (row === undefined) return;
    this.store.end(taskId);
    if (row.remoteTaskId === undefined) return;
    try {
      await this.ctx.remote.cancelTask(CancelTaskRequest.fromJSON({ id: row.remoteTaskId }));
    } catch (error) {
      this.logger.warn(
        { task: taskId, remoteTask: row.remoteTaskId, url: this.row.url, err: error },
        'remote agent: canceling the remote task failed',
      );
    }
  }
}

/**
 * Starts the bridge of a broker's remote agents: for each remote of the
 * remotes file beside `db`, a local agent (named as the remote was added,
 * its card's description and skills) that local agents send to as to any
 * other; each task sent to it is carried to the remote over A2A v1.0 and
 * written back into the local task. Remotes added to or removed from the
 * file while it runs are picked up.
 */
export async function startRemoteBridge(options: RemoteBridgeOptions): Promise<RemoteBridge> {
  const logger = options.logger ?? silentLogger();
  const owned = options.client === undefined;
  const broker =
    options.client ??
    (await connect({ db: options.db, client: { name: 'switchboard-remote-bridge', version: VERSION } }));
  // Opened with the first remote: a broker with none gets no file.
  let opened: RemoteTaskStore | undefined;
  const store = (): RemoteTaskStore => {
    opened ??= new RemoteTaskStore(defaultRemoteTasksFile(options.db));
    return opened;
  };
  const file = defaultRemotesFile(options.db);
  const timing = {
    timeoutMs: options.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS,
    reconnectMs: options.reconnectMs ?? DEFAULT_RECONNECT_MS,
    pollMs: options.pollMs ?? DEFAULT_POLL_MS,
    streamIdleMs: options.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS,
  };
  const links = new Map<string, RemoteLink>();
  /** When a remote last failed to start: tried again after `RETRY_MS`, not at every read of the file. */
  const failedAt = new Map<string, number>();
  let stopped = false;

  const sync = async (): Promise<void> => {
    let rows: RemoteAgentRow[];
    try {
      rows = readRemotes(file);
    } catch (error) {
      logger.error({ err: error, file }, 'remote agents: cannot read the remotes file');
      return;
    }
    const wanted = new Map(rows.map((row) => [row.name, row]));
    for (const [name, link] of links) {
      if (wanted.get(name)?.url === link.row.url) continue;
      links.delete(name);
      await link.stop(true);
      logger.info({ agent: name }, 'remote agent removed');
    }
    for (const row of rows) {
      if (stopped || links.has(row.name)) continue;
      if (Date.now() - (failedAt.get(row.name) ?? 0) < RETRY_MS) continue;
      const link = new RemoteLink(row, file, broker, store(), logger, timing);
      try {
        await link.start();
        links.set(row.name, link);
        failedAt.delete(row.name);
        logger.info({ agent: row.name, url: row.url }, 'remote agent bridged');
      } catch (error) {
        await link.stop().catch(() => {});
        failedAt.set(row.name, Date.now());
        logger.error({ agent: row.name, url: row.url, err: error }, 'remote agent: cannot bridge it; retrying');
      }
    }
  };

  await sync();
  let syncing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    syncing = syncing.then(sync);
  }, options.watchMs ?? 1000);
  timer.unref();

  return {
    agents: () => [...links.keys()],
    carrying: () => {
      let n = 0;
      for (const link of links.values()) n += link.carrying();
      return n;
    },
    async stop() {
      stopped = true;
      clearInterval(timer);
      await syncing;
      await Promise.all([...links.values()].map((link) => link.stop()));
      links.clear();
      if (owned) await broker.close();
      opened?.close();
    },
  };
}
