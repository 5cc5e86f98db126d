import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { type WorkHandler, complete, createWorker, spawn } from '../../src/actors/worker/worker.js';
import { createRedisQueue } from '../../src/bus/redis/queue.js';
import { createSqliteQueue } from '../../src/bus/sqlite/queue.js';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { createSqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { tempDir, until } from './helpers.js';
import { leadFlow, researchFlow } from './lead-flows.js';

/**
 * The bus loses its state (every key of the deployment deleted, as a Redis
 * server restarted empty or a FLUSHALL leaves it) while hops are queued,
 * with a workflow that sets no timeout anywhere: the Coordinator sees the
 * bus's generation change and publishes every hop it has out again under
 * its own key (audited `reconcile`), and every item completes once a worker
 * comes. The same when the loss happens while no Coordinator runs: the next
 * one publishes what was out as it starts.
 */

const { runRedis } = await redisGate();
const ITEMS = 4;
const noTimeouts = parseWorkflowDefinition({
  id: 'plain',
  version: 1,
  start: 'plan',
  stages: {
    plan: { role: 'plan', next: [{ on: 'succeeded', goto: 'ship' }] },
    ship: { role: 'ship', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/**
 * A Coordinator on a SQLite file with a Redis bus, and its workers. The
 * Context Engine is on the same Redis (it loses its state with the bus), or
 * on a SQLite file (`context: 'sqlite'`: checkpoints and completion records
 * outlive the bus's loss).
 */
async function deployment(options: { context?: 'redis' | 'sqlite' } = {}) {
  const dir = tempDir();
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const prefix = `reconcile-${randomUUID().slice(0, 8)}`;
  cleanups.push(() => deleteRedisPrefix(prefix));
  const path = join(dir, 'coord.db');
  const db = openDatabase(path);
  cleanups.push(() => db.close());
  const bus = await createRedisQueue({ url: REDIS_URL, prefix });
  const contextStore =
    options.context === 'sqlite'
      ? createSqliteContextStore({ database: join(dir, 'context.db') })
      : await createRedisContextStore({ url: REDIS_URL, prefix });
  cleanups.push(
    () => bus.close(),
    () => contextStore.close(),
  );
  const coordinator = async (): Promise<{ c: Coordinator; stop(): Promise<void> }> => {
    const broker = createBroker({ path });
    const c = await createCoordinator({
      db,
      broker,
      bus,
      contextStore,
      definitions: [noTimeouts, leadFlow, researchFlow],
      timerIntervalMs: 100,
    });
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
  const workers = () => {
    for (const role of ['plan', 'ship']) {
      const w = createWorker({ role, handler: () => complete({}), bus, contextStore });
      w.start();
      cleanups.push(() => w.stop({ graceMs: 100 }));
    }
  };
  return { prefix, bus, contextStore, coordinator, workers };
}

describe.runIf(runRedis)('the bus loses its state: the Coordinator publishes again what it has out', () => {
  it('while it runs: it sees the generation change, every item completes, audited once per item', async () => {
    const { prefix, bus, coordinator, workers } = await deployment();
    const { c } = await coordinator();
    const ids: string[] = [];
    for (let i = 0; i < ITEMS; i++) ids.push(await c.createWorkItem({ workflow: 'plain', input: `x${i}` }));
    await until(async () => (await bus.stats('plan')).depth === ITEMS, 10_000, 'the hops on the bus');
    // Redis loses everything of the deployment.
    await deleteRedisPrefix(prefix);
    expect((await bus.stats('plan')).depth).toBe(0);
    await until(async () => (await bus.stats('plan')).depth === ITEMS, 20_000, 'the hops published again');
    workers();
    for (const id of ids) expect((await c.settled(id, { timeoutMs: 30_000 })).state).toBe('completed');
    for (const id of ids) {
      const rows = (await c.audit.list({ itemId: id })).filter((r) => r.kind === 'reconcile');
      // One at the start (nothing out yet: none), one for the loss.
      expect(rows).toHaveLength(1);
      expect(rows[0]!.data).toMatchObject({
        reason: expect.stringContaining('the bus lost its state'),
        republished: [{ kind: 'stage', role: 'plan', idempotencyKey: `${id}/1/1` }],
      });
      expect((await c.listHops(id)).map((h) => `${h.stage}:${h.state}`)).toEqual(['plan:completed', 'ship:completed']);
    }
    expect((await c.verifyAudit()).ok).toBe(true);
  }, 60_000);

  it('while none runs: the next Coordinator publishes what was out as it starts', async () => {
    const { prefix, bus, coordinator, workers } = await deployment();
    const first = await coordinator();
    const ids: string[] = [];
    for (let i = 0; i < ITEMS; i++) ids.push(await first.c.createWorkItem({ workflow: 'plain', input: `x${i}` }));
    await until(async () => (await bus.stats('plan')).depth === ITEMS, 10_000, 'the hops on the bus');
    await first.stop();
    await deleteRedisPrefix(prefix);
    const { c } = await coordinator();
    workers();
    for (const id of ids) expect((await c.settled(id, { timeoutMs: 30_000 })).state).toBe('completed');
    const rows = (await c.audit.list({ itemId: ids[0]! })).filter((r) => r.kind === 'reconcile');
    expect(rows.map((r) => (r.data as { reason: string }).reason)).toEqual([
      'a Coordinator started: what was out is published again',
    ]);
    expect((await c.verifyAudit()).ok).toBe(true);
  }, 60_000);

  it('after a hop was resumed by its children: their reply is published again, not its start; each child runs once', async () => {
    // Checkpoints and completion records on a store the bus's loss leaves whole.
    const { prefix, bus, contextStore, coordinator } = await deployment({ context: 'sqlite' });
    const { c } = await coordinator();
    const calls = { lead: 0, resumed: [] as unknown[], research: 0 };
    const lead: WorkHandler = ({ resume }) => {
      calls.lead++;
      if (resume === undefined) return spawn([{ workflow: 'research@1', input: 'look' }], { state: { asked: 1 } });
      calls.resumed.push(resume.reply.parts[0]);
      return complete({ parts: [resume.reply.parts[0]!] });
    };
    const startLead = () => {
      const w = createWorker({ role: 'lead', handler: lead, bus, contextStore });
      w.start();
      return w;
    };
    const researcher = createWorker({
      role: 'researcher',
      handler: () => {
        calls.research++;
        return complete({ parts: [{ kind: 'data', data: { found: 'it' } }] });
      },
      bus,
      contextStore,
    });
    researcher.start();
    cleanups.push(() => researcher.stop({ graceMs: 100 }));
    const first = startLead();
    const id = await c.createWorkItem({ workflow: 'lead-flow', input: 'go' });
    await until(async () => calls.lead === 1, 10_000, 'the lead hop to stand down');
    await first.stop({ graceMs: 100 });
    // The child ends, the hop is resumed: its reply waits on the bus for a lead worker.
    await until(async () => (await bus.stats('lead')).depth === 1, 20_000, 'the reply on the bus');
    expect(calls.research).toBe(1);
    await deleteRedisPrefix(prefix);
    await until(async () => (await bus.stats('lead')).depth === 1, 20_000, 'the reply published again');
    const second = startLead();
    cleanups.push(() => second.stop({ graceMs: 100 }));
    expect((await c.settled(id, { timeoutMs: 30_000 })).state).toBe('completed');
    expect(calls.lead).toBe(2);
    expect(calls.resumed).toEqual([
      { kind: 'data', data: { children: [{ key: 's0', outcome: 'completed', output: { found: 'it' }, error: null }] } },
    ]);
    expect(calls.research).toBe(1);
    const children = (await c.listItems()).filter((i) => i.attributes?.['switchboard.parent'] === id);
    expect(children.map((i) => i.state)).toEqual(['completed']);
    const reconciled = (await c.audit.list({ itemId: id })).filter((r) => r.kind === 'reconcile');
    expect(reconciled.map((r) => r.data)).toEqual([
      expect.objectContaining({ republished: [expect.objectContaining({ kind: 'stage', role: 'lead' })] }),
    ]);
    expect((await c.verifyAudit()).ok).toBe(true);
  }, 90_000);

  it('a bus that keeps its state (SQLite) has no generation: nothing is published again at a start', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const bus = createSqliteQueue({ database: join(dir, 'bus.db') });
    cleanups.push(() => bus.close());
    expect(await bus.generation()).toBeNull();
  });
});
