import type { Readable, Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { type JSONRPCMessage, JSONRPCMessageSchema, type RequestId } from '@modelcontextprotocol/sdk/types.js';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';
import { JSONRPC_INVALID_REQUEST, JSONRPC_PARSE_ERROR, type JsonRpcErrorObject } from './jsonrpc-errors.js';
import { LineWriter } from './line-writer.js';
import { type LineEdges, LineSplitter, isBlankLine } from './ndjson.js';

/** Options of `McpStdioTransport`: its streams and its line bound. */
export interface McpStdioTransportOptions {
  /** Messages from the host (default `process.stdin`). */
  input?: Readable;
  /** Messages to the host (default `process.stdout`). */
  output?: Writable;
  /** Bytes of one message before its `\n` (default `MAX_LINE_BYTES`, 32 MiB, the broker's own bound). */
  maxLineBytes?: number;
}

/** Why an `McpStdioTransport` closed, as `closeReason` tells it. */
export type McpTransportCloseReason =
  /** The host ended the input (end of stdin): the ordinary way a host stops a stdio server. */
  | { kind: 'input-ended' }
  /** Reading the input failed. */
  | { kind: 'input-failed'; message: string }
  /** Writing failed (the host no longer reads: EPIPE, or the output closed). */
  | { kind: 'output-failed'; message: string }
  /** `close()` was called. */
  | { kind: 'closed' };

/** Bytes kept from each end of an oversized message to read its `id` from. */
const ID_EDGE_BYTES = 1024;

/**
 * The MCP SDK's `Transport` over stdio with the broker's framing bound: each
 * message is one NDJSON line of at most `maxLineBytes` bytes, read by the
 * bounded `LineSplitter`, so memory holds at most one bounded line. A line
 * over the bound, a line that is not JSON, not UTF-8 or not a JSON-RPC
 * message is answered with a JSON-RPC error (its `id` when one can be read,
 * else `null`) and the transport keeps reading: only the end or failure of
 * a stream closes it (`closeReason` says which).
 */
export class McpStdioTransport implements Transport {
  /** Called once when the transport closes, whatever the cause (`closeReason` says which); set by `Server.connect`. */
  onclose?: () => void;
  /** Told of a message refused (an oversized line); the transport keeps reading. Set by `Server.connect`. */
  onerror?: (error: Error) => void;
  /** Called with each valid JSON-RPC message read; set by `Server.connect`. */
  onmessage?: (message: JSONRPCMessage) => void;
  /** Bytes of one message before its `\n`. */
  readonly maxLineBytes: number;
  private readonly input: Readable;
  private readonly output: Writable;
  private readonly splitter: LineSplitter;
  private readonly writer: LineWriter;
  private started = false;
  private reason: McpTransportCloseReason | undefined;

  constructor(options: McpStdioTransportOptions = {}) {
    this.input = options.input ?? process.stdin;
    this.output = options.output ?? process.stdout;
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.splitter = new LineSplitter(
      {
        line: (text) => this.onLine(text),
        oversized: (bytes, edges) => this.onOversized(bytes, edges),
        invalidUtf8: () =>
          this.refuse(null, {
            code: JSONRPC_PARSE_ERROR,
            message: 'Parse error: the message is not valid UTF-8; send every message as UTF-8 JSON text',
          }),
      },
      { maxLineBytes: this.maxLineBytes, edgeBytes: ID_EDGE_BYTES },
    );
    this.writer = new LineWriter(this.output);
  }

  /** Why the transport closed; undefined while it is open. */
  get closeReason(): McpTransportCloseReason | undefined {
    return this.reason;
  }

  /** Starts reading input (`Server.connect` calls it; a second call throws). */
  async start(): Promise<void> {
    if (this.started) throw new Error('McpStdioTransport already started: Server.connect() starts it');
    this.started = true;
    this.input.on('data', this.onData);
    this.input.on('end', this.onEnd);
    this.input.on('close', this.onEnd);
    this.input.on('error', this.onInputError);
    this.output.on('error', this.onOutputError);
    this.output.on('close', this.onOutputClose);
  }

  /** Writes one message as a line; resolves once output is not congested; rejects once closed. */
  async send(message: JSONRPCMessage): Promise<void> {
    if (this.writer.closed || this.reason !== undefined) throw new Error('the MCP transport is closed');
    this.writer.write(JSON.stringify(message));
    await this.writer.whenDrained();
  }

  /** Stops reading (the streams are left open) and calls `onclose`, with `closeReason` `{kind: 'closed'}`. */
  async close(): Promise<void> {
    this.shut({ kind: 'closed' });
  }

  private readonly onData = (chunk: Buffer | string): void => {
    this.splitter.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
  };

  private readonly onEnd = (): void => {
    if (this.reason !== undefined) return;
    this.splitter.end();
    this.shut({ kind: 'input-ended' });
  };

  private readonly onInputError = (error: Error): void => {
    this.shut({ kind: 'input-failed', message: error.message });
  };

  private readonly onOutputError = (error: Error): void => {
    this.shut({ kind: 'output-failed', message: error.message });
  };

  private readonly onOutputClose = (): void => {
    this.shut({ kind: 'output-failed', message: 'the output closed' });
  };

  private shut(reason: McpTransportCloseReason): void {
    if (this.reason !== undefined) return;
    this.reason = reason;
    this.input.off('data', this.onData);
    this.input.off('end', this.onEnd);
    this.input.off('close', this.onEnd);
    this.input.off('error', this.onInputError);
    this.output.off('error', this.onOutputError);
    this.output.off('close', this.onOutputClose);
    // Keep a late stream error from becoming an uncaught exception.
    this.input.on('error', () => {});
    this.output.on('error', () => {});
    this.input.pause();
    this.onclose?.();
  }

  private onLine(text: string): void {
    if (this.reason !== undefined || isBlankLine(text)) return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      this.refuse(null, { code: JSONRPC_PARSE_ERROR, message: 'Parse error: send one JSON-RPC message per line' });
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      this.refuse(idOf(value), {
        code: JSONRPC_INVALID_REQUEST,
        message: Array.isArray(value)
          ? 'Invalid Request: batches are not supported; send one JSON-RPC message per line'
          : 'Invalid Request: send a JSON-RPC 2.0 request, notification or response object ({"jsonrpc":"2.0","id":1,"method":"tools/list"})',
      });
      return;
    }
    this.onmessage?.(parsed.data as JSONRPCMessage);
  }

  private onOversized(bytes: number, edges: LineEdges | undefined): void {
    this.onerror?.(new Error(`discarded a message of ${bytes} bytes, over the line bound of ${this.maxLineBytes}`));
    this.refuse(edges === undefined ? null : idFromEdges(edges), {
      code: JSONRPC_INVALID_REQUEST,
      message: `Invalid Request: the message is longer than ${this.maxLineBytes} bytes (MAX_LINE_BYTES) and was discarded; send smaller arguments`,
      data: { limit: 'MAX_LINE_BYTES', max: this.maxLineBytes },
    });
  }

  private refuse(id: RequestId | null, error: JsonRpcErrorObject): void {
    if (this.reason !== undefined || this.writer.closed) return;
    this.writer.write(JSON.stringify({ jsonrpc: '2.0', id, error }));
  }
}

