import { PostgresAuditLog } from '../persistence/audit/postgres-chain.js';
import { PostgresCoordinatorStore } from '../persistence/coordinator/postgres-store.js';
import {
  type PgPool,
  PostgresError,
  type PgPoolOptions,
  inPgTransaction,
  isPostgresUrl,
  openPgPool,
  redactPostgresSecrets,
  safePostgresUrl,
} from '../persistence/kernel/postgres.js';
import { SchemaVersionError } from '../persistence/kernel/migrations.js';

/**
 * The read commands (`items`, `usage`, `audit verify`, `tasks`, `top`) on a
 * Coordinator's PostgreSQL database: `--db postgres://...` instead of a
 * file. Nothing is migrated or written; another schema version is refused.
 * Every message names the URL without its password.
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

/**
 * Runs a read command on the Coordinator's PostgreSQL tables and returns its
 * exit code: `read`'s, or 1 when the server does not answer or a read fails,
 * or 2 for tables of another schema version (the message a file of that
 * version gets). Every message is `switchboard COMMAND: ...` on stderr,
 * without the URL's password. The pool is closed afterwards.
 */
export async function readOnPostgres(
  url: string,
  command: string,
  read: (store: PostgresCoordinatorStore, opened: OpenedPostgres) => Promise<number>,
): Promise<number> {
  const say = (message: string) =>
    process.stderr.write(`switchboard ${command}: ${redactPostgresSecrets(message, url)}\n`);
  let opened: OpenedPostgres;
  try {
    opened = await openPostgresForReading(url, command);
  } catch (error) {
    say((error as Error).message);
    return 1;
  }
  try {
    let store: PostgresCoordinatorStore;
    try {
      store = await coordinatorTablesOf(opened);
    } catch (error) {
      say(`${opened.where}: ${(error as Error).message}`);
      return error instanceof SchemaVersionError ? 2 : 1;
    }
    return await read(store, opened);
  } catch (error) {
    say(`${opened.where}: ${(error as Error).message}`);
    return 1;
  } finally {
    await opened.close();
  }
}

/**
 * Runs `read` on one consistent snapshot of the Coordinator's tables: a
 * REPEATABLE READ, READ ONLY transaction, so rows a Coordinator commits
 * meanwhile are all in it or all out of it.
 */
export function inSnapshot<T>(
  opened: OpenedPostgres,
  read: (store: PostgresCoordinatorStore) => Promise<T>,
): Promise<T> {
  return inPgTransaction(
    opened.pool,
    async (tx) => {
      const onTransaction: PgPool = {
        safeUrl: opened.where,
        query: (text, params) => tx.query(text, params),
        connect: () =>
          Promise.reject(new PostgresError('PG_QUERY_FAILED', 'a snapshot read runs on its one transaction')),
        end: async () => undefined,
      };
      return read(await PostgresCoordinatorStore.open(onTransaction, { readOnly: true }));
    },
    'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
  );
}
