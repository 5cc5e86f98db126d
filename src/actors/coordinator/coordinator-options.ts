import type { KeyObject } from 'node:crypto';
import type { WorkQueue } from '../../bus/work-queue.js';
import { type Logger, createLogger } from '../../log/logger.js';
import type { PoolDeployment } from '../../machines/pool-machine.js';
import { checkPruneBatch, checkPruneIntervalMs, checkRetentionMs } from '../../persistence/context/retention.js';
import type { ContextStore, SqliteContextStoreOptions } from '../../persistence/context/sqlite-store.js';
import type { PgFence } from '../../persistence/coordinator/postgres-client.js';
import { type Clock, systemClock } from '../../persistence/kernel/clock.js';
import type { Durability, SqliteDatabase } from '../../persistence/kernel/database.js';
import { type IdSource, createUuidV7Source } from '../../persistence/kernel/ids.js';
import { isPostgresUrl } from '../../persistence/kernel/postgres.js';
import type { WorkflowDefinition } from '../../protocol/workflow.js';
import { WorkflowRegistry } from '../../workflow/definition.js';
import type { PolicyEntry } from '../../workflow/governance.js';
import type { Broker } from '../broker/broker.js';
import type { ActorInspector } from '../inspection.js';
import type { WorkHandler } from '../worker/worker.js';
import { type ForgetRunsOptions, checkForgetRunsOptions } from './forget.js';
import { CoordinatorError, invalid } from './types.js';

/** A role's workers, run in this process by a pool. */
export interface RoleDeployment {
  /** The handler the role's pool runs. */
  handler: WorkHandler;
  /** The pool's deployment. */
  deployment: PoolDeployment;
  /**
   * Lease per hop delivery.
   * @defaultValue 30000 (30 s)
   */
  visibilityTimeoutMs?: number;
  /**
   * How often the pool looks at its queue.
   * @defaultValue 50 (ms)
   */
  observeIntervalMs?: number;
  /**
   * How long a worker's consume waits before looping.
   * @defaultValue 200 (ms)
   */
  pollWaitMs?: number;
}

