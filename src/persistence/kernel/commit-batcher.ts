import type { SqliteDatabase, SqliteTransaction } from './database.js';

interface PendingOp {
  run: () => unknown;
  /** Runs in a savepoint of its own (several writes that must stand or fall together). */
  atomic: boolean;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for one SQLite connection: operations submitted during one
 * turn of the event loop run in one write transaction (each inside its own
 * savepoint, so one that throws rolls back alone), and every caller's promise
 * settles after that transaction has committed. One commit costs far more
 * than the statements in it, so 32 consumers acking in the same tick pay for
 * one commit, not 32.
 */
export class CommitBatcher {
  private pending: PendingOp[] = [];
  private scheduled = false;
  private readonly runBatch: SqliteTransaction<(ops: readonly PendingOp[]) => { ok: boolean; value: unknown }[]>;

  constructor(
    db: SqliteDatabase,
    private readonly maxBatch = 512,
  ) {
    const single = (op: PendingOp) => op.run();
    const savepoint = db.transaction(single);
    this.runBatch = db.transaction((ops: readonly PendingOp[]) => {
      const out: { ok: boolean; value: unknown }[] = [];
      for (const op of ops) {
        try {
          out.push({ ok: true, value: op.atomic ? savepoint(op) : op.run() });
        } catch (error) {
          out.push({ ok: false, value: error });
        }
      }
      return out;
    });
  }

  /**
   * Runs `run` inside the next group transaction; resolves with its value
   * after the commit. `atomic: false` skips the savepoint: only for an
   * operation that makes at most one write statement (a statement is atomic
   * by itself), which saves two statements per call.
   */
  submit<T>(run: () => T, options: { atomic?: boolean } = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, atomic: options.atomic ?? true, resolve: resolve as (value: unknown) => void, reject });
      if (this.pending.length >= this.maxBatch) {
        this.flush();
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Runs what is pending now. */
  flush(): void {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const ops = this.pending;
    this.pending = [];
    let results: { ok: boolean; value: unknown }[];
    try {
      results = this.runBatch.immediate(ops);
    } catch (error) {
      for (const op of ops) op.reject(error);
      return;
    }
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      const result = results[i]!;
      if (result.ok) op.resolve(result.value);
      else op.reject(result.value);
    }
  }
}
