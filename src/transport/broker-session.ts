import type { Readable, Writable } from 'node:stream';
import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import { callLogFields } from '../log/log-fields.js';
import { silentLogger } from '../log/logger.js';
import { notificationToV1, v1Call } from '../protocol/a2a-v1/methods.js';
import { A2A_V1_PROTOCOL_VERSION, PROTOCOL_VERSION } from '../protocol/bounds.js';
import type { DurableEvent } from '../protocol/events.js';
import type { HandshakeResult, RegisterResult } from '../protocol/methods.js';
import { paramsText } from '../persistence/a2a/store.js';
import { VERSION } from '../version.js';
import { EventRelay, type EventSink } from './event-relay.js';
import { type DispatchedCall, JsonRpcServer } from './jsonrpc-server.js';

/** What every broker session takes, whatever carries its calls. */
export interface SessionCommonOptions {
  broker: BrokerApi;
  logger?: Logger;
  /**
   * Connection-scoped agents: when the connection closes, however it closes
   * (end of input, a reset, a killed peer), the registrations made through it
   * end (`BrokerApi.endRegistrations`: tokens invalidated, tasks kept).
   * Default false: they outlive the session.
   */
  connectionScoped?: boolean;
}

/** A session over JSON lines on a pair of streams. */
export interface StreamSessionOptions extends SessionCommonOptions {
  /** Requests (e.g. `process.stdin`). */
  input: Readable;
  /** Answers and notifications (e.g. `process.stdout`). */
  output: Writable;
  /** Bytes of one line (default 32 MiB). */
  maxLineBytes?: number;
  /** Characters of output held back before input pauses and events wait in the log (default 1 MiB). */
  outputHighWaterMark?: number;
  link?: undefined;
}

/**
 * A session whose peer is in this process (`DirectChannel`): it calls the
 * session and takes its notifications without JSON lines.
 */
export interface LinkedSessionOptions extends SessionCommonOptions {
  link: (dispatch: SessionDispatch) => SessionLink;
}

export type BrokerSessionOptions = StreamSessionOptions | LinkedSessionOptions;

/**
 * How a link hands the session a call: the answer, or a rejection the link
 * turns into an error answer. A link that bounds its calls in flight passes
 * `call`: a blocking send waiting for its task parks itself (`park`) and
 * stops counting among them.
 */
export type SessionDispatch = (method: string, params: unknown, call?: DispatchedCall) => unknown;

/**
 * The session's side of its connection: where its notifications go, how
 * congested that is, and when the peer has gone. JSON lines on a pair of
 * streams (a `JsonRpcServer`), or a peer in this process (`DirectChannel`).
 */
export interface SessionLink {
  /** A notification whose params are values. */
  notify(method: string, params: unknown): void;
  /** A notification whose params are already JSON text (the text the broker logged). */
  notifyText(method: string, paramsJson: string): void;
  readonly congested: boolean;
  /** True once nothing more can be delivered (the peer went away). */
  readonly closed: boolean;
  whenDrained(): Promise<void>;
  /** Characters of output waiting for the peer to read. */
  readonly backlog: number;
  /** Resolves once the peer sends no more calls (those under way may still be unanswered). */
  readonly callsEnded: Promise<void>;
  /** Resolves once the peer has gone and every call is answered (and flushed). */
  readonly ended: Promise<void>;
  /** Takes no more calls, answers those under way; resolves as `ended`. */
  stop(): Promise<void>;
}

/** The JSON-lines link: a `JsonRpcServer` on the session's streams. */
function linesLink(options: StreamSessionOptions, dispatch: SessionDispatch, logger: Logger): SessionLink {
  const server = new JsonRpcServer({
    input: options.input,
    output: options.output,
    dispatch,
    logger,
    maxLineBytes: options.maxLineBytes,
    outputHighWaterMark: options.outputHighWaterMark,
  });
  return {
    notify: (method, params) => server.notify(method, params),
    notifyText: (method, text) => server.notifyText(method, text),
    get congested() {
      return server.writer.congested;
    },
    get closed() {
      return server.writer.closed;
    },
    whenDrained: () => server.writer.whenDrained(),
    get backlog() {
      return server.writer.backlog;
    },
    callsEnded: server.callsEnded,
    ended: server.closed,
    stop: () => server.stop(),
  };
}

