/**
 * `npm run bench:disk`: what the broker's file weighs per task, and what a
 * prune costs the calls made while it runs.
 *
 * 1. Bytes per task: N tasks (send, working, completed; 200-character texts
 *    from the requester and in the worker's answer) in the broker's SQLite
 *    file, against the same work stored the way `@a2a-js/sdk`'s
 *    `DatabaseTaskStore` stores it on SQLite, in the same run. That store
 *    runs on Kysely, which is not installed here (nor its SQLite dialect):
 *    its table, indexes and rows are reproduced exactly instead, with
 *    better-sqlite3 (the migration's DDL for the sqlite dialect, the row of
 *    its `toTaskRow` built with the SDK's own `Task` codec, one upsert per
 *    save: submitted, working, completed). Bytes are the file's used pages
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
import { join } from 'node:path';
import { Task as SdkTask } from '@a2a-js/sdk';
import Database from 'better-sqlite3';
import { type Broker, createBroker } from '../src/actors/broker/broker.js';

const TASKS_PER_PAIR = 100;
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

/** The DDL of `@a2a-js/sdk`'s task store migration for the sqlite dialect (its `tasks` table and two indexes). */
const SDK_TASKS_DDL = `
  CREATE TABLE tasks (
    tenant varchar(255) collate binary not null,
    owner varchar(255) collate binary not null,
    id varchar(36) collate binary not null,
    context_id varchar(36) collate binary not null,
    status_last_updated bigint not null,
    status_state varchar(255) collate binary,
    status text, artifacts text, history text, metadata text,
    protocol_version varchar(255),
    constraint tasks_pkey primary key (tenant, owner, id)
  );
  CREATE INDEX tasks_scope_updated_idx ON tasks (tenant, owner, status_last_updated, id);
  CREATE INDEX tasks_scope_context_updated_idx ON tasks (tenant, owner, context_id, status_last_updated, id);
`;

/** The same work saved the way `DatabaseTaskStore.save` saves it: one upsert of the task's row per save. */
function runTheirs(path: string, n: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(SDK_TASKS_DDL);
  const upsert = db.prepare(
    `INSERT INTO tasks (tenant, owner, id, context_id, status_last_updated, status_state, status, artifacts, history, metadata, protocol_version)
     VALUES (@tenant, @owner, @id, @context_id, @status_last_updated, @status_state, @status, @artifacts, @history, @metadata, @protocol_version)
     ON CONFLICT (tenant, owner, id) DO UPDATE SET context_id = excluded.context_id,
       status_last_updated = excluded.status_last_updated, status_state = excluded.status_state, status = excluded.status,
       artifacts = excluded.artifacts, history = excluded.history, metadata = excluded.metadata,
       protocol_version = excluded.protocol_version`,
  );
  const encode = (value: unknown) => (value === undefined ? null : JSON.stringify(value));
  const save = (json: Record<string, unknown>) => {
    // `toTaskRow`: the SDK's codec, then each part as JSON text.
    const payload = SdkTask.toJSON(SdkTask.fromJSON(json)) as Record<string, unknown> & {
      status?: { state?: string; timestamp?: string };
    };
    upsert.run({
      tenant: '',
      owner: '',
      id: json.id,
      context_id: json.contextId,
      status_last_updated: Date.parse(payload.status?.timestamp ?? '') || 0,
      status_state: payload.status?.state ?? null,
      status: encode(payload.status),
      artifacts: encode(payload.artifacts),
      history: encode(payload.history),
      metadata: encode(payload.metadata),
      protocol_version: '1.0',
    });
  };
  const run = db.transaction((from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const id = crypto.randomUUID();
      const contextId = crypto.randomUUID();
      const now = () => new Date().toISOString();
      const user = {
        messageId: crypto.randomUUID(),
        contextId,
        taskId: id,
        role: 'ROLE_USER',
        parts: [{ text: TEXT }],
      };
      const answer = {
        messageId: crypto.randomUUID(),
        contextId,
        taskId: id,
        role: 'ROLE_AGENT',
        parts: [{ text: TEXT }],
      };
      save({ id, contextId, status: { state: 'TASK_STATE_SUBMITTED', timestamp: now() }, history: [user] });
      save({ id, contextId, status: { state: 'TASK_STATE_WORKING', timestamp: now() }, history: [user] });
      save({
        id,
        contextId,
        status: { state: 'TASK_STATE_COMPLETED', message: answer, timestamp: now() },
        history: [user],
      });
    }
  });
  // As many saves per transaction as the broker's group commit carries (the bytes do not depend on it).
  for (let i = 0; i < n; i += TASKS_PER_PAIR) run(i, Math.min(n, i + TASKS_PER_PAIR));
  db.close();
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
    runTheirs(theirs, n);
    const theirsBytes = usedBytes(theirs);
    const per = (b: number) => Math.round(b / n);
    process.stdout.write(
      `bytes per task (${n} tasks): switchboard ${per(oursBytes.used)} (file ${per(oursBytes.file)}), ` +
        `@a2a-js/sdk DatabaseTaskStore layout ${per(theirsBytes.used)} (file ${per(theirsBytes.file)}); ` +
        `ratio ${(oursBytes.used / theirsBytes.used).toFixed(2)}\n`,
    );
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
  const result = await broker.pruneTasks({ endedBefore });
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
