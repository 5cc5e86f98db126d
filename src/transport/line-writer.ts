import type { Writable } from 'node:stream';

export interface LineWriterOptions {
  /**
   * Characters held back before the writer reports itself congested (default
   * 1 MiB). Lines are never dropped: congestion is a signal for producers
   * (stop reading input, stop pulling events), not a limit.
   */
  highWaterMark?: number;
}

/** Characters handed to the stream in one `write()`: lines are coalesced up to this, longer ones sliced. */
const CHUNK_CHARS = 64 * 1024;

/**
 * Writes NDJSON lines to a stream with back-pressure. Output is never joined
 * into one string: queued pieces go out in `write()`s of at most 64 Ki
 * characters (short lines coalesced, long ones sliced), and once `write()`
 * returns false the rest waits here for `'drain'`.
 */
export class LineWriter {
  private readonly stream: Writable;
  private readonly highWaterMark: number;
  /** Pieces of output in order (a line is its pieces followed by `\n`); `head` is the next to write. */
  private pending: string[] = [];
  private head = 0;
  /** Characters of `pending[head]` already written. */
  private offset = 0;
  private pendingChars = 0;
  private scheduled = false;
  private needsDrain = false;
  private broken = false;
  private readonly drainListeners = new Set<() => void>();

  constructor(stream: Writable, options: LineWriterOptions = {}) {
    this.stream = stream;
    this.highWaterMark = options.highWaterMark ?? 1024 * 1024;
    stream.on('drain', this.onDrain);
    // A reader that went away (EPIPE) must not crash the process: later lines
    // are dropped and the owner learns of it through `closed`.
    stream.on('error', this.onError);
    stream.on('close', this.onError);
  }

  /** True when output is piling up: producers should wait for `whenDrained`. */
  get congested(): boolean {
    return this.needsDrain || this.pendingChars > this.highWaterMark;
  }

  /** Characters queued here and not yet handed to the stream. */
  get backlog(): number {
    return this.pendingChars;
  }

  /** True once the stream failed or closed: nothing more can be written. */
  get closed(): boolean {
    return this.broken;
  }

  /** Queues one line (without its `\n`). */
  write(line: string): void {
    if (this.broken) return;
    this.push(line);
    this.push('\n');
    this.schedule();
  }

  /**
   * Queues one line given as pieces written one after the other (e.g. a
   * batch's answers as a JSON array), never concatenated into one string.
   */
  writePieces(pieces: readonly string[]): void {
    if (this.broken) return;
    for (const piece of pieces) this.push(piece);
    this.push('\n');
    this.schedule();
  }

  /** Resolves when nothing is held back (at once when not congested). */
  whenDrained(): Promise<void> {
    if (!this.congested || this.broken) return Promise.resolve();
    return new Promise((resolve) => {
      const listener = () => {
        if (this.congested && !this.broken) return;
        this.drainListeners.delete(listener);
        resolve();
      };
      this.drainListeners.add(listener);
    });
  }

  /** Writes everything queued and resolves once the stream took it all. */
  async flush(): Promise<void> {
    while (!this.broken && (this.pendingChars > 0 || this.needsDrain)) {
      if (!this.needsDrain) this.flushPending();
      if (this.needsDrain) {
        await new Promise<void>((resolve) => {
          const listener = () => {
            this.drainListeners.delete(listener);
            resolve();
          };
          this.drainListeners.add(listener);
        });
      }
    }
  }

  /** Stops listening to the stream (does not end it). */
  detach(): void {
    this.stream.off('drain', this.onDrain);
    this.stream.off('error', this.onError);
    this.stream.off('close', this.onError);
  }

  private push(piece: string): void {
    if (piece.length === 0) return;
    this.pending.push(piece);
    this.pendingChars += piece.length;
  }

  private schedule(): void {
    if (!this.scheduled && !this.needsDrain) {
      this.scheduled = true;
      setImmediate(this.flushPending);
    }
  }

  /** The next chunk of at most CHUNK_CHARS characters (more only for one piece sliced at a surrogate pair). */
  private nextChunk(): string {
    const first = this.pending[this.head] as string;
    if (first.length - this.offset > CHUNK_CHARS) {
      let end = this.offset + CHUNK_CHARS;
      // Never split a surrogate pair: each write is encoded to UTF-8 on its own.
      const last = first.charCodeAt(end - 1);
      if (last >= 0xd800 && last <= 0xdbff) end++;
      const slice = first.slice(this.offset, end);
      this.offset = end;
      this.pendingChars -= slice.length;
      return slice;
    }
    const parts: string[] = [this.offset === 0 ? first : first.slice(this.offset)];
    let chars = (parts[0] as string).length;
    this.head++;
    this.offset = 0;
    while (this.head < this.pending.length) {
      const next = this.pending[this.head] as string;
      if (chars + next.length > CHUNK_CHARS) break;
      parts.push(next);
      chars += next.length;
      this.head++;
    }
    this.pendingChars -= chars;
    if (this.head === this.pending.length) {
      this.pending = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head);
      this.head = 0;
    }
    return parts.length === 1 ? (parts[0] as string) : parts.join('');
  }

  private readonly flushPending = (): void => {
    this.scheduled = false;
    while (!this.broken && !this.needsDrain && this.pendingChars > 0) {
      if (!this.stream.write(this.nextChunk())) this.needsDrain = true;
    }
    this.notifyDrain();
  };

  private readonly onDrain = (): void => {
    this.needsDrain = false;
    if (this.pendingChars > 0) this.flushPending();
    else this.notifyDrain();
  };

  private readonly onError = (): void => {
    if (this.broken) return;
    this.broken = true;
    this.pending = [];
    this.head = 0;
    this.offset = 0;
    this.pendingChars = 0;
    this.needsDrain = false;
    this.notifyDrain();
  };

  private notifyDrain(): void {
    if (this.drainListeners.size === 0) return;
    for (const listener of [...this.drainListeners]) listener();
  }
}
