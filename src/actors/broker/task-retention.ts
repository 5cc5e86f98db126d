import type { Logger } from '../../log/logger.js';
import type { PruneParams, PruneResult } from '../../protocol/retention.js';
import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import { type PruneCursor, TaskRetentionStore, emptyCounts } from '../../persistence/a2a/retention.js';
import type { Party } from '../../persistence/a2a/store.js';
import { freePages, incrementalVacuum } from '../../persistence/a2a/space.js';
import { pruneWaitMs } from '../../decisions/prune-pacing.js';
import type { CallScope, CommitQueue } from './commit-queue.js';

/** Pages given back to the file system per transaction after a prune. */
export const VACUUM_PAGES_PER_STEP = 64;
/**
 * Milliseconds one prune batch may take before it stops (after a whole task):
 * a call queued behind a batch waits at most about this long more.
 */
export const PRUNE_BATCH_BUDGET_MS = 0.5;

/**
 * The broker's removal of ended tasks: `prune` (a `broker.tasks.prune` call,
 * `switchboard tasks prune`) and, with a retention set, the same on a timer.
 *
 * A prune is a run of small batches, each one call of the commit queue (one
 * transaction, its own SAVEPOINT when it shares one with other calls) of at
 * most about `PRUNE_BATCH_BUDGET_MS` of work. Between two batches it waits as
 * `pruneWaitMs` (src/decisions/prune-pacing.ts) decides: while calls come in,
 * the prune takes at most one percent of the broker's time, so about one call
 * in a hundred at most waits behind a batch (the calls' p99 stays as it is
 * without a prune); on an idle broker the batches follow each other at once. Each
 * batch removes whole tasks (a task is never half-removed: a batch that fails
 * is rolled back), and a broker killed in the middle leaves every batch it
 * committed done and the rest for the next prune. After a prune, the free
 * pages are given back the same way, a step at a time (`PRAGMA
 * incremental_vacuum`): those of this prune, and those a broker stopped in
 * the middle of giving back left. Prunes run one at a time: a second waits
 * for the first.
 */
export class TaskPruner {
  private readonly store: TaskRetentionStore;
  private running: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly queue: CommitQueue,
    private readonly logger: Logger,
    /** Told after a batch that removed tasks committed (the broker forgets its task counts). */
    private readonly onRemoved: () => void,
    /** Told, inside the batch's transaction, whenever it deleted task rows. */
    onDelete?: () => void,
  ) {
    this.store = new TaskRetentionStore(db, onDelete);
  }

  /** The seq through which a party's event log was cut (0: never). */
  eventFloor(party: Party): number {
    return this.store.eventFloor(party);
  }

  /** Removes (or counts, with `dryRun`) the tasks that ended before `endedBefore`. */
  prune(params: PruneParams): Promise<PruneResult> {
    const run = this.running.then(() => this.run(params));
    this.running = run.catch(() => undefined);
    return run;
  }

  /**
   * Prunes every `intervalMs` the tasks that ended more than `retentionMs`
   * ago (the first run at once); stopped by `stop`. The timer never keeps
   * the process alive.
   */
  every(retentionMs: number, intervalMs: number, now: () => number): void {
    const tick = () => {
      if (this.closed) return;
      const endedBefore = new Date(now() - retentionMs).toISOString();
      this.prune({ endedBefore })
        .then((result) => {
          if (result.removed.tasks > 0) {
            this.logger.info({ retentionMs, ...result }, 'pruned the tasks that ended before the retention');
          }
        })
        .catch((error: unknown) => {
          if (this.closed) return;
          this.logger.warn({ err: { message: (error as Error)?.message } }, 'a task retention prune failed');
        })
        .finally(() => {
          if (this.closed) return;
          this.timer = setTimeout(tick, intervalMs);
          this.timer.unref();
        });
    };
    this.timer = setTimeout(tick, 0);
    this.timer.unref();
  }

  /** Stops the timer; a prune under way stops after its current batch. Resolves once it has. */
  stop(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    return this.running.then(() => undefined);
  }

  private async run(params: PruneParams): Promise<PruneResult> {
    const dryRun = params.dryRun ?? false;
    const removed = emptyCounts();
    const kept = { referenced: 0, workItems: 0 };
    const cuts = new Map<string, { party: Party; seq: number }>();
    let cursor: PruneCursor | undefined;
    let batches = 0;
    this.store.startRun();
    do {
      if (this.closed) break;
      const from = cursor;
      if (batches > 0) await this.pace();
      if (this.closed) break;
      const batch = await this.timed(() =>
        this.store.pruneBatch(params.endedBefore, from, { dryRun, cuts, budgetMs: PRUNE_BATCH_BUDGET_MS }),
      );
      batches++;
      removed.tasks += batch.removed.tasks;
      removed.messages += batch.removed.messages;
      removed.artifacts += batch.removed.artifacts;
      removed.pushConfigs += batch.removed.pushConfigs;
      removed.events += batch.removed.events;
      kept.referenced += batch.kept.referenced;
      kept.workItems += batch.kept.workItems;
      if (!dryRun && batch.removed.tasks > 0) this.onRemoved();
      cursor = batch.next;
    } while (cursor !== undefined);
    // Also when nothing was removed now: a broker stopped while giving the space of an earlier prune back.
    const freedPages = dryRun ? 0 : await this.giveBackSpace();
    return { endedBefore: params.endedBefore, dryRun, removed, kept, batches, freedPages };
  }

  /** Gives the free pages back to the file system, `VACUUM_PAGES_PER_STEP` per transaction. */
  private async giveBackSpace(): Promise<number> {
    let freed = 0;
    while (!this.closed && freePages(this.db) > 0) {
      await this.pace();
      if (this.closed) break;
      const step = await this.timed(() => incrementalVacuum(this.db, VACUUM_PAGES_PER_STEP));
      if (step === 0) break;
      freed += step;
    }
    return freed;
  }

  /** How long (ms) the last batch's own work took (its commit is shared with the calls queued beside it). */
  private lastBatchMs = 0;

  /** Runs a batch as the broker's own work in the commit queue, timing it. */
  private timed<T>(run: (scope: CallScope) => T): Promise<T> {
    return this.queue.enqueueBackground((scope) => {
      const began = performance.now();
      try {
        return run(scope);
      } finally {
        this.lastBatchMs = performance.now() - began;
      }
    });
  }

  /** Waits until the next batch may run (`pruneWaitMs`), or the pruner is stopped. */
  private async pace(): Promise<void> {
    const since = performance.now();
    for (;;) {
      const now = performance.now();
      const wait = pruneWaitMs({
        batchMs: this.lastBatchMs,
        waitedMs: now - since,
        sinceLastCallMs: now - this.queue.lastCallAt,
      });
      // Even at once: a turn of the event loop, so what was read meanwhile is queued first.
      if (wait === 0 || this.closed) return turn();
      await sleep(wait);
    }
  }
}

/** One turn of the event loop. */
function turn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
