import type * as NodePostgres from 'pg';
import type { PgQuery } from '../kernel/postgres.js';

/**
 * One connection to PostgreSQL for the leader lease and `coordinator status`,
 * behind the small `PgQuery` shape (the client library is a detail). The
 * `pg` package (node-postgres) is an optional peer dependency, loaded on first
 * use: the embedded (SQLite) path never loads it.
 */

/** One query on a connection or inside a transaction (the shape the stores share). */
export type { PgQuery } from '../kernel/postgres.js';

/** An open connection: queries, a graceful end, and a forced one for a connection in an unknown state. */
export interface PgConnection extends PgQuery {
  /** Ends the session (waits at most `timeoutMs`, then destroys the socket). */
  end(timeoutMs?: number): Promise<void>;
  /** Drops the socket at once: for a connection cut off or stuck mid-query. */
  destroy(): void;
}

export interface PgConnectOptions {
  /** Give up connecting after this long (default 5 s). */
  connectTimeoutMs?: number;
  /** The server cancels a statement running longer (the session's `statement_timeout`; default none). */
  statementTimeoutMs?: number;
  /** Called when the connection fails while idle (it is unusable then). */
  onError?: (error: Error) => void;
}

/** The versions of the optional peer dependency `pg` this code works with (package.json `peerDependencies`). */
export const NODE_POSTGRES_RANGE = '^8.23.1';

type NodePostgresModule = typeof NodePostgres;
let loading: Promise<NodePostgresModule> | undefined;

async function loadNodePostgres(missing: (message: string, cause: unknown) => Error): Promise<NodePostgresModule> {
  loading ??= import('pg').then(
    (mod) => ((mod as unknown as { default?: NodePostgresModule }).default ?? mod) as NodePostgresModule,
  );
  try {
    return await loading;
  } catch (error) {
    loading = undefined;
    if ((error as NodeJS.ErrnoException)?.code === 'ERR_MODULE_NOT_FOUND') {
      throw missing(
        `PostgreSQL needs the package 'pg' (node-postgres ${NODE_POSTGRES_RANGE}), which cannot be found: ` +
          "run 'npm install pg@8' in the project that uses switchboard",
        error,
      );
    }
    throw error;
  }
}

/** Whether a `--db` value names a PostgreSQL database rather than a SQLite file. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** The URL with its password replaced by `***` (for logs, errors and output). */
export function redactPostgresUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    for (const key of [...parsed.searchParams.keys()]) {
      if (/pass/i.test(key)) parsed.searchParams.set(key, '***');
    }
    return parsed.toString();
  } catch {
    // Not a URL `new URL` reads: hide everything between the scheme and the host.
    return url.replace(/^([a-z]+:\/\/)[^@/]*@/i, '$1***@');
  }
}

/**
 * Opens one connection. Rejects with the error `fail` makes (of a message
 * naming the redacted URL) when `pg` is missing or the server cannot be
 * reached in time.
 */
export async function connectPostgres(
  url: string,
  fail: (message: string, cause: unknown) => Error,
  options: PgConnectOptions = {},
): Promise<PgConnection> {
  const pg = await loadNodePostgres(fail);
  const client = new pg.Client({
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    keepAlive: true,
    ...(options.statementTimeoutMs === undefined ? {} : { statement_timeout: options.statementTimeoutMs }),
  });
  // An idle connection's failure is an 'error' event: without a listener it would crash the process.
  client.on('error', (error: Error) => options.onError?.(error));
  try {
    await client.connect();
  } catch (error) {
    client.connection.stream.destroy();
    throw fail(
      `cannot connect to PostgreSQL at ${redactPostgresUrl(url)}: ${(error as Error).message} (check the URL and that the server runs)`,
      error,
    );
  }
  let ended = false;
  const destroy = () => {
    ended = true;
    client.connection.stream.destroy();
  };
  return {
    query: (text, params) => client.query(text, params),
    destroy,
    async end(timeoutMs = 1_000) {
      if (ended) return;
      ended = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        client.end().catch(() => undefined),
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            client.connection.stream.destroy();
            resolve();
          }, timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
