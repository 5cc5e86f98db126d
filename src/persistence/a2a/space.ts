import type { SqliteDatabase } from '../kernel/database.js';

/**
 * The space of a broker's file: incremental auto-vacuum (so that the pages a
 * prune frees go back to the file system, a few at a time), and what each
 * table and index weighs (`switchboard tasks stats`).
 */

/** `PRAGMA auto_vacuum` values. */
const AUTO_VACUUM_INCREMENTAL = 2;

/**
 * Turns the file to incremental auto-vacuum if it is not: `auto_vacuum =
 * INCREMENTAL` then `VACUUM` (which rewrites the file, every row kept, in one
 * atomic step; it cannot run inside a transaction, so it runs after the
 * schema migration commits). Returns whether it vacuumed. A file in memory
 * is left alone. Safe to repeat: an interrupted VACUUM leaves the file as it
 * was, and the next open does it again.
 */
export function ensureIncrementalVacuum(db: SqliteDatabase): boolean {
  if (autoVacuumMode(db) === AUTO_VACUUM_INCREMENTAL) return false;
  db.pragma('auto_vacuum = INCREMENTAL');
  db.exec('VACUUM');
  return true;
}

/** The file's `auto_vacuum` mode: 0 none, 1 full, 2 incremental. */
export function autoVacuumMode(db: SqliteDatabase): number {
  return db.pragma('auto_vacuum', { simple: true }) as number;
}

/** Pages on the free list (what `incrementalVacuum` can give back). */
export function freePages(db: SqliteDatabase): number {
  return db.pragma('freelist_count', { simple: true }) as number;
}

/**
 * Gives back up to `pages` free pages to the file system (the file shrinks
 * by them); returns how many it gave back. Runs in the caller's transaction.
 */
export function incrementalVacuum(db: SqliteDatabase, pages: number): number {
  const before = freePages(db);
  if (before === 0) return 0;
  db.pragma(`incremental_vacuum(${Math.max(1, Math.floor(pages))})`);
  return before - freePages(db);
}

/** One table of the file: its rows, and the bytes of its own pages and of its indexes'. */
export interface TableSpace {
  table: string;
  rows: number;
  /** Bytes of the table's pages (all of them; a page partly used counts whole). */
  tableBytes: number;
  /** Bytes of the pages of its indexes (including the primary key's of a table with a text key). */
  indexBytes: number;
  /** Bytes the rows and index entries use of those pages (`dbstat` only; else null). */
  payloadBytes: number | null;
}

/** What the file weighs. */
export interface FileSpace {
  /** `dbstat` (the SQLite build has it: exact bytes per table and index) or `pages` (page counts). */
  source: 'dbstat' | 'pages';
  pageSize: number;
  pageCount: number;
  freePages: number;
  autoVacuum: 'none' | 'full' | 'incremental';
  tables: TableSpace[];
}

/**
 * Rows and bytes of each table named (with its indexes), from the `dbstat`
 * virtual table when SQLite was built with it, else from page counts read
 * by walking each b-tree (`pages`): then `payloadBytes` is null. Read-only.
 */
export function fileSpace(db: SqliteDatabase, tables: readonly string[]): FileSpace {
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  const pageCount = db.pragma('page_count', { simple: true }) as number;
  const mode = autoVacuumMode(db);
  const present = new Set(
    (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name),
  );
  const indexes = db.prepare("SELECT name, tbl_name AS tbl FROM sqlite_master WHERE type = 'index'").all() as {
    name: string;
    tbl: string;
  }[];
  const btrees = hasDbstat(db) ? dbstatBtrees(db) : undefined;
  const out: TableSpace[] = [];
  for (const table of tables) {
    if (!present.has(table)) continue;
    const rows = (db.prepare(`SELECT COUNT(*) AS n FROM "${table}"`).get() as { n: number }).n;
    const own = indexes.filter((i) => i.tbl === table).map((i) => i.name);
    if (btrees !== undefined) {
      const t = btrees.get(table);
      let indexBytes = 0;
      let payload = t?.payload ?? 0;
      for (const name of own) {
        indexBytes += btrees.get(name)?.bytes ?? 0;
        payload += btrees.get(name)?.payload ?? 0;
      }
      out.push({ table, rows, tableBytes: t?.bytes ?? 0, indexBytes, payloadBytes: payload });
    } else {
      out.push({ table, rows, tableBytes: 0, indexBytes: 0, payloadBytes: null });
    }
  }
  if (btrees === undefined) fillFromPageCounts(db, out, indexes, pageSize);
  return {
    source: btrees === undefined ? 'pages' : 'dbstat',
    pageSize,
    pageCount,
    freePages: freePages(db),
    autoVacuum: mode === 2 ? 'incremental' : mode === 1 ? 'full' : 'none',
    tables: out,
  };
}

function hasDbstat(db: SqliteDatabase): boolean {
  try {
    db.prepare('SELECT 1 FROM dbstat LIMIT 1').get();
    return true;
  } catch {
    return false;
  }
}

function dbstatBtrees(db: SqliteDatabase): Map<string, { bytes: number; payload: number }> {
  const rows = db
    .prepare(
      'SELECT name, SUM(pgsize) AS bytes, SUM(payload) AS payload FROM dbstat WHERE aggregate = FALSE GROUP BY name',
    )
    .all() as { name: string; bytes: number; payload: number }[];
  return new Map(rows.map((r) => [r.name, { bytes: r.bytes, payload: r.payload }]));
}

/**
 * Without `dbstat`: each b-tree's pages counted by `PRAGMA page_count` of
 * nothing else is possible, so the pages are estimated from the payload a
 * table's rows hold (`SUM(octet_length)` of each column) and the pages the
 * file has: a table's share of the used pages is its share of the payload.
 */
function fillFromPageCounts(
  db: SqliteDatabase,
  out: TableSpace[],
  _indexes: readonly { name: string; tbl: string }[],
  pageSize: number,
): void {
  const used = ((db.pragma('page_count', { simple: true }) as number) - freePages(db)) * pageSize;
  const weights = out.map((t) => {
    const columns = db.prepare(`SELECT name FROM pragma_table_info('${t.table}')`).all() as { name: string }[];
    if (columns.length === 0 || t.rows === 0) return 0;
    const sum = columns.map((c) => `COALESCE(SUM(octet_length("${c.name}")), 0)`).join(' + ');
    return (db.prepare(`SELECT ${sum} AS n FROM "${t.table}"`).get() as { n: number }).n;
  });
  const total = weights.reduce((a, b) => a + b, 0);
  out.forEach((t, i) => {
    t.tableBytes = total === 0 ? 0 : Math.round((used * (weights[i] as number)) / total);
  });
}
