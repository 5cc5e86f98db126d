import type { Delivery, WorkQueue } from './work-queue.js';

export interface DeliveriesOptions {
  consumer: string;
  visibilityTimeoutMs: number;
  /** Most deliveries leased per round trip (default 1). */
  max?: number;
  /** How long each consume blocks waiting for work (default 1000 ms). */
  waitMs?: number;
  /** Ends the iteration (after the consume in progress returns). */
  signal?: AbortSignal;
}

/**
 * Deliveries of one role as an async iterable, without busy polling: each
 * round blocks in `consume` (`waitMs`) until work is ready, which the SQLite
 * backend serves with an in-process wake-up on publish plus an adaptive poll,
 * and a Redis backend with `XREADGROUP ... BLOCK`. The caller acks or nacks
 * each delivery; the iteration ends when `signal` aborts or the queue closes.
 *
 *   for await (const d of deliveries(queue, 'coder', { consumer: 'c1', visibilityTimeoutMs: 30_000 })) { ... }
 */
export async function* deliveries(
  queue: WorkQueue,
  role: string,
  options: DeliveriesOptions,
): AsyncGenerator<Delivery> {
  const waitMs = options.waitMs ?? 1000;
  while (!options.signal?.aborted) {
    let got: Delivery[];
    try {
      got = await queue.consume(role, {
        consumer: options.consumer,
        visibilityTimeoutMs: options.visibilityTimeoutMs,
        max: options.max ?? 1,
        waitMs,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } catch (error) {
      if ((error as { code?: unknown })?.code === 'BUS_CLOSED') return;
      throw error;
    }
    for (const delivery of got) yield delivery;
  }
}
