/**
 * `npm run bench:disk`: what the broker's file weighs per task, and what a
 * prune costs the calls made while it runs.
 *
 * 1. Bytes per task: N tasks (send, working, completed; 200-character texts
 *    from the requester and in the worker's answer) in the broker's SQLite
 *    file, against the same work stored by `@a2a-js/sdk`'s own
 *    `DatabaseTaskStore` on SQLite (Kysely's SQLite dialect over
 *    better-sqlite3, its table made by the SDK's migrator), in the same run:
 *    one save per state, submitted, working, completed. Bytes are the file's used pages
 *    (page_count - freelist_count, times page_size) after a checkpoint.
 *    Target: ours below theirs.
 * 2. A prune of P ended tasks (default 100,000): how long it takes, and the
 *    p99 latency of the calls a live pair makes one after the other while
 *    it runs, against the p99 of the same calls without a prune, measured
 *    just before. Target: under 2x.
 *
 * Options: --tasks N (default 10,000), --prune P (default 100,000; 0 skips).
 * Progress on stderr, figures on stdout.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Task as SdkTask } from '@a2a-js/sdk';
import { ServerCallContext } from '@a2a-js/sdk/server';
import { DatabaseTaskStore } from '@a2a-js/sdk/server/database';
import { Kysely, SqliteDialect } from 'kysely';
import Database from 'better-sqlite3';
import { type Broker, createBroker } from '../src/actors/broker/broker.js';

const TASKS_PER_PAIR = 100;
/** The SDK's own migrator (its `a2a-db` command). */
const SDK_MIGRATOR = join(dirname(createRequire(import.meta.url).resolve('@a2a-js/sdk')), 'cli', 'a2a_db.js');
const TEXT = 'x'.repeat(200);

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
}

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] as number;
}

function usedBytes(path: string): { used: number; file: number } {
  const db = new Database(path);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const pageSize = db.pragma('page_size', { simple: true }) as number;
    const pages = db.pragma('page_count', { simple: true }) as number;
    const free = db.pragma('freelist_count', { simple: true }) as number;
    return { used: (pages - free) * pageSize, file: pages * pageSize };
  } finally {
    db.close();
  }
}

/**
 * Bytes per task of each table with its indexes, from the `dbstat` virtual
 * table (whole pages; `index` the pages of its indexes, `payload` what rows
 * and index entries use of both), largest first.
 */
