import type { Duplex, Readable, Writable } from 'node:stream';
import type { BrokerApi, BrokerMethod } from '../actors/broker/api.js';
import { A2A_DEFAULT_STREAM_WAIT_SECONDS, A2A_MAX_STREAM_WAIT_SECONDS, PROTOCOL_VERSION } from '../protocol/bounds.js';
import { BrokerError, a2aError, invalidParams } from '../protocol/broker-error.js';
import type { DurableEvent } from '../protocol/events.js';
import {
  HandshakeResultSchema,
  type HandshakeResult,
  type MethodParamsInput,
  type MethodResult,
  type RegisterResult,
} from '../protocol/methods.js';
import { isTerminalState } from '../protocol/task.js';
import { VERSION } from '../version.js';
import { AgentInbox, eventTaskId } from './agent-inbox.js';
import { type NotificationListener, type RpcChannel, RpcConnection } from './rpc-connection.js';
import { ServeProcess, type SpawnServeOptions } from './serve-process.js';
import { connectSocket, joinHostBroker } from './host-broker.js';
import { TransportError } from './transport-error.js';

/**
 * The client's friendly method names, one per row of the method table; they
 * are the names of `BrokerApi`, so code written against an embedded broker
 * reads the same against a client.
 */
export const CLIENT_METHODS = {
  register: 'a2a.agents.register',
  deregister: 'a2a.agents.deregister',
  listAgents: 'a2a.agents.list',
  send: 'a2a.message.send',
  getTask: 'a2a.tasks.get',
  listTasks: 'a2a.tasks.list',
  setStatus: 'a2a.tasks.status',
  addArtifact: 'a2a.tasks.artifact',
  cancel: 'a2a.tasks.cancel',
  resubscribe: 'a2a.tasks.resubscribe',
  setPushConfig: 'a2a.tasks.pushNotificationConfig.set',
  getPushConfig: 'a2a.tasks.pushNotificationConfig.get',
  eventsSince: 'a2a.events.since',
} as const satisfies {
  [K in Exclude<keyof BrokerApi, 'dispatch' | 'events' | 'endRegistrations' | 'close'>]: BrokerMethod;
};

type ClientMethodName = keyof typeof CLIENT_METHODS;
type CallableMethod = BrokerMethod | 'app.handshake';

/** The generated friendly methods (all but `register`, which takes options). */
export type ClientMethods = {
  [K in Exclude<ClientMethodName, 'register'>]: (
    params: MethodParamsInput<(typeof CLIENT_METHODS)[K]>,
  ) => Promise<MethodResult<(typeof CLIENT_METHODS)[K]>>;
};

/** A pair of streams to a broker: `readable` carries its output, `writable` its input. */
export interface StreamPair {
  /** Where the peer's lines are read from. */
  readable: Readable;
  /** Where this side's lines are written. */
  writable: Writable;
}

/**
 * Options of `connect`: which broker (give one of `db`, `socket`, `spawn`,
 * `streams`) and who the client is.
 */
export interface ConnectOptions {
  /**
   * Join the host's broker of this SQLite file: the broker that owns it, if
   * one runs, else one started now in the background on the file's default
   * socket. That broker outlives the process that started it and stops by
   * itself `idleSeconds` after its last connection closed. Runtimes that
   * call `connect({ db })` on one file at once end up on one broker.
   */
  db?: string;
  /** With `db`: seconds a broker started by this call keeps running without connections (default 60). */
  idleSeconds?: number;
  /**
   * With `db`: how long a broker started by this call keeps an ended task,
   * in milliseconds (`serve --task-retention`); a broker already running
   * keeps its own setting.
   * @defaultValue none: every task is kept
   */
  taskRetentionMs?: number;
  /** Join the broker listening on this Unix socket (`switchboard serve --listen unix:PATH`). */
  socket?: string;
  /** Start `switchboard serve` as a child process and talk over its pipes (the broker ends with the client). */
  spawn?: SpawnServeOptions;
  /** Or talk over streams already open (a duplex, or a readable/writable pair). */
  streams?: StreamPair | Duplex;
  /** Sent in the handshake. */
  client?: { name: string; version: string };
}

/** Options of the client's `register`: the seq after which the agent's durable events are replayed. */
export interface RegisterOptions {
  /**
   * Replay every durable event of the party after this seq into the inbox,
   * exactly. A runtime that kept `lastSeq()` across its own restart passes
   * it here. Without it the replay starts after the last seq this client saw
   * for the party, else at the start of the log, and passes over the events
   * of tasks that have already ended (see `openTasksOnly`).
   */
  after?: number;
}

