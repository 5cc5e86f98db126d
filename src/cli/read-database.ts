import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { type SqliteDatabase, openDatabase } from '../persistence/kernel/database.js';
import { CliUsageError } from './command-args.js';

/**
 * Opening the database an operator command inspects. The file must already
 * exist (a command never creates a database by accident); reads open it
 * read-only. A missing `--db`, a missing file, a file that is not SQLite, or
 * a database without the component a command reads are usage errors
 * (`CliUsageError`, exit code 2), reported before anything is touched.
 */

export interface OpenedDatabase {
  db: SqliteDatabase;
  /** The absolute path. */
  path: string;
  /** Each migrated component (`a2a`, `bus`, `audit`, `coordinator`, ...) and its schema version. */
  components: ReadonlyMap<string, number>;
}

export function openExistingDatabase(path: string | undefined, access: 'read' | 'write'): OpenedDatabase {
  if (path === undefined) throw new CliUsageError('--db PATH is required');
  const absolute = resolve(path);
  let isFile: boolean;
  try {
    isFile = statSync(absolute).isFile();
  } catch {
    throw new CliUsageError(`no database at ${absolute} (the file does not exist)`);
  }
  if (!isFile) throw new CliUsageError(`${absolute} is not a file`);
  let db: SqliteDatabase | undefined;
  try {
    db = openDatabase(absolute, { readonly: access === 'read' });
    const components = readComponents(db);
    return { db, path: absolute, components };
  } catch (error) {
    db?.close();
    throw new CliUsageError(
      `cannot read ${absolute} as a switchboard database: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

function readComponents(db: SqliteDatabase): Map<string, number> {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'").get();
  if (table === undefined) return new Map();
  const rows = db.prepare('SELECT component, version FROM schema_version').all() as {
    component: string;
    version: number;
  }[];
  return new Map(rows.map((r) => [r.component, r.version]));
}

/** Throws a usage error naming what is missing unless the database holds `component`. */
export function requireComponent(opened: OpenedDatabase, component: string, what: string): void {
  if (!opened.components.has(component)) {
    throw new CliUsageError(`the database at ${opened.path} holds no ${what} (no '${component}' schema)`);
  }
}

/** Whether a table exists (a component's table dropped by hand is a broken database, not an empty one). */
export function hasTable(db: SqliteDatabase, name: string): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
}
