import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { complete, createWorker } from '../../src/actors/worker/worker.js';
import { createRedisQueue } from '../../src/bus/redis/queue.js';
import { createSqliteQueue } from '../../src/bus/sqlite/queue.js';
import { createBroker } from '../../src/actors/broker/broker.js';
import type { Clock } from '../../src/persistence/kernel/clock.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import type { WorkQueue } from '../../src/bus/work-queue.js';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { createSqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import type { ContextStore } from '../../src/persistence/context/sqlite-store.js';
import { RESULTS_ROLE } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { tempDir, until } from './helpers.js';

/**
 * A Coordinator that starts takes back at once what an earlier one held on
 * the bus (a leader SIGKILLed between leasing a hop's result and applying
 * it): the result is applied as soon as the new one runs, not when the dead
 * one's lease would have run out (an hour here, on a clock that does not
 * move by itself), and the hop is charged its time up to its result's
 * publication, not the time the result waited for a Coordinator. On the
 * SQLite bus and on Redis; the clock is the test's.
 */

const { runRedis } = await redisGate();

const one = parseWorkflowDefinition({
  id: 'one-hop',
  version: 1,
  start: 'solo',
  stages: { solo: { role: 'solo', next: [{ on: 'succeeded', end: 'completed' }] } },
});

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface Parts {
  bus: WorkQueue;
  contextStore: ContextStore;
}

/** The Coordinator's file (its tables and the broker's) and the bus and Context Engine `open` makes on it or beside it. */
async function scenario(open: (clock: Clock, db: SqliteDatabase) => Promise<Parts>) {
  const dir = tempDir();
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  let t = 1_750_000_000_000;
  const clock = { now: () => t };
  const path = join(dir, 'coord.db');
  const db = openDatabase(path);
  cleanups.push(() => db.close());
  const { bus, contextStore } = await open(clock, db);
  // Each Coordinator process with a broker of its own on the file (a killed one's broker goes with it).
  const coordinator = async (): Promise<{ c: Coordinator; stop(): Promise<void> }> => {
    const broker = createBroker({ path, clock });
    const c = await createCoordinator({ db, broker, bus, contextStore, clock, definitions: [one] });
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await c.close();
      broker.close();
    };
    cleanups.push(stop);
    return { c, stop };
  };

  // The first Coordinator dispatches the hop, and dies.
  const first = await coordinator();
  const itemId = await first.c.createWorkItem({ workflow: 'one-hop', input: 'x' });
  await until(async () => (await bus.stats('solo')).depth === 1, 10_000, 'the hop on the bus');
  await first.stop();

  // A worker completes the hop 500 ms later (by the clock); its result waits on the bus.
  t += 500;
  const worker = createWorker({ role: 'solo', handler: () => complete({}), bus, contextStore });
  worker.start();
  await until(async () => (await bus.stats(RESULTS_ROLE)).depth === 1, 10_000, 'the result on the bus');
  await worker.stop();

  // A leader leases the result and is killed before it applies it: the lease is an hour long.
  const held = await bus.consume(RESULTS_ROLE, { consumer: 'coordinator-dead', visibilityTimeoutMs: 3_600_000 });
  expect(held).toHaveLength(1);

  // A minute later a new Coordinator starts: it applies the result at once.
  t += 60_000;
  const { c: second } = await coordinator();
  const done = await second.settled(itemId, { timeoutMs: 20_000 });
  expect(done.state).toBe('completed');
  // The dead leader's lease is fenced: its ack changes nothing.
  expect(await bus.ack(held[0]!)).toBe(false);
  // The hop is charged 500 ms (dispatch to its result's publication), not the minute the result waited.
  const [hop] = await second.listHops(itemId);
  expect(hop?.usage.elapsedMs).toBe(500);
  expect((await second.getItem(itemId))?.usage.elapsedMs).toBe(500);
  expect((await second.verifyAudit()).ok).toBe(true);
}

describe('a Coordinator takes back what a dead one held on the bus', () => {
  it('on the SQLite bus', async () => {
    await scenario(async (clock, db) => {
      const bus = createSqliteQueue({ database: db, clock });
      const contextStore = createSqliteContextStore({ database: db, clock });
      cleanups.push(
        () => bus.close(),
        () => contextStore.close(),
      );
      return { bus, contextStore };
    });
  }, 60_000);

  it.runIf(runRedis)(
    'on Redis',
    async () => {
      const prefix = `reclaim-${randomUUID().slice(0, 8)}`;
      cleanups.push(() => deleteRedisPrefix(prefix));
      await scenario(async (clock) => {
        const bus = await createRedisQueue({ url: REDIS_URL, prefix, clock });
        const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix, clock });
        cleanups.push(
          () => bus.close(),
          () => contextStore.close(),
        );
        return { bus, contextStore };
      });
    },
    60_000,
  );
});
