/**
 * `npm run bench:coordinator:postgres`: hops per second and µs per hop of
 * three engines in the same run on the same PostgreSQL server, each in a
 * database of its own (created for the run, dropped at the end), on the
 * four-stage dev SDLC workflow with no-op steps:
 *
 * - Coordinator: `createCoordinator({ postgres })` with the Redis bus and
 *   Context Engine, the role pools in process with no-op handlers (each
 *   taking as many hops at once as there are items in flight), no
 *   broker, and the leader lease fencing every commit (the way
 *   `switchboard coordinator --db postgres://...` runs it: the A2A view is
 *   derived from the rows; an item's time runs from `createWorkItem` to
 *   `settled`);
 * - Coordinator (workers apart): the same Coordinator without pools, its
 *   workers in a process of their own, as deployed
 *   (`switchboard worker --role architect --role coding --role testing
 *   --role devops --handler bench/noop-handler.mjs --concurrency 50` from
 *   `dist`, so the npm script builds first); its CPU per hop adds the worker
 *   process's (`/proc/PID/stat`);
 * - raw: a loop of plain transactions on a pool of 4 connections writing
 *   the rows a Coordinator commit writes, into the Coordinator's own tables
 *   (one transaction for the item's creation, one per hop: the hop's row
 *   updated and the next one's inserted, the item updated, a usage row, the
 *   published outbox row deleted and the next one inserted, 4 audit rows;
 *   one statement per row, about 10 a hop; the audit rows are hashed but
 *   there is no head row to lock);
 * - DBOS: a DBOS Transact workflow of four steps (one per stage) on its
 *   defaults, its system database in the engine's database.
 *
 * Each engine runs ALONE items one at a time, then SHARED items with 50 in
 * flight (results arriving together share commits), in REPS repetitions
 * with the engines interleaved (the first engine rotates). Printed: medians
 * (and ranges) of hops/s, µs per hop and the bench process's CPU per hop
 * (`process.cpuUsage`, workers and clients in process included), the
 * ratios Coordinator/raw and Coordinator/DBOS, the rows and transactions
 * each engine wrote per hop (the server's statistics), how often the
 * Coordinator's store grouped commits, and the load average.
 *
 * PostgreSQL at PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * Redis at REDIS_URL (a key prefix of its own, deleted at the end).
 * BENCH_REPS, BENCH_ALONE_ITEMS, BENCH_SHARED_ITEMS change the sizes; BENCH_ELU=1
 * prints each phase's event-loop utilization (how busy the bench process's
 * main thread was) to stderr.
 * Progress to stderr, figures to stdout.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { DBOS } from '@dbos-inc/dbos-sdk';
import pg from 'pg';
import { createCoordinator } from '../src/actors/coordinator/coordinator.js';
import { createRedisQueue } from '../src/bus/redis/queue.js';
import { PostgresAuditLog } from '../src/persistence/audit/postgres-chain.js';
import { createRedisContextStore } from '../src/persistence/context/redis-store.js';
import { PostgresLease } from '../src/persistence/coordinator/postgres-lease.js';
import { COORDINATOR_PG_SCHEMA, type PostgresCoordinatorStore } from '../src/persistence/coordinator/postgres-store.js';
import { type PgQuery, inPgTransaction, openPgPool } from '../src/persistence/kernel/postgres.js';
import type { CommitBatch } from '../src/workflow/records.js';
import { migratePg } from '../src/persistence/kernel/postgres-migrations.js';
import type { TestDatabase } from '../test/postgres-availability.js';
import { deleteRedisPrefix } from '../test/redis-availability.js';
import { createBenchDatabase } from './bench-database.js';
import { NOOP_USAGE, ROLES, definition, noopDeployments, progress } from './four-stage-workflow.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REPS = Number(process.env.BENCH_REPS ?? 5);
const ALONE_ITEMS = Number(process.env.BENCH_ALONE_ITEMS ?? 25);
const SHARED_ITEMS = Number(process.env.BENCH_SHARED_ITEMS ?? 200);
/** BENCH_ENGINES=Coordinator (comma-separated names) runs only those, e.g. under `node --cpu-prof`. */
const ENGINES = (process.env.BENCH_ENGINES ?? 'Coordinator,Coordinator (workers apart),raw,DBOS')
  .split(',')
  .map((e) => e.trim());
