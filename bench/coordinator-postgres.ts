/**
 * `npm run bench:coordinator:postgres`: the Coordinator on PostgreSQL (its
 * tables and audit; the Redis bus and Context Engine; pools in process),
 * no-op handlers on the 4-stage linear workflow of bench:coordinator,
 * against raw PostgreSQL transactions in the same database in the same run.
 *
 * - Commit latency: each `PostgresCoordinatorStore.commit` from the call to
 *   its Promise settling (BEGIN, the rows, the audit rows, COMMIT: durable),
 *   with how many results' changes it carried. Median and p99, while items
 *   run in waves of 50 (results arrive together and share commits) and one
 *   item at a time (each result alone).
 * - The store alone, same run, same database: `commit` of one result's
 *   changes (an item and run update, a hop update, a usage row, an outbox
 *   row, 3 audit rows) called in a loop with nothing else in the process:
 *   what the store costs without the Coordinator's event loop around it.
 * - Reference, same run, same database: a bare transaction of as many
 *   single-row INSERTs as the Coordinator's commit of one result writes
 *   (its rows plus its audit rows), on one connection, durable.
 * - Work items per second end to end (Redis bus, workers, PostgreSQL,
 *   the broker mirror in memory).
 *
 * PostgreSQL at PG_URL (default postgres://postgres@127.0.0.1:5432/postgres;
 * a database of its own, dropped at the end), Redis at REDIS_URL (a key
 * prefix of its own, deleted at the end). Progress to stderr, figures to stdout.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createClient } from 'redis';
import { type RoleDeployment, createCoordinator } from '../src/actors/coordinator/coordinator.js';
import { complete } from '../src/actors/worker/worker.js';
import { createRedisQueue } from '../src/bus/redis/queue.js';
import { PostgresAuditLog } from '../src/persistence/audit/postgres-chain.js';
import { createRedisContextStore } from '../src/persistence/context/redis-store.js';
import { PostgresCoordinatorStore } from '../src/persistence/coordinator/postgres-store.js';
import { openPgPool } from '../src/persistence/kernel/postgres.js';
import { ROLES, definition, progress } from './four-stage-workflow.js';
import { type CommitBatch, type ItemChanges, dispatchedHop } from '../src/workflow/records.js';

const PG_URL = process.env.PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ITEMS = Number(process.env.BENCH_ITEMS ?? 200);
const WAVE = 50;
const SEQUENTIAL_ITEMS = Number(process.env.BENCH_SEQUENTIAL_ITEMS ?? 30);

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const ms = (n: number) => n.toFixed(2);

/** One result's changes to an item of the store-alone phase (created: its first commit). */
function resultChanges(id: string, created: boolean): ItemChanges {
  const hop = dispatchedHop({
    id: `${id}-hop`,
    itemId: id,
    seq: 1,
    hop: 1,
    attempt: 1,
    kind: 'stage',
    stage: 'plan',
    role: 'plan',
    idempotencyKey: `${id}/1/1`,
    continuation: null,
    askedBy: null,
    dispatchedAt: 1,
    activeSince: 1,
  });
  const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, elapsedMs: 1 };
  return {
    itemId: id,
    item: {
      id,
      taskId: null,
      workflow: { id: 'bench-4', version: 1 },
      state: 'running',
      stage: 'plan',
      hop: 1,
      hops: 1,
      input: [{ kind: 'text', text: 'item' }],
      budget: null,
      attributes: null,
      usage,
      failure: null,
      approval: null,
      createdAt: 1,
      updatedAt: 2,
      finishedAt: null,
      output: null,
      mirrored: false,
    },
    created,
    run: { machineVersion: 1, snapshot: { value: 'running', context: { runId: id, pad: 'x'.repeat(400) } } },
    hops: [{ hop: created ? hop : { ...hop, state: 'completed', finishedAt: 2, usage }, created }],
    usage: created ? [] : [{ hopId: hop.id, itemId: id, agent: 'plan', model: 'noop', ...usage, at: 2 }],
    outbox: [{ kind: 'start', body: { role: 'build', item: id } }],
    audit: ['governance', 'result', 'cost'].map((kind) => ({
      kind: kind as 'result',
      itemId: id,
      actor: 'coordinator',
      data: { hopId: hop.id, hop: 1 },
    })),
    ended: false,
  };
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function run(): Promise<void> {
  const name = `sb_bench_coord_${randomBytes(6).toString('hex')}`;
  const prefix = `bench-pg-${randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  const dbUrl = url.toString();
  const bus = await createRedisQueue({ url: REDIS_URL, prefix });
  const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix });
  const deployments: Record<string, RoleDeployment> = {};
  for (const role of ROLES) {
    deployments[role] = {
      handler: () => complete({ usage: { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, model: 'noop' } }),
      deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 60_000, concurrency: 16 },
      pollWaitMs: 200,
      observeIntervalMs: 100,
    };
  }
  const coordinator = await createCoordinator({
    postgres: { url: dbUrl },
    bus,
    contextStore,
    definitions: [definition],
    deployments,
    maxHops: 10,
  });
  // Every commit timed from its call to its settling, with the results' changes it carried.
  const store = coordinator.tables as PostgresCoordinatorStore;
  const commit = store.commit.bind(store);
  let samples: { ms: number; changes: number }[] | undefined;
  store.commit = async (batch: CommitBatch) => {
    const t = performance.now();
    const out = await commit(batch);
    samples?.push({ ms: performance.now() - t, changes: batch.changes.length });
    return out;
  };
  let closed = false;
  try {
    const wave = async (n: number) => {
      const ids = await Promise.all(
        Array.from({ length: n }, (_, i) => coordinator.createWorkItem({ workflow: 'bench-4', input: `item ${i}` })),
      );
      const finals = await Promise.all(ids.map((id) => coordinator.settled(id)));
      for (const f of finals) if (f.state !== 'completed') throw new Error(`item ${f.id} ended ${f.state}`);
    };
    progress(`warm-up: ${WAVE} items`);
    await wave(WAVE);
    await coordinator.mirrored();

    progress(`measuring: ${ITEMS} items of 4 hops, in waves of ${WAVE}`);
    const waves: { ms: number; changes: number }[] = [];
    samples = waves;
    const groupsBefore = { ...store.groups };
    const started = performance.now();
    for (let done = 0; done < ITEMS; done += WAVE) {
      await wave(Math.min(WAVE, ITEMS - done));
      progress(`  ${Math.min(done + WAVE, ITEMS)} items`);
    }
    const seconds = (performance.now() - started) / 1000;
    samples = undefined;
    const transactions = store.groups.transactions - groupsBefore.transactions;
    const batchesIn = store.groups.batches - groupsBefore.batches;
    await coordinator.mirrored();

    progress(`sequential: ${SEQUENTIAL_ITEMS} items one at a time`);
    const alone: { ms: number; changes: number }[] = [];
    samples = alone;
    for (let i = 0; i < SEQUENTIAL_ITEMS; i++) await wave(1);
    samples = undefined;

    const auditRows = (await coordinator.postgresAudit!.head()).seq;
    const results = (ITEMS + WAVE + SEQUENTIAL_ITEMS) * ROLES.length;
    // A result's commit: its audit rows, the hop row updated, the next hop's row, the item, a usage row, an outbox row.
    const rowsPerResult = Math.round(auditRows / results) + 5;
    const verified = await coordinator.verifyAudit();
    await coordinator.close();
    closed = true;

    progress('the store alone: one result per commit, nothing else running');
    const pool = await openPgPool(dbUrl);
    const auditAlone = await PostgresAuditLog.open(pool);
    const storeAlone = await PostgresCoordinatorStore.open(pool, {
      audit: { append: (tx, entries) => auditAlone.appendInTransaction(tx, entries) },
    });
    const storeOnly: number[] = [];
    for (let i = 0; i < 200; i++) {
      await storeAlone.commit({ changes: [resultChanges(`alone-${i}`, true)], deleteOutbox: [] });
      const t = performance.now();
      await storeAlone.commit({ changes: [resultChanges(`alone-${i}`, false)], deleteOutbox: [] });
      storeOnly.push(performance.now() - t);
    }
    await pool.end();

    progress(`reference: bare transactions of ${rowsPerResult} single-row INSERTs`);
    const ref = new pg.Client({ connectionString: dbUrl });
    await ref.connect();
    await ref.query('CREATE TABLE bench_reference (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)');
    const row = 'x'.repeat(300);
    const reference: number[] = [];
    for (let i = 0; i < Math.max(200, alone.length); i++) {
      const t = performance.now();
      await ref.query('BEGIN');
      for (let r = 0; r < rowsPerResult; r++) {
        await ref.query({ name: 'ref', text: 'INSERT INTO bench_reference (body) VALUES ($1)', values: [row] });
      }
      await ref.query('COMMIT');
      reference.push(performance.now() - t);
    }
    await ref.end();

    const waveResults = waves.filter((s) => s.changes > 0);
    const aloneResults = alone.filter((s) => s.changes === 1);
    const refMedian = quantile(reference, 0.5);
    const aloneMedian = quantile(
      aloneResults.map((s) => s.ms),
      0.5,
    );
    const lines = [
      `bench:coordinator:postgres: ${ITEMS} work items x ${ROLES.length} hops (no-op handlers), tables and audit in PostgreSQL, Redis bus and Context Engine, pools in process`,
      `  commit latency, items in waves of ${WAVE}: median ${ms(
        quantile(
          waveResults.map((s) => s.ms),
          0.5,
        ),
      )} ms, p99 ${ms(
        quantile(
          waveResults.map((s) => s.ms),
          0.99,
        ),
      )} ms (${waveResults.length} commits for ${ITEMS} creations and ${ITEMS * ROLES.length} results: ${(
        waveResults.reduce((n, s) => n + s.changes, 0) / Math.max(1, waveResults.length)
      ).toFixed(1)} items' changes per commit on average, at most ${Math.max(...waveResults.map((s) => s.changes))}; ` +
        `${transactions} store transactions for ${batchesIn} commit calls)`,
      `  commit latency, one item at a time (one result per commit): median ${ms(aloneMedian)} ms, p99 ${ms(
        quantile(
          aloneResults.map((s) => s.ms),
          0.99,
        ),
      )} ms (${aloneResults.length} commits)`,
      `  reference, bare transaction of ${rowsPerResult} single-row INSERTs on one connection, same database: median ${ms(refMedian)} ms, p99 ${ms(quantile(reference, 0.99))} ms`,
      `  the store alone, one result's changes per commit (nothing else in the process): median ${ms(quantile(storeOnly, 0.5))} ms, p99 ${ms(quantile(storeOnly, 0.99))} ms (${storeOnly.length} commits)`,
      `  ratio one-result commit in the Coordinator / bare transaction (median): ${(aloneMedian / refMedian).toFixed(2)}; the store alone / bare transaction: ${(quantile(storeOnly, 0.5) / refMedian).toFixed(2)}`,
      `  throughput: ${(ITEMS / seconds).toFixed(1)} work items/s, ${((ITEMS * ROLES.length) / seconds).toFixed(0)} hops/s end to end`,
      `  audit: ${auditRows} rows in PostgreSQL, chain ${verified.ok ? 'verified' : 'BROKEN'}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    if (!closed) await coordinator.close().catch(() => undefined);
    await bus.close().catch(() => undefined);
    await contextStore.close().catch(() => undefined);
    await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    for await (const keys of client.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.del(keys);
    }
    await client.close();
  }
}

await run();
