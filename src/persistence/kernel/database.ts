import Database from 'better-sqlite3';

/**
 * What switchboard uses of an open better-sqlite3 database, as the stores,
 * the bus and the Coordinator share it. Declared here, member for member as
 * better-sqlite3 has it, so that the package's declarations never import
 * better-sqlite3's types (a development dependency): a better-sqlite3
 * `Database` is one, and a user of the package type-checks without them.
 */
export interface SqliteDatabase {
  /** True for a database in memory. */
  readonly memory: boolean;
  /** True when it was opened read-only. */
  readonly readonly: boolean;
  /** The path it was opened with. */
  readonly name: string;
  /** False once closed. */
  readonly open: boolean;
  /** True inside a transaction. */
  readonly inTransaction: boolean;
  /** Compiles one SQL statement. */
  // biome-ignore lint/complexity/noBannedTypes: better-sqlite3's own bound, so that its databases are these
  prepare<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(
    source: string,
  ): BindParameters extends unknown[]
    ? SqliteStatement<BindParameters, Result>
    : SqliteStatement<[BindParameters], Result>;
  /** Wraps `fn` in a transaction (nested calls become savepoints). */
  // biome-ignore lint/suspicious/noExplicitAny: the parameter list of any function, as better-sqlite3 types it
  transaction<F extends (...params: any[]) => unknown>(fn: F): SqliteTransaction<F>;
  /** Runs SQL text that may hold several statements. */
  exec(source: string): this;
  /** Runs a PRAGMA; `simple` answers the first column of the first row. */
  pragma(source: string, options?: { simple?: boolean | undefined }): unknown;
  /** Closes the database. */
  close(): this;
}

/** A compiled statement of a `SqliteDatabase` (better-sqlite3's `Statement`). */
export interface SqliteStatement<BindParameters extends unknown[] = unknown[], Result = unknown> {
  /** The SQL text. */
  readonly source: string;
  /** True when it returns rows. */
  readonly reader: boolean;
  /** True when it does not write. */
  readonly readonly: boolean;
  run(...params: BindParameters): SqliteRunResult;
  get(...params: BindParameters): Result | undefined;
  all(...params: BindParameters): Result[];
  iterate(...params: BindParameters): IterableIterator<Result>;
  /** Rows come as their first column only. */
  pluck(toggleState?: boolean): this;
  /** Rows come as arrays. */
  raw(toggleState?: boolean): this;
  /** Binds the parameters once for every later run. */
  bind(...params: BindParameters): this;
}

/** What a write reports: rows changed and the last inserted rowid. */
export interface SqliteRunResult {
  changes: number;
  lastInsertRowid: number | bigint;
}

/**
 * A function wrapped in a transaction by `SqliteDatabase.transaction`: call
 * it, or one of its modes. (Its parameters are spelled as better-sqlite3
 * spells them, so that its transactions are these.)
 */
// biome-ignore lint/suspicious/noExplicitAny: the parameter list of any function, as better-sqlite3 types it
export interface SqliteTransaction<F extends (...params: any[]) => unknown> {
  (...params: F extends (...args: infer A) => unknown ? A : never): ReturnType<F>;
  default(...params: F extends (...args: infer A) => unknown ? A : never): ReturnType<F>;
  deferred(...params: F extends (...args: infer A) => unknown ? A : never): ReturnType<F>;
  immediate(...params: F extends (...args: infer A) => unknown ? A : never): ReturnType<F>;
  exclusive(...params: F extends (...args: infer A) => unknown ? A : never): ReturnType<F>;
}

/**
 * How hard a commit is pushed to disk.
 * - `normal`: WAL with synchronous=NORMAL. A commit survives a killed process
 *   (the WAL is in the OS page cache); the last commits may be lost on power
 *   loss. The default: it is what an agent runtime on a workstation needs, and
 *   it costs about half of `full` per commit.
 * - `full`: WAL with synchronous=FULL. Every commit is fsynced: survives power
 *   loss.
 */
export type Durability = 'normal' | 'full';
export const DEFAULT_DURABILITY: Durability = 'normal';

export interface OpenDatabaseOptions {
  durability?: Durability;
  readonly?: boolean;
}

/**
 * The path that opens a database in memory, as SQLite spells it: nothing is
 * written to disk and nothing survives the process (for tests and throwaway
 * runs). Every other path is a file.
 */
export const IN_MEMORY_PATH = ':memory:';

export function isInMemoryPath(path: string): boolean {
  return path === IN_MEMORY_PATH;
}

/** Opens (creating if needed) a SQLite file in WAL mode with the given durability (or a database in memory). */
export function openDatabase(path: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  const db = new Database(path, { readonly: options.readonly ?? false });
  // First: a process opening the file while another holds a lock (two opening a new file at once, both turning it
  // to WAL) waits for it instead of failing at once with SQLITE_BUSY.
  db.pragma('busy_timeout = 5000');
  if (!options.readonly && !isInMemoryPath(path)) {
    turnToWal(db);
  }
  db.pragma(`synchronous = ${(options.durability ?? DEFAULT_DURABILITY) === 'full' ? 'FULL' : 'NORMAL'}`);
  db.pragma('foreign_keys = ON');
  return db;
}

/**
 * Opens a SQLite file as it is: no WAL, no pragmas (a side file that holds a
 * lock rather than data; the caller sets what it needs).
 */
export function openPlainDatabase(
  path: string,
  options: { readonly?: boolean; fileMustExist?: boolean } = {},
): SqliteDatabase {
  return new Database(path, options);
}

/** How long opening a file keeps trying to turn it to WAL while another process holds it (as `busy_timeout`). */
const WAL_SWITCH_TIMEOUT_MS = 5000;

/**
 * `journal_mode = WAL` on a file another process is opening (or turning to
 * WAL) at the same moment can fail with SQLITE_BUSY at once: SQLite does not
 * call the busy handler for that lock. It is retried here, with a short
 * sleep, for up to `WAL_SWITCH_TIMEOUT_MS`; any other error, or a file still
 * busy after that, is thrown as it came.
 */
function turnToWal(db: SqliteDatabase): void {
  const deadline = Date.now() + WAL_SWITCH_TIMEOUT_MS;
  let pauseMs = 1;
  for (;;) {
    try {
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      // A synchronous pause: opening a database is synchronous, as better-sqlite3 is.
      Atomics.wait(pauseCell, 0, 0, pauseMs);
      pauseMs = Math.min(pauseMs * 2, 50);
    }
  }
}

const pauseCell = new Int32Array(new SharedArrayBuffer(4));

/** Whether an error is SQLite's SQLITE_BUSY (or one of its extended codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