/** Options of the client's `wait`: the waiting agent's token, an optional task, and how long to wait. */
export interface WaitOptions {
  /** The agent that waits (the token its registration returned). */
  token: string;
  /** Only events about this task; others stay buffered for a later wait. */
  taskId?: string;
  /**
   * Default 30 (`A2A_DEFAULT_STREAM_WAIT_SECONDS`); at most 120
   * (`A2A_MAX_STREAM_WAIT_SECONDS`): a larger value is refused with -32602,
   * not clamped, so that a caller never waits less than it asked for
   * without knowing. 0 takes what is buffered without waiting.
   */
  timeoutSeconds?: number;
}

interface Registration {
  /** The token the registration first returned: what callers hold, across reconnects. */
  readonly handle: string;
  readonly params: MethodParamsInput<'a2a.agents.register'>;
  token: string;
  agentId: string;
  readonly inbox: AgentInbox;
}

/** A connected client of a broker: the handshake, inboxes and reconnect of `ClientBase`, and one call per method. */
export type SwitchboardClient = ClientBase & ClientMethods;

/**
 * A client of a switchboard broker over JSON-RPC/NDJSON. It performs the
 * handshake first, keeps one inbox per agent registered through it (events
 * arrive as notifications; `wait` takes them), and after `reconnect()`
 * registers its agents again under the same `(contextId, name)`, keeps their
 * first tokens working (it maps them to the new ones), and replays what they
 * missed from the broker's durable log.
 */
export class ClientBase {
  private readonly options: ConnectOptions;
  private connection!: RpcChannel;
  private process: ServeProcess | undefined;
  private handshakeResult!: HandshakeResult;
  private readonly byToken = new Map<string, Registration>();
  private readonly byAgentId = new Map<string, Registration>();
  private readonly registrations = new Set<Registration>();
  /** Seq of the last event per party `(contextId, name)`, kept after deregistration. */
  private readonly partySeq = new Map<string, number>();
  private reconnecting: Promise<void> | undefined;
  private aliased = false;
  private closing = false;
  private readonly disconnectListeners = new Set<(reason: TransportError) => void>();

  constructor(options: ConnectOptions) {
    this.options = options;
    for (const [name, method] of Object.entries(CLIENT_METHODS)) {
      if (name === 'register') continue;
      Object.defineProperty(this, name, {
        value: (params: unknown) => this.call(method as BrokerMethod, params as never),
        enumerable: false,
      });
    }
  }

  /** What the host answered to the handshake. */
  get host(): HandshakeResult {
    return this.handshakeResult;
  }

  /** The `switchboard serve` child, when this client spawned one. */
  get serveProcess(): ServeProcess | undefined {
    return this.process;
  }

  /** True while the connection is up. */
  get connected(): boolean {
    return !this.connection.closed;
  }

