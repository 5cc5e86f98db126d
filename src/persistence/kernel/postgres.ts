import type * as Pg from 'pg';
import { type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';

/**
 * The PostgreSQL connection of the stores that can live there (the
 * Coordinator's tables and the audit chain): the client library (`pg`, an
 * optional peer dependency loaded on first use, never on the embedded path),
 * a pool whose errors never crash the process, and the URL's redaction (its
 * password appears in no message and no log line).
 */

/**
 * One query on a connection or inside a transaction: text with `$1`-style
 * parameters; with `name`, a statement each connection prepares once and
 * then only executes (one name, one text: the same text every time).
 */
export interface PgQuery {
  // biome-ignore lint/suspicious/noExplicitAny: rows are read by column name, each caller knows its columns (the shape the leader lease codes against)
  query(text: string, params?: unknown[], name?: string): Promise<{ rows: any[] }>;
}

/** A connection checked out of the pool (for a transaction); `release(error)` drops a broken one. */
export interface PgConnection extends PgQuery {
  release(error?: Error): void;
}

/** A pool of connections to one database. */
export interface PgPool extends PgQuery {
  connect(): Promise<PgConnection>;
  end(): Promise<void>;
  /** The URL without its password (for messages). */
  readonly safeUrl: string;
}

/** The versions of the optional peer dependency `pg` this code works with (package.json `peerDependencies`). */
/**
 * The transaction-local setting in which the leader lease's fence leaves the
 * epoch it checked (`set_config(..., true)`): what a commit's rows record as
 * the epoch that committed them (the audit's `epoch` column defaults to it).
 * Unset outside a fenced transaction.
 */
export const PG_EPOCH_SETTING = 'switchboard.epoch';

export const PG_RANGE = '^8.23.1';

/** A refused or failed PostgreSQL connection or statement; the message never holds the URL's password. */
export class PostgresError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'PostgresError'>;
}

/** Whether a string is a PostgreSQL URL (`postgres://` or `postgresql://`). */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/**
 * A PostgreSQL URL as it may appear in a message or a log line: scheme,
 * user, host, port and database, never the password (nor query options,
 * which may carry one).
 */
