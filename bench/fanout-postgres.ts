/**
 * `npm run bench:fanout:postgres`: a 50-way fan-out as durable child work,
 * the Coordinator against DBOS Transact, in the same run on the same
 * PostgreSQL server (a database of its own for each, created for the run,
 * dropped at the end).
 *
 * - Coordinator: `createCoordinator({ postgres })` with the leader lease
 *   fencing every commit, the Redis bus and Context Engine, one in-process
 *   pool whose handler completes at once (64 hops at once). One work item
 *   of a workflow whose single stage is a parallel stage of 50 branches:
 *   50 child work items, each with its own run, hop, audit entries and
 *   cost rolled up into the parent, joined `all`.
 * - DBOS: a parent workflow that starts 50 child workflows
 *   (`DBOS.startWorkflow`), each running one step, and awaits their
 *   results: DBOS's own durable fan-out, on its defaults, its system
 *   database in the engine's database.
 *
 * Either way 50 children are in flight at once and every child is durable
 * on its own. ITEMS parents run one after another per repetition, REPS
 * repetitions with the engines interleaved (the first rotates). Printed:
 * medians (and ranges) of children per second and of the bench process's
 * CPU per child (`process.cpuUsage`: the engine, its clients and the
 * in-process workers), with the ratio Coordinator/DBOS, and the load average.
 *
 * PostgreSQL at PG_URL (default postgres://postgres@127.0.0.1:5432/postgres),
 * Redis at REDIS_URL (a key prefix of its own, deleted at the end).
 * BENCH_REPS (default 5) and BENCH_ITEMS (default 10) change the sizes.
 * Progress to stderr, figures to stdout.
 */
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { DBOS } from '@dbos-inc/dbos-sdk';
import { createCoordinator } from '../src/actors/coordinator/coordinator.js';
import { complete } from '../src/actors/worker/worker.js';
import { createRedisQueue } from '../src/bus/redis/queue.js';
import { createRedisContextStore } from '../src/persistence/context/redis-store.js';
import { PostgresLease } from '../src/persistence/coordinator/postgres-lease.js';
import { parseWorkflowDefinition } from '../src/workflow/definition.js';
import type { TestDatabase } from '../test/postgres-availability.js';
import { deleteRedisPrefix } from '../test/redis-availability.js';
import { createBenchDatabase } from './bench-database.js';
import { NOOP_USAGE, progress } from './four-stage-workflow.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REPS = Number(process.env.BENCH_REPS ?? 5);
const ITEMS = Number(process.env.BENCH_ITEMS ?? 10);
const BRANCHES = 50;
const WARM_UP_ITEMS = 3;

const branches: Record<string, { role: string }> = {};
for (let i = 0; i < BRANCHES; i++) branches[`b${i}`] = { role: 'worker' };
const fanOut = parseWorkflowDefinition({
  id: 'bench-fan-out',
  version: 1,
  start: 'fan',
  stages: { fan: { parallel: { branches } } },
});

interface Engine {
  name: string;
  database: TestDatabase;
  /** Runs one parent to its end, its 50 children included. */
  item(n: number): Promise<void>;
  close(): Promise<void>;
}

async function coordinatorEngine(): Promise<Engine> {
  const database = await createBenchDatabase('sb_bench_fan_coord');
  const prefix = `bench-fan-${randomBytes(4).toString('hex')}`;
  const bus = await createRedisQueue({ url: REDIS_URL, prefix });
  const contextStore = await createRedisContextStore({ url: REDIS_URL, prefix });
  const lease = new PostgresLease({ url: database.url });
  if ((await lease.acquire()) !== 'leader') throw new Error('the bench could not take the leader lease');
  const coordinator = await createCoordinator({
    postgres: { url: database.url, fence: lease.fence },
    bus,
    contextStore,
    definitions: [fanOut],
    deployments: {
      worker: {
        handler: () => complete({ usage: { ...NOOP_USAGE } }),
        deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 60_000, concurrency: 64 },
        pollWaitMs: 200,
        observeIntervalMs: 100,
      },
    },
  });
  return {
    name: 'Coordinator',
    database,
    async item(n) {
      const id = await coordinator.createWorkItem({ workflow: fanOut.id, input: `item ${n}` });
      const final = await coordinator.settled(id);
      if (final.state !== 'completed') throw new Error(`item ${id} ended ${final.state}: ${final.failure?.reason}`);
    },
    async close() {
      const verified = await coordinator.verifyAudit();
      if (!verified.ok) throw new Error('the Coordinator audit chain does not verify');
      await coordinator.close();
      await lease.close();
      await bus.close();
      await contextStore.close();
      await deleteRedisPrefix(prefix, REDIS_URL);
    },
  };
}

