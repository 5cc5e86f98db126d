/**
 * bench:fanout: what work that branches costs the Coordinator, per hop,
 * against the same number of hops in a chain, in the same run, on the
 * embedded default (one SQLite file; pools in process; handlers that
 * complete at once).
 *
 * - map: one work item whose plan lists 1,000 elements (`BENCH_MAP_SIZE`), mapped over by a
 *   role (50 at once): 1,001 hops, 1,000 child work items.
 * - parallel: 20 work items of a 50-branch parallel stage: 1,000 hops,
 *   1,000 child work items.
 * - chain (the reference): 250 work items of a 4-stage linear workflow,
 *   50 in flight: 1,000 hops.
 *
 * For each: the Coordinator's CPU per hop (the CPU time of its decisions
 * and commits, measured inside the engine: governance, the run machine,
 * audit, cost, rows, the commit; a child's creation and its settling are
 * commits of their own and are counted), the whole process's CPU per hop
 * (workers, bus, broker mirror included) and the wall time. Rounds are
 * repeated; medians are printed with the ratio to the chain's, and the median
 * of each round's ratio to that round's chain.
 *
 * DBOS running the same fan-out as child workflows on PostgreSQL is
 * measured by bench:fanout:postgres (bench/fanout-postgres.ts).
 *
 * Progress goes to stderr; the figures to stdout. To profile one scenario:
 * `npm run build && BENCH_ONLY=map BENCH_ROUNDS=1 node --cpu-prof --import tsx bench/fanout.ts`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// The built package (`npm run build`, as `npm run bench:fanout` does first): what users run, not src/
// through tsx's transform (which makes the join functions alone several times slower than tsc's output).
import { type RoleDeployment, createCoordinator } from '../dist/actors/coordinator/coordinator.js';
import { observeCommits } from '../dist/actors/coordinator/commit-timing.js';
import { complete } from '../dist/actors/worker/worker.js';
import type { WorkflowDefinition } from '../dist/protocol/workflow.js';
import { parseWorkflowDefinition } from '../dist/workflow/definition.js';
import { NOOP_USAGE, definition as fourStages, progress } from './four-stage-workflow.js';

/** The chain: the four-stage workflow, checked by the built package. */
const chain = parseWorkflowDefinition(JSON.parse(JSON.stringify(fourStages)));

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** `BENCH_ONLY=map,parallel`: only these scenarios (to profile one; the ratios need the chain). */
const ONLY = process.env.BENCH_ONLY?.split(',');
/** `BENCH_BY_STEP=1`: also the Coordinator's CPU per hop by kind of step (result, decision, create, ...). */
const BY_STEP = process.env.BENCH_BY_STEP === '1';
/** `BENCH_MAP_SIZE=10000`: a longer map (its ratio to the chain then compares unlike numbers of hops). */
const MAP_SIZE = Number(process.env.BENCH_MAP_SIZE ?? 1_000);
const BRANCHES = 50;

const mapFlow = parseWorkflowDefinition({
  id: 'bench-map',
  version: 1,
  start: 'plan',
  stages: {
    plan: { role: 'planner', next: [{ on: 'succeeded', goto: 'work' }] },
    work: { role: 'worker', forEach: '/list', maxConcurrency: 50, maxItems: MAP_SIZE },
  },
});

const branches: Record<string, { role: string }> = {};
for (let i = 0; i < BRANCHES; i++) branches[`b${i}`] = { role: 'worker' };
const parallelFlow = parseWorkflowDefinition({
  id: 'bench-parallel',
  version: 1,
  start: 'fan',
  stages: { fan: { parallel: { branches } } },
});

function deployments(): Record<string, RoleDeployment> {
  const list = Array.from({ length: MAP_SIZE }, (_, i) => i);
  const out: Record<string, RoleDeployment> = {};
  const pool = { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 60_000, concurrency: 64 };
  const done = () => complete({ usage: { ...NOOP_USAGE } });
  for (const role of ['architect', 'coding', 'testing', 'devops', 'worker']) {
    out[role] = { handler: done, deployment: pool, pollWaitMs: 200, observeIntervalMs: 100 };
  }
  out.planner = {
    handler: () => complete({ parts: [{ kind: 'data', data: { list } }], usage: { ...NOOP_USAGE } }),
    deployment: pool,
    pollWaitMs: 200,
    observeIntervalMs: 100,
  };
  return out;
}

interface Figures {
  coordinatorUsPerHop: number;
  processUsPerHop: number;
  /** The main thread's CPU per hop (NaN where /proc is not). */
  mainThreadUsPerHop: number;
  wallMs: number;
  /** Bytes the process wrote (to the database file and its WAL, mostly) per hop; NaN where /proc is not. */
  writtenBytesPerHop: number;
}

/**
 * The main thread's CPU time so far, in µs (`/proc/thread-self/schedstat`, Linux; NaN elsewhere): the
 * Coordinator, the in-process workers and the bus run on it; SQLite's checkpoints and the collector's helper
 * threads, which `process.cpuUsage()` counts too, do not. Steadier between runs than the whole process's.
 */
function mainThreadCpuUs(): number {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1000;
  } catch {
    return Number.NaN;
  }
}

/** The bytes this process has written so far (`wchar` of /proc/self/io; Linux), or NaN. */
function bytesWritten(): number {
  try {
    const line = readFileSync('/proc/self/io', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('wchar:'));
    return line === undefined ? Number.NaN : Number(line.slice('wchar:'.length));
  } catch {
    return Number.NaN;
  }
}