/**
 * One connection to a broker: the `a2a.*` methods and `app.handshake` served
 * as JSON-RPC over NDJSON (or, linked to a peer in this process, handed over
 * as values), plus the notifications of every agent registered through this
 * connection. The broker outlives the session: closing a
 * session does not close the broker, and ends its agents' registrations only
 * when `connectionScoped`.
 */
export class BrokerSession {
  private readonly link: SessionLink;
  private readonly broker: BrokerApi;
  private readonly logger: Logger;
  /** Relays by the token of their registration. */
  private readonly relays = new Map<string, EventRelay>();
  private readonly sink: EventSink;
  private closing = false;
  private pauses = 0;
  private readonly scoped: boolean;
  /** Tokens registered through this connection and not deregistered (connection-scoped sessions). */
  private readonly owned = new Set<string>();
  private readonly released: Promise<void>;
  /** Aborted once the peer sends no more calls: its blocking sends are answered at once. */
  private readonly callsEnded = new AbortController();
  /**
   * The protocol version the last handshake settled: 10 (v0.3 shapes, the
   * default) or 11 (A2A v1.0 shapes and method names, mapped here at the
   * edge: the broker itself speaks version 10 only).
   */
  private protocolVersion = PROTOCOL_VERSION;

  constructor(options: BrokerSessionOptions) {
    this.broker = options.broker;
    this.logger = options.logger ?? silentLogger();
    const dispatch: SessionDispatch = (method, params, call) => this.dispatch(method, params, call);
    const link = options.link === undefined ? linesLink(options, dispatch, this.logger) : options.link(dispatch);
    this.link = link;
    this.sink = {
      write: (event: DurableEvent) => {
        if (this.protocolVersion === A2A_V1_PROTOCOL_VERSION) {
          link.notify(event.method, notificationToV1(event.method, event.params));
        } else {
          // The params text the broker logged: it is not serialized again.
          link.notifyText(event.method, paramsText(event));
        }
      },
      get congested() {
        return link.congested;
      },
      get closed() {
        return link.closed;
      },
      whenDrained: () => link.whenDrained(),
    };
    this.scoped = options.connectionScoped ?? false;
    void link.callsEnded.then(() => this.callsEnded.abort());
    this.released = link.ended.then(() => {
      this.closing = true;
      this.stopRelays();
      return this.releaseAgents();
    });
  }

  /**
   * Resolves when the peer has gone (input ended) and every call is answered
   * and flushed (and, connection-scoped, its agents' registrations ended).
   */
  get closed(): Promise<void> {
    return this.released;
  }

  /** Registrations made through this connection that are still live (connection-scoped sessions). */
  get agentCount(): number {
    return this.owned.size;
  }

  /** Characters of output waiting for the peer to read. */
  get outputBacklog(): number {
    return this.link.backlog;
  }

  /** How many times a relay let go of the live stream (the peer was not reading, or a gap) and caught up from the log. */
  get relayPauses(): number {
    return this.pauses;
  }

  /** Agents whose events this session relays. */
  get relayCount(): number {
    return this.relays.size;
  }

  /** Stops reading, finishes the calls in flight, flushes output, stops relaying. */
  async close(): Promise<void> {
    this.closing = true;
    await this.link.stop();
    this.stopRelays();
    await this.released;
  }

  private async releaseAgents(): Promise<void> {
    if (this.owned.size === 0) return;
    const tokens = [...this.owned];
    this.owned.clear();
    try {
      const ended = await this.broker.endRegistrations(tokens);
      this.logger.info({ ended }, 'connection closed: its agents are no longer live');
    } catch (error) {
      this.logger.warn({ err: { message: (error as Error).message } }, "could not end the connection's registrations");
    }
  }