  /**
   * Opens the connection and performs the handshake. With `db`, a broker
   * that closed the connection before answering (it was stopping, idle, at
   * that moment) is joined again, or started again: up to 3 attempts.
   */
  async open(streams?: StreamPair | Duplex): Promise<void> {
    const attempts = streams === undefined && this.options.db !== undefined && !this.options.streams ? 3 : 1;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.openOnce(streams);
        return;
      } catch (error) {
        const closed = error instanceof TransportError && error.code === 'CONNECTION_CLOSED';
        if (!closed || attempt >= attempts) throw error;
      }
    }
  }

  private async openOnce(streams?: StreamPair | Duplex): Promise<void> {
    const onNotification: NotificationListener = (method, params) => this.onNotification(method, params);
    const onClose = (reason: TransportError) => {
      if (this.closing) return;
      for (const listener of this.disconnectListeners) listener(reason);
    };
    const channel = channelFactories.get(this.options);
    if (channel !== undefined && streams === undefined) {
      this.connection = channel({ onNotification, onClose });
    } else {
      const pair = await this.openStreams(streams);
      this.connection = new RpcConnection({
        readable: pair.readable,
        writable: pair.writable,
        onNotification,
        onClose,
      });
    }
    try {
      const raw = await this.connection.call('app.handshake', {
        protocolVersion: PROTOCOL_VERSION,
        client: this.options.client ?? { name: 'switchboard-client', version: VERSION },
      });
      this.handshakeResult = checkHost(raw);
    } catch (error) {
      this.connection.destroy('handshake failed');
      if (this.process) {
        // What the child said before it exited (its fatal line), not only how it exited.
        await this.process.exitedWithin(2000);
        const failure = this.process.describeFailure();
        await this.process.stop(1000);
        if (error instanceof TransportError && error.code === 'CONNECTION_CLOSED') {
          throw new TransportError('SPAWN_FAILED', `switchboard serve did not start: ${failure}`, { cause: error });
        }
      }
      throw error;
    }
  }

  /** Called when the connection drops without `close()` (e.g. the broker process died). */
  onDisconnect(listener: (reason: TransportError) => void): () => void {
    this.disconnectListeners.add(listener);
    return () => this.disconnectListeners.delete(listener);
  }

  /** Any method of the table, by its wire name. */
  call<M extends CallableMethod>(method: M, params: MethodParamsInput<M>): Promise<MethodResult<M>>;
  call(method: string, params: unknown): Promise<unknown>;
  call(method: string, params: unknown): Promise<unknown> {
    if (this.reconnecting) return this.reconnecting.then(() => this.call(method, params));
    if (method === 'a2a.agents.register') return this.register(params as MethodParamsInput<'a2a.agents.register'>);
    if (method === 'a2a.agents.deregister') return this.deregisterAgent(params);
    return this.connection.call(method, this.aliased ? this.translate(params) : params);
  }

  /**
   * Registers an agent, opens its inbox and replays into it the durable
   * events waiting for it (see `RegisterOptions.after`).
   */
  async register(
    params: MethodParamsInput<'a2a.agents.register'>,
    options: RegisterOptions = {},
  ): Promise<RegisterResult> {
    if (this.reconnecting) await this.reconnecting;
    const result = (await this.connection.call('a2a.agents.register', params)) as RegisterResult;
    const key = partyKey(params.contextId, params.name);
    const after = options.after ?? this.partySeq.get(key) ?? 0;
    const registration: Registration = {
      handle: result.token,
      // A copy: the caller may reuse its object; reconnect() registers with these.
      params: { ...params },
      token: result.token,
      agentId: result.agentId,
      inbox: new AgentInbox((since, limit) => this.fetchSince(registration, since, limit), after),
    };
    this.registrations.add(registration);
    this.byToken.set(result.token, registration);
    this.byAgentId.set(result.agentId, registration);
    await registration.inbox.catchUp(
      options.after === undefined ? (events) => this.openTasksOnly(registration, events) : undefined,
    );
    return result;
  }

  /**
   * What a registration replays from the log when it does not say where to
   * start: the events of tasks still open, and the final event (`final:
   * true`, or a push) of a task that has ended, the one word on it that may
   * still be news. A task's other events are passed over once it has ended:
   * nothing can be done on it any more (a worker that took the task in an
   * earlier run does not get it again). A task the broker no longer has
   * counts as ended; a task whose state cannot be read now is kept.
   */
  private async openTasksOnly(registration: Registration, events: DurableEvent[]): Promise<DurableEvent[]> {
    const asked = new Set<string>();
    for (const event of events) if (!isFinalEvent(event)) asked.add(eventTaskId(event));
    const ended = new Set<string>();
    await Promise.all(
      [...asked].map(async (id) => {
        try {
          const { task } = (await this.connection.call('a2a.tasks.get', {
            token: registration.token,
            id,
            historyLength: 0,
          })) as MethodResult<'a2a.tasks.get'>;
          if (isTerminalState(task.status.state)) ended.add(id);
        } catch (error) {
          if (error instanceof BrokerError && error.code === 'A2A_UNKNOWN_TASK') ended.add(id);
        }
      }),
    );
    return events.filter((event) => isFinalEvent(event) || !ended.has(eventTaskId(event)));
  }

  /**
   * Takes the events addressed to the agent: those buffered since its last
   * wait at once, else the next to arrive, or `[]` at the timeout.
   */
  wait(options: WaitOptions): Promise<DurableEvent[]> {
    const timeout = options.timeoutSeconds ?? A2A_DEFAULT_STREAM_WAIT_SECONDS;
    if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout < 0) {
      return Promise.reject(
        invalidParams('timeoutSeconds must be a number of seconds from 0', [
          { path: ['timeoutSeconds'], message: 'expected a finite number >= 0', code: 'invalid_type' },
        ]),
      );
    }
    if (timeout > A2A_MAX_STREAM_WAIT_SECONDS) {
      return Promise.reject(
        invalidParams(`timeoutSeconds is at most A2A_MAX_STREAM_WAIT_SECONDS (${A2A_MAX_STREAM_WAIT_SECONDS})`, [
          { path: ['timeoutSeconds'], message: `must be <= ${A2A_MAX_STREAM_WAIT_SECONDS}`, code: 'too_big' },
        ]),
      );
    }
    const registration = this.byToken.get(options.token);
    if (!registration) {
      return Promise.reject(a2aError('A2A_UNKNOWN_TOKEN', 'no agent registered through this client has this token'));
    }
    return registration.inbox.wait(options.taskId, timeout * 1000);
  }

  /** Seq of the last event received for the agent (keep it to pass as `register`'s `after` later). */
  lastSeq(token: string): number | undefined {
    return this.byToken.get(token)?.inbox.lastSeq;
  }

  /** The agent's current id (it changes when `reconnect()` registers it again). */
  agentId(token: string): string | undefined {
    return this.byToken.get(token)?.agentId;
  }

  /**
   * Opens a new connection (a new child when this client spawns one, else the
   * streams given), registers every agent again and replays what each missed.
   * Calls made meanwhile wait for it. Tokens held by callers keep working.
   */
  reconnect(streams?: StreamPair | Duplex): Promise<void> {
    if (this.closing) return Promise.reject(new TransportError('CONNECTION_CLOSED', 'the client is closed'));
    if (!this.reconnecting) {
      this.reconnecting = this.doReconnect(streams).finally(() => {
        this.reconnecting = undefined;
      });
    }
    return this.reconnecting;
  }

  /**
   * Ends the connection: the broker answers the calls in flight and (when
   * spawned) exits. Pending waits resolve with `[]`. Agents are not
   * deregistered (a broker that lives on keeps them).
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const registration of this.registrations) registration.inbox.close();
    await this.connection.end();
    if (this.process) await this.process.stop();
    else this.connection.destroy();
  }

  private async openStreams(streams?: StreamPair | Duplex): Promise<StreamPair> {
    const given = streams ?? this.options.streams;
    if (given) return isStreamPair(given) ? given : asPair(given);
    if (this.options.socket !== undefined) return asPair(await connectSocket(this.options.socket));
    if (this.options.db !== undefined) {
      const { idleSeconds, taskRetentionMs } = this.options;
      return asPair(
        await joinHostBroker(this.options.db, {
          ...(idleSeconds === undefined ? {} : { idleSeconds }),
          ...(taskRetentionMs === undefined ? {} : { taskRetentionMs }),
        }),
      );
    }
    if (!this.options.spawn) throw new TypeError('connect() needs one of db, socket, spawn or streams');
    this.process = new ServeProcess(this.options.spawn);
    const { stdout, stdin } = this.process.child;
    if (!stdout || !stdin) throw new TransportError('SPAWN_FAILED', 'the child has no stdio pipes');
    return { readable: stdout, writable: stdin };
  }

  private async doReconnect(streams?: StreamPair | Duplex): Promise<void> {
    const old = this.connection;
    if (!old.closed) await old.end();
    if (this.process) await this.process.stop();
    await this.open(streams);
    const failures: unknown[] = [];
    for (const registration of this.registrations) {
      try {
        await this.reRegister(registration);
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length > 0) {
      throw new AggregateError(failures, `${failures.length} agent(s) could not register again`);
    }
  }

  private async reRegister(registration: Registration): Promise<void> {
    const result = (await this.connection.call('a2a.agents.register', registration.params)) as RegisterResult;
    if (registration.token !== registration.handle) this.byToken.delete(registration.token);
    this.byAgentId.delete(registration.agentId);
    registration.token = result.token;
    registration.agentId = result.agentId;
    this.byToken.set(result.token, registration);
    this.byAgentId.set(result.agentId, registration);
    this.aliased = true;
    await registration.inbox.catchUp();
  }

  private async deregisterAgent(params: unknown): Promise<unknown> {
    const token = (params as { token?: unknown } | undefined)?.token;
    const registration = typeof token === 'string' ? this.byToken.get(token) : undefined;
    if (!registration) return this.connection.call('a2a.agents.deregister', params);
    try {
      const result = await this.connection.call('a2a.agents.deregister', {
        ...(params as object),
        token: registration.token,
      });
      this.forget(registration);
      return result;
    } catch (error) {
      // An unknown token is gone on the broker's side too: forget it here.
      if (error instanceof BrokerError && error.code === 'A2A_UNKNOWN_TOKEN') this.forget(registration);
      throw error;
    }
  }

  private forget(registration: Registration): void {
    if (!this.registrations.delete(registration)) return;
    const key = partyKey(registration.params.contextId, registration.params.name);
    this.partySeq.set(key, Math.max(this.partySeq.get(key) ?? 0, registration.inbox.lastSeq));
    registration.inbox.close();
    this.byToken.delete(registration.handle);
    this.byToken.delete(registration.token);
    this.byAgentId.delete(registration.agentId);
  }

  private translate(params: unknown): unknown {
    if (params === null || typeof params !== 'object') return params;
    const token = (params as { token?: unknown }).token;
    if (typeof token !== 'string') return params;
    const registration = this.byToken.get(token);
    if (!registration || registration.token === token) return params;
    return { ...(params as object), token: registration.token };
  }

  private async fetchSince(registration: Registration, after: number, limit: number): Promise<DurableEvent[]> {
    const result = (await this.connection.call('a2a.events.since', {
      token: registration.token,
      after,
      limit,
    })) as MethodResult<'a2a.events.since'>;
    return result.events;
  }

  private onNotification(method: string, params: unknown): void {
    if (method !== 'a2a.task.event' && method !== 'a2a.push') return;
    if (params === null || typeof params !== 'object') return;
    const { recipient, seq } = params as { recipient?: unknown; seq?: unknown };
    if (typeof recipient !== 'string' || typeof seq !== 'number') return;
    // An event for an agent whose registration is not known yet is in the
    // log: the catch-up that follows the registration reads it.
    this.byAgentId.get(recipient)?.inbox.accept({ seq, method, params } as DurableEvent);
  }
}

/** Opens a channel to a broker in this process: a new one for the first connection and for each `reconnect()`. */
export type ChannelFactory = (events: {
  onNotification: NotificationListener;
  onClose: (reason: TransportError) => void;
}) => RpcChannel;

