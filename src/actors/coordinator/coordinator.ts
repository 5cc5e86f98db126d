import type { KeyObject } from 'node:crypto';
import { type Observable, Subject, concat, defer, filter, from, map, of, takeWhile } from 'rxjs';
import { z } from 'zod';
import { type Dispatcher, type ResultDelivery, type StartHop, createDispatcher } from '../../bus/dispatcher.js';
import { SqliteQueue } from '../../bus/sqlite/queue.js';
import type { WorkQueue } from '../../bus/work-queue.js';
import { type Logger, silentLogger } from '../../log/logger.js';
import { logContextPrunes } from '../../persistence/context/prune-log.js';
import { WorkflowError } from '../../protocol/workflow-error.js';
import type { PolicyEntry } from '../../workflow/governance.js';
import type { PoolDeployment } from '../../machines/pool-machine.js';
import { WorkflowRegistry } from '../../workflow/definition.js';
import { isFinalRunState } from '../../machines/workflow-run-transitions.js';
import { AuditLog, type AuditVerification, type AuditVerifyOptions } from '../../persistence/audit/sqlite-chain.js';
import { type Clock, systemClock } from '../../persistence/kernel/clock.js';
import {
  type ContextStore,
  SqliteContextStore,
  type SqliteContextStoreOptions,
} from '../../persistence/context/sqlite-store.js';
import { checkPruneBatch, checkPruneIntervalMs, checkRetentionMs } from '../../persistence/context/retention.js';
import { type Durability, type SqliteDatabase, openDatabase } from '../../persistence/kernel/database.js';
import { type IdSource, createUuidV7Source } from '../../persistence/kernel/ids.js';
import { type Part, PartSchema } from '../../protocol/parts.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import type { WorkflowDefinition, WorkflowRef } from '../../protocol/workflow.js';
import { type Broker, createBroker } from '../broker/broker.js';
import { CoordinatorEngine, type Step } from './engine.js';
import { registerCommitTiming } from './commit-timing.js';
import { EndedRunForgetter, type ForgetRunsOptions, checkForgetRunsOptions } from './forget.js';
import { BrokerMirror } from './mirror.js';
import { FileOwnership } from './ownership.js';
import { CoordinatorGovernance } from './policies.js';
import { SqliteCoordinatorStore } from '../../persistence/coordinator/store.js';
import type { CoordinatorStore, CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';
import type { PgFence } from '../../persistence/coordinator/postgres-client.js';
import { PostgresCoordinatorStore } from '../../persistence/coordinator/postgres-store.js';
import { PostgresAuditLog } from '../../persistence/audit/postgres-chain.js';
import { type PgPool, isPostgresUrl, openPgPool, safePostgresUrl } from '../../persistence/kernel/postgres.js';
import type { HopRecord, ItemBudget, ItemEventKind, ItemRecord, OutboxRow } from '../../workflow/records.js';
import { CoordinatorError, type ItemStatus, statusOf } from './types.js';
import { HumanEdge } from './human-edge.js';
import { type Pool, createPool } from '../worker/pool.js';
import type { WorkHandler } from '../worker/worker.js';
import type { ActorInspector } from '../inspection.js';
import { ItemTraces, heldItemTraces } from './item-traces.js';
import { type SwitchboardMetrics, switchboardMetrics } from '../../telemetry/metrics.js';
import {
  ATTR,
  type Context,
  ROOT_CONTEXT,
  SPAN,
  SpanKind,
  contextOf,
  contextWith,
  endSpanWithError,
  OFF_SPAN,
  startSpan,
  traceFieldsOf,
  tracingOn,
} from '../../telemetry/tracing.js';
import { RESULTS_ROLE } from '../../protocol/work-envelope.js';

/**
 * The Coordinator (the design's "small brain"): a deterministic actor that owns
 * every work item's lifecycle. A work item is a top-level A2A task (requester:
 * the human edge; worker: the Coordinator) with one WorkflowRun actor; each
 * hop is a child task to a role's agent, dispatched through the work bus.
 * At every hop it governs (the policy cascade), audits (hash-chained), accrues
 * cost, and routes by the workflow definition; approval gates wait for a
 * named approver; suspended hops wait with no worker running.
 *
 * Crash safety: each result is applied in ONE SQLite transaction (results read
 * together share one commit, one savepoint each) (hop rows,
 * cost, run snapshot, audit rows and the outbox of publishes), and its
 * delivery is acked only after the outbox is published. A redelivered result
 * is recognised and changes nothing; publishes carry deterministic
 * idempotency keys, so re-publishing the outbox after a crash is harmless.
 */

/** Whether an item event is the item's end (the last status `watch` streams). */
function isItemEndEvent(kind: ItemEventKind): boolean {
  return kind === 'completed' || kind === 'failed' || kind === 'canceled';
}

/** A role's workers, run in this process by a pool. */
export interface RoleDeployment {
  handler: WorkHandler;
  deployment: PoolDeployment;
  /** Lease per hop delivery (default 30 s). */
  visibilityTimeoutMs?: number;
  /** How often the pool looks at its queue (default 50 ms). */
  observeIntervalMs?: number;
  /** How long a worker's consume waits before looping (default 200 ms). */
  pollWaitMs?: number;
}

/** Options of `createCoordinator`: its storage (one file, or the parts), workflows, roles, governance and sweeps. */
export interface CoordinatorOptions {
  /** Embedded default: one SQLite file for the broker, the bus, the Context Engine, the audit and the Coordinator. */
  path?: string;
  durability?: Durability;
  /** Or bring the parts (all of them; the caller closes them). */
  broker?: Broker;
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
  contextStore?: ContextStore;
  /**
   * With `path`: how long the embedded Context Engine keeps completion
   * records, effect markers and resumed checkpoints (`retentionMs`, default
   * 24 h: see `src/persistence/context/retention.ts`), how often it prunes
   * them (`pruneIntervalMs`, default 60 s) and how many rows per transaction
   * (`pruneBatch`, default 500). A store you bring is configured by you.
   */
  contextRetention?: Pick<SqliteContextStoreOptions, 'retentionMs' | 'pruneIntervalMs' | 'pruneBatch'>;
  /**
   * How the Coordinator forgets the Context Engine's data of ended runs
   * (outputs, memory, checkpoints) once they have been over for the store's
   * `retentionMs`: a sweep every `intervalMs` (default 60 s, unref'd; `0`:
   * only `forgetEndedRuns()`), `batch` runs at a time (default 100). The
   * schedule is each item's `finished_at`, so it survives restarts.
   */
  forgetRuns?: ForgetRunsOptions;
  /**
   * An Ed25519 private key that signs the audit head (checkpoints, verified
   * by `audit verify --public-key`): at every work item's end and every
   * `auditCheckpointMs`. Held in memory only, never stored or logged.
   */
  auditKey?: KeyObject;
  /** How often the head is signed besides items' ends (default 60 s). */
  auditCheckpointMs?: number;
  /** The workflow definitions work items may follow (checked ones). */
  definitions: readonly WorkflowDefinition[] | WorkflowRegistry;
  /** User policies, run after the built-ins (budget, role allow-list, max hops). */
  policies?: readonly PolicyEntry[];
  /** Roles hops may go to (default: the roles of the definitions). */
  allowedRoles?: Iterable<string>;
  /** Hops per work item (default 50). */
  maxHops?: number;
  /** Worker pools to run in this process, by role. */
  deployments?: Record<string, RoleDeployment>;
  /**
   * How often the Coordinator looks at the time (default 1 s): hops past their
   * stage's `timeout` are re-published or failed, items past their
   * definition's `deadline` fail. Only items whose definition sets one count.
   */
  timerIntervalMs?: number;
  /** Lease on each result the Coordinator takes from the bus (default 30 s): how soon a crashed Coordinator's results come back. */
  resultsVisibilityTimeoutMs?: number;
  /** The Coordinator's consumer name on the results role. */
  consumer?: string;
  clock?: Clock;
  ids?: IdSource;
  logger?: Logger;
  /**
   * One Coordinator per file: it owns the file while it runs (a heartbeat every
   * `heartbeatMs`, default 1 s). Opening a file another live Coordinator owns
   * is refused (`COORD_FILE_OWNED`); a dead owner's file is taken over at once
   * (same host) or once its heartbeat is `staleMs` old (default 10 s).
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
  /** Connections of the pool at most (default 4). */
  maxConnections?: number;
}

/** What `Coordinator.createWorkItem` takes: the workflow to run, the request, and an optional budget and attributes. */
export interface CreateWorkItem {
  /** A workflow id (its latest version) or an exact reference. */
  workflow: string | WorkflowRef;
  /** The request: text, or A2A parts. */
  input: string | Part[];
  budget?: ItemBudget;
  /** Passed to user policies (`HopContext.attributes`). */
  attributes?: Record<string, string | number | boolean>;
}

/** What `Coordinator.settled` takes: how long to wait. */
export interface SettleOptions {
  /**
   * Give up after this many milliseconds (0 to 2147483647): the promise
   * rejects with `COORD_SETTLE_TIMEOUT` and the item runs on. Default: wait
   * as long as it takes.
   */
  timeoutMs?: number;
}

/** A running Coordinator: creates work items, streams their statuses, decides their approvals and cancels them. */
export interface Coordinator {
  createWorkItem(request: CreateWorkItem): Promise<string>;
  /** The item's status now, then on every change; completes after its final status. */
  watch(itemId: string): Observable<ItemStatus>;
  /**
   * Every item's status: a subscriber first gets the current status of each
   * live item (event `current`; none when nothing runs), then every change.
   * Completes when the Coordinator closes.
   */
  readonly statuses$: Observable<ItemStatus>;
  /**
   * Resolves with the item's final status, its `output` included (at once
   * for an item that already ended). Rejects with `COORD_UNKNOWN_ITEM` for
   * an unknown id, `COORD_SETTLE_TIMEOUT` after `timeoutMs`, `COORD_CLOSED`
   * when the Coordinator closes first.
   */
  settled(itemId: string, options?: SettleOptions): Promise<ItemStatus>;
  approve(itemId: string, approver: string): Promise<void>;
  deny(itemId: string, approver: string, reason?: string): Promise<void>;
  cancel(itemId: string, options?: { by?: string; reason?: string }): Promise<void>;
  /** An item as stored (SQLite only: on PostgreSQL it throws `COORD_INVALID_ARGUMENT`; use `getItem`). */
  get(itemId: string): ItemRecord | undefined;
  /** Every item (SQLite only: on PostgreSQL use `listItems`). */
  list(): ItemRecord[];
  /** An item's hops (SQLite only: on PostgreSQL use `listHops`). */
  hops(itemId: string): HopRecord[];
  /** An item as stored, on either store. */
  getItem(itemId: string): Promise<ItemRecord | undefined>;
  /** Items, oldest first, on either store. */
  listItems(): Promise<ItemRecord[]>;
  /** An item's hops in order, on either store. */
  listHops(itemId: string): Promise<HopRecord[]>;
  /** Walks the audit chain (`AuditLog.verifyChain` or `PostgresAuditLog.verifyChain`). */
  verifyAudit(options?: AuditVerifyOptions): Promise<AuditVerification>;
  /** Where the tables and audit live. */
  readonly storage: 'sqlite' | 'postgres';
  /** The Coordinator's tables (asynchronous reads), on either store. */
  readonly tables: CoordinatorTables;
  /** Changes a role's pool deployment (warm ↔ scale-to-zero), nothing else. */
  configureRole(role: string, deployment: PoolDeployment): void;
  readonly pools: ReadonlyMap<string, Pool>;
  /** The SQLite store (on PostgreSQL it throws `COORD_INVALID_ARGUMENT`: read through `tables`). */
  readonly store: SqliteCoordinatorStore;
  /** The SQLite audit (on PostgreSQL it throws: use `postgresAudit` or `verifyAudit`). */
  readonly audit: AuditLog;
  /** The PostgreSQL audit (undefined on SQLite). */
  readonly postgresAudit: PostgresAuditLog | undefined;
  readonly bus: WorkQueue;
  /**
   * The broker the mirror keeps the A2A view in; undefined on PostgreSQL
   * without a `broker` given (the view is then derived from the rows:
   * `taskViewsOfItem(await getItem(id), await listHops(id))`).
   */
  readonly broker: Broker | undefined;
  readonly contextStore: ContextStore;
  readonly dispatcher: Dispatcher;
  /** What restoring found on open. */
  readonly restored: { items: string[]; refused: { itemId: string; reason: string }[]; republished: number };
  /** Coordinator CPU time inside its transactions (governance, audit, cost, routing, store). */
  readonly timing: { ns: bigint; count: number };
  /** Resolves when the broker mirror has caught up (at once where there is no broker). */
  mirrored(): Promise<void>;
  /**
   * Forgets now the Context Engine's data of every run that has been over for
   * its retention (what the periodic sweep does); resolves with how many.
   */
  forgetEndedRuns(): Promise<number>;
  close(): Promise<void>;
}

const PartsSchema = z.array(PartSchema).min(1).max(64);
const AttributesSchema = z.record(z.string().min(1).max(128), z.union([z.string().max(1024), z.number(), z.boolean()]));

function invalid(message: string, cause?: unknown): CoordinatorError {
  return new CoordinatorError('COORD_INVALID_ARGUMENT', message, cause === undefined ? {} : { cause });
}

function rolesOf(registry: WorkflowRegistry): Set<string> {
  const roles = new Set<string>();
  for (const def of registry.list()) for (const stage of Object.values(def.stages)) roles.add(stage.role);
  return roles;
}

/** Starts a Coordinator on an embedded SQLite file or on the broker, bus and database given. */
export async function createCoordinator(options: CoordinatorOptions): Promise<Coordinator> {
  const log = (options.logger ?? silentLogger()).child({ component: 'coordinator' });
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
    // Checked before anything is opened: a bad value leaves nothing to close.
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

  let forgetRuns: Required<ForgetRunsOptions>;
  try {
    forgetRuns = checkForgetRunsOptions(options.forgetRuns);
  } catch (error) {
    if (error instanceof CoordinatorError) throw error;
    throw invalid('forgetRuns takes { intervalMs?, batch? }');
  }

  const owned: (() => Promise<void> | void)[] = [];
  let db: SqliteDatabase | undefined;
  let bus: WorkQueue;
  let contextStore: ContextStore;
  let broker: Broker | undefined;
  const pg = options.postgres;
  if (pg !== undefined) {
    // Checked before anything is opened: a bad combination leaves nothing to close.
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
    if (options.contextRetention !== undefined) {
      throw invalid(
        'contextRetention configures the embedded Context Engine (path); configure the contextStore you give',
      );
    }
    bus = options.bus;
    contextStore = options.contextStore;
    // Without a broker of the caller's, none: the A2A view is derived from the rows by whoever reads them.
    broker = options.broker;
  } else if (options.path !== undefined) {
    const durability = options.durability ?? 'normal';
    const opened = openDatabase(options.path, { durability });
    db = opened;
    owned.push(() => {
      opened.close();
    });
    const embedded = createBroker({
      path: options.path,
      durability,
      clock,
      inspect: options.inspect,
      ...(options.ids === undefined ? {} : { ids: options.ids }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
    broker = embedded;
    owned.push(() => embedded.close());
    bus = new SqliteQueue({ database: opened, clock, pollIntervalMs: { min: 2, max: 20 } });
    owned.push(() => bus.close());
    contextStore = new SqliteContextStore({
      database: opened,
      clock,
      ...(options.contextRetention ?? {}),
      onPrune: logContextPrunes(log),
    });
    owned.push(() => contextStore.close());
  } else {
    if (!options.broker || !options.bus || !options.db || !options.contextStore) {
      throw invalid('give path (embedded), or broker, bus, db and contextStore, or postgres with bus and contextStore');
    }
    if (options.contextRetention !== undefined) {
      throw invalid(
        'contextRetention configures the embedded Context Engine (path); configure the contextStore you give',
      );
    }
    ({ broker, bus, db, contextStore } = options as Required<
      Pick<CoordinatorOptions, 'broker' | 'bus' | 'db' | 'contextStore'>
    >);
  }
  const closeOwned = async () => {
    for (const close of owned.reverse()) {
      try {
        await close();
      } catch (error) {
        log.warn({ err: error }, 'close failed');
      }
    }
  };

  try {
    const auditKey = options.auditKey;
    let storage: Storage;
    if (pg !== undefined) {
      const pool = await openPgPool(pg.url, {
        user: 'the Coordinator',
        ...(pg.maxConnections === undefined ? {} : { max: pg.maxConnections }),
        onError: (error) => log.warn({ err: error }, 'a PostgreSQL connection failed: the pool makes another'),
      });
      owned.push(() => pool.end());
      const audit = await PostgresAuditLog.open(pool, { clock });
      const store = await PostgresCoordinatorStore.open(pool, {
        audit: {
          append: (tx, entries) => audit.appendInTransaction(tx, entries),
          ...(auditKey === undefined ? {} : { checkpoint: (tx) => audit.checkpointInTransaction(tx, auditKey) }),
          // A commit in one statement: its audit rows hashed here, after the head the store last read.
          chain: (head, entries) => audit.chainAfter(head, entries),
          head: (q) => audit.readHead(q),
        },
        ...(pg.fence === undefined ? {} : { fence: pg.fence }),
      });
      storage = { kind: 'postgres', store, tables: store, audit, pool };
      log.info({ db: safePostgresUrl(pg.url) }, 'the Coordinator keeps its tables and audit in PostgreSQL');
      if (auditKey !== undefined) {
        await audit.checkpoint(auditKey);
        const timer = setInterval(() => {
          audit.checkpoint(auditKey).catch((error: unknown) => log.warn({ err: error }, 'audit checkpoint failed'));
        }, options.auditCheckpointMs ?? 60_000);
        timer.unref();
        owned.push(() => clearInterval(timer));
      }
    } else {
      const sqlite = db as SqliteDatabase;
      // The audit entries of a commit are appended in its transaction; an item's end signs the head there too.
      const store = new SqliteCoordinatorStore(sqlite, {
        audit: {
          append: (entries) => audit.appendManyInTransaction(entries),
          ...(auditKey === undefined ? {} : { checkpoint: () => audit.checkpoint(auditKey) }),
        },
      });
      const ownership = new FileOwnership({
        db: sqlite,
        // Liveness across processes is wall-clock time, whatever clock the Coordinator's decisions use.
        now: () => Date.now(),
        logger: log,
        ...(options.ownership ?? {}),
      });
      ownership.claim();
      owned.push(() => ownership.release());
      const audit = new AuditLog(sqlite, { clock });
      storage = { kind: 'sqlite', store, tables: store, audit, ownership };
      if (auditKey !== undefined) {
        audit.checkpoint(auditKey);
        const timer = setInterval(() => {
          try {
            audit.checkpoint(auditKey);
          } catch (error) {
            log.warn({ err: error }, 'audit checkpoint failed');
          }
        }, options.auditCheckpointMs ?? 60_000);
        timer.unref();
        owned.push(() => clearInterval(timer));
      }
    }
    const knownRoles = rolesOf(registry);
    const governance = new CoordinatorGovernance({
      knownRoles,
      ...(options.allowedRoles === undefined ? {} : { allowedRoles: options.allowedRoles }),
      ...(options.maxHops === undefined ? {} : { maxHops: options.maxHops }),
      ...(options.policies === undefined ? {} : { policies: options.policies }),
    });
    // On PostgreSQL an item's trace is held in this process only (a restart starts its spans a new trace).
    const traces = new ItemTraces(storage.kind === 'sqlite' ? storage.store : heldItemTraces());
    const engine = new CoordinatorEngine({
      store: storage.store,
      registry,
      governance,
      clock,
      ids,
      logger: log,
      inspect: options.inspect,
      traces,
    });
    const dispatcher = createDispatcher({ bus });
    const mirror =
      broker === undefined
        ? undefined
        : new BrokerMirror({
            broker,
            store: storage.tables,
            edge: new HumanEdge(broker),
            logger: log,
            onItemTask: (itemId, taskId) => engine.itemTask(itemId, taskId),
            // On PostgreSQL the broker is this process's own: the task ids in the tables name another one's tasks.
            storedTasks: storage.kind === 'sqlite',
            traces,
          });
    const coordinator = new RunningCoordinator({
      options,
      log,
      registry,
      governance,
      engine,
      storage,
      dispatcher,
      bus,
      broker,
      contextStore,
      mirror,
      traces,
      metrics: switchboardMetrics(),
      ids,
      closeOwned,
      roles: new Set([...knownRoles, ...Object.keys(options.deployments ?? {})]),
      forgetter: new EndedRunForgetter({ store: storage.tables, contextStore, clock, logger: log, ...forgetRuns }),
    });
    if (storage.kind === 'sqlite') {
      storage.ownership.onLost = () => {
        // Another Coordinator decided this one was gone and runs the file now: stop deciding.
        void coordinator.close();
      };
    }
    registerCommitTiming(coordinator, engine);
    await coordinator.start();
    return coordinator;
  } catch (error) {
    await closeOwned();
    throw error;
  }
}

/** Where the tables and the audit live, and what they need kept. */
type Storage =
  | {
      kind: 'sqlite';
      store: SqliteCoordinatorStore;
      tables: CoordinatorTables;
      audit: AuditLog;
      ownership: FileOwnership;
    }
  | {
      kind: 'postgres';
      store: CoordinatorStore;
      tables: CoordinatorTables;
      audit: PostgresAuditLog;
      pool: PgPool;
    };

interface Parts {
  options: CoordinatorOptions;
  log: Logger;
  registry: WorkflowRegistry;
  governance: CoordinatorGovernance;
  engine: CoordinatorEngine;
  storage: Storage;
  dispatcher: Dispatcher;
  bus: WorkQueue;
  broker: Broker | undefined;
  contextStore: ContextStore;
  /** None where there is no broker (PostgreSQL without one): the rows are the A2A view. */
  mirror: BrokerMirror | undefined;
  traces: ItemTraces;
  metrics: SwitchboardMetrics;
  ids: IdSource;
  closeOwned: () => Promise<void>;
  roles: Set<string>;
  forgetter: EndedRunForgetter;
}

class RunningCoordinator implements Coordinator {
  readonly storage: 'sqlite' | 'postgres';
  readonly tables: CoordinatorTables;
  readonly postgresAudit: PostgresAuditLog | undefined;
  readonly bus: WorkQueue;
  readonly broker: Broker | undefined;
  readonly contextStore: ContextStore;
  readonly dispatcher: Dispatcher;
  readonly pools = new Map<string, Pool>();
  restored: Coordinator['restored'] = { items: [], refused: [], republished: 0 };
  readonly #p: Parts;
  readonly #all = new Subject<ItemStatus>();
  /** The statuses of items whose task the mirror is making, by item id: out once it is made (`createWorkItem`). */
  readonly #held = new Map<string, ItemStatus[]>();
  // The live items' current statuses are read and the changes subscribed in one synchronous step: none is missed.
  readonly statuses$: Observable<ItemStatus> = defer(() =>
    this.#closed ? this.#all : concat(of(...this.#liveNow().map((item) => this.#current(item))), this.#all),
  );
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  /** Outbox rows not yet published (a failed publish is retried), with the context their publish continues. */
  readonly #unsent = new Map<number, OutboxRow>();
  /** With tracing on: the context each unsent row's publish span continues (its decision's). */
  readonly #unsentTrace = new Map<number, Context>();
  /** Stops observing queue depths. */
  #unobserve: (() => void) | undefined;
  #sending: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #acks = new Set<Promise<unknown>>();
  #closed = false;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(parts: Parts) {
    this.#p = parts;
    this.storage = parts.storage.kind;
    this.tables = parts.storage.tables;
    this.postgresAudit = parts.storage.kind === 'postgres' ? parts.storage.audit : undefined;
    this.bus = parts.bus;
    this.broker = parts.broker;
    this.contextStore = parts.contextStore;
    this.dispatcher = parts.dispatcher;
  }

  get store(): SqliteCoordinatorStore {
    const storage = this.#p.storage;
    if (storage.kind === 'sqlite') return storage.store;
    throw new CoordinatorError(
      'COORD_INVALID_ARGUMENT',
      'this Coordinator keeps its tables in PostgreSQL: read them through coordinator.tables (asynchronous)',
    );
  }

  get audit(): AuditLog {
    const storage = this.#p.storage;
    if (storage.kind === 'sqlite') return storage.audit;
    throw new CoordinatorError(
      'COORD_INVALID_ARGUMENT',
      'this Coordinator keeps its audit in PostgreSQL: use coordinator.postgresAudit or coordinator.verifyAudit()',
    );
  }

  /** The live items now, read synchronously: from the SQLite store, or (PostgreSQL) the engine's memory. */
  #liveNow(): ItemRecord[] {
    const storage = this.#p.storage;
    return storage.kind === 'sqlite' ? storage.store.liveItems() : this.#p.engine.liveItems();
  }

  /** An item read synchronously where it can be: the SQLite store, or a live item in memory. */
  #itemNow(itemId: string): ItemRecord | undefined {
    const storage = this.#p.storage;
    return storage.kind === 'sqlite' ? storage.store.getItem(itemId) : this.#p.engine.liveItem(itemId);
  }

  get timing() {
    return this.#p.engine.timing;
  }

  async start(): Promise<void> {
    const { engine, mirror, options } = this.#p;
    const { restored, refused } = await engine.restore();
    for (const r of refused) this.#p.log.error(r, 'could not restore a work item');
    const outbox = await engine.outbox();
    this.restored = { items: restored, refused, republished: outbox.length };
    for (const row of outbox) this.#unsent.set(row.id, row);
    await this.#send();
    if (mirror !== undefined) {
      for (const role of [...this.#p.roles].sort()) await mirror.roleAgent(role);
      await mirror.recover();
    }
    for (const [role, d] of Object.entries(options.deployments ?? {})) {
      this.pools.set(
        role,
        createPool({
          role,
          handler: d.handler,
          bus: this.bus,
          contextStore: this.contextStore,
          deployment: d.deployment,
          stopGraceMs: 2000,
          inspect: options.inspect,
          ...(d.visibilityTimeoutMs === undefined ? {} : { visibilityTimeoutMs: d.visibilityTimeoutMs }),
          ...(d.observeIntervalMs === undefined ? {} : { observeIntervalMs: d.observeIntervalMs }),
          ...(d.pollWaitMs === undefined ? {} : { pollWaitMs: d.pollWaitMs }),
          ...(options.logger === undefined ? {} : { logger: options.logger }),
        }),
      );
    }
    const depthRoles = [...new Set([...this.#p.roles, RESULTS_ROLE])].sort();
    this.#unobserve = this.#p.metrics.observeQueueDepth(async () => {
      if (this.#closed) return [];
      const stats = await Promise.allSettled(depthRoles.map((role) => this.bus.stats(role)));
      return stats.flatMap((r) => (r.status === 'fulfilled' ? [{ role: r.value.role, depth: r.value.depth }] : []));
    });
    this.#loop = this.#consume();
    const tickMs = options.timerIntervalMs ?? 1_000;
    this.#timer = setInterval(() => void this.#tick(), tickMs);
    this.#timer.unref();
    this.#p.forgetter.start();
  }

  #assertOpen(): void {
    if (this.#closed) throw new CoordinatorError('COORD_CLOSED', 'the Coordinator is closed');
  }

  // ------------------------------------------------------------------ edge

  async createWorkItem(request: CreateWorkItem): Promise<string> {
    this.#assertOpen();
    if (request === null || typeof request !== 'object') throw invalid('createWorkItem takes { workflow, input }');
    const { registry, governance, engine, mirror } = this.#p;
    const def =
      typeof request.workflow === 'string'
        ? registry.latest(request.workflow)
        : request.workflow !== null && typeof request.workflow === 'object'
          ? registry.get(request.workflow)
          : undefined;
    if (def === undefined) {
      throw new CoordinatorError('COORD_UNKNOWN_WORKFLOW', `no workflow ${JSON.stringify(request.workflow)}`);
    }
    let input: Part[];
    if (typeof request.input === 'string') {
      if (request.input.length === 0 || request.input.length > 16_000)
        throw invalid('input text is 1 to 16000 characters');
      input = [{ kind: 'text', text: request.input }];
    } else {
      const parsed = PartsSchema.safeParse(request.input);
      if (!parsed.success) throw invalid(`input: ${parsed.error.issues[0]?.message ?? 'invalid parts'}`);
      input = parsed.data;
    }
    let budget: ItemBudget | null = null;
    if (request.budget !== undefined) {
      try {
        governance.budgetEntry(request.budget);
      } catch (error) {
        // A bad budget is this call's bad argument: the Coordinator's own refusal.
        if (error instanceof WorkflowError) throw invalid(error.message, error);
        throw error;
      }
      budget = {
        ...(request.budget.maxTokens === undefined ? {} : { maxTokens: request.budget.maxTokens }),
        ...(request.budget.maxCostUsd === undefined ? {} : { maxCostUsd: request.budget.maxCostUsd }),
      };
    }
    let attributes: Record<string, string | number | boolean> | null = null;
    if (request.attributes !== undefined) {
      const parsed = AttributesSchema.safeParse(request.attributes);
      if (!parsed.success) throw invalid(`attributes: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
      attributes = parsed.data;
    }
    const itemId = this.#p.ids.next();
    // The item's broker task is made by the mirror after this commit (a failed commit leaves no task);
    // the call returns once it is there, so that `get(id).taskId` is set (if the broker fails, later).
    // The item's statuses wait for it too, so that they carry its id (`null` only if the broker failed).
    // Without a broker there is no task to wait for: the call returns once committed, `taskId` null.
    const { traces } = this.#p;
    const root = traces.begin(itemId, def);
    const trace = contextWith(ROOT_CONTEXT, root);
    const held: ItemStatus[] = [];
    this.#held.set(itemId, held);
    let taskId: string | undefined;
    try {
      let step: Step;
      try {
        step = await engine.createItem({ itemId, taskId: null, definition: def, input, budget, attributes, trace });
        traces.keep(itemId, trace, traceFieldsOf(trace));
      } catch (error) {
        endSpanWithError(root, error);
        throw error;
      }
      root.end();
      void this.#after(step);
      if (mirror !== undefined) taskId = await mirror.itemTask(itemId);
    } finally {
      this.#held.delete(itemId);
      for (const status of held)
        this.#all.next(status.taskId === null ? { ...status, taskId: taskId ?? null } : status);
    }
    return itemId;
  }

  /** An item's status as it stands (event `current`). */
  #current(item: ItemRecord): ItemStatus {
    return statusOf(item, {
      kind: 'current',
      itemId: item.id,
      hop: item.hop,
      stage: item.stage,
      role: null,
      detail: `${item.state}`,
      at: this.#p.options.clock?.now() ?? Date.now(),
    });
  }

  watch(itemId: string): Observable<ItemStatus> {
    return defer(() => {
      const item = this.#itemNow(itemId);
      if (item === undefined) {
        if (this.#p.storage.kind === 'sqlite') {
          throw new CoordinatorError('COORD_UNKNOWN_ITEM', `no work item ${itemId}`);
        }
        // Not live in memory: ended (its status is final, nothing more will come) or unknown.
        return from(this.tables.readItem(itemId)).pipe(
          map((stored) => {
            if (stored === undefined) throw new CoordinatorError('COORD_UNKNOWN_ITEM', `no work item ${itemId}`);
            return this.#current(stored);
          }),
        );
      }
      const current = this.#current(item);
      if (item.finishedAt !== null) return of(current);
      return concat(
        of(current),
        this.#all.pipe(
          filter((s) => s.id === itemId),
          // One step's statuses all carry the item as the step left it: an ended item's hop-completed
          // status is final already, so the stream ends at the item's own end event, not at the first final state.
          takeWhile((s) => !isItemEndEvent(s.event.kind), true),
        ),
      );
    });
  }

  settled(itemId: string, options: SettleOptions = {}): Promise<ItemStatus> {
    const timeoutMs = options?.timeoutMs;
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 2_147_483_647)
    ) {
      return Promise.reject(invalid('settled: timeoutMs is a whole number of milliseconds from 0 to 2147483647'));
    }
    return new Promise((resolve, reject) => {
      let last: ItemStatus | undefined;
      let timer: NodeJS.Timeout | undefined;
      const sub = this.watch(itemId).subscribe({
        next: (s) => {
          last = s;
        },
        error: (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
        complete: () => {
          clearTimeout(timer);
          if (last !== undefined && last.finishedAt !== null && isFinalRunState(last.state)) resolve(last);
          else {
            reject(
              new CoordinatorError('COORD_CLOSED', `the Coordinator closed before work item ${itemId} ended`, {
                details: { itemId, state: last?.state ?? null },
              }),
            );
          }
        },
      });
      if (timeoutMs === undefined || sub.closed) return;
      timer = setTimeout(() => {
        sub.unsubscribe();
        const state = last?.state ?? this.#itemNow(itemId)?.state ?? null;
        reject(
          new CoordinatorError(
            'COORD_SETTLE_TIMEOUT',
            `work item ${itemId} did not end within ${timeoutMs} ms (it is ${state}): it runs on; ` +
              'wait again with a longer timeoutMs, read it with get(), or cancel it',
            { details: { itemId, timeoutMs, state } },
          ),
        );
      }, timeoutMs);
    });
  }

  async approve(itemId: string, approver: string): Promise<void> {
    this.#assertOpen();
    if (typeof approver !== 'string' || approver.length === 0 || approver.length > 128) {
      throw invalid('an approver is a name of 1 to 128 characters');
    }
    void this.#after(await this.#p.engine.approve(itemId, approver));
  }

  async deny(itemId: string, approver: string, reason?: string): Promise<void> {
    this.#assertOpen();
    if (typeof approver !== 'string' || approver.length === 0 || approver.length > 128) {
      throw invalid('an approver is a name of 1 to 128 characters');
    }
    if (reason !== undefined && (typeof reason !== 'string' || reason.length > 2000)) {
      throw invalid('a reason is at most 2000 characters');
    }
    void this.#after(await this.#p.engine.deny(itemId, approver, reason));
  }

  async cancel(itemId: string, options: { by?: string; reason?: string } = {}): Promise<void> {
    this.#assertOpen();
    const { by, reason } = options ?? {};
    if (by !== undefined && (typeof by !== 'string' || by.length === 0 || by.length > 256)) {
      throw invalid('who cancels is a name of 1 to 256 characters');
    }
    if (reason !== undefined && (typeof reason !== 'string' || reason.length === 0 || reason.length > 2000)) {
      throw invalid('a reason is 1 to 2000 characters');
    }
    void this.#after(await this.#p.engine.cancel(itemId, options.by ?? null, options.reason ?? null));
  }

  get(itemId: string): ItemRecord | undefined {
    return this.#sqlite('get', 'getItem').getItem(itemId);
  }

  list(): ItemRecord[] {
    return this.#sqlite('list', 'listItems').listItems();
  }

  hops(itemId: string): HopRecord[] {
    return this.#sqlite('hops', 'listHops').listHops(itemId);
  }

  /** The SQLite store for a synchronous read; on PostgreSQL a refusal naming the asynchronous one. */
  #sqlite(method: string, instead: string): SqliteCoordinatorStore {
    const storage = this.#p.storage;
    if (storage.kind === 'sqlite') return storage.store;
    throw new CoordinatorError(
      'COORD_INVALID_ARGUMENT',
      `${method}() reads the SQLite store synchronously; this Coordinator keeps its tables in PostgreSQL: ` +
        `use await coordinator.${instead}()`,
    );
  }

  getItem(itemId: string): Promise<ItemRecord | undefined> {
    return this.tables.readItem(itemId);
  }

  listItems(): Promise<ItemRecord[]> {
    return this.tables.readItems();
  }

  listHops(itemId: string): Promise<HopRecord[]> {
    return this.tables.readHops(itemId);
  }

  async verifyAudit(options: AuditVerifyOptions = {}): Promise<AuditVerification> {
    const storage = this.#p.storage;
    return storage.kind === 'sqlite' ? storage.audit.verifyChain(options) : storage.audit.verifyChain(options);
  }

  configureRole(role: string, deployment: PoolDeployment): void {
    const pool = this.pools.get(role);
    if (pool === undefined) throw invalid(`no pool runs role ${role} in this process`);
    pool.configure(deployment);
  }

  mirrored(): Promise<void> {
    return this.#p.mirror?.idle() ?? Promise.resolve();
  }

  async forgetEndedRuns(): Promise<number> {
    this.#assertOpen();
    return this.#p.forgetter.forgetEnded();
  }

  // ------------------------------------------------------------ after commit

  /** What a committed step leads to: statuses out, publishes made, the broker moved. Resolves once published. */
  #after(step: Step): Promise<void> {
    for (const status of this.#p.engine.statuses(step)) {
      const held = this.#held.get(status.id);
      if (held === undefined) this.#all.next(status);
      else held.push(status);
    }
    for (const rows of step.rows) {
      this.#p.mirror?.follow(rows.item, rows.hops, rows.created);
      if (rows.item.finishedAt !== null) this.#p.traces.ended(rows.item.id);
    }
    if (step.outbox.length === 0) return Promise.resolve();
    for (const row of step.outbox) {
      this.#unsent.set(row.id, row);
      if (step.trace !== ROOT_CONTEXT) this.#unsentTrace.set(row.id, step.trace);
    }
    return this.#send();
  }

  /** Publishes one outbox row under a publish span; the trace fields of the span travel in the envelope. */
  async #publish(row: OutboxRow): Promise<number> {
    const parent = this.#unsentTrace.get(row.id) ?? this.#p.traces.of(row.itemId);
    const span = startSpan(SPAN.publish, parent, SpanKind.PRODUCER);
    const trace = traceFieldsOf(contextWith(parent, span));
    try {
      if (row.kind === 'start') {
        const hop = row.body as StartHop;
        if (span.isRecording()) {
          span.setAttribute(ATTR.publishKind, 'start');
          span.setAttribute(ATTR.itemId, hop.runId);
          span.setAttribute(ATTR.role, hop.role);
          span.setAttribute(ATTR.taskId, hop.taskId);
          span.setAttribute(ATTR.hop, hop.hop);
          span.setAttribute(ATTR.attempt, hop.attempt ?? 1);
        }
        const started = await this.dispatcher.start(trace === undefined ? hop : { ...hop, trace });
        if (span.isRecording()) span.setAttribute(ATTR.duplicate, started.duplicate);
      } else {
        const result = row.body as ResultEnvelope;
        if (span.isRecording()) {
          span.setAttribute(ATTR.publishKind, 'reply');
          span.setAttribute(ATTR.itemId, result.headers.runId);
          span.setAttribute(ATTR.taskId, result.headers.taskId);
          span.setAttribute(ATTR.hop, result.headers.hop);
          if (result.headers.askedBy !== undefined) span.setAttribute(ATTR.role, result.headers.askedBy.role);
        }
        const signaled = await this.dispatcher.signal(result, trace);
        if (span.isRecording() && signaled.duplicate !== undefined)
          span.setAttribute(ATTR.duplicate, signaled.duplicate);
      }
    } catch (error) {
      endSpanWithError(span, error);
      throw error;
    }
    span.end();
    return row.id;
  }

  /** Publishes every unsent outbox row; a failure leaves them for a retry soon. */
  #send(): Promise<void> {
    if (this.#sending !== undefined)
      return this.#sending.then(() => (this.#unsent.size > 0 ? this.#send() : undefined));
    const rows = [...this.#unsent.values()];
    if (rows.length === 0) return Promise.resolve();
    const sending = (async () => {
      const done: number[] = [];
      const results = await Promise.allSettled(rows.map((row) => this.#publish(row)));
      for (const [i, r] of results.entries()) {
        if (r.status === 'fulfilled') {
          done.push(r.value);
          this.#unsent.delete(rows[i]!.id);
          if (this.#unsentTrace.size > 0) this.#unsentTrace.delete(rows[i]!.id);
        } else {
          this.#p.log.warn({ err: r.reason, outbox: rows[i]!.id }, 'publish failed: will retry');
        }
      }
      this.#p.engine.published(done);
      if (this.#unsent.size > 0 && !this.#closed && this.#retryTimer === undefined) {
        this.#retryTimer = setTimeout(() => {
          this.#retryTimer = undefined;
          void this.#send();
        }, 500);
      }
    })().finally(() => {
      this.#sending = undefined;
    });
    this.#sending = sending;
    return sending;
  }

  /** Time passed: what the timer decided is published and told like any other step. */
  #tick(): Promise<void> {
    if (this.#closed || this.#ticking !== undefined) return this.#ticking ?? Promise.resolve();
    this.#ticking = this.#p.engine
      .tick()
      .then((steps) => {
        for (const step of steps) this.#track(this.#after(step));
      })
      .catch((error: unknown) => this.#p.log.warn({ err: error }, 'the timer failed: it runs again next time'))
      .finally(() => {
        this.#ticking = undefined;
      });
    return this.#ticking;
  }

  /** The results loop: restarted after a bus failure (with a pause) until the Coordinator closes. */
  async #consume(): Promise<void> {
    let failures = 0;
    while (!this.#closed) {
      try {
        // It returns when the Coordinator closes or the bus does.
        await this.#consumeOnce();
        return;
      } catch (error) {
        if (this.#closed) return;
        failures++;
        this.#p.log.error({ err: error }, 'the results loop failed: restarting');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(5_000, 100 * 2 ** Math.min(failures, 6)));
          this.#stop.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
    }
  }

  async #consumeOnce(): Promise<void> {
    const { options } = this.#p;
    const consumer = options.consumer ?? `coordinator-${process.pid}`;
    // Results that arrive together (one read of the bus yields several) are applied in one
    // transaction: the turn's results are gathered, then applied once the loop has yielded them all.
    const pending: ResultDelivery[] = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (pending.length > 0) this.#track(this.#apply(pending.splice(0)));
    };
    for await (const rd of this.dispatcher.results({
      consumer,
      max: 64,
      waitMs: 500,
      signal: this.#stop.signal,
      visibilityTimeoutMs: options.resultsVisibilityTimeoutMs ?? 30_000,
    })) {
      pending.push(rd);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
    flush();
  }

  /** Applies results (one shared commit); acks each once what it led to is published, nacks what must wait or failed. */
  async #apply(batch: ResultDelivery[]): Promise<void> {
    const { engine, log } = this.#p;
    let applied: Awaited<ReturnType<CoordinatorEngine['applyResults']>>;
    // With tracing off no span or context is made: each result is applied as it came.
    const spans = tracingOn() ? batch.map((rd) => this.#applySpan(rd)) : undefined;
    try {
      applied = await engine.applyResults(
        batch.map((rd, i) => (spans === undefined ? rd : { result: rd.result, trace: spans[i]!.trace })),
      );
    } catch (error) {
      applied = batch.map(() => ({ error }));
    }
    for (const [i, outcome] of applied.entries()) {
      const rd = batch[i]!;
      const span = spans?.[i]?.span ?? OFF_SPAN;
      if ('error' in outcome) {
        const { error } = outcome;
        endSpanWithError(span, error);
        if ((error as { code?: unknown } | undefined)?.code === 'COORD_FENCED') {
          log.warn(
            { err: error, delivery: rd.delivery.id },
            'fenced: this Coordinator no longer leads; the result goes back to the bus for the leader',
          );
        } else log.error({ err: error, delivery: rd.delivery.id }, 'could not apply a result: it will be retried');
        this.#track(
          rd.nack({
            error: { type: 'CoordinatorError', message: (error as Error)?.message ?? String(error) },
            retryable: true,
            delayMs: 1000,
          }),
        );
        continue;
      }
      if (outcome.handling === 'duplicate' || outcome.handling === 'late') this.#ranAgain(rd.result.headers.runId);
      if (outcome.handling === 'applied') this.#measure(rd.result, outcome.step);
      if (span.isRecording()) span.setAttribute(ATTR.resultHandling, outcome.handling);
      this.#track(
        this.#after(outcome.step).then(
          () => {
            span.end();
            return rd.ack();
          },
          (error: unknown) => {
            endSpanWithError(span, error);
            throw error;
          },
        ),
      );
    }
  }

  /** The span of applying one result: it continues the trace the result carries (the worker's result span). */
  #applySpan(rd: ResultDelivery): { span: ReturnType<typeof startSpan>; trace: Context } {
    const parent = contextOf(rd.result.headers.trace);
    const span = startSpan(SPAN.apply, parent, SpanKind.CONSUMER);
    if (span.isRecording()) {
      const h = rd.result.headers;
      span.setAttribute(ATTR.itemId, h.runId);
      span.setAttribute(ATTR.taskId, h.taskId);
      span.setAttribute(ATTR.role, rd.result.role);
      span.setAttribute(ATTR.hop, h.hop);
      span.setAttribute(ATTR.attempt, h.attempt);
      span.setAttribute(ATTR.outcome, rd.result.outcome);
      span.setAttribute(ATTR.deliveries, rd.delivery.deliveries);
    }
    return { span, trace: contextWith(parent, span) };
  }

  /** The metrics of a result applied once: its hop's latency, its cost, a dead letter. */
  #measure(result: ResultEnvelope, step: Step): void {
    const { metrics } = this.#p;
    const role = result.role;
    if (result.outcome === 'failed') metrics.deadLetters.add(1, metrics.role(role));
    const usage = result.usage;
    if (usage !== undefined) {
      if (usage.costUsd > 0) metrics.costUsd.add(usage.costUsd, metrics.role(role));
      const tokens = metrics.roleTokens(role);
      if (usage.inputTokens > 0) metrics.tokens.add(usage.inputTokens, tokens.input);
      if (usage.outputTokens > 0) metrics.tokens.add(usage.outputTokens, tokens.output);
    }
    const key = result.headers.idempotencyKey;
    for (const rows of step.rows) {
      for (const hop of rows.hops) {
        if (hop.idempotencyKey !== key) continue;
        const end = hop.finishedAt ?? (result.outcome === 'suspended' ? rows.item.updatedAt : null);
        if (end !== null) {
          metrics.hopDuration.record(
            Math.max(0, end - hop.dispatchedAt) / 1000,
            metrics.roleOutcome(role, result.outcome),
          );
        }
        return;
      }
    }
  }

  /**
   * A result of a hop that ran again (after its item ended, or once more):
   * when the item's run was already forgotten, the hop may have written its
   * output to the Context Engine anew, so the run is forgotten again at the
   * next sweep (its item ended long enough ago).
   */
  #ranAgain(itemId: string): void {
    this.tables
      .recordForgetAgain(itemId)
      .catch((error: unknown) => this.#p.log.warn({ err: error, itemId }, 'could not schedule forgetting a run again'));
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch((error: unknown) => this.#p.log.warn({ err: error }, 'ack or nack failed'));
    this.#acks.add(tracked);
    void tracked.finally(() => this.#acks.delete(tracked));
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#unobserve?.();
    // The in-process workers finish what they hold (their results are still taken), then the results loop
    // stops before anything waits on a commit: no delivery is taken from here on (a replaced leader's commits
    // hang on its database; what it holds goes back to the bus for the next leader).
    for (const pool of this.pools.values()) await pool.stop();
    this.#stop.abort();
    await this.#loop;
    await this.#ticking;
    await this.#p.forgetter.close();
    clearTimeout(this.#retryTimer);
    await this.#sending;
    await Promise.all([...this.#acks]);
    await this.#p.mirror?.close();
    try {
      await this.#p.engine.flushPublished();
    } catch (error) {
      this.#p.log.warn({ err: error }, 'could not prune the outbox');
    }
    this.#all.complete();
    await this.#p.closeOwned();
  }
}
