import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { openPostgresStorage } from '../../src/actors/coordinator/storage/postgres-storage.js';
import { openSqliteStorage } from '../../src/actors/coordinator/storage/sqlite-storage.js';
import { silentLogger } from '../../src/log/logger.js';
import { systemClock } from '../../src/persistence/kernel/clock.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';
import { taskViewsOfItem } from '../../src/workflow/task-view.js';
import { redisGate } from '../redis-availability.js';
import {
  type Storage,
  autoApprove,
  deployments,
  devSdlc,
  postgresStorage,
  sqliteStorage,
  tempDir,
  until,
} from './helpers.js';
import { runCoordinatorStorageContract } from './storage-contract.js';

/**
 * The Coordinator's own runs on both stores: the embedded SQLite file, and
 * PostgreSQL (with the Redis bus and Context Engine it needs; a database of
 * its own per test, dropped after). One dev-SDLC item through every stage
 * (a question that suspends coding, a failed test sent back, the approval
 * gate), read back through the asynchronous reads, the audit verified; and a
 * restart with items waiting at their gates, finished by the next
 * Coordinator. On PostgreSQL there is no broker here (none is given): the
 * A2A view is the one derived from the rows.
 */

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();

const cases: [string, boolean, () => Promise<Storage>][] = [
  ['SQLite', true, async () => sqliteStorage()],
  ['PostgreSQL (Redis bus)', runPostgres && runRedis, postgresStorage],
];