async function scenario(
  coordinator: Awaited<ReturnType<typeof createCoordinator>>,
  items: { workflow: WorkflowDefinition; count: number; inFlight: number },
  hops: number,
): Promise<Figures> {
  let cpuUs = 0;
  const byStep = new Map<string, { us: number; inputs: number; commits: number }>();
  const stop = observeCommits(coordinator, (_ns, what, _inner, us, batch) => {
    cpuUs += us;
    const s = byStep.get(what) ?? { us: 0, inputs: 0, commits: 0 };
    s.us += us;
    s.inputs++;
    // The observer is called once per input of a batch: a commit of `batch` inputs adds 1/batch per call.
    s.commits += 1 / batch;
    byStep.set(what, s);
  });
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuUs();
  const written0 = bytesWritten();
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < items.count) {
      next++;
      const id = await coordinator.createWorkItem({ workflow: items.workflow.id, input: 'bench' });
      const done = await coordinator.settled(id);
      if (done.state !== 'completed') throw new Error(`an item ended ${done.state}: ${done.failure?.reason}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(items.inFlight, items.count) }, lane));
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const mainUs = mainThreadCpuUs() - main0;
  const written = bytesWritten() - written0;
  stop();
  if (BY_STEP) {
    const parts = [...byStep].map(
      ([what, s]) =>
        `${what} ${(s.us / hops).toFixed(0)} µs/hop (${s.inputs} inputs, ${Math.round(s.commits)} commits)`,
    );
    progress(`    by step: ${parts.join(', ')}`);
  }
  return {
    coordinatorUsPerHop: cpuUs / hops,
    processUsPerHop: (cpu.user + cpu.system) / hops,
    mainThreadUsPerHop: mainUs / hops,
    wallMs,
    writtenBytesPerHop: written / hops,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const dir = mkdtempSync(join(tmpdir(), 'sb-bench-fanout-'));
try {
  const results: Record<'chain' | 'map' | 'parallel', Figures[]> = { chain: [], map: [], parallel: [] };
  for (let round = 1; round <= ROUNDS; round++) {
    const coordinator = await createCoordinator({
      path: join(dir, `round-${round}.db`),
      definitions: [chain, mapFlow, parallelFlow],
      deployments: deployments(),
    });
    try {
      // Warm-up: one of each.
      await scenario(coordinator, { workflow: chain, count: 5, inFlight: 5 }, 20);
      const order = (['chain', 'map', 'parallel'] as const).filter((w) => ONLY === undefined || ONLY.includes(w));
      if (round % 2 === 0) order.reverse();
      for (const which of order) {
        progress(`round ${round}: ${which}`);
        const figures =
          which === 'chain'
            ? await scenario(coordinator, { workflow: chain, count: 250, inFlight: 50 }, 1_000)
            : which === 'map'
              ? await scenario(coordinator, { workflow: mapFlow, count: 1, inFlight: 1 }, MAP_SIZE + 1)
              : await scenario(coordinator, { workflow: parallelFlow, count: 20, inFlight: 20 }, 20 * BRANCHES);
        results[which].push(figures);
        progress(
          `  ${which}: ${figures.coordinatorUsPerHop.toFixed(0)} µs Coordinator CPU per hop, ${figures.processUsPerHop.toFixed(0)} µs process CPU per hop, ${figures.mainThreadUsPerHop.toFixed(0)} µs main thread CPU per hop, ${figures.wallMs.toFixed(0)} ms, ${(figures.writtenBytesPerHop / 1024).toFixed(1)} KiB written per hop`,
        );
      }
    } finally {
      await coordinator.close();
    }
  }
  // Without the chain (BENCH_ONLY), the ratios print as NaN.
  const base = results.chain.length === 0 ? Number.NaN : median(results.chain.map((f) => f.coordinatorUsPerHop));
  const baseProcess = results.chain.length === 0 ? Number.NaN : median(results.chain.map((f) => f.processUsPerHop));
  const baseMain = results.chain.length === 0 ? Number.NaN : median(results.chain.map((f) => f.mainThreadUsPerHop));
  process.stdout.write(`bench:fanout, ${ROUNDS} rounds, medians (ratio to the chain's in the same run)\n`);
  for (const which of ['chain', 'map', 'parallel'] as const) {
    if (results[which].length === 0) continue;
    const c = median(results[which].map((f) => f.coordinatorUsPerHop));
    const p = median(results[which].map((f) => f.processUsPerHop));
    const w = median(results[which].map((f) => f.wallMs));
    const b = median(results[which].map((f) => f.writtenBytesPerHop));
    const m = median(results[which].map((f) => f.mainThreadUsPerHop));
    // Each round's ratio to that round's chain, their median: steadier than the ratio of the medians when
    // the machine's load changes between rounds (a round's scenarios run back to back).
    const perRound =
      results.chain.length === results[which].length
        ? median(results[which].map((f, i) => f.coordinatorUsPerHop / results.chain[i]!.coordinatorUsPerHop))
        : Number.NaN;
    process.stdout.write(
      `  ${which.padEnd(8)} Coordinator CPU/hop ${c.toFixed(0).padStart(6)} µs (${(c / base).toFixed(2)}x; rounds' ratios ${perRound.toFixed(2)}x)  process CPU/hop ${p.toFixed(0).padStart(6)} µs (${(p / baseProcess).toFixed(2)}x)  main thread CPU/hop ${m.toFixed(0).padStart(6)} µs (${(m / baseMain).toFixed(2)}x)  wall ${w.toFixed(0)} ms  written ${(b / 1024).toFixed(1)} KiB/hop\n`,
    );
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