  /**
   * Routes a call; at debug level and below, logs one line per answered or
   * refused call (\`callLogFields\`: task id, agent id, state, sizes; never a
   * token or a payload body).
   */
  private dispatch(method: string, params: unknown, call: DispatchedCall | undefined): unknown {
    if (!this.logger.isLevelEnabled('debug')) return this.route(method, params, call);
    const started = performance.now();
    let answer: unknown;
    try {
      answer = this.route(method, params, call);
    } catch (error) {
      this.logCall(method, params, started, undefined, error);
      throw error;
    }
    if (answer instanceof Promise) {
      return answer.then(
        (result: unknown) => {
          this.logCall(method, params, started, result);
          return result;
        },
        (error: unknown) => {
          this.logCall(method, params, started, undefined, error);
          throw error;
        },
      );
    }
    this.logCall(method, params, started, answer);
    return answer;
  }

  private logCall(method: string, params: unknown, started: number, result: unknown, error?: unknown): void {
    const fields = {
      ...callLogFields(method, params, result),
      ms: Math.round((performance.now() - started) * 1000) / 1000,
    };
    if (error === undefined) {
      this.logger.debug(fields, 'call answered');
      return;
    }
    this.logger.debug({ ...fields, code: (error as { code?: unknown }).code }, 'call refused');
  }

  private route(method: string, params: unknown, call: DispatchedCall | undefined): unknown {
    if (method === 'app.handshake') {
      return this.broker.dispatch(method, params).then((result) => {
        this.protocolVersion = (result as HandshakeResult).protocolVersion;
        return result;
      });
    }
    if (this.protocolVersion !== A2A_V1_PROTOCOL_VERSION) return this.routeBroker(method, params, call);
    let mapped: ReturnType<typeof v1Call>;
    try {
      mapped = v1Call(method, params, VERSION);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.routeBroker(mapped.method, mapped.params, call).then((result) => mapped.answer(result));
  }

  /** A call of version 10 to the broker (version 11 calls arrive here mapped). */
  private routeBroker(method: string, params: unknown, dispatched?: DispatchedCall): Promise<unknown> {
    // The broker answers every method of the table, `app.handshake` included. A blocking
    // send is answered at once when the peer sends no more calls (its close waits for no
    // task), and holds no slot of the link's while it waits; any other call takes no options.
    const call =
      method === 'a2a.message.send' && (params as { blocking?: unknown } | null)?.blocking === true
        ? this.broker.dispatch(method, params, {
            signal: this.callsEnded.signal,
            ...(dispatched === undefined ? {} : { onWaiting: () => dispatched.park() }),
          })
        : this.broker.dispatch(method, params);
    if (method === 'a2a.agents.register') {
      return call.then((result) => {
        const registration = result as RegisterResult;
        if (this.scoped) {
          // Answered after the connection closed: nobody holds the token.
          if (this.closing) void this.broker.endRegistrations([registration.token]);
          else this.owned.add(registration.token);
        }
        this.startRelay(registration);
        return result;
      });
    }
    if (method === 'a2a.agents.deregister') {
      return call.then((result) => {
        const token = (params as { token: string }).token;
        this.owned.delete(token);
        this.relays.get(token)?.stop();
        return result;
      });
    }
    return call;
  }

  private startRelay(registration: RegisterResult): void {
    if (this.closing) return;
    const { agentId, token } = registration;
    const relay = new EventRelay({
      agentId,
      token,
      broker: this.broker,
      sink: this.sink,
      logger: this.logger,
      onPause: () => {
        this.pauses++;
      },
      onStop: () => {
        if (this.relays.get(token) === relay) this.relays.delete(token);
      },
    });
    this.relays.set(token, relay);
    relay.start();
  }

  private stopRelays(): void {
    for (const relay of [...this.relays.values()]) relay.stop();
    this.relays.clear();
  }
}