const IN_FLIGHT = 50;
const WARM_UP_ITEMS = 50;
const HOPS = ROLES.length;
/**
 * The audit entries the Coordinator appends: at an item's creation (the
 * item, its first dispatch), at each hop result (governance, result, cost,
 * then the next dispatch or the item's end). Raw writes as many rows.
 */
const CREATION_AUDIT = ['item-created', 'dispatch'];
const RESULT_AUDIT = ['governance', 'result', 'cost', 'dispatch'];
const END_AUDIT = ['governance', 'result', 'cost', 'item-completed'];

interface Engine {
  readonly name: string;
  readonly database: TestDatabase;
  /** Runs one work item through the four stages to its end. */
  item(n: number): Promise<void>;
  /** Waits for what the engine still does for items that ended (the Coordinator's mirror, if it has a broker). */
  settle(): Promise<void>;
  /** A line about the engine's commits, for the figures. */
  note?(): string;
  /** CPU µs used so far by the engine's processes other than this one (its worker process). */
  otherCpuUs?(): number;
  close(): Promise<void>;
}

interface Phase {
  hopsPerSecond: number;
  usPerHop: number;
  cpuUsPerHop: number;
}

/** `items` items through `run`, `inFlight` at a time (a new one starts when one ends). */
async function measure(engine: Engine, items: number, inFlight: number): Promise<Phase> {
  let next = 0;
  const otherCpu = engine.otherCpuUs?.() ?? 0;
  const cpu = process.cpuUsage();
  const elu0 = performance.eventLoopUtilization();
  const started = performance.now();
  const lane = async () => {
    while (next < items) await engine.item(next++);
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, items) }, lane));
  await engine.settle();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  used.user += (engine.otherCpuUs?.() ?? 0) - otherCpu;
  if (process.env.BENCH_ELU === '1')
    progress(
      `${engine.name}, ${inFlight} in flight: event loop busy ${(100 * performance.eventLoopUtilization(elu0).utilization).toFixed(0)}%`,
    );
  const hops = items * HOPS;
  return {
    hopsPerSecond: hops / seconds,
    usPerHop: (seconds * 1e6) / hops,
    cpuUsPerHop: (used.user + used.system) / hops,
  };
}

// ----------------------------------------------------------------- engines

/** CPU µs a process used so far, from /proc (Linux); its clock ticks at 100 Hz. */
function procCpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** The roles' worker process, as `switchboard worker` runs it (from `dist`), on the bench's bus prefix. */
function workerProcess(prefix: string): ChildProcess {
  const child = spawn(
    process.execPath,
    [
      fileURLToPath(new URL('../bin/switchboard.js', import.meta.url)),
      'worker',
      '--bus',
      REDIS_URL,
      '--bus-prefix',
      prefix,
      ...ROLES.flatMap((role) => ['--role', role]),
      '--handler',
      fileURLToPath(new URL('./noop-handler.mjs', import.meta.url)),
      '--concurrency',
      String(IN_FLIGHT),
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  child.on('exit', (code, signal) => {
    if (code !== 0 && signal !== 'SIGTERM') progress(`the worker process ended: ${code ?? signal}`);
  });
  return child;
}

async function coordinatorEngine(workersApart = false): Promise<Engine> {
  const database = await createBenchDatabase('sb_bench_coord');
  const prefix = `bench-pg-${randomBytes(4).toString('hex')}`;
  const worker = workersApart ? workerProcess(prefix) : undefined;
  const bus = await createRedisQueue({ url: REDIS_URL, prefix });
  const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix });
  // The lease `switchboard coordinator` takes (its default timing): every commit checks its epoch.
  const lease = new PostgresLease({ url: database.url });
  if ((await lease.acquire()) !== 'leader') throw new Error('the bench could not take the leader lease');
  const coordinator = await createCoordinator({
    postgres: { url: database.url, fence: lease.fence },
    bus,
    contextStore,
    definitions: [definition],
    // Each role's pool takes as many hops at once as there are items in flight, as DBOS runs the
    // step of every one of its workflows at once (16 at once, as this bench had it, queued the hops of
    // items bunched in one stage).
    ...(worker === undefined ? { deployments: noopDeployments(IN_FLIGHT) } : {}),
    maxHops: 10,
  });
  const store = coordinator.tables as PostgresCoordinatorStore;
  // Every commit call counted with the items' changes it carried (results that arrive together share one).
  const commit = store.commit.bind(store);
  const commits = { calls: 0, changes: 0 };
  store.commit = (batch: CommitBatch) => {
    commits.calls += 1;
    commits.changes += batch.changes.length;
    return commit(batch);
  };
  return {
    name: worker === undefined ? 'Coordinator' : 'Coordinator (workers apart)',
    database,
    ...(worker?.pid === undefined ? {} : { otherCpuUs: () => procCpuUs(worker.pid!) }),
    async item(n) {
      const id = await coordinator.createWorkItem({ workflow: definition.id, input: `item ${n}` });
      const final = await coordinator.settled(id);
      if (final.state !== 'completed') throw new Error(`item ${id} ended ${final.state}`);
    },
    settle: () => coordinator.mirrored(),
    note: () =>
      `${commits.calls} commit calls carrying ${commits.changes} items' changes (${(commits.changes / commits.calls).toFixed(2)} a call); ` +
      `the store's own group commit: ${store.groups.transactions} transactions for ${store.groups.batches} calls`,
    async close() {
      const verified = await coordinator.verifyAudit();
      if (!verified.ok) throw new Error('the Coordinator audit chain does not verify');
      if (worker !== undefined) {
        const exited = new Promise((resolve) => worker.once('exit', resolve));
        worker.kill('SIGTERM');
        await exited;
      }
      await coordinator.close();
      await lease.close();
      await bus.close();
      await contextStore.close();
      await deleteRedisPrefix(prefix, REDIS_URL);
    },
  };
}

