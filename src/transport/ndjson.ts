import { isUtf8 } from 'node:buffer';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';

const NEWLINE = 0x0a;

export interface LineSplitterOptions {
  /** Bytes a line may hold before its `\n` (default `MAX_LINE_BYTES`, 32 MiB). */
  maxLineBytes?: number;
  /**
   * Bytes kept from each end of a line that crosses the bound (default 0):
   * handed to `oversized` so that the caller can try to read, say, the
   * request's `id` from what is left of it.
   */
  edgeBytes?: number;
}

/** The first and last bytes of a discarded line (at most `edgeBytes` each). */
export interface LineEdges {
  head: Buffer;
  tail: Buffer;
}

export interface LineSink {
  /** One complete line, decoded as UTF-8, without its `\n`. */
  line(text: string): void;
  /**
   * A line longer than the bound was dropped; `bytes` counts what was
   * dropped, `edges` holds its ends when `edgeBytes` was set.
   */
  oversized(bytes: number, edges?: LineEdges): void;
  /**
   * A line that is not valid UTF-8 was dropped. When the sink has this, every
   * line is checked; without it, invalid sequences decode as U+FFFD.
   */
  invalidUtf8?(bytes: number): void;
}

/**
 * Splits a byte stream into NDJSON lines. Chunks may end anywhere, including
 * inside a multi-byte UTF-8 character: a line is decoded only once its `\n`
 * is seen (`\n` never occurs inside a multi-byte sequence). A line longer
 * than the bound is never held whole: once it crosses the bound the bytes
 * gathered so far are released and the rest is only counted, up to the next
 * `\n`, where `oversized` is reported.
 */
export class LineSplitter {
  readonly maxLineBytes: number;
  private readonly sink: LineSink;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes of the current line counted while it is being discarded, or -1. */
  private discarded = -1;
  private readonly edgeBytes: number;
  /** The ends of the line being discarded (when `edgeBytes` > 0). */
  private head: Buffer = Buffer.alloc(0);
  private tail: Buffer = Buffer.alloc(0);

  constructor(sink: LineSink, options: LineSplitterOptions = {}) {
    this.sink = sink;
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.edgeBytes = options.edgeBytes ?? 0;
  }

  /** Bytes of the current, unfinished line held in memory (never more than the bound). */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }

  push(chunk: Buffer): void {
    let start = 0;
    const length = chunk.length;
    while (start < length) {
      const newline = chunk.indexOf(NEWLINE, start);
      if (newline === -1) {
        this.take(chunk, start, length);
        return;
      }
      if (this.pendingBytes === 0 && this.discarded < 0 && newline - start <= this.maxLineBytes) {
        // The common case: a whole line inside one chunk, decoded in place.
        this.emit(chunk, start, newline);
      } else {
        this.take(chunk, start, newline);
        this.endLine();
      }
      start = newline + 1;
    }
  }

  /** The stream ended: a last line without `\n` still counts as a line. */
  end(): void {
    if (this.pendingBytes > 0 || this.discarded >= 0) this.endLine();
  }

  private take(chunk: Buffer, start: number, end: number): void {
    const size = end - start;
    if (size === 0) return;
    if (this.discarded >= 0) {
      this.discarded += size;
      if (this.edgeBytes > 0) this.keepTail(chunk.subarray(start, end));
      return;
    }
    if (this.pendingBytes + size > this.maxLineBytes) {
      this.discarded = this.pendingBytes + size;
      if (this.edgeBytes > 0) this.keepEdges(chunk.subarray(start, end));
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // Copy: the caller may reuse the chunk's memory after `push` returns.
    this.pending.push(start === 0 && end === chunk.length ? chunk : Buffer.from(chunk.subarray(start, end)));
    this.pendingBytes += size;
  }

  /** The line starts being discarded: its head from what was gathered, its tail from the end. */
  private keepEdges(last: Buffer): void {
    const head: Buffer[] = [];
    let headBytes = 0;
    for (const part of [...this.pending, last]) {
      if (headBytes >= this.edgeBytes) break;
      const piece = part.subarray(0, this.edgeBytes - headBytes);
      head.push(piece);
      headBytes += piece.length;
    }
    this.head = Buffer.concat(head, headBytes);
    this.tail = Buffer.alloc(0);
    for (let i = this.pending.length - 1; i >= 0 && this.tail.length < this.edgeBytes; i--) {
      const part = this.pending[i] as Buffer;
      this.tail = Buffer.concat([
        part.subarray(Math.max(0, part.length - (this.edgeBytes - this.tail.length))),
        this.tail,
      ]);
    }
    this.keepTail(last);
  }

  private keepTail(piece: Buffer): void {
    if (piece.length >= this.edgeBytes) {
      this.tail = Buffer.from(piece.subarray(piece.length - this.edgeBytes));
      return;
    }
    const joined = Buffer.concat([this.tail, piece]);
    this.tail = joined.subarray(Math.max(0, joined.length - this.edgeBytes));
  }

  private endLine(): void {
    if (this.discarded >= 0) {
      const bytes = this.discarded;
      this.discarded = -1;
      if (this.edgeBytes === 0) {
        this.sink.oversized(bytes);
        return;
      }
      const edges = { head: this.head, tail: this.tail };
      this.head = Buffer.alloc(0);
      this.tail = Buffer.alloc(0);
      this.sink.oversized(bytes, edges);
      return;
    }
    const parts = this.pending;
    const bytes =
      parts.length === 0
        ? Buffer.alloc(0)
        : parts.length === 1
          ? (parts[0] as Buffer)
          : Buffer.concat(parts, this.pendingBytes);
    this.pending = [];
    this.pendingBytes = 0;
    this.emit(bytes, 0, bytes.length);
  }

  private emit(bytes: Buffer, start: number, end: number): void {
    if (this.sink.invalidUtf8 !== undefined && !isUtf8(bytes.subarray(start, end))) {
      this.sink.invalidUtf8(end - start);
      return;
    }
    this.sink.line(bytes.toString('utf8', start, end));
  }
}

/** True for a line holding only whitespace (ignored by the protocol). */
export function isBlankLine(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false;
  }
  return true;
}
