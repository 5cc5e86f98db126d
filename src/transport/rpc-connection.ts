import type { Readable, Writable } from 'node:stream';
import { type JsonRpcErrorObject, fromJsonRpcError } from './jsonrpc-errors.js';
import { LineWriter } from './line-writer.js';
import { LineSplitter, isBlankLine } from './ndjson.js';
import { TransportError } from './transport-error.js';

export type NotificationListener = (method: string, params: unknown) => void;

interface PendingCall {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * What a client calls a broker through: JSON-RPC over NDJSON on a pair of
 * streams (`RpcConnection`), or a session in the same process
 * (`DirectChannel`).
 */
export interface RpcChannel {
  readonly closed: boolean;
  call(method: string, params: unknown): Promise<unknown>;
  /** Takes no more calls; those under way are still answered. */
  end(): Promise<void>;
  /** Drops the channel at once: pending calls reject with CONNECTION_CLOSED. */
  destroy(reason?: string): void;
}

export interface RpcConnectionOptions {
  /** The server's output (answers and notifications come from here). */
  readable: Readable;
  /** The server's input (requests go here). */
  writable: Writable;
  onNotification: NotificationListener;
  /** Called once when the connection is gone (either side closed or failed). */
  onClose?: (reason: TransportError) => void;
}

/**
 * The client half of JSON-RPC over NDJSON: numbered requests, answers matched
 * by id (in any order), notifications handed to a listener. Requests of one
 * turn of the event loop go out in one write.
 */
export class RpcConnection implements RpcChannel {
  private readonly readable: Readable;
  private readonly writable: Writable;
  private readonly writer: LineWriter;
  private readonly splitter: LineSplitter;
  private readonly options: RpcConnectionOptions;
  private readonly calls = new Map<number, PendingCall>();
  private nextId = 1;
  private closedReason: TransportError | undefined;

  constructor(options: RpcConnectionOptions) {
    this.options = options;
    this.readable = options.readable;
    this.writable = options.writable;
    this.writer = new LineWriter(this.writable);
    this.splitter = new LineSplitter({
      line: (text) => this.onLine(text),
      oversized: () => this.fail(new TransportError('PROTOCOL_VIOLATION', 'the server wrote an oversized line')),
    });
    this.readable.on('data', this.onData);
    this.readable.on('end', this.onEnd);
    this.readable.on('close', this.onEnd);
    this.readable.on('error', this.onError);
    // The request side closing is not the end: after `end()` the answers to
    // the calls in flight still come. The answer side ending is.
    this.writable.on('error', this.onError);
  }

  get closed(): boolean {
    return this.closedReason !== undefined;
  }

  /** Calls not yet answered. */
  get pending(): number {
    return this.calls.size;
  }

  call(method: string, params: unknown): Promise<unknown> {
    if (this.closedReason) return Promise.reject(this.closedReason);
    const id = this.nextId++;
    const line = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    return new Promise((resolve, reject) => {
      this.calls.set(id, { resolve, reject });
      this.writer.write(line);
    });
  }

  /** Writes everything queued. */
  flush(): Promise<void> {
    return this.writer.flush();
  }

  /** Ends the request stream; pending calls are refused once the reader closes. */
  async end(): Promise<void> {
    if (!this.closedReason) {
      await this.writer.flush();
      this.writable.end();
    }
  }

  /** Drops the connection at once: pending calls reject with CONNECTION_CLOSED. */
  destroy(reason = 'connection closed by the client'): void {
    this.fail(new TransportError('CONNECTION_CLOSED', reason));
    this.readable.destroy();
    this.writable.destroy();
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.splitter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  };

  private readonly onEnd = (): void => {
    this.fail(new TransportError('CONNECTION_CLOSED', 'the broker closed the connection'));
  };

  private readonly onError = (error: Error): void => {
    this.fail(new TransportError('CONNECTION_CLOSED', `the connection failed: ${error.message}`, { cause: error }));
  };

  private fail(reason: TransportError): void {
    if (this.closedReason) return;
    this.closedReason = reason;
    this.readable.off('data', this.onData);
    this.writer.detach();
    const calls = [...this.calls.values()];
    this.calls.clear();
    for (const call of calls) call.reject(reason);
    this.options.onClose?.(reason);
  }

  private onLine(text: string): void {
    if (isBlankLine(text)) return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.fail(new TransportError('PROTOCOL_VIOLATION', 'the server wrote a line that is not JSON'));
      return;
    }
    if (Array.isArray(message)) {
      for (const entry of message) this.onMessage(entry);
    } else {
      this.onMessage(message);
    }
  }

  private onMessage(message: unknown): void {
    if (message === null || typeof message !== 'object') return;
    const m = message as { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };
    if (typeof m.method === 'string') {
      if (m.id === undefined) this.options.onNotification(m.method, m.params);
      return;
    }
    if (typeof m.id !== 'number') return;
    const call = this.calls.get(m.id);
    if (!call) return;
    this.calls.delete(m.id);
    if (m.error !== undefined && m.error !== null && typeof m.error === 'object') {
      call.reject(fromJsonRpcError(m.error as JsonRpcErrorObject));
    } else {
      call.resolve(m.result);
    }
  }
}
