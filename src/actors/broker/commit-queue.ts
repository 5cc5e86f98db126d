import type { Logger } from '../../log/logger.js';
import { BrokerError, internalError } from '../../protocol/broker-error.js';
import type { SqliteDatabase } from '../../persistence/kernel/database.js';

/**
 * What a call may do besides writing rows: register how to undo its in-memory
 * changes (run when the call is refused or the batch fails to commit) and what
 * to do once its writes are committed (deliver events), in order.
 */
export interface CallScope {
  onUndo(undo: () => void): void;
  afterCommit(effect: () => void): void;
  /**
   * A write that runs once per transaction, after all of its calls and before
   * COMMIT, whichever calls asked for it under `key`: it writes what memory
   * holds then (e.g. a registration's send counter, bumped by several calls
   * of the batch and put back by the undo of a refused one), once instead of
   * once per call. It fails the whole transaction if it throws.
   */
  beforeCommit(key: unknown, write: () => void): void;
  /**
   * The call's writes and effects stand, but its caller is answered with
   * `error` instead of its value: for an answer that cannot be given (one
   * longer than a line may be), never for a refusal. Inside a read, it throws.
   */
  answerWith(error: BrokerError): void;
}

interface Job {
  run(scope: CallScope): unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

interface Outcome {
  job: Job;
  ok: boolean;
  value: unknown;
  undos: (() => void)[];
  effects: (() => void)[];
  /** Set by `answerWith`: the error the caller gets once the call's writes are committed. */
  answer?: BrokerError;
}

/** The most calls one transaction carries; the rest go to the next one. */
export const MAX_CALLS_PER_COMMIT = 1024;

/**
 * Group commit. Every call is queued; the queue is flushed on `setImmediate`
 * in ONE SQLite transaction, each call inside its own SAVEPOINT, so a refused
 * call rolls back only its own writes (and its in-memory changes, through its
 * undo list). After COMMIT every promise settles in call order, then the
 * calls' effects (event deliveries) run in call order. If the COMMIT itself
 * fails, every call of the batch is undone and rejected: nothing of the batch
 * was acknowledged.
 */
export class CommitQueue {
  private queue: Job[] = [];
  private reads: Job[] = [];
  private readsScheduled = false;
  private readonly readBatch: (jobs: Job[]) => void;
  private scheduled = false;
  private flushing = false;
  private idleWaiters: (() => void)[] = [];
  /** Transactions committed and calls answered so far (for stats and benches). */
  private counters = { commits: 0, calls: 0, failedCommits: 0 };

  constructor(
    db: SqliteDatabase,
    private readonly logger: Logger,
    /** Called after every successful COMMIT (before any call of it is answered). */
    private readonly onCommit: () => void = () => {},
    /**
     * Called whenever writes are rolled back (a refused call's, or a whole
     * batch's), before the next call runs: what remembers rows forgets them.
     */
    private readonly onRollback: () => void = () => {},
  ) {
    this.single = db.transaction((outcome: Outcome) => {
      outcome.value = outcome.job.run(this.scopeOf(outcome));
      outcome.ok = true;
      this.runFinalWrites();
    });
    this.readBatch = db.transaction((jobs: Job[]) => {
      for (const job of jobs) runRead(job, logger);
    });
    const savepoint = db.transaction((outcome: Outcome) => outcome.job.run(this.scopeOf(outcome)));
    this.batch = db.transaction((outcomes: Outcome[]) => {
      for (const outcome of outcomes) {
        try {
          outcome.value = savepoint(outcome);
          outcome.ok = true;
        } catch (error) {
          this.onRollback();
          runUndos(outcome.undos, logger);
          outcome.undos = [];
          outcome.effects = [];
          delete outcome.answer;
          outcome.value = error;
          // SQLite rolled the whole transaction back (a full disk, an I/O error):
          // the calls before are gone too, and a call run now would commit on
          // its own. The batch fails as one.
          if (!db.inTransaction) throw error;
        }
      }
      this.runFinalWrites();
    });
  }

