import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDatabase } from '../kernel/database.js';

/** Commits between two checkpoints asked of the checkpoint thread. */
export const CHECKPOINT_EVERY_COMMITS = 128;
/**
 * The backstop: WAL pages after which the broker's own connection checkpoints
 * inside a commit, as SQLite does by default at 1,000. Reached only when the
 * checkpoint thread falls behind (or failed), so the WAL never grows without
 * bound.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 8192;
/** SQLite's default, restored if the checkpoint thread fails. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1000;

/** The checkpoint thread: its own connection to the file, one PASSIVE checkpoint per request. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma('synchronous = ' + workerData.synchronous);
parentPort.on('message', (request) => {
  if (request === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true });
  } catch (error) {
    parentPort.postMessage({ ok: false, message: String(error && error.message) });
  }
});
`;

export interface WalCheckpointerOptions {
  path: string;
  synchronous: 'NORMAL' | 'FULL';
  everyCommits?: number;
  /** Told when the thread fails (the broker falls back to SQLite's own checkpoints). */
  onFailure?: (message: string) => void;
}

/**
 * Moves WAL checkpoints off the broker's thread. SQLite checkpoints by default
 * inside the commit that crosses 1,000 WAL pages: that commit copies the pages
 * into the database file and fsyncs it, a pause of milliseconds (tens under
 * load) on the call that happens to trigger it. Here the broker's connection
 * checkpoints only as a backstop (8,192 pages) and a worker thread with its
 * own connection runs a PASSIVE checkpoint every 128 commits, which never
 * blocks the broker's writers. The thread starts at the first checkpoint it
 * is asked for, so a short-lived broker never starts one. Durability is
 * unchanged: a commit is in the WAL before it is acknowledged, whoever
 * copies it to the database file later.
 */
export class WalCheckpointer {
  private readonly every: number;
  private commits = 0;
  private worker: Worker | null = null;
  private busy = false;
  private failed = false;
  private stopped = false;

  constructor(
    private readonly db: SqliteDatabase,
    private readonly options: WalCheckpointerOptions,
  ) {
    this.every = options.everyCommits ?? CHECKPOINT_EVERY_COMMITS;
    db.pragma(`wal_autocheckpoint = ${BACKSTOP_AUTOCHECKPOINT_PAGES}`);
  }

  /** Called after every commit; every `everyCommits` commits asks the thread for a checkpoint. */
  committed(): void {
    if (this.failed || this.stopped) return;
    this.commits++;
    if (this.commits < this.every || this.busy) return;
    this.commits = 0;
    const worker = this.worker ?? this.start();
    if (worker === null) return;
    this.busy = true;
    worker.postMessage('checkpoint');
  }

  /** Stops the thread (after the checkpoint it may be running). */
  async close(): Promise<void> {
    this.stopped = true;
    const worker = this.worker;
    this.worker = null;
    if (worker === null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Referenced while it closes: the exit it is awaited for keeps the process alive.
    worker.ref();
    worker.postMessage('close');
    await exited;
  }

  private start(): Worker | null {
    try {
      const driver = createRequire(import.meta.url).resolve('better-sqlite3');
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { driver, path: this.options.path, synchronous: this.options.synchronous },
      });
      worker.unref();
      worker.on('message', (answer: { ok: boolean; message?: string }) => {
        this.busy = false;
        if (!answer.ok) this.fail(answer.message ?? 'checkpoint failed');
      });
      worker.on('error', (error: Error) => this.fail(error.message));
      worker.on('exit', () => {
        if (this.worker !== worker) return;
        this.worker = null;
        if (!this.stopped) this.fail('the checkpoint thread exited');
      });
      this.worker = worker;
      return worker;
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
      return null;
    }
  }

  /** The thread failed: SQLite's own checkpoints take over again. */
  private fail(message: string): void {
    if (this.failed) return;
    this.failed = true;
    this.busy = false;
    const worker = this.worker;
    this.worker = null;
    if (worker !== null) void worker.terminate();
    if (!this.stopped && this.db.open) this.db.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    this.options.onFailure?.(message);
  }
}
