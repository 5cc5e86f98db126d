import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import {
  type Coordinator,
  type CoordinatorOptions,
  createCoordinator,
} from '../../src/actors/coordinator/coordinator.js';
import { type Worker, type WorkHandler, complete, createWorker, suspend } from '../../src/actors/worker/worker.js';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { DEFAULT_CONTEXT_RETENTION_MS, SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { IN_CI, REDIS_URL, redisGate } from '../redis-availability.js';
import { sleep } from '../worker/helpers.js';
import { WARM, devSdlc, tempDir, until } from './helpers.js';

const { redisUp } = await redisGate();
const runRedis = redisUp || IN_CI;

/**
 * The embedded Coordinator owns its Context Engine and prunes it while it
 * runs: idempotency records past the retention go, what a suspended run
 * resumes from stays, and the run resumes after the pruning.
 */

const HOUR = 60 * 60 * 1000;

const planBuild = parseWorkflowDefinition({
  id: 'plan-build',
  version: 1,
  title: 'plan, then build (which may ask the oracle)',
  start: 'plan',
  stages: {
    plan: { role: 'planner', next: [{ on: 'succeeded', goto: 'build' }] },
    build: { role: 'builder', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

// Makes `oracle` one of the Coordinator's roles (its questions are forwarded to the `oracle` queue),
// while no pool of this Coordinator serves it: a question waits there, unleased, until the test answers.
const oracleDesk = parseWorkflowDefinition({
  id: 'oracle-desk',
  version: 1,
  title: 'the oracle',
  start: 'ask',
  stages: { ask: { role: 'oracle', next: [{ on: 'succeeded', end: 'completed' }] } },
});

function text(parts: readonly { kind: string; text?: string }[]): string {
  return parts.map((p) => p.text ?? '').join(' ');
}

describe('the Coordinator prunes its Context Engine', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('forgets old idempotency records while it runs, and keeps what a suspended run resumes from', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let offset = 0;
    const coordinator: Coordinator = await createCoordinator({
      path: join(dir, 'switchboard.db'),
      clock: { now: () => Date.now() + offset },
      definitions: [planBuild, oracleDesk],
      contextRetention: { retentionMs: HOUR, pruneIntervalMs: 20 },
      deployments: {
        planner: {
          handler: () => complete({ parts: [{ kind: 'text', text: 'a plan' }] }),
          deployment: WARM,
          observeIntervalMs: 10,
          pollWaitMs: 50,
        },
        builder: {
          handler: ({ message, resume }) => {
            if (resume !== undefined)
              return complete({ parts: [{ kind: 'text', text: `built, ${text(resume.reply.parts)}` }] });
            if (text(message.parts).includes('ask')) {
              return suspend({
                ask: { role: 'oracle', message: { role: 'agent', parts: [{ kind: 'text', text: 'which way?' }] } },
                state: { waiting: true },
              });
            }
            return complete({ parts: [{ kind: 'text', text: 'built' }] });
          },
          deployment: WARM,
          observeIntervalMs: 10,
          pollWaitMs: 50,
        },
      },
    });
    cleanups.push(() => coordinator.close());
    const store = coordinator.contextStore as SqliteContextStore;
    expect(store).toBeInstanceOf(SqliteContextStore);
    expect(store.retentionMs).toBe(HOUR);
    const db = store.database;
    const count = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;

    const done = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'quick' });
    const waiting = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'ask the oracle' });
    expect((await coordinator.settled(done)).state).toBe('completed');
    await until(
      async () => (await coordinator.getItem(waiting))?.state === 'suspended',
      10_000,
      'the second item to suspend',
    );
    await until(async () => (await coordinator.bus.stats('oracle')).depth === 1, 10_000, 'the question to wait');

    // plan + build of the first item, plan + the suspension of the second.
    expect(count('SELECT count(*) AS n FROM context_completions')).toBe(4);
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NULL')).toBe(1);
    const outputs = count('SELECT count(*) AS n FROM context_outputs');
    expect(outputs).toBe(3);

    // Two hours on (the retention is one): the running Coordinator's store prunes by itself.
    offset += 2 * HOUR;
    await until(() => count('SELECT count(*) AS n FROM context_completions') === 0, 5000, 'the Coordinator to prune');
    // Kept: the checkpoint the suspended run resumes from, every output (the runs' context).
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NULL')).toBe(1);
    expect(count('SELECT count(*) AS n FROM context_outputs')).toBe(outputs);

    // The suspended item resumes from its checkpoint after the pruning and completes.
    const oracle: Worker = createWorker({
      role: 'oracle',
      bus: coordinator.bus,
      contextStore: coordinator.contextStore,
      pollWaitMs: 50,
      handler: () => complete({ parts: [{ kind: 'text', text: 'go left' }] }),
    });
    cleanups.push(() => oracle.stop({ graceMs: 100 }));
    const final = await coordinator.settled(waiting);
    expect(final.state).toBe('completed');
    const hops = await coordinator.listHops(waiting);
    expect(hops.find((h) => h.kind === 'stage' && h.stage === 'build')?.state).toBe('completed');
    // The resume's records are new: kept, as the resumed checkpoint (resumed now).
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NOT NULL')).toBe(1);
    expect(count('SELECT count(*) AS n FROM context_completions')).toBe(2);
  });

  it('keeps a day by default, and refuses a bad retention before opening anything', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    await expect(
      createCoordinator({ path, definitions: [devSdlc], contextRetention: { retentionMs: 0 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringMatching(/retentionMs/) });
    await expect(
      createCoordinator({ path, definitions: [devSdlc], contextRetention: { pruneIntervalMs: 1.5 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    // A definition never checked (built in code) is checked here: refused before anything is opened.
    await expect(
      createCoordinator({ path, definitions: [{ ...devSdlc, start: 'nowhere' } as never] }),
    ).rejects.toMatchObject({ code: 'WORKFLOW_INVALID', message: expect.stringMatching(/nowhere/) });
    expect(existsSync(path)).toBe(false);
    const db = openDatabase(path);
    cleanups.push(() => {
      db.close();
    });
    const store = new SqliteContextStore({ database: db, pruneIntervalMs: 0 });
    cleanups.push(() => store.close());
    await expect(
      createCoordinator({
        broker: {} as never,
        bus: {} as never,
        db,
        contextStore: store,
        definitions: [devSdlc],
        contextRetention: { retentionMs: HOUR },
      }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringMatching(/contextStore/) });

    const coordinator = await createCoordinator({ path: join(dir, 'default.db'), definitions: [devSdlc] });
    cleanups.push(() => coordinator.close());
    expect((coordinator.contextStore as SqliteContextStore).retentionMs).toBe(DEFAULT_CONTEXT_RETENTION_MS);
  });
});

/** A planner that leaves an output and memory; a builder that suspends (asks the oracle) when told to. */
const planBuildRoles: Record<string, WorkHandler> = {
  planner: ({ headers }) =>
    complete({ parts: [{ kind: 'text', text: `a plan for ${headers.runId}` }], memory: { plan: headers.runId } }),
  builder: ({ message, resume }) => {
    if (resume !== undefined) return complete({ parts: [{ kind: 'text', text: 'built after asking' }] });
    if (text(message.parts).includes('ask')) {
      return suspend({
        ask: { role: 'oracle', message: { role: 'agent', parts: [{ kind: 'text', text: 'which way?' }] } },
        state: { waiting: true },
      });
    }
    return complete({ parts: [{ kind: 'text', text: 'built' }] });
  },
};

function planBuildPools(): CoordinatorOptions['deployments'] {
  return Object.fromEntries(
    Object.entries(planBuildRoles).map(([role, handler]) => [
      role,
      { handler, deployment: WARM, observeIntervalMs: 10, pollWaitMs: 50 },
    ]),
  );
}

describe("the Coordinator forgets an ended run's context after the retention", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** Rows the run left in the Context Engine's tables. */
  const rowsOf = (store: SqliteContextStore, runId: string) => {
    const n = (table: string) =>
      (store.database.prepare(`SELECT count(*) AS n FROM ${table} WHERE run_id = ?`).get(runId) as { n: number }).n;
    return { outputs: n('context_outputs'), memory: n('context_memory'), checkpoints: n('context_checkpoints') };
  };

  it('keeps it within the retention, forgets completed and canceled runs after it, and never a live one', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let offset = 0;
    const coordinator = await createCoordinator({
      path: join(dir, 'switchboard.db'),
      clock: { now: () => Date.now() + offset },
      definitions: [planBuild, oracleDesk],
      contextRetention: { retentionMs: HOUR, pruneIntervalMs: 0 },
      // One run per batch: two ended runs take two batches of one pass.
      forgetRuns: { intervalMs: 20, batch: 1 },
      deployments: planBuildPools(),
    });
    cleanups.push(() => coordinator.close());
    const store = coordinator.contextStore as SqliteContextStore;

    const done = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'quick' });
    const waiting = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'ask the oracle' });
    const canceled = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'ask, then be canceled' });
    expect((await coordinator.settled(done)).state).toBe('completed');
    for (const id of [waiting, canceled]) {
      await until(async () => (await coordinator.getItem(id))?.state === 'suspended', 10_000, `${id} to suspend`);
    }
    await coordinator.cancel(canceled, { by: 'test', reason: 'no longer needed' });
    expect((await coordinator.settled(canceled)).state).toBe('canceled');
    expect(rowsOf(store, done)).toEqual({ outputs: 2, memory: 1, checkpoints: 0 });
    // The canceled run ended while suspended: its checkpoint will never be resumed.
    expect(rowsOf(store, canceled)).toEqual({ outputs: 1, memory: 1, checkpoints: 1 });
    const live = rowsOf(store, waiting);
    expect(live).toEqual({ outputs: 1, memory: 1, checkpoints: 1 });

    // Within the retention (59 minutes after they ended), sweeps run and keep everything.
    offset += 59 * 60 * 1000;
    await sleep(100);
    expect(await coordinator.forgetEndedRuns()).toBe(0);
    expect(rowsOf(store, done)).toEqual({ outputs: 2, memory: 1, checkpoints: 0 });
    expect((await store.hydrate(done)).memory).toEqual({ plan: done });
    expect(await coordinator.tables.readContextForgottenAt(done)).toBeNull();

    // Past it: the periodic sweep forgets both ended runs, by itself.
    offset += 2 * 60 * 1000;
    await until(
      async () =>
        (await coordinator.tables.readContextForgottenAt(done)) !== null &&
        (await coordinator.tables.readContextForgottenAt(canceled)) !== null,
      5000,
      'the ended runs to be forgotten',
    );
    expect(rowsOf(store, done)).toEqual({ outputs: 0, memory: 0, checkpoints: 0 });
    expect(rowsOf(store, canceled)).toEqual({ outputs: 0, memory: 0, checkpoints: 0 });
    expect(await store.hydrate(done)).toEqual({ runId: done, outputs: [], memory: {} });

    // A hop of the ended run comes back after the retention (its completion record is pruned too):
    // it runs again and writes its output anew; its result reaches the Coordinator as a duplicate,
    // and the run is forgotten again.
    await store.pruneExpired();
    const first = (await coordinator.listHops(done))[0]!;
    const headers = {
      taskId: first.id,
      runId: done,
      hop: first.hop,
      attempt: first.attempt,
      idempotencyKey: first.idempotencyKey,
    };
    const again = await store.complete({
      idempotencyKey: first.idempotencyKey,
      runId: done,
      taskId: first.id,
      hop: first.hop,
      role: first.role,
      outcome: 'completed',
      output: { parts: [{ kind: 'text', text: 'planned again' }], artifacts: [] },
      publishes: [],
    });
    expect(again.first).toBe(true);
    expect(rowsOf(store, done).outputs).toBe(1);
    await coordinator.bus.publish(
      '$results',
      {
        kind: 'result',
        headers,
        role: first.role,
        outcome: 'completed',
        parts: [{ kind: 'text', text: 'again' }],
        artifacts: [],
      },
      { idempotencyKey: 'ran-again:result' },
    );
    await until(() => rowsOf(store, done).outputs === 0, 5000, 'the run to be forgotten again');
    await until(
      async () => (await coordinator.tables.readContextForgottenAt(done)) !== null,
      5000,
      'the run to be marked again',
    );
    expect(await coordinator.getItem(done)).toMatchObject({ state: 'completed' });

    // A live run is never forgotten, however old: a year on, its context and checkpoint are all there.
    offset += 365 * 24 * HOUR;
    expect(await coordinator.forgetEndedRuns()).toBe(0);
    await sleep(60);
    expect(rowsOf(store, waiting)).toEqual(live);
    expect(await coordinator.tables.readContextForgottenAt(waiting)).toBeNull();
    // What the Coordinator's own tables say of the ended items stays (tasks, usage, audit read them).
    expect(await coordinator.getItem(done)).toMatchObject({ state: 'completed', hops: 2 });
    expect(await coordinator.listHops(done)).toHaveLength(2);
  });

  it('finds the schedule again after a restart on the same file (the item ended under the first Coordinator)', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    let offset = 0;
    const open = () =>
      createCoordinator({
        path,
        clock: { now: () => Date.now() + offset },
        definitions: [planBuild, oracleDesk],
        contextRetention: { retentionMs: HOUR, pruneIntervalMs: 0 },
        forgetRuns: { intervalMs: 20 },
        deployments: planBuildPools(),
      });
    const first = await open();
    const done = await first.createWorkItem({ workflow: 'plan-build', input: 'quick' });
    expect((await first.settled(done)).state).toBe('completed');
    await first.close();
    await expect(first.forgetEndedRuns()).rejects.toMatchObject({ code: 'COORD_CLOSED' });

    offset += 30 * 60 * 1000;
    const second = await open();
    cleanups.push(() => second.close());
    const store = second.contextStore as SqliteContextStore;
    await sleep(100);
    expect(rowsOf(store, done)).toEqual({ outputs: 2, memory: 1, checkpoints: 0 });

    offset += 31 * 60 * 1000;
    await until(
      async () => (await second.tables.readContextForgottenAt(done)) !== null,
      5000,
      'the restarted Coordinator to forget',
    );
    expect(rowsOf(store, done)).toEqual({ outputs: 0, memory: 0, checkpoints: 0 });
  });

  it('refuses bad forgetRuns options before opening anything', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    for (const forgetRuns of [{ intervalMs: -1 }, { intervalMs: 1.5 }, { batch: 0 }]) {
      await expect(
        createCoordinator({ path: join(dir, 'never.db'), definitions: [devSdlc], forgetRuns }),
      ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringMatching(/forgetRuns/) });
    }
    expect(existsSync(join(dir, 'never.db'))).toBe(false);
  });

  describe.runIf(runRedis)(
    `with the Context Engine on Redis at ${REDIS_URL}${redisUp ? '' : ' (no Redis answers)'}`,
    () => {
      it("deletes the ended run's keys after the retention and keeps a live run's", async () => {
        const dir = tempDir();
        cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
        const path = join(dir, 'switchboard.db');
        const prefix = `sbtest:${randomUUID().slice(0, 8)}`;
        const client = createClient({ url: REDIS_URL });
        client.on('error', () => undefined);
        await client.connect();
        cleanups.push(async () => {
          for await (const keys of client.scanIterator({ MATCH: `{${prefix}}:*`, COUNT: 1000 })) {
            if (keys.length > 0) await client.del(keys);
          }
          await client.close();
        });
        let offset = 0;
        const clock = { now: () => Date.now() + offset };
        const db = openDatabase(path);
        cleanups.push(() => {
          db.close();
        });
        const broker = createBroker({ path, clock });
        cleanups.push(() => broker.close());
        const bus = new SqliteQueue({ database: db, clock, pollIntervalMs: { min: 2, max: 20 } });
        cleanups.push(() => bus.close());
        const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix, retentionMs: HOUR });
        cleanups.push(() => contextStore.close());
        const coordinator = await createCoordinator({
          broker,
          bus,
          db,
          contextStore,
          clock,
          definitions: [planBuild, oracleDesk],
          forgetRuns: { intervalMs: 20 },
          deployments: planBuildPools(),
        });
        cleanups.push(() => coordinator.close());
        const key = (kind: string, id: string) => `{${prefix}}:cx:${kind}:${id}`;

        const done = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'quick' });
        const waiting = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'ask the oracle' });
        expect((await coordinator.settled(done)).state).toBe('completed');
        await until(
          async () => (await coordinator.getItem(waiting))?.state === 'suspended',
          10_000,
          'the second item to suspend',
        );
        expect(await client.lLen(key('o', done))).toBe(2);
        expect(await client.hGetAll(key('m', done))).toEqual({ plan: JSON.stringify(done) });
        const [token] = await client.sMembers(key('k', waiting));
        expect(token).toMatch(/:cx:c:/);

        offset += 59 * 60 * 1000;
        await sleep(100);
        expect(await client.exists([key('o', done), key('m', done)])).toBe(2);

        offset += 2 * 60 * 1000;
        await until(
          async () => (await coordinator.tables.readContextForgottenAt(done)) !== null,
          5000,
          'the ended run to be forgotten',
        );
        expect(await client.exists([key('o', done), key('q', done), key('m', done), key('k', done)])).toBe(0);
        expect((await contextStore.hydrate(done)).outputs).toEqual([]);
        // The live (suspended) run keeps its outputs, memory and checkpoint.
        expect(await client.lLen(key('o', waiting))).toBe(1);
        expect(await client.exists([key('m', waiting), key('k', waiting), token!])).toBe(3);
        expect(await coordinator.tables.readContextForgottenAt(waiting)).toBeNull();
      });
    },
  );
});
