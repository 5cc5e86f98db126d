import type { Writable } from 'node:stream';

export interface LineWriterOptions {
  /**
   * Characters held back before the writer reports itself congested (default
   * 1 MiB). Lines are never dropped: congestion is a signal for producers
   * (stop reading input, stop pulling events), not a limit.
   */
  highWaterMark?: number;
}

/**
 * Writes NDJSON lines to a stream with back-pressure, coalescing the lines of
 * one turn of the event loop into a single `write()`. While the stream asks
 * for a drain, lines wait here and go out together when it drains.
 */
export class LineWriter {
  private readonly stream: Writable;
  private readonly highWaterMark: number;
  private pending: string[] = [];
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
    this.pending.push(line);
    this.pendingChars += line.length + 1;
    if (!this.scheduled && !this.needsDrain) {
      this.scheduled = true;
      setImmediate(this.flushPending);
    }
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
    while (!this.broken && (this.pending.length > 0 || this.needsDrain)) {
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

  private readonly flushPending = (): void => {
    this.scheduled = false;
    if (this.broken || this.needsDrain || this.pending.length === 0) return;
    const chunk = this.pending.length === 1 ? `${this.pending[0]}\n` : `${this.pending.join('\n')}\n`;
    this.pending = [];
    this.pendingChars = 0;
    if (!this.stream.write(chunk)) this.needsDrain = true;
    this.notifyDrain();
  };

  private readonly onDrain = (): void => {
    this.needsDrain = false;
    if (this.pending.length > 0) this.flushPending();
    else this.notifyDrain();
  };

  private readonly onError = (): void => {
    if (this.broken) return;
    this.broken = true;
    this.pending = [];
    this.pendingChars = 0;
    this.needsDrain = false;
    this.notifyDrain();
  };

  private notifyDrain(): void {
    if (this.drainListeners.size === 0) return;
    for (const listener of [...this.drainListeners]) listener();
  }
}