function bytesByTable(path: string, n: number): string {
  const db = new Database(path, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT COALESCE(m.tbl_name, d.name) AS tbl, SUM(CASE WHEN m.type = 'index' THEN d.pgsize ELSE 0 END) AS idx,
           SUM(d.pgsize) AS bytes, SUM(d.payload) AS payload
         FROM dbstat d LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY tbl ORDER BY bytes DESC`,
      )
      .all() as { tbl: string; idx: number; bytes: number; payload: number }[];
    return rows
      .filter((r) => r.bytes / n >= 1)
      .map(
        (r) =>
          `  ${r.tbl}: ${Math.round(r.bytes / n)} B/task (indexes ${Math.round(r.idx / n)}, payload ${Math.round(r.payload / n)})`,
      )
      .join('\n');
  } finally {
    db.close();
  }
}

function text(t: string) {
  return { parts: [{ kind: 'text' as const, text: t }] };
}

/** N tasks through the broker, between pairs of parties of their own (the bounds per context and registration). */
async function runOurs(broker: Broker, n: number, clock?: { advance(): void }): Promise<void> {
  for (let pair = 0; pair * TASKS_PER_PAIR < n; pair++) {
    const req = await broker.register({ name: 'req', contextId: `ctx-${pair}` });
    const wrk = await broker.register({ name: 'wrk', contextId: `w-${pair}` });
    const count = Math.min(TASKS_PER_PAIR, n - pair * TASKS_PER_PAIR);
    const sent = await Promise.all(
      Array.from({ length: count }, () => broker.send({ token: req.token, to: wrk.agentId, message: text(TEXT) })),
    );
    await Promise.all(sent.map(({ task }) => broker.setStatus({ token: wrk.token, id: task.id, state: 'working' })));
    await Promise.all(
      sent.map(({ task }) =>
        broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text(TEXT) }),
      ),
    );
    await broker.deregister({ token: req.token });
    await broker.deregister({ token: wrk.token });
    clock?.advance();
    if (pair % 100 === 99) log(`  ${(pair + 1) * TASKS_PER_PAIR} tasks`);
  }
}

/**
 * The same work stored by `@a2a-js/sdk`'s own `DatabaseTaskStore` on SQLite
 * (Kysely's SQLite dialect over better-sqlite3, the file made by the SDK's
 * own migrator, `a2a-db upgrade`): three saves per task, submitted, working,
 * completed, as the SDK's request handler makes them.
 */
async function runTheirs(path: string, n: number): Promise<void> {
  const migrated = spawnSync(process.execPath, [SDK_MIGRATOR, 'upgrade', '--url', `sqlite:${path}`], {
    encoding: 'utf8',
  });
  if (migrated.status !== 0) throw new Error(`a2a-db upgrade failed: ${migrated.stderr}`);
  const database = new Database(path);
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = NORMAL');
  const db = new Kysely<unknown>({ dialect: new SqliteDialect({ database }) });
  const store = new DatabaseTaskStore(db);
  const context = new ServerCallContext();
  const save = (json: Record<string, unknown>) => store.save(SdkTask.fromJSON(json), context);
  for (let i = 0; i < n; i++) {
    const id = crypto.randomUUID();
    const contextId = crypto.randomUUID();
    const now = () => new Date().toISOString();
    const user = { messageId: crypto.randomUUID(), contextId, taskId: id, role: 'ROLE_USER', parts: [{ text: TEXT }] };
    const answer = {
      messageId: crypto.randomUUID(),
      contextId,
      taskId: id,
      role: 'ROLE_AGENT',
      parts: [{ text: TEXT }],
    };
    await save({ id, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() }, history: [user] });
    await save({ id, contextId, status: { state: 'TASK_STATE_WORKING', timestamp: now() }, history: [user] });
    await save({
      id,
      contextId,
      status: { state: 'TASK_STATE_COMPLETED', message: answer, timestamp: now() },
      history: [user],
    });
    if (i % 10_000 === 9_999) log(`  ${i + 1} tasks (@a2a-js/sdk)`);
  }
  await db.destroy();
}

/**
 * Calls of a live pair, one after the other, until `stop()`: a read of the
 * task, a resubscription (a write: an event to the log) and a list of agents,
 * in turn; each call's latency in ms.
 */
function callLoop(broker: Broker, pair: { req: { token: string }; taskId: string }) {
  const latencies: number[] = [];
  let stopped = false;
  const done = (async () => {
    for (let i = 0; !stopped; i++) {
      const t0 = performance.now();
      if (i % 3 === 0) await broker.getTask({ token: pair.req.token, id: pair.taskId });
      else if (i % 3 === 1) await broker.resubscribe({ token: pair.req.token, id: pair.taskId });
      else await broker.listAgents({ token: pair.req.token });
      latencies.push(performance.now() - t0);
    }
  })();
  return {
    latencies,
    stop: async () => {
      stopped = true;
      await done;
    },
  };
}

async function main(): Promise<void> {
  const n = arg('tasks', 10_000);
  const pruneCount = arg('prune', 100_000);
  const dir = mkdtempSync(join(tmpdir(), 'sb-bench-disk-'));
  try {
    log(`bench:disk: ${n} tasks, prune of ${pruneCount}; ${cpus().length} cores, load ${loadavg()[0]?.toFixed(1)}`);
    const ours = join(dir, 'ours.db');
    const broker = createBroker({ path: ours });
    await runOurs(broker, n);
    await broker.close();
    const oursBytes = usedBytes(ours);
    const theirs = join(dir, 'theirs.db');
    await runTheirs(theirs, n);
    const theirsBytes = usedBytes(theirs);
    const per = (b: number) => Math.round(b / n);
    process.stdout.write(
      `bytes per task (${n} tasks): switchboard ${per(oursBytes.used)} (file ${per(oursBytes.file)}), ` +
        `@a2a-js/sdk DatabaseTaskStore ${per(theirsBytes.used)} (file ${per(theirsBytes.file)}); ` +
        `ratio ${(oursBytes.used / theirsBytes.used).toFixed(2)}\n`,
    );
    process.stdout.write(`switchboard by table:\n${bytesByTable(ours, n)}\n`);
    process.stdout.write(`@a2a-js/sdk DatabaseTaskStore by table:\n${bytesByTable(theirs, n)}\n`);
    if (pruneCount > 0) await benchPrune(dir, pruneCount);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function benchPrune(dir: string, count: number): Promise<void> {
  const path = join(dir, 'prune.db');
  let t = Date.UTC(2026, 0, 1);
  const clock = { now: () => t, advance: () => (t += 1) };
  const broker = createBroker({ path, clock });
  log(`building ${count} ended tasks...`);
  await runOurs(broker, count, clock);
  const req = await broker.register({ name: 'live-req', contextId: 'live' });
  const wrk = await broker.register({ name: 'live-wrk', contextId: 'live' });
  const { task } = await broker.send({ token: req.token, to: wrk.agentId, message: text('live') });
  const pair = { req, taskId: task.id };
  t += 86_400_000;
  const endedBefore = new Date(t - 3_600_000).toISOString();
  // The reference: the same calls, no prune, for as long as the prune will take (measured after).
  const warm = callLoop(broker, pair);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  await warm.stop();
  const baseline = callLoop(broker, pair);
  await new Promise((resolve) => setTimeout(resolve, 3000));
  await baseline.stop();
  const during = callLoop(broker, pair);
  const t0 = performance.now();
  // A prune among steady calls takes 1% of the broker's time: minutes; say how it goes.
  const reader = new Database(path, { readonly: true });
  const tasksLeft = reader.prepare('SELECT count(*) AS n FROM a2a_tasks');
  const progress = setInterval(() => {
    const { n } = tasksLeft.get() as { n: number };
    log(
      `  pruning: ${Math.round((performance.now() - t0) / 1000)} s, ${n} tasks left, ${during.latencies.length} calls alongside`,
    );
  }, 30_000);
  const result = await broker.pruneTasks({ endedBefore }).finally(() => {
    clearInterval(progress);
    reader.close();
  });
  const seconds = (performance.now() - t0) / 1000;
  await during.stop();
  await broker.close();
  const p99Base = quantile(baseline.latencies, 0.99);
  const p99During = quantile(during.latencies, 0.99);
  process.stdout.write(
    `prune of ${result.removed.tasks} ended tasks: ${seconds.toFixed(1)} s in ${result.batches} batches ` +
      `(${Math.round(result.removed.tasks / seconds)} tasks/s), ${result.freedPages} pages given back; ` +
      `calls alongside: p99 ${p99During.toFixed(3)} ms (${during.latencies.length} calls, median ${quantile(during.latencies, 0.5).toFixed(3)} ms) ` +
      `vs ${p99Base.toFixed(3)} ms without a prune (${baseline.latencies.length} calls, median ${quantile(baseline.latencies, 0.5).toFixed(3)} ms); ` +
      `ratio ${(p99During / p99Base).toFixed(2)}\n`,
  );
}

await main();
