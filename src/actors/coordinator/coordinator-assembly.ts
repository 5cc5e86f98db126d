import { createDispatcher } from '../../bus/dispatcher.js';
import { SqliteQueue } from '../../bus/sqlite/queue.js';
import type { WorkQueue } from '../../bus/work-queue.js';
import { logContextPrunes } from '../../persistence/context/prune-log.js';
import { type ContextStore, SqliteContextStore } from '../../persistence/context/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../../persistence/kernel/database.js';
import { switchboardMetrics } from '../../telemetry/metrics.js';
import type { WorkflowRegistry } from '../../workflow/definition.js';
import { type Broker, createBroker } from '../broker/broker.js';
import { registerCommitTiming } from './commit-timing.js';
import type { CompiledCoordinatorOptions } from './coordinator-options.js';
import { CoordinatorEngine } from './engine.js';
import { EndedRunForgetter } from './forget.js';
import { HumanEdge } from './human-edge.js';
import { ItemTraces } from './item-traces.js';
import { BrokerMirror } from './mirror.js';
import { CoordinatorGovernance } from './policies.js';
import { RunningCoordinator } from './running-coordinator.js';
import type { CoordinatorStorage } from './storage/coordinator-storage.js';
import { openPostgresStorage } from './storage/postgres-storage.js';
import { openSqliteStorage } from './storage/sqlite-storage.js';
import { stageRoles } from '../../workflow/stage-checks.js';

function rolesOf(registry: WorkflowRegistry): Set<string> {
  const roles = new Set<string>();
  for (const def of registry.list()) {
    for (const stage of Object.values(def.stages)) for (const role of stageRoles(stage)) roles.add(role);
  }
  return roles;
}

/** The parts around the Coordinator's storage, and how its storage is opened (the backend chosen here, once). */
interface Surroundings {
  bus: WorkQueue;
  contextStore: ContextStore;
  broker: Broker | undefined;
  openStorage(): Promise<CoordinatorStorage> | CoordinatorStorage;
}

/** The broker, bus and Context Engine: opened on the embedded file (closed with the Coordinator) or the caller's. */
function surroundings(compiled: CompiledCoordinatorOptions, owned: (() => Promise<void> | void)[]): Surroundings {
  const { place, clock, log, given: options } = compiled;
  const sqlite = (db: SqliteDatabase) => () =>
    openSqliteStorage({
      db,
      clock,
      logger: log,
      ...(options.auditKey === undefined ? {} : { auditKey: options.auditKey }),
      ...(options.ownership === undefined ? {} : { ownership: options.ownership }),
    });
  switch (place.from) {
    case 'postgres': {
      const pg = place.postgres;
      return {
        bus: place.bus,
        contextStore: place.contextStore,
        broker: place.broker,
        openStorage: () =>
          openPostgresStorage({
            url: pg.url,
            clock,
            logger: log,
            ...(pg.maxConnections === undefined ? {} : { maxConnections: pg.maxConnections }),
            ...(options.auditKey === undefined ? {} : { auditKey: options.auditKey }),
            ...(pg.fence === undefined ? {} : { fence: pg.fence }),
          }),
      };
    }
    case 'parts':
      return { bus: place.bus, contextStore: place.contextStore, broker: place.broker, openStorage: sqlite(place.db) };
    case 'file': {
      const { path, durability } = place;
      const opened = openDatabase(path, { durability });
      owned.push(() => {
        opened.close();
      });
      const embedded = createBroker({
        path,
        durability,
        clock,
        inspect: options.inspect,
        ...(options.ids === undefined ? {} : { ids: options.ids }),
        logger: compiled.logger,
      });
      owned.push(() => embedded.close());
      const bus = new SqliteQueue({ database: opened, clock, pollIntervalMs: { min: 2, max: 20 } });
      owned.push(() => bus.close());
      const contextStore = new SqliteContextStore({
        database: opened,
        clock,
        ...(options.contextRetention ?? {}),
        onPrune: logContextPrunes(log),
      });
      owned.push(() => contextStore.close());
      return { bus, contextStore, broker: embedded, openStorage: sqlite(opened) };
    }
  }
}

/**
 * Opens and wires a Coordinator's parts from its checked options (the
 * broker, bus and Context Engine, its storage, the audit's signing timer,
 * the governance, engine, mirror and forgetter), then starts it. What it
 * opened is closed with it, or at once if starting fails.
 */
export async function assembleCoordinator(compiled: CompiledCoordinatorOptions): Promise<RunningCoordinator> {
  const { log, clock, ids, registry, given: options } = compiled;
  const owned: (() => Promise<void> | void)[] = [];
  const { bus, contextStore, broker, openStorage } = surroundings(compiled, owned);
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
    const storage = await openStorage();
    owned.push(() => storage.close());
    const auditKey = options.auditKey;
    if (auditKey !== undefined) {
      await storage.audit.checkpoint(auditKey);
      const timer = setInterval(() => {
        storage.audit
          .checkpoint(auditKey)
          .catch((error: unknown) => log.warn({ err: error }, 'audit checkpoint failed'));
      }, compiled.auditCheckpointMs);
      timer.unref();
      owned.push(() => clearInterval(timer));
    }
    const knownRoles = rolesOf(registry);
    const governance = new CoordinatorGovernance({
      knownRoles,
      ...(options.allowedRoles === undefined ? {} : { allowedRoles: options.allowedRoles }),
      ...(options.maxHops === undefined ? {} : { maxHops: options.maxHops }),
      ...(options.policies === undefined ? {} : { policies: options.policies }),
    });
    const traces = new ItemTraces(storage.traceStore);
    const engine = new CoordinatorEngine({
      store: storage.store,
      registry,
      governance,
      clock,
      ids,
      logger: log,
      hopTimeoutMs: compiled.hopTimeoutMs,
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
            storedTasks: storage.storedTasks,
            traces,
          });
    const coordinator = new RunningCoordinator({
      compiled,
      storage,
      registry,
      governance,
      engine,
      dispatcher,
      bus,
      broker,
      contextStore,
      mirror,
      traces,
      metrics: switchboardMetrics(),
      closeOwned,
      roles: new Set([...knownRoles, ...Object.keys(options.deployments ?? {})]),
      forgetter: new EndedRunForgetter({
        store: storage.tables,
        contextStore,
        clock,
        logger: log,
        ...compiled.forgetRuns,
      }),
    });
    storage.onLost(() => void coordinator.close());
    registerCommitTiming(coordinator, engine);
    // The workflows served, kept where commands reading the database find them.
    await storage.store.keepDefinitions(
      registry.list().map((d) => ({ ref: { id: d.id, version: d.version }, body: d })),
    );
    await coordinator.start();
    return coordinator;
  } catch (error) {
    await closeOwned();
    throw error;
  }
}
