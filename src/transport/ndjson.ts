import { isUtf8 } from 'node:buffer';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';

const NEWLINE = 0x0a;

export interface LineSplitterOptions {
  /** Bytes a line may hold before its `\n` (default `MAX_LINE_BYTES`, 32 MiB). */
  maxLineBytes?: number;
}

export interface LineSink {
  /** One complete line, decoded as UTF-8, without its `\n`. */
  line(text: string): void;
  /** A line longer than the bound was dropped; `bytes` counts what was dropped. */
  oversized(bytes: number): void;
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

  constructor(sink: LineSink, options: LineSplitterOptions = {}) {
    this.sink = sink;
    this.maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
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
      return;
    }
    if (this.pendingBytes + size > this.maxLineBytes) {
      this.discarded = this.pendingBytes + size;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // Copy: the caller may reuse the chunk's memory after `push` returns.
    this.pending.push(start === 0 && end === chunk.length ? chunk : Buffer.from(chunk.subarray(start, end)));
    this.pendingBytes += size;
  }

  private endLine(): void {
    if (this.discarded >= 0) {
      const bytes = this.discarded;
      this.discarded = -1;
      this.sink.oversized(bytes);
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