/** Options of `createCoordinator`: its storage (one file, or the parts), workflows, roles, governance and sweeps. */
export interface CoordinatorOptions {
  /** Embedded default: one SQLite file for the broker, the bus, the Context Engine, the audit and the Coordinator. */
  path?: string;
  /**
   * With `path`: how the file is synced.
   * @defaultValue `'normal'`
   */
  durability?: Durability;
  /** Or bring the parts (all of them; the caller closes them). */
  broker?: Broker;
  /** The work bus, when not embedded (with `broker`, `db` and `contextStore`, or with `postgres`). */
  bus?: WorkQueue;
  /** The database the Coordinator's tables and the audit live in. */
  db?: SqliteDatabase;
  /**
   * Or the Coordinator's tables and the audit in PostgreSQL (instead of
   * `db`): give `bus` (a Redis bus: the Coordinator's whole state is then off
   * this machine) and `contextStore` (its Redis store); `broker` is
   * optional: without one there is no broker, and the A2A view of the items
   * and hops is derived from their rows (`taskViewsOfItem`, what `tasks`,
   * `top` and the console show); with one, the mirror keeps its tasks in
   * step (rebuilt from the tables on every start). `fence` runs first in every commit transaction
   * (a leader lease's `assertEpoch`). See docs/coordinator.md, "PostgreSQL".
   */
  postgres?: PostgresStorage;
  /** The Context Engine, when not embedded. */
  contextStore?: ContextStore;
  /**
   * With `path`: how long the embedded Context Engine keeps completion
   * records, effect markers and resumed checkpoints (`retentionMs`, default
   * 24 h: see `src/persistence/context/retention.ts`), how often it prunes
   * them (`pruneIntervalMs`, default 60 s) and how many rows per transaction
   * (`pruneBatch`, default 500). A store you bring is configured by you.
   * @defaultValue `{ retentionMs: 86400000, pruneIntervalMs: 60000, pruneBatch: 500 }`
   */
  contextRetention?: Pick<SqliteContextStoreOptions, 'retentionMs' | 'pruneIntervalMs' | 'pruneBatch'>;
  /**
   * How the Coordinator forgets the Context Engine's data of ended runs
   * (outputs, memory, checkpoints) once they have been over for the store's
   * `retentionMs`: a sweep every `intervalMs` (default 60 s, unref'd; `0`:
   * only `forgetEndedRuns()`), `batch` runs at a time (default 100). The
   * schedule is each item's `finished_at`, so it survives restarts.
   * @defaultValue `{ intervalMs: 60000, batch: 100 }`
   */
  forgetRuns?: ForgetRunsOptions;
  /**
   * An Ed25519 private key that signs the audit head (checkpoints, verified
   * by `audit verify --public-key`): at every work item's end and every
   * `auditCheckpointMs`. Held in memory only, never stored or logged.
   * @defaultValue none: the head is not signed
   */
  auditKey?: KeyObject;
  /**
   * How often the head is signed besides items' ends.
   * @defaultValue 60000 (60 s)
   */
  auditCheckpointMs?: number;
  /** The workflow definitions work items may follow (checked ones). */
  definitions: readonly WorkflowDefinition[] | WorkflowRegistry;
  /** User policies, run after the built-ins (budget, role allow-list, max hops). */
  policies?: readonly PolicyEntry[];
  /**
   * Roles hops may go to.
   * @defaultValue the roles of the definitions
   */
  allowedRoles?: Iterable<string>;
  /**
   * Hops per work item.
   * @defaultValue 50
   */
  maxHops?: number;
  /** Worker pools to run in this process, by role. */
  deployments?: Record<string, RoleDeployment>;
  /**
   * How often the Coordinator looks at the time: hops past their
   * stage's `timeout` (or `hopTimeoutMs`) are re-published or failed, items
   * past their definition's `deadline` fail.
   * @defaultValue 1000 (1 s)
   */
  timerIntervalMs?: number;
  /**
   * The default hop timeout, for hops (and queries) whose stage sets no
   * `timeout` of its own: a hop out longer than it (from its dispatch, or
   * its resume) is re-published under the same idempotency key, so that a
   * hop whose message was lost is found again, until its stage's retry
   * policy's `maximumAttempts` is spent; then it fails (`HopTimedOut`). A
   * stage's own `timeout` wins. A whole number of milliseconds from 10 to
   * 30 days, or `0` for none (a hop whose stage sets no timeout may then stay
   * out forever).
   * @defaultValue 600000 (10 minutes)
   */
  hopTimeoutMs?: number;
  /**
   * Lease on each result the Coordinator takes from the bus: how soon a crashed Coordinator's results come back.
   * @defaultValue 30000 (30 s)
   */
  resultsVisibilityTimeoutMs?: number;
  /**
   * The Coordinator's consumer name on the results role.
   * @defaultValue `coordinator-<pid>`
   */
  consumer?: string;
  /**
   * The clock of the decisions, timers and audit (tests pass a fake one).
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * Where item, hop and task ids come from.
   * @defaultValue UUIDv7 ids on the clock
   */
  ids?: IdSource;
  /**
   * Where the Coordinator, and the broker and workers it runs, log (a pino
   * logger). By default: JSON lines to stderr at level `warn`, so that what
   * needs someone shows without asking (a work item failed by a hop failure
   * that nothing routes, with the handler's error and its stack; a lost
   * lease; a publish that will be retried) while a run that goes well, or
   * whose failures its workflow routes, writes nothing. Pass
   * `pino({ level: 'silent' })` for no logs, or a logger at `info` for one
   * line per hop failure.
   * @defaultValue JSON lines to stderr at level `warn`
   */
  logger?: Logger;
  /**
   * One Coordinator per file: it owns the file while it runs (a heartbeat every
   * `heartbeatMs`, default 1 s). Opening a file another live Coordinator owns
   * is refused (`COORD_FILE_OWNED`); a dead owner's file is taken over at once
   * (same host) or once its heartbeat is `staleMs` old (default 10 s).
   * @defaultValue `{ heartbeatMs: 1000, staleMs: 10000 }`
   */
  ownership?: { heartbeatMs?: number; staleMs?: number };
  /**
   * An inspector (`--inspect`) given to every root actor: the broker's (when
   * the Coordinator opens it), each work item's WorkflowRun and each pool.
   */
  inspect?: ActorInspector;
}