  /**
   * Queues a call that writes nothing. While the queue is quiet (nothing
   * queued, scheduled or committing) it is answered from committed state at
   * the end of the current turn, together with the other reads of that turn
   * in one read transaction (one snapshot, one WAL read lock for all of them);
   * a lone read runs without a transaction. Behind a queued call it joins the
   * queue instead, so it sees every call made before it.
   */
  read<T>(run: (scope: CallScope) => T): Promise<T> {
    this.lastCallAt = performance.now();
    if (!this.quiet) return this.enqueue(run);
    return new Promise<T>((resolve, reject) => {
      this.reads.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.readsScheduled) {
        this.readsScheduled = true;
        setImmediate(this.flushReads);
      }
    });
  }

  /**
   * When the last call came (`performance.now()`; -Infinity: none yet). The
   * broker's own background work (a prune's batches) is not a call: it paces
   * itself by this.
   */
  lastCallAt = Number.NEGATIVE_INFINITY;

  /** Queues a call; resolves with its result once its writes are committed. */
  enqueue<T>(run: (scope: CallScope) => T): Promise<T> {
    this.lastCallAt = performance.now();
    return this.enqueueBackground(run);
  }

  /** Queues the broker's own work, as `enqueue`, without counting it as a call that came. */
  enqueueBackground<T>(run: (scope: CallScope) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Resolves once every queued call has settled. */
  idle(): Promise<void> {
    if (this.settled) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  get pending(): number {
    return this.queue.length;
  }

  /**
   * True when no call is queued, scheduled or being committed: the database
   * holds exactly what every call made so far committed, so a read run now
   * sees all of them (and nothing uncommitted).
   */
  get quiet(): boolean {
    return this.queue.length === 0 && !this.scheduled && !this.flushing;
  }

  stats(): { commits: number; calls: number; failedCommits: number } {
    return { ...this.counters };
  }

  private readonly flushReads = (): void => {
    this.readsScheduled = false;
    const jobs = this.reads;
    this.reads = [];
    if (jobs.length === 1) runRead(jobs[0] as Job, this.logger);
    else {
      try {
        this.readBatch(jobs);
      } catch (error) {
        // BEGIN or COMMIT of a read transaction failed: the reads not yet answered fail with it.
        this.logger.error({ err: describe(error), calls: jobs.length }, 'a2a read transaction failed');
        for (const job of jobs) job.reject(internalError());
      }
    }
    this.notifyIdle();
  };

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const jobs = this.queue.length <= MAX_CALLS_PER_COMMIT ? this.queue : this.queue.slice(0, MAX_CALLS_PER_COMMIT);
    this.queue = this.queue.length <= MAX_CALLS_PER_COMMIT ? [] : this.queue.slice(MAX_CALLS_PER_COMMIT);
    if (jobs.length > 0) {
      this.flushing = true;
      try {
        this.runBatch(jobs);
      } finally {
        this.flushing = false;
      }
    }
    if (this.queue.length > 0) this.schedule();
    else this.notifyIdle();
  }

  /** One call alone: its own transaction, no SAVEPOINT (a refusal rolls back the whole, which is only it). */
  private readonly single: { immediate(outcome: Outcome): void };
  /** Several calls: one transaction, each call inside its own SAVEPOINT. */
  private readonly batch: { immediate(outcomes: Outcome[]): void };

  /** The `beforeCommit` writes of the transaction being run, by key. */
  private finalWrites = new Map<unknown, () => void>();

  private scopeOf(outcome: Outcome): CallScope {
    return {
      onUndo: (undo) => outcome.undos.push(undo),
      afterCommit: (effect) => outcome.effects.push(effect),
      beforeCommit: (key, write) => {
        if (!this.finalWrites.has(key)) this.finalWrites.set(key, write);
      },
      answerWith: (error) => {
        outcome.answer = error;
      },
    };
  }

  private runFinalWrites(): void {
    if (this.finalWrites.size === 0) return;
    const writes = this.finalWrites;
    this.finalWrites = new Map();
    for (const write of writes.values()) write();
  }

  private runBatch(jobs: Job[]): void {
    const outcomes: Outcome[] = jobs.map((job) => ({ job, ok: false, value: undefined, undos: [], effects: [] }));
    this.finalWrites.clear();
    try {
      if (outcomes.length === 1) this.single.immediate(outcomes[0] as Outcome);
      else this.batch.immediate(outcomes);
    } catch (error) {
      this.onRollback();
      if (outcomes.length === 1 && !outcomes[0]?.ok) {
        // The call itself refused or failed: everything it wrote is rolled back.
        const outcome = outcomes[0] as Outcome;
        runUndos(outcome.undos, this.logger);
        outcome.job.reject(publicError(error, this.logger));
        return;
      }
      this.logger.error({ err: describe(error), calls: jobs.length }, 'a2a commit failed: the batch is undone');
      for (let i = outcomes.length - 1; i >= 0; i--) {
        const outcome = outcomes[i];
        if (outcome?.ok) runUndos(outcome.undos, this.logger);
      }
      this.counters.failedCommits++;
      for (const job of jobs) job.reject(internalError('the broker could not commit this call'));
      return;
    }
    this.counters.commits++;
    this.counters.calls += jobs.length;
    this.onCommit();
    const effects: (() => void)[] = [];
    for (const outcome of outcomes) {
      if (outcome.ok) {
        if (outcome.answer === undefined) outcome.job.resolve(outcome.value);
        else outcome.job.reject(outcome.answer);
        effects.push(...outcome.effects);
      } else {
        outcome.job.reject(publicError(outcome.value, this.logger));
      }
    }
    if (effects.length > 0) {
      // After the answers: a caller awaiting its answer runs before the events leave.
      queueMicrotask(() => {
        for (const effect of effects) {
          try {
            effect();
          } catch (error) {
            this.logger.error({ err: describe(error) }, 'a2a event delivery failed');
          }
        }
      });
    }
  }

  /** Nothing queued, scheduled or committing, and no read waiting for its turn. */
  private get settled(): boolean {
    return this.quiet && !this.readsScheduled;
  }

  private notifyIdle(): void {
    if (!this.settled) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }
}

/** The scope of a read run outside the queue: a read registers no undo and no effect. */
const READ_SCOPE: CallScope = {
  onUndo: () => {
    throw new Error('a read registered an undo');
  },
  afterCommit: () => {
    throw new Error('a read registered an effect');
  },
  beforeCommit: () => {
    throw new Error('a read registered a write');
  },
  answerWith: (error) => {
    throw error;
  },
};

/** Runs one read and settles it (a promise settles once: a later reject is a no-op). */
function runRead(job: Job, logger: Logger): void {
  try {
    job.resolve(job.run(READ_SCOPE));
  } catch (error) {
    job.reject(publicError(error, logger));
  }
}

function runUndos(undos: (() => void)[], logger: Logger): void {
  for (let i = undos.length - 1; i >= 0; i--) {
    try {
      undos[i]?.();
    } catch (error) {
      logger.error({ err: describe(error) }, 'a2a undo failed');
    }
  }
}

/** A refusal travels as is; anything else is logged and becomes -32603. */
function publicError(error: unknown, logger: Logger): unknown {
  if (error instanceof BrokerError) return error;
  logger.error({ err: describe(error) }, 'a2a call failed unexpectedly');
  return internalError();
}

function describe(error: unknown): { name: string; message: string; code?: unknown } {
  if (error instanceof Error)
    return { name: error.name, message: error.message, code: (error as { code?: unknown }).code };
  return { name: 'unknown', message: String(error) };
}
