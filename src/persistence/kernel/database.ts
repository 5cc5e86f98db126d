import Database from 'better-sqlite3';

/** An open better-sqlite3 database, as the stores, the bus and the Coordinator share it. */
export type SqliteDatabase = Database.Database;

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
