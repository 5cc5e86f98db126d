import { silentLogger } from '../../src/log/logger.js';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Coordinator,
  type CoordinatorOptions,
  type RoleDeployment,
  createCoordinator,
} from '../../src/actors/coordinator/coordinator.js';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { DEV_SDLC_WORKFLOW_PATH, loadWorkflowFile } from '../../src/actors/coordinator/workflow-loader.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import type { PoolDeployment } from '../../src/machines/pool-machine.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { createClient } from 'redis';
import { createRedisQueue } from '../../src/bus/redis/queue.js';
import type { AuditListOptions } from '../../src/persistence/audit/audit-rows.js';
import type { AuditHead, AuditRow } from '../../src/protocol/audit.js';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import pg from 'pg';
import { createBroker } from '../../src/actors/broker/broker.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { createTestDatabase } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix } from '../redis-availability.js';

export const devSdlc: WorkflowDefinition = loadWorkflowFile(DEV_SDLC_WORKFLOW_PATH);

export const WARM: PoolDeployment = { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 1_000, concurrency: 2 };
export const TO_ZERO: PoolDeployment = { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 60, concurrency: 2 };

export function deployments(
  handlers: Record<string, WorkHandler> = DEMO_HANDLERS,
  pools: Record<string, PoolDeployment> = {},
): Record<string, RoleDeployment> {
  const out: Record<string, RoleDeployment> = {};
  for (const [role, handler] of Object.entries(handlers)) {
    out[role] = {
      handler,
      deployment: pools[role] ?? (role === 'architect' ? TO_ZERO : WARM),
      observeIntervalMs: 10,
      pollWaitMs: 50,
    };
  }
  return out;
}

/**
 * Which store the Coordinator's own suite runs on: the embedded SQLite file
 * (default), or PostgreSQL with the Redis bus and Context Engine a
 * deployment on it needs (`SWITCHBOARD_TEST_STORE=postgres`; the vitest
 * project `coordinator-postgres` runs this directory so). Tests of what only
 * a file has (its ownership, its crash recovery, rows edited beside it) run
 * on SQLite only.
 */
export const TEST_STORE: 'sqlite' | 'postgres' =
  process.env.SWITCHBOARD_TEST_STORE === 'postgres' ? 'postgres' : 'sqlite';
export const ON_POSTGRES = TEST_STORE === 'postgres';

/** Where a Coordinator keeps its data in a test: the same data each time `options` is called. */
export interface Storage {
  options(): Promise<Partial<CoordinatorOptions>>;
  /** Closes the parts the last `options()` opened (a Coordinator does not close parts it was given); keeps the data. */
  release(): Promise<void>;
  /** `release`, then removes the data. */
  cleanup(): Promise<void>;
  /** Makes every insert into `table` (where `when` holds of `NEW`, if given) fail with `message`, until the returned function runs. */
  sabotage(table: string, message: string, when?: string): Promise<() => Promise<void>>;
  /** Loses every message of `role`'s queue, as a Redis server that restarts empty would. */
  loseQueue(role: string): Promise<void>;
}

export function sqliteStorage(dir = tempDir()): Storage {
  const path = join(dir, 'switchboard.db');
  return {
    options: async () => ({ path }),
    release: async () => undefined,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    sabotage: async (table, message, when) => sqliteSabotage(path, table, message, when),
    async loseQueue(role) {
      const side = openDatabase(path);
      side.prepare('DELETE FROM bus_jobs WHERE role = ?').run(role);
      side.close();
    },
  };
}

function sqliteSabotage(path: string, table: string, message: string, when?: string): () => Promise<void> {
  const side = openDatabase(path);
  side.exec(
    `CREATE TRIGGER sabotage_${table} BEFORE INSERT ON ${table} ${when === undefined ? '' : `WHEN ${when}`}
     BEGIN SELECT RAISE(ABORT, '${message}'); END`,
  );
  return async () => {
    side.exec(`DROP TRIGGER sabotage_${table}`);
    side.close();
  };
}

/**
 * A database of its own (dropped by `cleanup`), a Redis bus and Context
 * Engine under a prefix of its own; with `brokerDir`, the broker on a file
 * there (`broker.db`, so that a test can look at its tables) instead of one
 * in memory.
 */