export function safePostgresUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username === '' ? '' : `${u.username}@`;
    return `${u.protocol}//${user}${u.host}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(unparsable postgres url)';
  }
}

/** The secrets a URL carries, as written and decoded (the password; a `password=` query option). */
function secretsOf(url: string): string[] {
  const found = new Set<string>();
  try {
    const u = new URL(url);
    for (const s of [u.password, u.searchParams.get('password') ?? '']) {
      if (s.length === 0) continue;
      found.add(s);
      try {
        found.add(decodeURIComponent(s));
      } catch {
        // Not percent-encoded: as written only.
      }
    }
  } catch {
    // An unparsable URL: its password cannot be told apart; the whole URL is a secret.
    if (url.length > 0) found.add(url);
  }
  return [...found].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
}

/** `text` with every secret of `url` (its password, as written and decoded) replaced by `***`. */
export function redactPostgresSecrets(text: string, url: string): string {
  let out = text;
  for (const secret of secretsOf(url)) out = out.split(secret).join('***');
  return out;
}

/**
 * An error of the client, as thrown on: a `PostgresError` whose message and
 * cause hold no secret of `url`. `code` says what failed (`PG_UNREACHABLE`
 * for a connection that cannot be made or was lost, `PG_QUERY_FAILED` for a
 * refused statement); PostgreSQL's SQLSTATE stays in `details.sqlState`.
 */
export function postgresError(
  error: unknown,
  url: string,
  what: string,
  code?: ErrorCodeOf<'PostgresError'>,
): PostgresError {
  if (error instanceof PostgresError) return error;
  const e = error as { message?: unknown; code?: unknown } | undefined;
  const raw = typeof e?.message === 'string' ? e.message : String(error);
  const sqlState = typeof e?.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
  const systemCode = typeof e?.code === 'string' && sqlState === undefined ? e.code : undefined;
  const lost =
    systemCode !== undefined ||
    /Connection terminated|connection timeout|timeout expired|ECONNREFUSED|ECONNRESET|EPIPE|not queryable/i.test(raw) ||
    (sqlState !== undefined && /^(08|57P0)/.test(sqlState));
  const chosen = code ?? (lost ? 'PG_UNREACHABLE' : 'PG_QUERY_FAILED');
  const message = redactPostgresSecrets(raw, url);
  const safe = safePostgresUrl(url);
  const advice =
    chosen === 'PG_UNREACHABLE' ? `: check that PostgreSQL is up and answers at ${safe}, then retry` : ` (${safe})`;
  // The cause is a copy: the client's error object may hold its connection parameters.
  const cause = new Error(message);
  if (sqlState !== undefined || systemCode !== undefined) (cause as { code?: string }).code = sqlState ?? systemCode;
  return new PostgresError(chosen, `${what}: ${message}${advice}`, {
    cause,
    details: {
      url: safe,
      ...(sqlState === undefined ? {} : { sqlState }),
      ...(systemCode === undefined ? {} : { systemCode }),
    },
  });
}

let loading: Promise<typeof Pg> | undefined;

/** Loads `pg` on first use; when it is not installed, a `PG_CLIENT_MISSING` that says what to install. */
async function loadPg(user: string): Promise<typeof Pg> {
  loading ??= import('pg').then((m) => ((m as unknown as { default?: typeof Pg }).default ?? m) as typeof Pg);
  try {
    return await loading;
  } catch (error) {
    loading = undefined;
    if ((error as NodeJS.ErrnoException)?.code === 'ERR_MODULE_NOT_FOUND') {
      throw new PostgresError(
        'PG_CLIENT_MISSING',
        `${user} needs the package 'pg' (node-postgres ${PG_RANGE}), which cannot be found: ` +
          "run 'npm install pg@8' in the project that uses switchboard",
        { cause: error },
      );
    }
    throw error;
  }
}

/** Options of `openPgPool`. */
export interface PgPoolOptions {
  /** Connections at most (default 4). */
  max?: number;
  /** How long a connection attempt may take (default 5 s). */
  connectTimeoutMs?: number;
  /** How long a statement may wait for its answer before it fails (default: no limit). */
  queryTimeoutMs?: number;
  /** Who opens it, for messages (default `the PostgreSQL store`). */
  user?: string;
  /** Told of a pooled connection's error (it is dropped; the pool makes a new one when asked). */
  onError?: (error: PostgresError) => void;
}

/**
 * Opens a pool on `url` and checks it answers (one `SELECT 1`): an
 * unreachable server is `PG_UNREACHABLE`, a bad URL `PG_INVALID_URL`, a
 * missing client `PG_CLIENT_MISSING`, all without the password.
 */
export async function openPgPool(url: string, options: PgPoolOptions = {}): Promise<PgPool> {
  const user = options.user ?? 'the PostgreSQL store';
  if (typeof url !== 'string' || !isPostgresUrl(url)) {
    throw new PostgresError(
      'PG_INVALID_URL',
      `${user} takes a URL postgres://USER[:PASSWORD]@HOST:PORT/DATABASE, not ${
        typeof url === 'string' ? JSON.stringify(safePostgresUrl(url)) : typeof url
      }`,
    );
  }
  try {
    new URL(url);
  } catch {
    throw new PostgresError(
      'PG_INVALID_URL',
      `${user}: the URL cannot be parsed: write it postgres://USER[:PASSWORD]@HOST:PORT/DATABASE (percent-encode special characters)`,
    );
  }
  const pg = await loadPg(user);
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max ?? 4,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 5_000,
    idleTimeoutMillis: 30_000,
    ...(options.queryTimeoutMs === undefined ? {} : { query_timeout: options.queryTimeoutMs }),
  });
  // An idle connection's error (the server restarted, the network dropped) must not crash the process.
  pool.on('error', (error) => options.onError?.(postgresError(error, url, `${user}: a pooled connection failed`)));
  const wrapped: PgPool = {
    safeUrl: safePostgresUrl(url),
    async query(text, params, name) {
      try {
        return await (name === undefined ? pool.query(text, params) : pool.query({ name, text, values: params }));
      } catch (error) {
        throw postgresError(error, url, `${user}: a statement failed`);
      }
    },
    async connect() {
      let client: Pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw postgresError(error, url, `${user}: cannot connect`, 'PG_UNREACHABLE');
      }
      // A connection that errors while checked out is reported through its queries: listened to here so
      // that its 'error' event cannot go unhandled.
      const onError = () => undefined;
      client.on('error', onError);
      return {
        async query(text, params, name) {
          try {
            return await (name === undefined
              ? client.query(text, params)
              : client.query({ name, text, values: params }));
          } catch (error) {
            throw postgresError(error, url, `${user}: a statement failed`);
          }
        },
        release(error) {
          client.off('error', onError);
          client.release(error ?? false);
        },
      };
    },
    async end() {
      await pool.end();
    },
  };
  try {
    await pool.query('SELECT 1');
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw postgresError(error, url, `${user}: cannot reach PostgreSQL`, 'PG_UNREACHABLE');
  }
  return wrapped;
}

/**
 * Runs `run` in one transaction on a connection of `pool` (`begin` opens
 * it: `BEGIN`, or with a mode): COMMIT once it resolves, ROLLBACK if it (or
 * the COMMIT) throws, and the error goes on. A connection whose ROLLBACK
 * fails is in an unknown state: it is dropped, not given back to the pool.
 */
export async function inPgTransaction<T>(
  pool: PgPool,
  run: (tx: PgConnection) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const c = await pool.connect();
  let broken: Error | undefined;
  try {
    await c.query(begin);
    try {
      const out = await run(c);
      await c.query('COMMIT');
      return out;
    } catch (error) {
      await c.query('ROLLBACK').catch((rollback: Error) => {
        broken = rollback;
      });
      throw error;
    }
  } finally {
    c.release(broken);
  }
}
