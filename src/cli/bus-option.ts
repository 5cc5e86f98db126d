import { type RedisContextStore, createRedisContextStore } from '../persistence/context/redis-store.js';
import { createRedisQueue } from '../bus/redis/queue.js';
import { SqliteQueue } from '../bus/sqlite/queue.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_MS, type WorkQueue } from '../bus/work-queue.js';
import {
  type ContextStore,
  SqliteContextStore,
  type SqliteContextStoreOptions,
} from '../persistence/context/sqlite-store.js';
import { DEFAULT_CONTEXT_RETENTION_MS, MAX_CONTEXT_RETENTION_MS } from '../persistence/context/retention.js';
import type { SqliteDatabase } from '../persistence/kernel/database.js';
import { isPostgresUrl } from '../persistence/kernel/postgres.js';
import { CliUsageError, type FlagSpec, type ParsedArgs, stringFlag } from './command-args.js';

/**
 * `--bus` of the scale-out commands (`coordinator`, `worker`, `submit`,
 * `approve`): `redis://HOST:PORT[/DB]` selects the Redis Streams bus (keys
 * under `--bus-prefix`); without it the embedded SQLite bus in the `--db`
 * file is used, so the same commands run on one machine with no Redis.
 */

export const BUS_FLAGS: FlagSpec = {
  bus: { type: 'string' },
  'bus-prefix': { type: 'string' },
};

export const BUS_HELP = `  --bus URL               the work bus: redis://HOST:PORT[/DB] for Redis
                          Streams; default: the embedded SQLite bus in the
                          --db file (no Redis needed)
  --bus-prefix NAME       key prefix of the deployment on Redis (default
                          switchboard; 1-64 letters, digits, . _ : -)`;

export type BusChoice = { kind: 'redis'; url: string; prefix: string } | { kind: 'sqlite'; path: string };

const PREFIX = /^[A-Za-z0-9._:-]{1,64}$/;

/** Reads `--bus`, `--bus-prefix` and `--db` (the SQLite bus needs the file). */
export function parseBusChoice(args: ParsedArgs, db: string | undefined): BusChoice {
  const url = stringFlag(args, 'bus');
  const prefix = stringFlag(args, 'bus-prefix');
  if (url === undefined) {
    if (prefix !== undefined) throw new CliUsageError('--bus-prefix is for a Redis --bus');
    if (db === undefined) throw new CliUsageError('give --bus redis://HOST:PORT, or --db PATH for the embedded bus');
    return { kind: 'sqlite', path: db };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new CliUsageError(`--bus must be a redis://HOST:PORT[/DB] URL (got '${url}')`);
  }
  if (parsed.protocol !== 'redis:' || parsed.hostname === '' || !/^(\/[0-9]{0,2})?$/.test(parsed.pathname)) {
    throw new CliUsageError(`--bus must be a redis://HOST:PORT[/DB] URL (got '${parsed.protocol}//${parsed.host}')`);
  }
  if (prefix !== undefined && !PREFIX.test(prefix)) {
    throw new CliUsageError('--bus-prefix must be 1-64 letters, digits, . _ : or -');
  }
  return { kind: 'redis', url, prefix: prefix ?? 'switchboard' };
}

/**
 * A Coordinator's PostgreSQL database goes with a Redis bus: `--db
 * postgres://...` without `--bus` is a usage error (`coordinator`, `dlq`).
 */
export function requireRedisBusWithPostgres(args: ParsedArgs, db: string | undefined): void {
  if (db !== undefined && isPostgresUrl(db) && stringFlag(args, 'bus') === undefined) {
    throw new CliUsageError(
      '--db postgres://... needs --bus redis://HOST:PORT: a Coordinator on PostgreSQL runs its hops on Redis ' +
        '(the embedded bus would keep them in a file on this machine)',
    );
  }
}

export function describeBus(choice: BusChoice): string {
  if (choice.kind === 'sqlite') return `sqlite:${choice.path}`;
  const u = new URL(choice.url);
  return `redis://${u.host}${u.pathname === '/' ? '' : u.pathname} (prefix ${choice.prefix})`;
}

export interface OpenBusOptions {
  /** The SQLite bus: an open database of the process (else the --db file is opened and closed by `close`). */
  database?: SqliteDatabase;
  /** Redis: entries read but never leased by a dead consumer are claimed after this long. */
  orphanIdleMs?: number;
}

/** Opens the chosen bus. */
export async function openBus(choice: BusChoice, options: OpenBusOptions = {}): Promise<WorkQueue> {
  if (choice.kind === 'redis') {
    return createRedisQueue({
      url: choice.url,
      prefix: choice.prefix,
      ...(options.orphanIdleMs === undefined ? {} : { orphanIdleMs: options.orphanIdleMs }),
    });
  }
  return new SqliteQueue({
    database: options.database ?? choice.path,
    pollIntervalMs: { min: 5, max: 50 },
  });
}

/** `--context-retention-ms` of `coordinator` and `worker`. */
export const CONTEXT_RETENTION_FLAGS: FlagSpec = {
  'context-retention-ms': { type: 'string' },
};

export const CONTEXT_RETENTION_HELP = `  --context-retention-ms MS
                          how long the Context Engine keeps what stops a
                          returning hop from running twice (completion
                          records, effect markers, resumed checkpoints)
                          before pruning it, and (coordinator) how long a
                          finished run's outputs, memory and checkpoints
                          stay before they are forgotten; give every
                          process the same.
                          ${DEFAULT_IDEMPOTENCY_RETENTION_MS} (the bus's 1 h idempotency retention) to
                          ${MAX_CONTEXT_RETENTION_MS}; default ${DEFAULT_CONTEXT_RETENTION_MS} (24 h)`;

/** Reads `--context-retention-ms`: undefined when absent (the store's default). */
export function parseContextRetention(args: ParsedArgs): number | undefined {
  const value = stringFlag(args, 'context-retention-ms');
  if (value === undefined) return undefined;
  const min = DEFAULT_IDEMPOTENCY_RETENTION_MS;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > MAX_CONTEXT_RETENTION_MS) {
    throw new CliUsageError(
      `--context-retention-ms must be a whole number from ${min} to ${MAX_CONTEXT_RETENTION_MS} (got '${value}')`,
    );
  }
  return Number(value);
}

export interface OpenContextStoreOptions {
  /** The SQLite store: an open database of the process (else the --db file is opened and closed by `close`). */
  database?: SqliteDatabase;
  /** `--context-retention-ms` (default: the stores' 24 h). */
  retentionMs?: number;
  /** The SQLite store prunes every minute; told what each pass deleted or why it failed. */
  onPrune?: SqliteContextStoreOptions['onPrune'];
}

/** The Context Engine that goes with the bus: Redis beside a Redis bus, else the SQLite file. */
export async function openContextStore(
  choice: BusChoice,
  options: OpenContextStoreOptions = {},
): Promise<ContextStore | RedisContextStore> {
  const retention = options.retentionMs === undefined ? {} : { retentionMs: options.retentionMs };
  if (choice.kind === 'redis') return createRedisContextStore({ url: choice.url, prefix: choice.prefix, ...retention });
  return new SqliteContextStore({
    database: options.database ?? choice.path,
    ...retention,
    ...(options.onPrune === undefined ? {} : { onPrune: options.onPrune }),
  });
}
