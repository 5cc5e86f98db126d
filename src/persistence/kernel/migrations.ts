import { type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';
import type { SqliteDatabase } from './database.js';

/** One forward step of a component's schema. */
export interface Migration {
  /** The version the schema has after this step. */
  version: number;
  name: string;
  up(db: SqliteDatabase): void;
}

/**
 * The schema of one component (the A2A broker, the work bus, the Coordinator)
 * that shares a database file. Each keeps its own row in `schema_version`.
 */
export interface MigrationSet {
  component: string;
  /** The version this code writes; the last migration's version. */
  current: number;
  migrations: readonly Migration[];
}

/**
 * A database written by a newer switchboard (`SCHEMA_TOO_NEW`), or one a
 * reader that never migrates finds older than it reads (`SCHEMA_TOO_OLD`):
 * nothing was changed.
 */
export class SchemaVersionError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'SchemaVersionError'>;
  constructor(
    /** The component whose tables are at the wrong version (such as `coordinator`, `audit` or `context`). */
    readonly component: string,
    /** The version the database has. */
    readonly found: number,
    /** The version this switchboard reads and writes. */
    readonly supported: number,
  ) {
    super(
      found > supported ? 'SCHEMA_TOO_NEW' : 'SCHEMA_TOO_OLD',
      found > supported
        ? `database schema for ${component} is version ${found}, newer than this switchboard supports (${supported}); upgrade switchboard`
        : `database schema for ${component} is version ${found}, older than this switchboard reads (${supported}), ` +
            'and a reader does not migrate: open the file once with a process of this version that writes it ' +
            '(for the Coordinator: switchboard coordinator --db PATH), then read it again',
      { details: { component, found, supported } },
    );
  }
}

export function ensureVersionTable(db: SqliteDatabase): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_version (
    component TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT`);
}

export function schemaVersion(db: SqliteDatabase, component: string): number {
  ensureVersionTable(db);
  const row = db.prepare('SELECT version FROM schema_version WHERE component = ?').get(component) as
    | { version: number }
    | undefined;
  return row?.version ?? 0;
}

/**
 * Brings a component's schema to `set.current` in one transaction: every
 * migration newer than the stored version runs, in order, or none does. A
 * database newer than this code is refused.
 */
export function migrate(db: SqliteDatabase, set: MigrationSet): { from: number; to: number } {
  const run = db.transaction(() => {
    const from = schemaVersion(db, set.component);
    if (from > set.current) throw new SchemaVersionError(set.component, from, set.current);
    for (const migration of set.migrations) {
      if (migration.version > from) migration.up(db);
    }
    if (from !== set.current) {
      db.prepare(
        `INSERT INTO schema_version (component, version, updated_at) VALUES (?, ?, ?)
         ON CONFLICT(component) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
      ).run(set.component, set.current, new Date().toISOString());
    }
    return { from, to: set.current };
  });
  return run.immediate();
}