async function dbosEngine(): Promise<Engine> {
  const database = await createBenchDatabase('sb_bench_fan_dbos');
  // Defaults but the log level: DBOS logs to stdout, which carries the figures.
  DBOS.setConfig({ name: 'switchboard-bench-fanout', systemDatabaseUrl: database.url, logLevel: 'warn' });
  const step = DBOS.registerStep(async (input: string) => ({ input, usage: NOOP_USAGE }), { name: 'worker' });
  const child = DBOS.registerWorkflow(async (input: string) => step(input), { name: 'bench-fan-child' });
  const parent = DBOS.registerWorkflow(
    async (input: string) => {
      const handles = [];
      for (let i = 0; i < BRANCHES; i++) handles.push(await DBOS.startWorkflow(child)(`${input}/b${i}`));
      return Promise.all(handles.map((h) => h.getResult()));
    },
    { name: 'bench-fan-out' },
  );
  await DBOS.launch();
  return {
    name: 'DBOS',
    database,
    async item(n) {
      const out = await parent(`item ${n}`);
      if (out.length !== BRANCHES) throw new Error(`a DBOS parent joined ${out.length} children`);
    },
    close: () => DBOS.shutdown(),
  };
}

interface Phase {
  childrenPerSecond: number;
  cpuUsPerChild: number;
}

async function measure(engine: Engine, items: number): Promise<Phase> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  for (let n = 0; n < items; n++) await engine.item(n);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const children = items * BRANCHES;
  return { childrenPerSecond: children / seconds, cpuUsPerChild: (cpu.user + cpu.system) / children };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function run(): Promise<void> {
  const loadBefore = loadavg();
  progress(`engines: Coordinator, DBOS; ${REPS} repetitions of ${ITEMS} parents of ${BRANCHES} children each`);
  const engines: Engine[] = [];
  const phases = new Map<string, Phase[]>();
  try {
    engines.push(await coordinatorEngine(), await dbosEngine());
    for (const engine of engines) {
      progress(`warm-up: ${engine.name}, ${WARM_UP_ITEMS} parents`);
      await measure(engine, WARM_UP_ITEMS);
      phases.set(engine.name, []);
    }
    for (let rep = 0; rep < REPS; rep++) {
      for (let k = 0; k < engines.length; k++) {
        const engine = engines[(rep + k) % engines.length]!;
        const phase = await measure(engine, ITEMS);
        phases.get(engine.name)!.push(phase);
        progress(
          `rep ${rep + 1}/${REPS} ${engine.name}: ${phase.childrenPerSecond.toFixed(0)} children/s, ` +
            `${phase.cpuUsPerChild.toFixed(0)} CPU µs a child`,
        );
      }
    }
  } finally {
    for (const engine of engines.splice(0)) {
      await engine.close().catch((error) => progress(`closing ${engine.name}: ${String(error)}`));
      await engine.database.drop().catch(() => undefined);
    }
  }
  const loadAfter = loadavg();
  const fmt = (values: number[], digits: number) =>
    `${median(values).toFixed(digits)} (${Math.min(...values).toFixed(digits)}–${Math.max(...values).toFixed(digits)})`;
  const lines = [
    `bench:fanout:postgres: parents of ${BRANCHES} durable children each (${BRANCHES} in flight), ${REPS} repetitions of ${ITEMS} parents, interleaved; medians (ranges)`,
    '',
    '| engine | children/s | CPU µs per child |',
    '|---|---|---|',
  ];
  for (const [name, list] of phases) {
    lines.push(
      `| ${name} | ${fmt(
        list.map((p) => p.childrenPerSecond),
        0,
      )} | ${fmt(
        list.map((p) => p.cpuUsPerChild),
        0,
      )} |`,
    );
  }
  const of = (name: string, pick: (p: Phase) => number) => median((phases.get(name) ?? []).map(pick));
  if (phases.has('Coordinator') && phases.has('DBOS')) {
    lines.push(
      '',
      `ratio of children/s Coordinator/DBOS: ${(of('Coordinator', (p) => p.childrenPerSecond) / of('DBOS', (p) => p.childrenPerSecond)).toFixed(2)} (target > 1)`,
      `ratio of CPU per child Coordinator/DBOS: ${(of('Coordinator', (p) => p.cpuUsPerChild) / of('DBOS', (p) => p.cpuUsPerChild)).toFixed(2)}`,
    );
  }
  lines.push(
    `load average (1, 5, 15 min): before ${loadBefore.map((l) => l.toFixed(2)).join(', ')}; after ${loadAfter
      .map((l) => l.toFixed(2))
      .join(', ')}`,
  );
  process.stdout.write(`${lines.join('\n')}\n`);
}

await run();
