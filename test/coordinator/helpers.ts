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
import type { AuditListOptions } from '../../src/persistence/audit/chain.js';
import type { AuditHead, AuditRow } from '../../src/protocol/audit.js';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { createTestDatabase } from '../postgres-availability.js';
import { REDIS_URL } from '../redis-availability.js';

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
  cleanup(): Promise<void>;
}

export function sqliteStorage(dir = tempDir()): Storage {
  return {
    options: async () => ({ path: join(dir, 'switchboard.db') }),
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A database of its own (dropped by `cleanup`), a Redis bus and Context Engine under a prefix of its own. */
export async function postgresStorage(): Promise<Storage> {
  const database = await createTestDatabase('sb_coord');
  const prefix = `pgc-${randomUUID().slice(0, 8)}`;
  const closers: (() => Promise<void>)[] = [];
  return {
    async options() {
      const bus = await createRedisQueue({ url: REDIS_URL, prefix });
      const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix });
      closers.push(
        () => bus.close(),
        () => contextStore.close(),
      );
      return { postgres: { url: database.url }, bus, contextStore };
    },
    async cleanup() {
      for (const close of closers.splice(0)) await close().catch(() => undefined);
      await database.drop();
      const client = createClient({ url: REDIS_URL });
      await client.connect();
      for await (const keys of client.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) {
        if (keys.length > 0) await client.del(keys);
      }
      await client.close();
    },
  };
}

export interface Fixture {
  /** A directory of the test's own (on SQLite the database file is in it). */
  dir: string;
  /** The SQLite file (on PostgreSQL: a path nothing is written to). */
  path: string;
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
  const path = join(dir, 'switchboard.db');
  let storage = storages.get(dir);
  if (storage === undefined) {
    storage = ON_POSTGRES ? await postgresStorage() : sqliteStorage(dir);
    storages.set(dir, storage);
  }
  const coordinator = await createCoordinator({
    definitions: [devSdlc],
    deployments: deployments(),
    ...(await storage.options()),
    ...options,
  });
  const kept = storage;
  return {
    dir,
    path,
    coordinator,
    async close() {
      await coordinator.close();
      storages.delete(dir);
      await kept.cleanup();
      rmSync(dir, { recursive: true, force: true });
    },
    async closeKeepingData() {
      await coordinator.close();
    },
  };
}

/** An item's audit rows on either store. */
export async function auditRows(coordinator: Coordinator, options: AuditListOptions = {}): Promise<AuditRow[]> {
  return coordinator.postgresAudit !== undefined
    ? coordinator.postgresAudit.list(options)
    : coordinator.audit.list(options);
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
  return coordinator.postgresAudit !== undefined ? coordinator.postgresAudit.head() : coordinator.audit.head();
}