export async function postgresStorage(brokerDir?: string): Promise<Storage> {
  const database = await createTestDatabase('sb_coord');
  const prefix = `pgc-${randomUUID().slice(0, 8)}`;
  let closers: (() => Promise<void>)[] = [];
  const release = async () => {
    for (const close of closers.splice(0).reverse()) await close().catch(() => undefined);
  };
  return {
    async options() {
      await release();
      const bus = await createRedisQueue({ url: REDIS_URL, prefix });
      const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix });
      closers = [() => bus.close(), () => contextStore.close()];
      if (brokerDir === undefined) return { postgres: { url: database.url }, bus, contextStore };
      const broker = createBroker({ path: join(brokerDir, 'broker.db') });
      closers.push(async () => broker.close());
      return { postgres: { url: database.url }, bus, contextStore, broker };
    },
    release,
    async cleanup() {
      await release();
      await database.drop();
      await deleteRedisPrefix(prefix);
    },
    async loseQueue(role) {
      // Every key of the role's queue: {prefix}:r:ROLE:... (the bus's own key layout).
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      try {
        for await (const keys of client.scanIterator({ MATCH: `{${prefix}}:r:${role}:*`, COUNT: 1000 })) {
          if (keys.length > 0) await client.del(keys);
        }
      } finally {
        await client.close();
      }
    },
    async sabotage(table, message, when) {
      if (table.startsWith('a2a_')) return sqliteSabotage(join(brokerDir ?? '', 'broker.db'), table, message, when);
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      await client.query(
        `CREATE FUNCTION sabotage_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
         BEGIN IF ${when ?? 'true'} THEN RAISE EXCEPTION '${message}'; END IF; RETURN NEW; END $$;
         CREATE TRIGGER sabotage_${table} BEFORE INSERT ON ${table} FOR EACH ROW EXECUTE FUNCTION sabotage_${table}()`,
      );
      return async () => {
        await client.query(`DROP TRIGGER sabotage_${table} ON ${table}; DROP FUNCTION sabotage_${table}()`);
        await client.end();
      };
    },
  };
}

export interface Fixture {
  /** A directory of the test's own (the SQLite file is in it; on PostgreSQL, the broker's file). */
  dir: string;
  /** The file of the broker's tables (on SQLite, of every table). */
  path: string;
  storage: Storage;
  coordinator: Coordinator;
  /** Closes the Coordinator and removes its data. */
  close(): Promise<void>;
  /** Closes the Coordinator and keeps its data for the next `openFixture(options, f.dir)`. */
  closeKeepingData(): Promise<void>;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sb-coord-'));
}

/** The storage of each fixture directory, so that a Coordinator opened again on `f.dir` finds the same data. */
const storages = new Map<string, Storage>();

/** A Coordinator on the suite's store (`TEST_STORE`); `dir` again opens one on the same data. */
export async function openFixture(options: Partial<CoordinatorOptions> = {}, dir = tempDir()): Promise<Fixture> {
  const path = join(dir, ON_POSTGRES ? 'broker.db' : 'switchboard.db');
  let storage = storages.get(dir);
  const created = storage === undefined;
  if (storage === undefined) {
    storage = ON_POSTGRES ? await postgresStorage(dir) : sqliteStorage(dir);
    storages.set(dir, storage);
  }
  let coordinator: Coordinator;
  try {
    coordinator = await createCoordinator({
      definitions: [devSdlc],
      deployments: deployments(),
      // Quiet unless a test asks for logs: the default logger warns on stderr of the failures tests cause on purpose.
      logger: silentLogger(),
      ...(await storage.options()),
      ...options,
    });
  } catch (error) {
    // A Coordinator refused at its start leaves nothing behind when this call made its data.
    if (created) {
      storages.delete(dir);
      await storage.cleanup();
      rmSync(dir, { recursive: true, force: true });
    }
    throw error;
  }
  const kept = storage;
  return {
    dir,
    path,
    storage: kept,
    coordinator,
    async close() {
      await coordinator.close();
      storages.delete(dir);
      await kept.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
    async closeKeepingData() {
      await coordinator.close();
      await kept.release();
    },
  };
}

/** An item's audit rows on either store. */
export async function auditRows(coordinator: Coordinator, options: AuditListOptions = {}): Promise<AuditRow[]> {
  return coordinator.audit.list(options);
}

/** Approves every item that reaches an approval gate, as `approver`. */
export function autoApprove(coordinator: Coordinator, approver = 'release-manager'): () => void {
  const sub = coordinator.statuses$.subscribe((s) => {
    if (s.event.kind === 'approval-requested' && s.approval?.source === 'gate') {
      coordinator.approve(s.id, approver).catch(() => {});
    }
  });
  return () => sub.unsubscribe();
}

export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The audit chain's head on either store. */
export async function auditHead(coordinator: Coordinator): Promise<AuditHead> {
  return coordinator.audit.head();
}