/** Where a Coordinator on PostgreSQL keeps its tables and audit. */
export interface PostgresStorage {
  /** `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE` (the password never appears in a message or log line). */
  url: string;
  /** Run first inside every commit transaction; throwing refuses the commit (nothing is written or published). */
  fence?: PgFence;
  /**
   * Connections of the pool at most.
   * @defaultValue 4
   */
  maxConnections?: number;
}

/**
 * Where the Coordinator's parts come from, decided once from the options:
 * opened on an embedded file, given by the caller (SQLite), or PostgreSQL
 * with the caller's Redis bus and Context Engine.
 */
export type CoordinatorPlace =
  | { from: 'file'; path: string; durability: Durability }
  | { from: 'parts'; broker: Broker; bus: WorkQueue; db: SqliteDatabase; contextStore: ContextStore }
  | {
      from: 'postgres';
      postgres: PostgresStorage;
      bus: WorkQueue;
      contextStore: ContextStore;
      /** Without a broker of the caller's, none: the A2A view is derived from the rows by whoever reads them. */
      broker: Broker | undefined;
    };

/** The options checked, with their defaults: what the assembly opens and the running Coordinator reads. */
export interface CompiledCoordinatorOptions {
  /** The options as given (deployments, governance, inspector, ownership, audit key). */
  readonly given: CoordinatorOptions;
  readonly place: CoordinatorPlace;
  /** The Coordinator's logger (component `coordinator`). */
  readonly log: Logger;
  /** The logger given, or the default one: what the broker and workers it runs log to. */
  readonly logger: Logger;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly registry: WorkflowRegistry;
  readonly forgetRuns: Required<ForgetRunsOptions>;
  readonly timerIntervalMs: number;
  /** The default hop timeout (ms); `0`: none. */
  readonly hopTimeoutMs: number;
  readonly auditCheckpointMs: number;
  readonly resultsVisibilityTimeoutMs: number;
  readonly consumer: string;
}

/**
 * Checks the options of `createCoordinator` and fills in their defaults,
 * before anything is opened: a bad value or combination leaves nothing to
 * close. Refusals are `COORD_INVALID_ARGUMENT` (or the forgetter's own).
 */
export function compileCoordinatorOptions(options: CoordinatorOptions): CompiledCoordinatorOptions {
  const logger = options.logger ?? createLogger({ level: 'warn' });
  const log = logger.child({ component: 'coordinator' });
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? createUuidV7Source(() => clock.now());
  const registry =
    options.definitions instanceof WorkflowRegistry
      ? options.definitions
      : (() => {
          const r = new WorkflowRegistry();
          for (const def of options.definitions) r.add(def);
          return r;
        })();
  if (registry.list().length === 0) throw invalid('a Coordinator needs at least one workflow definition');

  if (options.contextRetention !== undefined) {
    const { retentionMs, pruneIntervalMs, pruneBatch } = options.contextRetention;
    try {
      checkRetentionMs(retentionMs);
      checkPruneIntervalMs(pruneIntervalMs);
      checkPruneBatch(pruneBatch);
    } catch (error) {
      throw invalid(`contextRetention: ${(error as Error).message}`);
    }
  }

  const tick = options.timerIntervalMs;
  if (tick !== undefined && (!Number.isInteger(tick) || tick < 10 || tick > 3_600_000)) {
    throw invalid('timerIntervalMs is a whole number of milliseconds from 10 to 3600000');
  }

  const hopTimeoutMs = checkHopTimeoutMs(options.hopTimeoutMs);

  let forgetRuns: Required<ForgetRunsOptions>;
  try {
    forgetRuns = checkForgetRunsOptions(options.forgetRuns);
  } catch (error) {
    if (error instanceof CoordinatorError) throw error;
    throw invalid('forgetRuns takes { intervalMs?, batch? }');
  }

  return {
    given: options,
    place: placeOf(options),
    log,
    logger,
    clock,
    ids,
    registry,
    forgetRuns,
    timerIntervalMs: tick ?? 1_000,
    hopTimeoutMs,
    auditCheckpointMs: options.auditCheckpointMs ?? 60_000,
    resultsVisibilityTimeoutMs: options.resultsVisibilityTimeoutMs ?? 30_000,
    consumer: options.consumer ?? `coordinator-${process.pid}`,
  };
}

