import type { Logger } from '../../log/logger.js';
import type { Clock } from '../../persistence/kernel/clock.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import { CoordinatorError } from './types.js';
import type { CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';

/**
 * Forgets the Context Engine's data of ended runs (their hop outputs, memory
 * and checkpoints: full result bodies, the largest thing a long-running
 * deployment keeps) once they have been over for the store's retention.
 *
 * The schedule is the item's row: an item whose `finished_at` is at least
 * `retentionMs` old and whose `context_forgotten_at` is null is due. Nothing
 * is kept in memory, so a restarted Coordinator (or one upgraded from a
 * version that never forgot) finds every due run again. A sweep takes the due
 * items oldest first, `batch` at a time: it forgets their runs (on SQLite one
 * shared commit), then marks the ones forgotten; a crash in between forgets
 * them again, which does nothing. A run still live is never due: its item has
 * no `finished_at`, and only completed, failed or canceled items are taken.
 *
 * Within the retention a late redelivery of an ended run's hop still
 * hydrates its outputs and memory; its completion record expires on the same
 * retention, so after it such a hop runs again anyway (as a late result).
 */

/** How often the Coordinator looks for ended runs to forget (default). */
export const DEFAULT_FORGET_INTERVAL_MS = 60_000;
/** Runs forgotten per batch (default): one transaction (SQLite) or this many scripts (Redis). */
export const DEFAULT_FORGET_BATCH = 100;

/** Options of the Coordinator's sweep that forgets ended runs: how often, and how many per batch. */
export interface ForgetRunsOptions {
  /** How often to sweep (default 60 s; unref'd; `0`: never by itself, call `forgetEndedRuns()`). */
  intervalMs?: number;
  /** Runs per batch (default 100). */
  batch?: number;
}

export function checkForgetRunsOptions(options: ForgetRunsOptions | undefined): Required<ForgetRunsOptions> {
  const intervalMs = options?.intervalMs ?? DEFAULT_FORGET_INTERVAL_MS;
  const batch = options?.batch ?? DEFAULT_FORGET_BATCH;
  if (!Number.isInteger(intervalMs) || intervalMs < 0 || intervalMs > 24 * 60 * 60 * 1000) {
    throw new CoordinatorError(
      'COORD_INVALID_ARGUMENT',
      'forgetRuns.intervalMs must be a whole number from 0 to 86400000',
    );
  }
  if (!Number.isInteger(batch) || batch < 1 || batch > 10_000) {
    throw new CoordinatorError('COORD_INVALID_ARGUMENT', 'forgetRuns.batch must be a whole number from 1 to 10000');
  }
  return { intervalMs, batch };
}

export class EndedRunForgetter {
  readonly #store: CoordinatorTables;
  readonly #contextStore: ContextStore;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #batch: number;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<number> | undefined;
  #closed = false;

  constructor(options: {
    store: CoordinatorTables;
    contextStore: ContextStore;
    clock: Clock;
    logger: Logger;
    intervalMs: number;
    batch: number;
  }) {
    this.#store = options.store;
    this.#contextStore = options.contextStore;
    this.#clock = options.clock;
    this.#log = options.logger;
    this.#batch = options.batch;
    this.#intervalMs = options.intervalMs;
  }

  /** Starts the periodic sweep (unless the interval is 0). */
  start(): void {
    if (this.#closed || this.#timer !== undefined || this.#intervalMs === 0) return;
    this.#timer = setInterval(() => void this.#pass(), this.#intervalMs);
    this.#timer.unref();
  }

  /** One timed pass: logs, never throws (the next pass tries again). */
  async #pass(): Promise<void> {
    if (this.#closed || this.#running !== undefined) return;
    const started = performance.now();
    try {
      const runs = await this.forgetEnded();
      if (runs > 0) this.#log.debug({ runs, ms: Math.round(performance.now() - started) }, 'forgot ended runs');
    } catch (error) {
      if (this.#closed) return;
      const message = error instanceof Error ? error.message : String(error);
      this.#log.warn({ err: { message } }, "forgetting ended runs' context failed");
    }
  }

  /**
   * Forgets every run that has been over for the retention (now, on the
   * Coordinator's clock), batch after batch, each in its own event-loop
   * turn; resolves with how many it forgot. A run whose forgetting fails
   * stays due (the pass stops there and the next one tries again). A pass
   * already running is joined.
   */
  forgetEnded(): Promise<number> {
    if (this.#closed) return Promise.resolve(0);
    this.#running ??= (async () => {
      const endedBy = this.#clock.now() - this.#contextStore.retentionMs;
      let total = 0;
      while (!this.#closed) {
        const due = await this.#store.readEndedUnforgotten(endedBy, this.#batch);
        if (due.length === 0) break;
        const results = await Promise.allSettled(due.map((id) => this.#contextStore.forgetRun(id)));
        const forgotten = due.filter((_, i) => results[i]!.status === 'fulfilled');
        // Marked after the Context Engine forgot: a crash in between forgets them again (a no-op).
        if (forgotten.length > 0 && !this.#closed)
          await this.#store.recordContextForgotten(forgotten, this.#clock.now());
        total += forgotten.length;
        const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed !== undefined) throw failed.reason;
        if (due.length < this.#batch) break;
      }
      return total;
    })().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Stops the timer and waits for a pass in flight. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    await this.#running?.catch(() => undefined);
  }
}