async function rawEngine(): Promise<Engine> {
  const database = await createBenchDatabase('sb_bench_raw');
  // The Coordinator's tables and audit log, as its store migrates them.
  const pool = await openPgPool(database.url, { max: 4 });
  await migratePg(pool, COORDINATOR_PG_SCHEMA);
  await PostgresAuditLog.open(pool);
  const usage = NOOP_USAGE;
  const snapshot = JSON.stringify({ value: 'running', context: { pad: 'x'.repeat(400) } });
  let auditSeq = 0;
  let prevHash = '0'.repeat(64);
  const audit = async (tx: PgQuery, itemId: string, hop: number, kinds: readonly string[]) => {
    for (const kind of kinds) {
      const data = JSON.stringify({ hop, kind, usage });
      const hash = createHash('sha256').update(prevHash).update(data).digest('hex');
      await tx.query(
        `INSERT INTO audit_log (seq, at, kind, item_id, hop, actor, data, prev_hash, hash)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
        [++auditSeq, new Date().toISOString(), kind, itemId, hop, 'coordinator', data, prevHash, hash],
      );
      prevHash = hash;
    }
  };
  const transaction = (body: (tx: PgQuery) => Promise<void>) => inPgTransaction(pool, body);
  const hopRow = (id: string, hop: number) => {
    const role = ROLES[hop - 1]!;
    return [`${id}-${hop}`, id, hop, hop, 1, 'stage', role, role, `${id}/${hop}/1`, 'dispatched', Date.now()];
  };
  const insertHop = (tx: PgQuery, id: string, hop: number) =>
    tx.query(
      `INSERT INTO coord_hops (id, item_id, seq, hop, attempt, kind, stage, role, idempotency_key, state,
               dispatched_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      hopRow(id, hop),
    );
  const outbox = (tx: PgQuery, id: string, hop: number) =>
    tx.query('INSERT INTO coord_outbox (item_id, kind, body) VALUES ($1, $2, $3) RETURNING id', [
      id,
      'start',
      JSON.stringify({ role: ROLES[hop - 1], item: id, hop }),
    ]);
  let items = 0;
  return {
    name: 'raw',
    database,
    async item(n) {
      const id = `raw-${++items}`;
      const outboxIds: string[] = [];
      await transaction(async (tx) => {
        await tx.query(
          `INSERT INTO coord_items (id, workflow_id, workflow_version, state, stage, hop, hops, input,
                   created_at, updated_at, run_version, run_snapshot) VALUES ($1, $2, 1, 'running', $3, 1, 1, $4, $5, $5, 1, $6)`,
          [id, definition.id, ROLES[0], JSON.stringify([{ kind: 'text', text: `item ${n}` }]), Date.now(), snapshot],
        );
        await insertHop(tx, id, 1);
        outboxIds[0] = (await outbox(tx, id, 1)).rows[0].id as string;
        await audit(tx, id, 1, CREATION_AUDIT);
      });
      for (let hop = 1; hop <= HOPS; hop++) {
        const last = hop === HOPS;
        await transaction(async (tx) => {
          await tx.query(
            `UPDATE coord_hops SET state = 'completed', model = $1, input_tokens = $2, output_tokens = $3,
                     cost_usd = $4, finished_at = $5 WHERE id = $6`,
            [usage.model, usage.inputTokens, usage.outputTokens, usage.costUsd, Date.now(), `${id}-${hop}`],
          );
          if (!last) await insertHop(tx, id, hop + 1);
          await tx.query(
            `UPDATE coord_items SET state = $1, stage = $2, hop = $3, hops = $3, input_tokens = input_tokens + $4,
                     output_tokens = output_tokens + $5, cost_usd = cost_usd + $6, updated_at = $7, finished_at = $8,
                     run_snapshot = $9 WHERE id = $10`,
            [
              last ? 'completed' : 'running',
              last ? null : ROLES[hop],
              hop + 1,
              usage.inputTokens,
              usage.outputTokens,
              usage.costUsd,
              Date.now(),
              last ? Date.now() : null,
              snapshot,
              id,
            ],
          );
          await tx.query(
            `INSERT INTO coord_usage (hop_id, item_id, agent, model, input_tokens, output_tokens, cost_usd,
                     elapsed_ms, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
            [
              `${id}-${hop}`,
              id,
              ROLES[hop - 1],
              usage.model,
              usage.inputTokens,
              usage.outputTokens,
              usage.costUsd,
              1,
              Date.now(),
            ],
          );
          // The hop's dispatch was published: its outbox row goes (the Coordinator deletes published rows).
          await tx.query('DELETE FROM coord_outbox WHERE id = $1', [outboxIds[hop - 1]]);
          if (!last) outboxIds[hop] = (await outbox(tx, id, hop + 1)).rows[0].id as string;
          await audit(tx, id, hop, last ? END_AUDIT : RESULT_AUDIT);
        });
      }
    },
    settle: () => Promise.resolve(),
    close: () => pool.end(),
  };
}

async function dbosEngine(): Promise<Engine> {
  const database = await createBenchDatabase('sb_bench_dbos');
  // Defaults but the log level: DBOS logs to stdout, which carries the figures.
  DBOS.setConfig({ name: 'switchboard-bench', systemDatabaseUrl: database.url, logLevel: 'warn' });
  const steps = ROLES.map((role) =>
    DBOS.registerStep(async (item: string) => ({ role, item, usage: NOOP_USAGE }), { name: role }),
  );
  const workflow = DBOS.registerWorkflow(
    async (item: string) => {
      let out: unknown;
      for (const step of steps) out = await step(item);
      return out;
    },
    { name: definition.id },
  );
  await DBOS.launch();
  return {
    name: 'DBOS',
    database,
    async item(n) {
      await workflow(`item ${n}`);
    },
    settle: () => Promise.resolve(),
    close: () => DBOS.shutdown(),
  };
}

// ----------------------------------------------------------------- figures

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

/** Rows written and transactions committed in `database` since it was made, per hop of `items` items. */
async function writesPerHop(database: TestDatabase, items: number): Promise<string> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const rows = await client.query(
      `SELECT sum(n_tup_ins)::int AS ins, sum(n_tup_upd)::int AS upd, sum(n_tup_del)::int AS del FROM pg_stat_user_tables`,
    );
    const xact = await client.query('SELECT xact_commit::int AS n FROM pg_stat_database WHERE datname = $1', [
      database.name,
    ]);
    const per = (n: number) => (n / (items * HOPS)).toFixed(2);
    const r = rows.rows[0] as { ins: number; upd: number; del: number };
    return `${per(r.ins)} rows inserted, ${per(r.upd)} updated, ${per(r.del)} deleted, ${per(xact.rows[0].n)} transactions (the server's statistics, every statement of the engine's connections, reads included)`;
  } finally {
    await client.end();
  }
}

async function run(): Promise<void> {
  const loadBefore = loadavg();
  progress(
    `engines: Coordinator, raw, DBOS; ${REPS} repetitions of ${ALONE_ITEMS} items alone and ${SHARED_ITEMS} items ${IN_FLIGHT} in flight`,
  );
  const engines: Engine[] = [];
  const runs = new Map<string, { alone: Phase[]; shared: Phase[] }>();
  const notes: string[] = [];
  try {
    const makers: Record<string, () => Promise<Engine>> = {
      Coordinator: () => coordinatorEngine(),
      'Coordinator (workers apart)': () => coordinatorEngine(true),
      raw: rawEngine,
      DBOS: dbosEngine,
    };
    for (const name of ENGINES) {
      const make = makers[name];
      if (make === undefined)
        throw new Error(`BENCH_ENGINES names ${name}: give some of ${Object.keys(makers).join(', ')}`);
      engines.push(await make());
    }
    for (const engine of engines) {
      progress(`warm-up: ${engine.name}, ${WARM_UP_ITEMS} items`);
      await measure(engine, WARM_UP_ITEMS, IN_FLIGHT);
      runs.set(engine.name, { alone: [], shared: [] });
    }
    for (let rep = 0; rep < REPS; rep++) {
      for (let k = 0; k < engines.length; k++) {
        const engine = engines[(rep + k) % engines.length]!;
        const r = runs.get(engine.name)!;
        r.alone.push(await measure(engine, ALONE_ITEMS, 1));
        r.shared.push(await measure(engine, SHARED_ITEMS, IN_FLIGHT));
        progress(
          `rep ${rep + 1}/${REPS} ${engine.name}: alone ${r.alone.at(-1)!.hopsPerSecond.toFixed(0)} hops/s, ` +
            `${IN_FLIGHT} in flight ${r.shared.at(-1)!.hopsPerSecond.toFixed(0)} hops/s`,
        );
      }
    }
    const items = WARM_UP_ITEMS + REPS * (ALONE_ITEMS + SHARED_ITEMS);
    for (const engine of engines.splice(0)) {
      const note = engine.note?.();
      await engine.close();
      notes.push(`  ${engine.name}: per hop ${await writesPerHop(engine.database, items)}`);
      if (note !== undefined) notes.push(`  ${engine.name}: ${note}`);
      await engine.database.drop();
    }
  } finally {
    for (const engine of engines) {
      await engine.close().catch(() => undefined);
      await engine.database.drop().catch(() => undefined);
    }
  }

  const loadAfter = loadavg();
  const fmt = (values: number[], digits: number) =>
    `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
  const lines = [
    `bench:coordinator:postgres: ${HOPS}-stage workflow, no-op steps, ${REPS} repetitions interleaved; medians (ranges)`,
    '',
    '| engine | mode | hops/s | µs per hop | CPU µs per hop |',
    '|---|---|---|---|---|',
  ];
  for (const [name, r] of runs) {
    for (const [mode, phases] of [
      ['alone', r.alone],
      [`${IN_FLIGHT} in flight`, r.shared],
    ] as const) {
      lines.push(
        `| ${name} | ${mode} | ${fmt(
          phases.map((p) => p.hopsPerSecond),
          0,
        )} | ${fmt(
          phases.map((p) => p.usPerHop),
          0,
        )} | ${fmt(
          phases.map((p) => p.cpuUsPerHop),
          0,
        )} |`,
      );
    }
  }
  const rate = (name: string, mode: 'alone' | 'shared') => median(runs.get(name)![mode].map((p) => p.hopsPerSecond));
  const ratio = (ours: string, other: string, mode: 'alone' | 'shared') =>
    runs.has(ours) && runs.has(other) ? (rate(ours, mode) / rate(other, mode)).toFixed(2) : '-';
  const ratios = (ours: string, other: string, target: string) =>
    `ratio of hops/s ${ours}/${other}: alone ${ratio(ours, other, 'alone')}, ${IN_FLIGHT} in flight ${ratio(ours, other, 'shared')} (${target})`;
  lines.push(
    '',
    ratios('Coordinator', 'raw', 'target ≥ 0.50 in flight'),
    ratios('Coordinator', 'DBOS', 'target > 1'),
    ratios('Coordinator (workers apart)', 'raw', 'target ≥ 0.50 in flight'),
    ratios('Coordinator (workers apart)', 'DBOS', 'target > 1'),
    'writes:',
    ...notes,
    `load average (1, 5, 15 min): before ${loadBefore.map((l) => l.toFixed(2)).join(', ')}; after ${loadAfter
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

await run();
