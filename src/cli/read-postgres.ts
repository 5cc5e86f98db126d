import { PostgresAuditLog } from '../persistence/audit/postgres-chain.js';
import { PostgresCoordinatorStore } from '../persistence/coordinator/postgres-store.js';
import {
  type PgPool,
  type PgPoolOptions,
  isPostgresUrl,
  openPgPool,
  safePostgresUrl,
} from '../persistence/kernel/postgres.js';

/**
 * The read commands (`items`, `usage`, `audit verify`) on a Coordinator's
 * PostgreSQL database: `--db postgres://...` instead of a file. Nothing is
 * migrated or written; another schema version is refused. Every message
 * names the URL without its password.
 */

export { isPostgresUrl };

/** A PostgreSQL database a read command opened: the URL to name it by, and its pool (closed by `close`). */
export interface OpenedPostgres {
  where: string;
  pool: PgPool;
  close(): Promise<void>;
}

/** Opens a pool of one connection; an unreachable server rejects with `PG_UNREACHABLE` (no password in it). */
export async function openPostgresForReading(
  url: string,
  command: string,
  options: Pick<PgPoolOptions, 'max' | 'queryTimeoutMs'> = {},
): Promise<OpenedPostgres> {
  const pool = await openPgPool(url, { max: 1, ...options, user: `switchboard ${command}` });
  return { where: safePostgresUrl(url), pool, close: () => pool.end() };
}

/** The Coordinator's tables, read-only. */
export function coordinatorTablesOf(opened: OpenedPostgres): Promise<PostgresCoordinatorStore> {
  return PostgresCoordinatorStore.open(opened.pool, { readOnly: true });
}

/** The audit chain, read-only. */
export function auditOf(opened: OpenedPostgres): Promise<PostgresAuditLog> {
  return PostgresAuditLog.open(opened.pool, { readOnly: true });
}
