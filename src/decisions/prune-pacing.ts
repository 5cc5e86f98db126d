/**
 * When the broker's prune of ended tasks may run its next batch: a pure
 * decision over how long the last batch took, how long the prune has waited
 * since, and how long ago the last call came.
 *
 * A call that comes while a batch runs waits for it, so the share of calls
 * that wait is the share of time the prune holds the broker. While calls come
 * in, the prune takes at most `PRUNE_BUSY_SHARE` of the broker's time (after a
 * batch of d ms it waits d × (1 / share − 1) ms): fewer than one call in a
 * hundred ever waits behind a batch, so the calls' p99 is what it is without
 * a prune. Once no call has come for `PRUNE_IDLE_MS`, the broker is idle and
 * the batches follow each other at once, until a call comes again.
 */

/** The share of the broker's time a prune may take while calls come in. */
export const PRUNE_BUSY_SHARE = 0.01;
/** Without a call for this long (ms) the broker is idle: a prune runs at full speed. */
export const PRUNE_IDLE_MS = 250;
/** The shortest wait (ms) between two batches while calls come in. */
export const PRUNE_MIN_WAIT_MS = 1;

export interface PrunePace {
  /** How long the last batch held the broker, in ms. */
  batchMs: number;
  /** How long the prune has waited since that batch, in ms. */
  waitedMs: number;
  /** How long ago the last call came, in ms (Infinity: none yet). */
  sinceLastCallMs: number;
}

/** The wait (ms) owed after a batch of `batchMs` while calls come in. */
export function busyWaitMs(batchMs: number): number {
  const owed = Math.max(0, batchMs) * (1 / PRUNE_BUSY_SHARE - 1);
  return Math.max(PRUNE_MIN_WAIT_MS, owed);
}

/**
 * 0 when the next batch may run now; otherwise how long (ms) to wait before
 * asking again (never past the moment the broker would become idle).
 */
export function pruneWaitMs(pace: PrunePace): number {
  if (!(pace.sinceLastCallMs < PRUNE_IDLE_MS)) return 0;
  const owed = busyWaitMs(pace.batchMs);
  if (pace.waitedMs >= owed) return 0;
  return Math.min(owed - pace.waitedMs, PRUNE_IDLE_MS - pace.sinceLastCallMs);
}
