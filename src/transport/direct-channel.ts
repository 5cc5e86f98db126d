import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/logger.js';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';
import { answerTooLarge } from '../protocol/broker-error.js';
import { BrokerSession, type SessionDispatch, type SessionLink } from './broker-session.js';
import { fromJsonRpcError, logInternalFailure, toJsonRpcError } from './jsonrpc-errors.js';
import { answerHintFor } from './jsonrpc-server.js';
import type { NotificationListener, RpcChannel } from './rpc-connection.js';
import { TransportError } from './transport-error.js';

/** Options of a `DirectChannel`: the broker, and the client's listener of notifications. */
export interface DirectChannelOptions {
  broker: BrokerApi;
  onNotification: NotificationListener;
  /** Called once when the channel is gone (either side closed it). */
  onClose?: (reason: TransportError) => void;
  logger?: Logger;
}

/**
 * A client's connection to a `BrokerSession` in the same process, without
 * JSON lines: no streams, no framing, no line to split. What crosses is what
 * the wire would carry, as values:
 *  - a call's params and its answer are JSON copies (the caller never shares
 *    an object with the broker; a value JSON cannot carry is refused as the
 *    wire refuses it), and an answer longer than a line may be is refused
 *    as on the wire;
 *  - an event is parsed from the text the broker logged;
 *  - a refusal is the `BrokerError` the wire would give, an internal
 *    failure the wire's `INTERNAL_ERROR`.
 * Calls go to the session on the next microtask (never inside the caller's
 * turn, nor inside the broker's), notifications the same, in order.
 */
export class DirectChannel implements RpcChannel {
  readonly session: BrokerSession;
  private readonly options: DirectChannelOptions;
  private readonly logger: Logger;
  private dispatch!: SessionDispatch;
  private closedReason: TransportError | undefined;
  /** No more calls are taken (`end`, `destroy`, or the session stopped). */
  private ending = false;
  /** Calls handed to the session and not yet answered. */
  private inFlight = 0;
  /** The client's calls not yet answered: rejected at once by `destroy`. */
  private readonly pendingCalls = new Set<(reason: TransportError) => void>();
  private readonly ended: Promise<void>;
  private resolveEnded!: () => void;
  private readonly callsEnded: Promise<void>;
  private resolveCallsEnded!: () => void;

  constructor(options: DirectChannelOptions) {
    this.options = options;
    this.logger = options.logger ?? silentLogger();
    this.ended = new Promise((resolve) => {
      this.resolveEnded = resolve;
    });
    this.callsEnded = new Promise((resolve) => {
      this.resolveCallsEnded = resolve;
    });
    this.session = new BrokerSession({
      broker: options.broker,
      logger: options.logger,
      link: (dispatch) => {
        this.dispatch = dispatch;
        return this.link();
      },
    });
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  call(method: string, params: unknown): Promise<unknown> {
    if (this.closedReason) return Promise.reject(this.closedReason);
    if (this.ending) {
      return Promise.reject(new TransportError('CONNECTION_CLOSED', 'the connection was ended by the client'));
    }
    let copy: unknown;
    try {
      // What the wire would carry: a value JSON cannot hold fails here, as `JSON.stringify` fails there.
      const text = JSON.stringify(params);
      copy = text === undefined ? undefined : JSON.parse(text);
    } catch (error) {
      return Promise.reject(error);
    }
    this.inFlight++;
    return new Promise((resolve, reject) => {
      const abandon = (reason: TransportError) => reject(reason);
      this.pendingCalls.add(abandon);
      queueMicrotask(() => {
        let answer: unknown;
        try {
          answer = this.dispatch(method, copy);
        } catch (error) {
          this.settle(abandon, method, () => reject(this.refusal(method, error)));
          return;
        }
        Promise.resolve(answer).then(
          (result) => this.settle(abandon, method, () => this.answer(method, result, resolve, reject)),
          (error: unknown) => this.settle(abandon, method, () => reject(this.refusal(method, error))),
        );
      });
    });
  }

  /** Takes no more calls; resolves once the calls under way are answered (the session then ends). */
  end(): Promise<void> {
    this.stopTakingCalls();
    this.endIfIdle();
    return this.ended;
  }

  /** Drops the channel at once: pending calls reject with CONNECTION_CLOSED (the session still finishes them). */
  destroy(reason = 'connection closed by the client'): void {
    this.stopTakingCalls();
    this.fail(new TransportError('CONNECTION_CLOSED', reason));
    this.endIfIdle();
  }

  private link(): SessionLink {
    const channel = this;
    return {
      notify: (method, params) => this.deliver(method, () => JSON.parse(JSON.stringify(params)) as unknown),
      notifyText: (method, text) => this.deliver(method, () => JSON.parse(text) as unknown),
      congested: false,
      get closed() {
        return channel.closedReason !== undefined;
      },
      whenDrained: () => Promise.resolve(),
      backlog: 0,
      callsEnded: this.callsEnded,
      ended: this.ended,
      stop: () => {
        // The session stops: the client learns it once the calls under way are answered.
        this.stopTakingCalls();
        this.endIfIdle();
        return this.ended;
      },
    };
  }

  private deliver(method: string, params: () => unknown): void {
    if (this.closedReason) return;
    queueMicrotask(() => {
      if (this.closedReason) return;
      this.options.onNotification(method, params());
    });
  }

  private settle(abandon: (reason: TransportError) => void, method: string, answer: () => void): void {
    this.inFlight--;
    const waiting = this.pendingCalls.delete(abandon);
    if (waiting) answer();
    else this.logger.debug({ method }, 'a call was answered after its client dropped the connection');
    this.endIfIdle();
  }

  private answer(method: string, result: unknown, resolve: (value: unknown) => void, reject: (e: unknown) => void) {
    let text: string;
    try {
      text = JSON.stringify(result === undefined ? null : result) ?? 'null';
    } catch (error) {
      reject(
        error instanceof RangeError
          ? fromJsonRpcError(toJsonRpcError(answerTooLarge(undefined, false, answerHintFor(method))))
          : this.refusal(method, error),
      );
      return;
    }
    // A character is at most 3 bytes of UTF-8: only a long answer is measured.
    if (text.length * 3 > MAX_LINE_BYTES) {
      const bytes = Buffer.byteLength(text, 'utf8');
      if (bytes > MAX_LINE_BYTES) {
        this.logger.warn({ method, bytes }, 'an answer was longer than the line bound');
        reject(fromJsonRpcError(toJsonRpcError(answerTooLarge(bytes, false, answerHintFor(method)))));
        return;
      }
    }
    resolve(JSON.parse(text));
  }

  /** The error the wire would give for a refused or failed call. */
  private refusal(method: string, error: unknown): Error {
    logInternalFailure(this.logger, method, error);
    return fromJsonRpcError(toJsonRpcError(error));
  }

  private stopTakingCalls(): void {
    this.ending = true;
    this.resolveCallsEnded();
  }

  private fail(reason: TransportError): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    const calls = [...this.pendingCalls];
    this.pendingCalls.clear();
    for (const abandon of calls) abandon(reason);
    this.options.onClose?.(reason);
  }

  private endIfIdle(): void {
    if (!this.ending || this.inFlight > 0) return;
    this.fail(new TransportError('CONNECTION_CLOSED', 'the broker closed the connection'));
    this.resolveEnded();
  }
}