function isRequestId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** The `id` of a parsed value that is not a valid message, when it has a usable one. */
function idOf(value: unknown): RequestId | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const id = (value as { id?: unknown }).id;
  return isRequestId(id) ? id : null;
}

const ID_VALUE = String.raw`(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|"(?:[^"\\]|\\.)*")`;
/** `{"jsonrpc":"2.0","id":1,...` or `{"jsonrpc":"2.0","method":"x","id":1,...`: the id among the first members. */
const ID_IN_HEAD = new RegExp(
  String.raw`^\s*\{\s*(?:"(?:jsonrpc|method)"\s*:\s*"(?:[^"\\]|\\.)*"\s*,\s*)*"id"\s*:\s*${ID_VALUE}\s*[,}]`,
);
/** `...,"id":1}` at the very end: the last member of the top-level object (where the MCP SDK writes it). */
const ID_AT_TAIL = new RegExp(String.raw`[{,]\s*"id"\s*:\s*${ID_VALUE}\s*\}\s*$`);

/**
 * Reads the `id` of a message that was too long to keep, from its first and
 * last bytes: where JSON-RPC writers put it (first members, or last).
 */
export function idFromEdges(edges: LineEdges): RequestId | null {
  for (const [pattern, text] of [
    [ID_IN_HEAD, edges.head.toString('utf8')],
    [ID_AT_TAIL, edges.tail.toString('utf8')],
  ] as const) {
    const literal = pattern.exec(text)?.[1];
    if (literal === undefined) continue;
    try {
      const id = JSON.parse(literal) as unknown;
      if (isRequestId(id)) return id;
    } catch {
      // Not a JSON value after all (a truncated escape): try the other end.
    }
  }
  return null;
}
