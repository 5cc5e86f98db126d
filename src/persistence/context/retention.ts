import { ContextStoreError } from './arguments.js';

/**
 * How long the Context Engine keeps its idempotency records (completion
 * records, effect markers, checkpoints once resumed), shared by the SQLite
 * and the Redis stores.
 *
 * A completion record (and the hop's effect markers) is what keeps a hop that
 * comes back from running, or applying its effects, twice. It must outlive
 * every way the same hop can arrive again after it was recorded:
 * - its own message redelivered: the worker crashed after recording the
 *   completion and before acking, so the lease expires and the message comes
 *   back when a worker of the role next consumes: after the lease (default
 *   30 s, at most 1 h from the CLI), or as late as the role's workers stay
 *   down;
 * - the same idempotency key published again once the bus has forgotten it:
 *   the bus keeps an acked key for its own idempotency retention
 *   (`DEFAULT_IDEMPOTENCY_RETENTION_MS` in `src/bus/work-queue.ts`, 1 h, on
 *   both the SQLite and the Redis bus); a Coordinator restarted after a crash
 *   re-publishes its outbox, which after more than that hour the bus accepts
 *   as new messages, and only the completion record recognises them.
 * Both bounds are the bus's hour plus however long a role's workers or the
 * Coordinator are down. The default is a day: 24 times the bus's retention,
 * so an outage of most of a day (a night, a weekend morning) still finds
 * every completion. Keep it at least the bus's idempotency retention; raise it
 * when outages can be longer. Past it, a returning hop runs again (its effects
 * too): what it costs to keep is disk (SQLite) or memory (Redis) for one day
 * of completion records, each holding the result messages it published.
 *
 * Checkpoints not yet resumed are never pruned by age, whatever their age: a
 * run may stay suspended (waiting for an answer) for longer than any
 * retention, and its resume needs them. A resumed checkpoint is pruned with
 * the completions: a redelivered resume is recognised by its completion
 * record first. Hop outputs and run memory are not idempotency records but
 * the run's context, which a later hop (or a late redelivery) hydrates: they
 * are kept while the run lives, and for the same retention after it ended
 * (a late redelivery of its last hops still hydrates them), then the
 * Coordinator forgets the run (`ContextStore.forgetRun`: outputs, memory and
 * its checkpoints, resumed or not).
 */
export const DEFAULT_CONTEXT_RETENTION_MS = 24 * 60 * 60 * 1000;

/** How often a SQLite Context Engine prunes what is past its retention. */
export const DEFAULT_CONTEXT_PRUNE_INTERVAL_MS = 60_000;

/**
 * Rows of each kind one pruning transaction deletes at most: a few ms of
 * work, so a pass over a large backlog yields to the event loop between
 * batches instead of holding it (and the write lock) for one long delete.
 */
export const DEFAULT_CONTEXT_PRUNE_BATCH = 500;

/** The longest retention accepted: 10 years. */
export const MAX_CONTEXT_RETENTION_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/** What one pruning pass (or one batch) deleted. */
export interface PruneCounts {
  completions: number;
  effects: number;
  checkpoints: number;
}

/** What a pruning pass reports to its owner: what it deleted and how long it took, or why it failed. */
export type PruneOutcome = { pruned: PruneCounts; ms: number } | { error: unknown };

/** How long a Context Engine keeps completion records, effect markers and resumed checkpoints. */
export interface ContextRetentionOptions {
  /**
   * How long completion records, effect markers and resumed checkpoints are
   * kept after they are recorded (resumed), in ms (default
   * `DEFAULT_CONTEXT_RETENTION_MS`, 24 h). Give every process of a deployment
   * the same value.
   */
  retentionMs?: number;
}

function wholeNumber(value: unknown, name: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    throw new ContextStoreError('CONTEXT_INVALID_ARGUMENT', `${name} must be a whole number from ${min} to ${max}`);
  }
  return value;
}

export function checkRetentionMs(value: number | undefined): number {
  return value === undefined
    ? DEFAULT_CONTEXT_RETENTION_MS
    : wholeNumber(value, 'retentionMs', 1, MAX_CONTEXT_RETENTION_MS);
}

/** `0` turns periodic pruning off. */
export function checkPruneIntervalMs(value: number | undefined): number {
  return value === undefined
    ? DEFAULT_CONTEXT_PRUNE_INTERVAL_MS
    : wholeNumber(value, 'pruneIntervalMs', 0, 24 * 60 * 60 * 1000);
}

export function checkPruneBatch(value: number | undefined): number {
  return value === undefined ? DEFAULT_CONTEXT_PRUNE_BATCH : wholeNumber(value, 'pruneBatch', 1, 100_000);
}
