/**
 * How long a Redis command may go unanswered before its call fails, kept for
 * many commands at the cost of one timer: node-redis's own per-command
 * timeout (`commandOptions.timeout`, 5 s by default) arms an
 * `AbortSignal.timeout` (a timer, its listeners, a `DOMException` when it
 * fires) for every command, which on the hot paths (a few scripts per hop)
 * cost more CPU than the commands themselves. Here each call is an entry in
 * one insertion-ordered set, swept by one unref'd interval: a call still
 * unanswered after `timeoutMs` (to `timeoutMs` plus a sweep interval) fails
 * with `RedisCommandTimeoutError`, as node-redis's timeout failed it. The
 * command itself is not withdrawn: if the server answers later, the answer
 * is dropped.
 */

/** The default: node-redis's own default command timeout. */
export const DEFAULT_COMMAND_TIMEOUT_MS = 5_000;

/** A command that got no answer in time (the message node-redis gives its own timeout). */
export class RedisCommandTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`Command timed out (no answer within ${timeoutMs} ms)`);
    this.name = 'TimeoutError';
  }
}

/** The per-command option that turns node-redis's own timeout off for a command watched here. */
export const UNTIMED = Object.freeze({ timeout: 0 });

interface Watched {
  readonly at: number;
  readonly reject: (error: Error) => void;
}

export class CommandTimeouts {
  readonly timeoutMs: number;
  readonly #now: () => number;
  /** Calls waiting for their answer, oldest first (a Set keeps insertion order). */
  readonly #waiting = new Set<Watched>();
  #timer: NodeJS.Timeout | undefined;

  constructor(options: { timeoutMs?: number; now?: () => number } = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.#now = options.now ?? Date.now;
  }

  /** `send()`'s answer, or `RedisCommandTimeoutError` once it has waited `timeoutMs`. */
  watch<T>(send: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const entry: Watched = { at: this.#now(), reject };
      this.#waiting.add(entry);
      this.#timer ??= this.#start();
      send().then(
        (value) => {
          this.#waiting.delete(entry);
          resolve(value);
        },
        (error: unknown) => {
          this.#waiting.delete(entry);
          reject(error);
        },
      );
    });
  }

  /** Fails every call that has waited `timeoutMs` or more; the rest are younger. */
  sweep(): void {
    const now = this.#now();
    for (const entry of this.#waiting) {
      if (now - entry.at < this.timeoutMs) break;
      this.#waiting.delete(entry);
      entry.reject(new RedisCommandTimeoutError(this.timeoutMs));
    }
  }

  /** Stops the sweeps (the connection is closed; calls still waiting fail as it closes them). */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #start(): NodeJS.Timeout {
    const timer = setInterval(() => this.sweep(), Math.max(10, Math.min(1_000, this.timeoutMs / 5)));
    timer.unref();
    return timer;
  }
}