/** The default hop timeout when none is given: 10 minutes, so that no hop stays out forever. */
export const DEFAULT_HOP_TIMEOUT_MS = 600_000;
/** The longest default hop timeout taken: 30 days. */
export const MAX_HOP_TIMEOUT_MS = 30 * 86_400_000;

/**
 * Checks `hopTimeoutMs` and fills in its default: a whole number of
 * milliseconds from 10 to 30 days, or `0` for none. Refused with
 * `COORD_INVALID_ARGUMENT`.
 */
export function checkHopTimeoutMs(value: number | undefined): number {
  if (value === undefined) return DEFAULT_HOP_TIMEOUT_MS;
  if (value === 0) return 0;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 10 || value > MAX_HOP_TIMEOUT_MS) {
    throw invalid(
      `hopTimeoutMs is a whole number of milliseconds from 10 to ${MAX_HOP_TIMEOUT_MS} (30 days), or 0 for none; ` +
        `not ${String(value)}`,
    );
  }
  return value;
}

/** Where the parts come from: the one place the options choose the backend. */
function placeOf(options: CoordinatorOptions): CoordinatorPlace {
  const pg = options.postgres;
  if (pg !== undefined) {
    if (pg === null || typeof pg !== 'object' || typeof pg.url !== 'string' || !isPostgresUrl(pg.url)) {
      throw invalid('postgres takes { url: "postgres://USER@HOST:PORT/DATABASE", fence?, maxConnections? }');
    }
    const max = pg.maxConnections;
    if (max !== undefined && (!Number.isInteger(max) || max < 1 || max > 100)) {
      throw invalid('postgres.maxConnections is a whole number from 1 to 100');
    }
    if (pg.fence !== undefined && typeof pg.fence !== 'function') {
      throw invalid('postgres.fence is a function (tx) => Promise<void> run first in every commit transaction');
    }
    if (options.path !== undefined || options.db !== undefined) {
      throw invalid('give postgres or path or db: the tables and the audit live in one of them');
    }
    if (options.bus === undefined || options.bus.backend !== 'redis') {
      throw invalid(
        'a Coordinator on PostgreSQL needs a Redis bus (bus: createRedisQueue(...)): with the SQLite bus ' +
          'its hops would live on this machine alone',
      );
    }
    if (options.contextStore === undefined) {
      throw invalid('a Coordinator on PostgreSQL needs a contextStore (the Redis Context Engine of its bus)');
    }
    refuseContextRetention(options);
    return {
      from: 'postgres',
      postgres: pg,
      bus: options.bus,
      contextStore: options.contextStore,
      broker: options.broker,
    };
  }
  if (options.path !== undefined) {
    const given = (['db', 'broker', 'bus', 'contextStore'] as const).filter((k) => options[k] !== undefined);
    if (given.length > 0) {
      // They would be ignored: the file's own would run, and work published to the given bus never seen.
      throw invalid(
        `path opens its own broker, bus and Context Engine on the file, so ${given.join(', ')} would be ignored: ` +
          'give path alone, or db, broker, bus and contextStore without path',
      );
    }
    return { from: 'file', path: options.path, durability: options.durability ?? 'normal' };
  }
  if (!options.broker || !options.bus || !options.db || !options.contextStore) {
    throw invalid('give path (embedded), or broker, bus, db and contextStore, or postgres with bus and contextStore');
  }
  refuseContextRetention(options);
  const { broker, bus, db, contextStore } = options;
  return { from: 'parts', broker, bus, db, contextStore };
}

/** A store the caller gives is configured by the caller. */
function refuseContextRetention(options: CoordinatorOptions): void {
  if (options.contextRetention !== undefined) {
    throw invalid(
      'contextRetention configures the embedded Context Engine (path); configure the contextStore you give',
    );
  }
}
