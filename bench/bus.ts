/**
 * `npm run bench:bus`: publish-consume-ack throughput of no-op jobs on the
 * embedded SQLite work bus (durable in one WAL file, synchronous=NORMAL, and
 * for 32 consumers also synchronous=FULL: fsync per group commit) with 1 and
 * 32 concurrent consumers, against BullMQ on the local Redis
 * (127.0.0.1:6379) doing the same no-op jobs in the same run.
 *
 * Each round starts the consumers, then a producer publishes the jobs in
 * batches of 100 while they consume; the time runs from the first publish to
 * the last ack. A last row runs the same jobs through the worker harness
 * (Context Engine and results queue included), for information. Figures are
 * medians of the rounds. Progress goes to stderr,
 * the table to stdout.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue, Worker } from 'bullmq';
import { SqliteQueue } from '../src/bus/sqlite/queue.js';
import { createWorker } from '../src/actors/worker/worker.js';
import type { PublishRequest } from '../src/bus/work-queue.js';
import { SqliteContextStore } from '../src/persistence/context/sqlite-store.js';
import { type Durability, openDatabase } from '../src/persistence/kernel/database.js';
import { RESULTS_ROLE, type WorkEnvelope } from '../src/protocol/work-envelope.js';

const ROUNDS = 3;
const BATCH = 100;
const REDIS = { host: '127.0.0.1', port: 6379 };
const PREFIX = `sbbench${process.pid}`;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function envelope(i: number): WorkEnvelope {
  return {
    kind: 'work',
    headers: { taskId: `t${i}`, runId: `run-${i}`, hop: 0, attempt: 1, idempotencyKey: `k${i}` },
    message: { parts: [{ kind: 'data', data: { i } }] },
  };
}

async function sqliteRound(
  dir: string,
  round: number,
  jobs: number,
  consumers: number,
  durability: Durability,
): Promise<number> {
  const path = join(dir, `bus-${consumers}-${durability}-${round}.db`);
  const queue = new SqliteQueue({ database: path, durability });
  const role = 'noop';
  let acked = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const controller = new AbortController();
  setMaxListeners(consumers + 8, controller.signal);
  const loop = async (c: number) => {
    while (!controller.signal.aborted) {
      const got = await queue.consume(role, {
        consumer: `c${c}`,
        visibilityTimeoutMs: 30_000,
        max: 1,
        waitMs: 1000,
        signal: controller.signal,
      });
      for (const d of got) {
        if (await queue.ack(d)) acked++;
      }
      if (acked >= jobs) finish();
    }
  };
  const loops = Array.from({ length: consumers }, (_, c) => loop(c));
  const started = performance.now();
  for (let i = 0; i < jobs; i += BATCH) {
    const batch: PublishRequest[] = [];
    for (let j = i; j < Math.min(jobs, i + BATCH); j++) {
      batch.push({ role, envelope: envelope(j), idempotencyKey: `k${j}` });
    }
    await queue.publishMany(batch);
  }
  await finished;
  const elapsed = performance.now() - started;
  controller.abort();
  await Promise.all(loops);
  const stats = await queue.stats(role);
  if (stats.depth !== 0 || stats.inFlight !== 0) throw new Error(`sqlite round left work: ${JSON.stringify(stats)}`);
  await queue.close();
  const size = statSync(path).size;
  log(
    `  sqlite ${durability} c=${consumers} round ${round + 1}: ${jobs} jobs in ${elapsed.toFixed(0)} ms (file ${(size / 1e6).toFixed(1)} MB)`,
  );
  return (jobs / elapsed) * 1000;
}

async function bullRound(round: number, jobs: number, concurrency: number): Promise<number> {
  const name = `noop-${concurrency}-${round}`;
  const queue = new Queue(name, { connection: REDIS, prefix: PREFIX });
  await queue.obliterate({ force: true });
  let acked = 0;
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const worker = new Worker(
    name,
    async () => {
      return;
    },
    { connection: REDIS, prefix: PREFIX, concurrency, autorun: false },
  );
  worker.on('completed', () => {
    if (++acked >= jobs) finish();
  });
  await worker.waitUntilReady();
  void worker.run();
  const started = performance.now();
  for (let i = 0; i < jobs; i += BATCH) {
    const batch = [];
    for (let j = i; j < Math.min(jobs, i + BATCH); j++) {
      batch.push({ name: 'noop', data: { i: j }, opts: { jobId: `k${j}`, removeOnComplete: true } });
    }
    await queue.addBulk(batch);
  }
  await finished;
  const elapsed = performance.now() - started;
  await worker.close();
  await queue.obliterate({ force: true });
  await queue.close();
  log(`  bullmq c=${concurrency} round ${round + 1}: ${jobs} jobs in ${elapsed.toFixed(0)} ms`);
  return (jobs / elapsed) * 1000;
}

/**
 * The same no-op work through the worker harness: each hop is leased,
 * checked for a completion, its run context hydrated, its completion recorded
 * in the Context Engine, its result published on `$results`, acked; a
 * Coordinator-side loop consumes and acks the results.
 */
