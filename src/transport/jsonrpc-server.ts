import type { Readable, Writable } from 'node:stream';
import type { Logger } from '../log/logger.js';
import { silentLogger } from '../log/logger.js';
import { isBrokerError } from '../protocol/broker-error.js';
import type { JsonRpcId } from '../protocol/jsonrpc.js';
import {
  JSONRPC_INVALID_REQUEST,
  JSONRPC_PARSE_ERROR,
  type JsonRpcErrorObject,
  toJsonRpcError,
} from './jsonrpc-errors.js';
import { LineWriter } from './line-writer.js';
import { LineSplitter, isBlankLine } from './ndjson.js';

/** Routes one call. May throw or reject; the server turns that into an error answer. */
export type Dispatch = (method: string, params: unknown) => unknown;

export interface JsonRpcServerOptions {
  /** Requests come in here (the peer's output, e.g. stdin). */
  input: Readable;
  /** Answers and notifications go out here (e.g. stdout). */
  output: Writable;
  dispatch: Dispatch;
  logger?: Logger;
  /** Bytes of one line (default 32 MiB). */
  maxLineBytes?: number;
  /** Characters of output held back before input is paused (default 1 MiB). */
  outputHighWaterMark?: number;
  /** Calls in flight before input is paused until half of them are answered (default 4096). */
  maxInFlight?: number;
}

/**
 * JSON-RPC 2.0 over NDJSON on a pair of streams. Calls are dispatched as they
 * are read, without waiting for earlier ones, so that a broker can gather the
 * calls of one tick into one commit; answers go out as they settle (the `id`
 * matches them). When output backs up, input is paused until it drains, so a
 * peer that does not read cannot make the server buffer without bound.
 */
export class JsonRpcServer {
  readonly writer: LineWriter;
  private readonly input: Readable;
  private readonly dispatch: Dispatch;
  private readonly logger: Logger;
  private readonly splitter: LineSplitter;
  private inFlight = 0;
  private inputEnded = false;
  private stopping = false;
  private pausedForOutput = false;
  private pausedForLoad = false;
  private readonly maxInFlight: number;
  private idleWaiters: (() => void)[] = [];
  private readonly done: Promise<void>;
  private resolveDone!: () => void;

  constructor(options: JsonRpcServerOptions) {
    this.input = options.input;
    this.dispatch = options.dispatch;
    this.logger = options.logger ?? silentLogger();
    this.maxInFlight = options.maxInFlight ?? 4096;
    this.writer = new LineWriter(options.output, { highWaterMark: options.outputHighWaterMark });
    this.splitter = new LineSplitter(
      { line: (text) => this.onLine(text), oversized: (bytes) => this.onOversized(bytes) },
      { maxLineBytes: options.maxLineBytes },
    );
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
    this.input.on('data', this.onData);
    this.input.on('end', this.onInputEnd);
    this.input.on('error', this.onInputError);
    this.input.on('close', this.onInputEnd);
  }

  /** Calls dispatched and not yet answered. */
  get pending(): number {
    return this.inFlight;
  }

  /** Resolves once input has ended (or `stop` was called), every call is answered and output is flushed. */
  get closed(): Promise<void> {
    return this.done;
  }

  /** Writes a notification (no `id`). */
  notify(method: string, params: unknown): void {
    this.writer.write(JSON.stringify({ jsonrpc: '2.0', method, params }));
  }

  /**
   * Writes a notification whose params are already JSON text: the same line
   * `notify` writes for those params.
   */
  notifyText(method: string, paramsJson: string): void {
    this.writer.write(`{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${paramsJson}}`);
  }

  /** Stops reading, answers the calls in flight, flushes output. */
  stop(): Promise<void> {
    if (!this.stopping) {
      this.stopping = true;
      this.detachInput();
      this.input.pause();
      void this.finish();
    }
    return this.done;
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.splitter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    this.applyBackPressure();
  };

  private readonly onInputEnd = (): void => {
    if (this.inputEnded) return;
    this.inputEnded = true;
    this.splitter.end();
    if (!this.stopping) {
      this.stopping = true;
      this.detachInput();
      void this.finish();
    }
  };

  private readonly onInputError = (error: Error): void => {
    this.logger.warn({ err: { message: error.message } }, 'input stream failed');
    this.onInputEnd();
  };

  private detachInput(): void {
    this.input.off('data', this.onData);
    this.input.off('end', this.onInputEnd);
    this.input.off('error', this.onInputError);
    this.input.off('close', this.onInputEnd);
    // Keep an error after detaching from becoming an uncaught exception.
    this.input.on('error', () => {});
  }

  private async finish(): Promise<void> {
    await this.whenIdle();
    await this.writer.flush();
    this.writer.detach();
    this.resolveDone();
  }

