import { SchemaVersionError } from './migrations.js';
import { type PgPool, type PgQuery, inPgTransaction } from './postgres.js';

/**
 * Migrations of a component's tables in PostgreSQL, as `migrations.ts` does
 * them in SQLite: one `schema_version` row per component, every step newer
 * than the stored version run in ONE transaction (all or none), a database
 * of a newer version refused (`SchemaVersionError`: `SCHEMA_TOO_NEW`; a
 * reader that never migrates refuses an older one with `SCHEMA_TOO_OLD`).
 * Two processes migrating at once take turns (a transaction-scoped advisory
 * lock), so the second finds the work done.
 */

/** One forward step of a component's PostgreSQL schema: SQL statements run in order. */
export interface PgMigration {
  version: number;
  name: string;
  sql: readonly string[];
}

export interface PgMigrationSet {
  component: string;
  current: number;
  migrations: readonly PgMigration[];
}

/** The advisory lock key migrations take (any fixed number: the same for every component). */
const MIGRATION_LOCK = 7_412_003_951;

const VERSION_TABLE = `CREATE TABLE IF NOT EXISTS schema_version (
  component TEXT PRIMARY KEY,
  version INTEGER NOT NULL,
  updated_at TEXT NOT NULL
)`;

/** The stored version of a component (0: none), without creating anything. */
export async function pgSchemaVersion(q: PgQuery, component: string): Promise<number> {
  const table = await q.query("SELECT to_regclass('schema_version') IS NOT NULL AS present");
  if (table.rows[0]?.present !== true) return 0;
  const row = await q.query('SELECT version FROM schema_version WHERE component = $1', [component]);
  return row.rows.length === 0 ? 0 : Number(row.rows[0].version);
}

/** Refuses a schema other than `set.current` (for a reader: nothing is changed). */
export async function checkPgSchema(q: PgQuery, set: PgMigrationSet): Promise<void> {
  const found = await pgSchemaVersion(q, set.component);
  if (found !== set.current) throw new SchemaVersionError(set.component, found, set.current);
}

/** Brings a component's schema to `set.current` in one transaction; refuses a newer one. */
export async function migratePg(pool: PgPool, set: PgMigrationSet): Promise<{ from: number; to: number }> {
  return inPgTransaction(pool, async (c) => {
    await c.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await c.query(VERSION_TABLE);
    const from = await pgSchemaVersion(c, set.component);
    if (from > set.current) throw new SchemaVersionError(set.component, from, set.current);
    for (const migration of set.migrations) {
      if (migration.version <= from) continue;
      for (const statement of migration.sql) await c.query(statement);
    }
    if (from !== set.current) {
      await c.query(
        `INSERT INTO schema_version (component, version, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (component) DO UPDATE SET version = excluded.version, updated_at = excluded.updated_at`,
        [set.component, set.current, new Date().toISOString()],
      );
    }
    return { from, to: set.current };
  });
}