// The seam under the Coordinator, on each backend: the same contract.
runCoordinatorStorageContract('SQLite', true, async () => {
  const dir = tempDir();
  const db = openDatabase(join(dir, 'switchboard.db'));
  const storage = openSqliteStorage({ db, clock: systemClock, logger: silentLogger() });
  return {
    storage,
    async cleanup() {
      await storage.close().catch(() => undefined);
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
runCoordinatorStorageContract('PostgreSQL', runPostgres, async () => {
  const database = await createTestDatabase('sb_seam');
  const storage = await openPostgresStorage({ url: database.url, clock: systemClock, logger: silentLogger() });
  return {
    storage,
    async cleanup() {
      await storage.close().catch(() => undefined);
      await database.drop();
    },
  };
});

for (const [name, run, make] of cases) {
  describe.runIf(run)(`the Coordinator on ${name}`, () => {
    let storage: Storage | undefined;
    const open: Coordinator[] = [];
    afterEach(async () => {
      for (const c of open.splice(0)) await c.close();
      await storage?.cleanup();
      storage = undefined;
    });

    async function start(): Promise<Coordinator> {
      const c = await createCoordinator({
        definitions: [devSdlc],
        deployments: deployments(),
        timerIntervalMs: 50,
        ...(await storage!.options()),
      });
      open.push(c);
      return c;
    }

    it('runs an item through every stage: a question, a failed test sent back, the approval; the audit verifies', async () => {
      storage = await make();
      const coordinator = await start();
      expect(coordinator.storage).toBe(name === 'SQLite' ? 'sqlite' : 'postgres');
      const stop = autoApprove(coordinator);
      const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting' });
      const final = await coordinator.settled(id, { timeoutMs: 30_000 });
      stop();
      expect(final.state).toBe('completed');
      await coordinator.mirrored();
      const hops = await coordinator.listHops(id);
      expect(hops.map((h) => `${h.kind}:${h.stage}/${h.role}:${h.state}`)).toEqual([
        'stage:architect/architect:completed',
        'stage:coding/coding:completed',
        'query:coding/architect:completed',
        'stage:testing/testing:failed',
        'stage:coding/coding:completed',
        'stage:testing/testing:completed',
        'stage:devops/devops:completed',
      ]);
      const item = (await coordinator.getItem(id))!;
      // Mirrored where there is a broker to mirror to; on PostgreSQL without one, the rows are the view.
      expect(item).toMatchObject({ state: 'completed', hops: 7, mirrored: name === 'SQLite' });
      expect(item.output).toMatchObject({ state: 'completed', stage: 'devops' });
      const rows = await coordinator.tables.readUsageRows({ itemId: id });
      expect(rows.reduce((s, r) => s + r.costUsd, 0)).toBeCloseTo(item.usage.costUsd, 9);
      expect(item.usage.costUsd).toBeGreaterThan(0);
      const byAgent = await coordinator.tables.readUsageBy('agent', { itemId: id });
      expect(byAgent.find((g) => g.key === 'architect')?.hops).toBe(2);
      // The chain, on either store: its rows of this item, every hop's dispatch among them.
      const audit = await coordinator.audit.list({ itemId: id });
      expect(audit.filter((r) => r.kind === 'dispatch')).toHaveLength(hops.length);
      // No member of the Coordinator throws on one store: the synchronous SQLite-only reads are gone.
      for (const gone of ['get', 'list', 'hops', 'store', 'postgresAudit']) expect(gone in coordinator).toBe(false);
      const verified = await coordinator.verifyAudit();
      expect(verified.ok).toBe(true);
      if (verified.ok) expect(verified.entries).toBeGreaterThan(30);
      if (coordinator.broker !== undefined) {
        // The broker's view: the item's task completed, one child task per hop.
        const { task } = await coordinator.broker.getTask({
          token: (await coordinator.broker.register({ name: 'coordinator', contextId: id, kind: 'parent' })).token,
          id: item.taskId!,
        });
        expect(task.status.state).toBe('completed');
      } else {
        // No broker (PostgreSQL without one): the A2A view derived from the rows, as tasks and the console show it.
        expect(name).not.toBe('SQLite');
        expect(item.taskId).toBeNull();
        expect(hops.every((h) => h.taskId === null)).toBe(true);
        const views = taskViewsOfItem(item, hops);
        // Each task named by its row's id (no broker gave it another), in hop order, in the state of its row.
        expect(views.map((v) => v.id)).toEqual([id, ...hops.map((h) => h.id)]);
        expect(views.map((v) => `${v.kind}:${v.state}`)).toEqual([
          'item:completed',
          'hop:completed',
          'hop:completed',
          'hop:completed',
          'hop:failed',
          'hop:completed',
          'hop:completed',
          'hop:completed',
        ]);
        expect(views.slice(1).every((v) => v.parentId === id)).toBe(true);
      }
    });

    it('items waiting at a gate survive a restart and finish after the approval (the mirror follows)', async () => {
      storage = await make();
      const first = await start();
      const ids = [
        await first.createWorkItem({ workflow: 'dev-sdlc', input: 'One' }),
        await first.createWorkItem({ workflow: 'dev-sdlc', input: 'Two' }),
      ];
      await until(
        async () =>
          (await Promise.all(ids.map((id) => first.getItem(id)))).every((i) => i?.state === 'awaiting-approval'),
        20_000,
        'both gates',
      );
      await first.mirrored();
      const before = await Promise.all(ids.map(async (id) => (await first.listHops(id)).length));
      await first.close();
      open.splice(0);

      const second = await start();
      expect([...second.restored.items].sort()).toEqual([...ids].sort());
      const current = await new Promise((resolve) => second.watch(ids[0]!).subscribe((s) => resolve(s.event.kind)));
      expect(current).toBe('current');
      for (const id of ids) await second.approve(id, 'release-manager');
      const finals = await Promise.all(ids.map((id) => second.settled(id, { timeoutMs: 20_000 })));
      expect(finals.map((f) => f.state)).toEqual(['completed', 'completed']);
      for (const [i, id] of ids.entries()) expect(await second.listHops(id)).toHaveLength(before[i]! + 1);
      await second.mirrored();
      const item = (await second.getItem(ids[0]!))!;
      if (second.broker !== undefined) {
        expect(item.mirrored).toBe(true);
        // The item's task in this Coordinator's broker ended with it.
        const me = await second.broker.register({ name: 'coordinator', contextId: ids[0]!, kind: 'parent' });
        const { task } = await second.broker.getTask({ token: me.token, id: item.taskId! });
        expect(task.status.state).toBe('completed');
      } else {
        // PostgreSQL without a broker: the item's derived task ended with it, its hops' too.
        const hops = await second.listHops(ids[0]!);
        const views = taskViewsOfItem(item, hops);
        expect(views[0]).toMatchObject({ kind: 'item', id: ids[0], state: 'completed' });
        expect(views.slice(1).map((v) => v.state)).toEqual(hops.map((h) => h.state));
        expect(hops.every((h) => h.state === 'completed' || h.state === 'failed')).toBe(true);
      }
      expect((await second.verifyAudit()).ok).toBe(true);
      // An ended item's final status is read from the tables on both stores.
      const ended = await new Promise((resolve) => second.watch(ids[1]!).subscribe((s) => resolve(s.state)));
      expect(ended).toBe('completed');
    });
  });
}

describe('a Coordinator on PostgreSQL needs the parts a whole deployment shares', () => {
  it('refuses without a Redis bus, and a URL that is not postgres://, before opening anything', async () => {
    await expect(
      createCoordinator({ definitions: [devSdlc], postgres: { url: 'postgres://postgres@127.0.0.1:5432/x' } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringContaining('Redis bus') });
    await expect(createCoordinator({ definitions: [devSdlc], postgres: { url: 'mysql://x' } })).rejects.toMatchObject({
      code: 'COORD_INVALID_ARGUMENT',
    });
    await expect(
      createCoordinator({ definitions: [devSdlc], postgres: { url: 'postgres://h/db', maxConnections: 0 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringContaining('maxConnections') });
    await expect(
      createCoordinator({ definitions: [devSdlc], path: '/nonexistent/x.db', postgres: { url: 'postgres://h/db' } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringContaining('one of them') });
  });
});

describe('an embedded Coordinator opens its own parts on its file', () => {
  it('refuses a bus, Context Engine, broker or db given beside path (they would be ignored), before opening anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-path-parts-'));
    try {
      const path = join(dir, 'x.db');
      for (const extra of [
        { bus: {} as never },
        { broker: {} as never, contextStore: {} as never },
        { db: {} as never },
      ]) {
        await expect(createCoordinator({ definitions: [devSdlc], path, ...extra })).rejects.toMatchObject({
          code: 'COORD_INVALID_ARGUMENT',
          message: expect.stringContaining(`so ${Object.keys(extra).join(', ')} would be ignored`),
        });
      }
      expect(existsSync(path)).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