  private whenIdle(): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Input is paused while output is congested (a peer that does not read)
   * or while too many calls are in flight (a peer that floods a slow
   * broker), so that neither makes the server buffer without bound.
   */
  private applyBackPressure(): void {
    if (this.stopping) return;
    if (!this.pausedForLoad && this.inFlight >= this.maxInFlight) {
      this.pausedForLoad = true;
      this.input.pause();
    }
    if (!this.pausedForOutput && this.writer.congested) {
      this.pausedForOutput = true;
      this.input.pause();
      void this.writer.whenDrained().then(() => {
        this.pausedForOutput = false;
        this.resumeInput();
      });
    }
  }

  private resumeInput(): void {
    if (this.stopping || this.pausedForOutput || this.pausedForLoad) return;
    this.input.resume();
  }

  private onOversized(bytes: number): void {
    this.logger.warn({ bytes }, 'discarded a line longer than the line bound');
    this.writeError(null, {
      code: JSONRPC_INVALID_REQUEST,
      message: `Invalid Request: line exceeds ${this.splitter.maxLineBytes} bytes`,
    });
  }

  private onLine(text: string): void {
    if (isBlankLine(text)) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.writeError(null, { code: JSONRPC_PARSE_ERROR, message: 'Parse error' });
      return;
    }
    if (Array.isArray(message)) {
      this.onBatch(message);
      return;
    }
    const answer = this.handle(message);
    if (answer === undefined) return;
    if (typeof answer === 'string') {
      this.writer.write(answer);
      return;
    }
    // The line is written before the call stops counting as in flight, so
    // that `stop()` never resolves ahead of an answer.
    void this.track(
      answer.then((line) => {
        if (line !== undefined) this.writer.write(line);
      }),
    );
  }

  private onBatch(messages: unknown[]): void {
    if (messages.length === 0) {
      this.writeError(null, { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request: empty batch' });
      return;
    }
    const answers = messages.map((m) => this.handle(m));
    void this.track(
      Promise.all(answers).then((lines) => {
        const present = lines.filter((line): line is string => line !== undefined);
        if (present.length > 0) this.writer.write(`[${present.join(',')}]`);
      }),
    );
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inFlight++;
    const settle = () => {
      this.inFlight--;
      if (this.pausedForLoad && this.inFlight <= this.maxInFlight / 2) {
        this.pausedForLoad = false;
        this.resumeInput();
      }
      if (this.inFlight === 0 && this.idleWaiters.length > 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const waiter of waiters) waiter();
      }
    };
    return promise.finally(settle);
  }

  /**
   * Handles one request object: undefined for a notification (never
   * answered), a serialized answer when it is known at once, or a promise of
   * one. Never throws, never rejects.
   */
  private handle(message: unknown): string | Promise<string | undefined> | undefined {
    if (message === null || typeof message !== 'object' || Array.isArray(message)) {
      return errorLine(null, { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request: not a request object' });
    }
    const request = message as Record<string, unknown>;
    const hasId = Object.hasOwn(request, 'id');
    const id = request.id;
    const params = request.params;
    if (
      request.jsonrpc !== '2.0' ||
      typeof request.method !== 'string' ||
      (hasId && !isJsonRpcId(id)) ||
      (params !== undefined && (params === null || typeof params !== 'object'))
    ) {
      return errorLine(null, { code: JSONRPC_INVALID_REQUEST, message: 'Invalid Request' });
    }
    const method = request.method;
    let result: unknown;
    try {
      result = this.dispatch(method, params);
    } catch (error) {
      if (!hasId) return this.logNotificationFailure(method, error);
      return errorLine(id as JsonRpcId, this.toError(method, error));
    }
    if (!hasId) {
      if (isPromiseLike(result)) {
        this.track(Promise.resolve(result)).catch((error: unknown) => this.logNotificationFailure(method, error));
      }
      return undefined;
    }
    if (!isPromiseLike(result)) return resultLine(id as JsonRpcId, result);
    return Promise.resolve(result).then(
      (value) => resultLine(id as JsonRpcId, value),
      (error: unknown) => errorLine(id as JsonRpcId, this.toError(method, error)),
    );
  }

  private toError(method: string, error: unknown): JsonRpcErrorObject {
    if (!isBrokerError(error)) {
      this.logger.error(
        {
          method,
          err: error instanceof Error ? { message: error.message, stack: error.stack } : { value: typeof error },
        },
        'internal error while handling a call',
      );
    }
    return toJsonRpcError(error);
  }

  private logNotificationFailure(method: string, error: unknown): undefined {
    if (!isBrokerError(error)) this.toError(method, error);
    return undefined;
  }

  private writeError(id: JsonRpcId, error: JsonRpcErrorObject): void {
    this.writer.write(errorLine(id, error));
  }
}

function isJsonRpcId(value: unknown): value is JsonRpcId {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

function errorLine(id: JsonRpcId, error: JsonRpcErrorObject): string {
  return JSON.stringify({ jsonrpc: '2.0', id, error });
}

function resultLine(id: JsonRpcId, result: unknown): string {
  try {
    return JSON.stringify({ jsonrpc: '2.0', id, result: result === undefined ? null : result });
  } catch {
    return errorLine(id, toJsonRpcError(undefined));
  }
}