async function harnessRound(dir: string, round: number, hops: number, concurrency: number): Promise<number> {
  const path = join(dir, `harness-${round}.db`);
  const db = openDatabase(path);
  const queue = new SqliteQueue({ database: db });
  const store = new SqliteContextStore({ database: db });
  const worker = createWorker({
    role: 'noop',
    bus: queue,
    contextStore: store,
    concurrency,
    handler: () => ({ parts: [{ kind: 'text', text: 'ok' }] }),
  });
  const started = performance.now();
  const producing = (async () => {
    for (let i = 0; i < hops; i += BATCH) {
      const batch: PublishRequest[] = [];
      for (let j = i; j < Math.min(hops, i + BATCH); j++) {
        batch.push({ role: 'noop', envelope: envelope(j), idempotencyKey: `k${j}` });
      }
      await queue.publishMany(batch);
    }
  })();
  let results = 0;
  while (results < hops) {
    const got = await queue.consume(RESULTS_ROLE, {
      consumer: 'coordinator',
      visibilityTimeoutMs: 30_000,
      max: 100,
      waitMs: 1000,
    });
    const acked = await queue.ackMany(got);
    results += acked.filter(Boolean).length;
  }
  const elapsed = performance.now() - started;
  await producing;
  await worker.stop();
  await queue.close();
  await store.close();
  db.close();
  log(`  harness c=${concurrency} round ${round + 1}: ${hops} hops in ${elapsed.toFixed(0)} ms`);
  return (hops / elapsed) * 1000;
}

interface Row {
  label: string;
  sqlite: number;
  bullmq: number;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-bus-'));
  const rows: Row[] = [];
  try {
    for (const [consumers, sqliteJobs, bullJobs, fullJobs] of [
      [1, 6_000, 2_000, 0],
      [32, 20_000, 10_000, 12_000],
    ] as const) {
      log(`consumers=${consumers}`);
      const sqlite: number[] = [];
      const full: number[] = [];
      const bull: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        sqlite.push(await sqliteRound(dir, r, sqliteJobs, consumers, 'normal'));
        if (fullJobs > 0) full.push(await sqliteRound(dir, r, fullJobs, consumers, 'full'));
        bull.push(await bullRound(r, bullJobs, consumers));
      }
      const bullmq = median(bull);
      rows.push({ label: `${consumers}`, sqlite: median(sqlite), bullmq });
      if (full.length > 0) rows.push({ label: `${consumers} (FULL)`, sqlite: median(full), bullmq });
      if (consumers === 32) {
        const harness: number[] = [];
        for (let r = 0; r < ROUNDS; r++) harness.push(await harnessRound(dir, r, 5_000, consumers));
        rows.push({ label: '32 (worker harness)', sqlite: median(harness), bullmq });
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    'publish-consume-ack of no-op jobs (jobs/s, median of 3 rounds; sqlite synchronous=NORMAL unless FULL)',
    '                  consumers | sqlite bus | bullmq 6.7 (redis) | sqlite / bullmq',
    '--------------------------- | ---------- | ------------------ | ---------------',
    ...rows.map(
      (r) =>
        `${r.label.padStart(27)} | ${r.sqlite.toFixed(0).padStart(10)} | ${r.bullmq.toFixed(0).padStart(18)} | ${(r.sqlite / r.bullmq).toFixed(2).padStart(14)}x`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  log(`bench failed: ${(error as Error)?.stack ?? String(error)}`);
  process.exitCode = 1;
});