/** The channel factory of a client connected with `connectChannel`, by its options. */
const channelFactories = new WeakMap<ConnectOptions, ChannelFactory>();

/**
 * Connects over channels `open` makes (a broker in this process, without
 * JSON lines: `connectInProcess`) and performs the handshake.
 */
export async function connectChannel(
  open: ChannelFactory,
  client?: ConnectOptions['client'],
): Promise<SwitchboardClient> {
  const options: ConnectOptions = client === undefined ? {} : { client };
  channelFactories.set(options, open);
  const connection = new ClientBase(options);
  await connection.open();
  return connection as SwitchboardClient;
}

/**
 * Connects to a broker and performs the handshake: `{ db }` joins (or
 * starts) the host's broker of a file, `{ socket }` a broker listening on a
 * Unix socket, `{ spawn }` starts a private `switchboard serve` child,
 * `{ streams }` talks over streams already open. On a socket, the agents
 * registered through this client are no longer live once it closes (or its
 * process dies); their tasks are kept for the next registration of the same
 * `(contextId, name)`.
 */
export async function connect(options: ConnectOptions): Promise<SwitchboardClient> {
  const client = new ClientBase(options);
  await client.open();
  return client as SwitchboardClient;
}

function checkHost(raw: unknown): HandshakeResult {
  const parsed = HandshakeResultSchema.safeParse(raw);
  if (!parsed.success) {
    throw new TransportError('INCOMPATIBLE_HOST', 'the host answered the handshake with an unexpected shape');
  }
  const host = parsed.data;
  if (host.protocolVersion < PROTOCOL_VERSION) {
    throw new TransportError(
      'INCOMPATIBLE_HOST',
      `the host speaks protocol version ${host.protocolVersion}; this client needs ${PROTOCOL_VERSION} or later`,
    );
  }
  if (!host.capabilities.includes('a2a')) {
    throw new TransportError('INCOMPATIBLE_HOST', 'the host does not offer the "a2a" capability');
  }
  return host;
}

function partyKey(contextId: string, name: string): string {
  return `${contextId.length}:${contextId}${name}`;
}

/** A task's last word: a status-update that ends it, or a push (sent when a task ends). */
function isFinalEvent(event: DurableEvent): boolean {
  return event.method === 'a2a.push' || (event.params.event.kind === 'status-update' && event.params.event.final);
}

function isStreamPair(value: StreamPair | Duplex): value is StreamPair {
  const candidate = value as Partial<StreamPair>;
  return (
    typeof candidate.readable === 'object' &&
    candidate.readable !== null &&
    typeof candidate.writable === 'object' &&
    candidate.writable !== null
  );
}

function asPair(duplex: Duplex): StreamPair {
  return { readable: duplex, writable: duplex };
}
