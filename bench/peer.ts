/**
 * `npm run bench:peer`: the same delegation (a requester creates a task, a
 * worker completes it, the requester learns the outcome) through
 *  - the official @a2a-js/sdk server and client over JSON-RPC/HTTP on
 *    127.0.0.1 (express, InMemoryTaskStore), and
 *  - `switchboard serve` on stdio with a real SQLite file (durability normal),
 *    driven by this package's client: the requester sends, the worker wakes on
 *    its `a2a.task.event` and completes, the requester wakes on its own.
 * Sequential and 32 in flight: tasks/s, p50/p99 latency, and the server's RSS
 * (its own process, from /proc) before and after all the measured tasks, side
 * by side with ratios. Both servers run for the whole bench and the rounds
 * interleave them (the order alternates round by round), so that the load of
 * a shared machine falls on both alike; a ratio is the median of the
 * per-round ratios. Targets: switchboard >= 3x the SDK sequential, >= 5x
 * concurrent, lower RSS growth. Progress goes to stderr, figures to stdout.
 *
 * Each round also measures the floors of this machine (bench/echo-child.ts,
 * bench/raw-delegation.ts): a bare NDJSON echo round trip and the raw SQLite
 * writes of one delegation, one commit per call and 32 per commit. From them
 * it prints the ceilings no stdio broker keeping these rows could pass: two
 * round trips plus two commits per sequential delegation, the grouped writes
 * alone when concurrent. CPU per delegation (server process from /proc, all
 * threads; client = this process) shows where each side spends its time.
 *
 * `npm run bench:peer -- --socket`: the socket variant (bench/peer-socket.ts),
 * 4 requester and 4 worker processes on one host broker.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Role, TaskState } from '@a2a-js/sdk';
import { ClientFactory } from '@a2a-js/sdk/client';
import { type SwitchboardClient, connect } from '../src/transport/client.js';
import { ECHO_PARAMS, type EchoChild, sequentialRoundTrips, spawnEchoChild } from './echo-child.js';
import { runSocketVariant } from './peer-socket.js';
import { rawDelegations } from './raw-delegation.js';

const WARMUP_TASKS = 300;
const ROUNDS = 3;
/** Per round and side. */
const SEQUENTIAL_TASKS = 500;
const CONCURRENT_TASKS = 4000;
const IN_FLIGHT = 32;
/** The floors, per round: echo round trips, raw delegations one per commit, and grouped. */
const ECHO_CALLS = 2000;
const RAW_SINGLE = 1000;
const RAW_GROUPED = 4000;
const RAW_GROUP = 32;
/** The targets: switchboard's rate over the SDK's. */
const CONCURRENT_TARGET = 5;

interface Side {
  name: string;
  pid: number;
  /** One whole delegation; resolves once the requester knows the outcome. */
  delegate(): Promise<void>;
  close(): Promise<void>;
  /** After close: SQLite transactions committed and the calls they carried (switchboard only). */
  commits?(): { commits: number; calls: number } | undefined;
}

interface Run {
  tasksPerSecond: number;
  latencies: number[];
  /** CPU time per delegation, in µs: the server process's, and this (client) process's. */
  serverCpuMicros: number;
  clientCpuMicros: number;
}

/** What a round measures besides the two sides: the floors of this machine. */
interface Floors {
  /** One round trip to a bare NDJSON echo child, sequential, in µs. */
  echoMicros: number;
  /** The raw SQLite writes of one delegation, one commit per call, wall µs each. */
  rawSingleMicros: number;
  /** The same at RAW_GROUP delegations per commit, wall µs each. */
  rawGroupMicros: number;
}

interface Figures {
  sequential: Run[];
  concurrent: Run[];
  floors: Floors[];
  rssBefore: number;
  rssAfter: number;
}

/** A process's CPU time (user + system) so far, in µs, from /proc (clock ticks of 10 ms). */
function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

function rssOf(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /VmRSS:\s+(\d+) kB/.exec(status);
  return match ? Number(match[1]) * 1024 : Number.NaN;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function drive(side: Side, tasks: number, inFlight: number, label: string): Promise<Run> {
  const latencies: number[] = [];
  let issued = 0;
  let done = 0;
  const progress = setInterval(() => process.stderr.write(`  ${side.name} ${label}: ${done}/${tasks}\n`), 2000);
  const serverCpu = cpuOf(side.pid);
  const clientCpu = process.cpuUsage();
  const started = performance.now();
  const lane = async () => {
    while (issued < tasks) {
      issued++;
      const t0 = performance.now();
      await side.delegate();
      latencies.push(performance.now() - t0);
      done++;
    }
  };
  try {
    await Promise.all(Array.from({ length: inFlight }, lane));
  } finally {
    clearInterval(progress);
  }
  const seconds = (performance.now() - started) / 1000;
  const client = process.cpuUsage(clientCpu);
  return {
    tasksPerSecond: tasks / seconds,
    latencies,
    serverCpuMicros: (cpuOf(side.pid) - serverCpu) / tasks,
    clientCpuMicros: (client.user + client.system) / tasks,
  };
}

/**
 * The floors of this machine, measured between the sides' runs: a bare echo
 * round trip over a child's pipes, and the raw SQLite writes of a delegation
 * (no checkpoints, so that the floor is the lowest these writes can cost).
 */
async function measureFloors(echo: EchoChild, dir: string, round: number): Promise<Floors> {
  const echoRate = await sequentialRoundTrips(echo.connection, 'echo', ECHO_PARAMS, ECHO_CALLS);
  const single = rawDelegations(dir, `raw-single-${round}`, {
    delegations: RAW_SINGLE,
    perTransaction: 1,
    checkpoints: 'none',
  });
  const group = rawDelegations(dir, `raw-group-${round}`, {
    delegations: RAW_GROUPED,
    perTransaction: RAW_GROUP,
    checkpoints: 'none',
  });
  return {
    echoMicros: 1e6 / echoRate,
    rawSingleMicros: 1e6 / single.perSecond,
    rawGroupMicros: 1e6 / group.perSecond,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** Warm-up, then ROUNDS rounds of sequential and concurrent runs, the sides interleaved. */
async function measureBoth(sides: [Side, Side], echo: EchoChild, dir: string): Promise<[Figures, Figures]> {
  const empty = (): Figures => ({ sequential: [], concurrent: [], floors: [], rssBefore: 0, rssAfter: 0 });
  const figures: [Figures, Figures] = [empty(), empty()];
  for (const [i, side] of sides.entries()) {
    process.stderr.write(`${side.name}: warm-up (${WARMUP_TASKS} tasks)\n`);
    await drive(side, WARMUP_TASKS, 4, 'warm-up');
    (figures[i] as Figures).rssBefore = rssOf(side.pid);
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const i of order) {
      const side = sides[i] as Side;
      const f = figures[i] as Figures;
      process.stderr.write(`round ${round + 1}, ${side.name}: sequential (${SEQUENTIAL_TASKS} tasks)\n`);
      f.sequential.push(await drive(side, SEQUENTIAL_TASKS, 1, 'sequential'));
    }
    for (const i of order) {
      const side = sides[i] as Side;
      const f = figures[i] as Figures;
      process.stderr.write(`round ${round + 1}, ${side.name}: ${IN_FLIGHT} in flight (${CONCURRENT_TASKS} tasks)\n`);
      f.concurrent.push(await drive(side, CONCURRENT_TASKS, IN_FLIGHT, 'concurrent'));
    }
    process.stderr.write(`round ${round + 1}: floors (echo round trips, raw SQLite delegations)\n`);
    const floors = await measureFloors(echo, dir, round);
    for (const f of figures) f.floors.push(floors);
    const [a, b] = figures;
    process.stderr.write(
      `round ${round + 1}: sequential ${(b.sequential.at(-1)?.tasksPerSecond ?? 0).toFixed(0)}/s vs ` +
        `${(a.sequential.at(-1)?.tasksPerSecond ?? 0).toFixed(0)}/s, concurrent ` +
        `${(b.concurrent.at(-1)?.tasksPerSecond ?? 0).toFixed(0)}/s vs ${(a.concurrent.at(-1)?.tasksPerSecond ?? 0).toFixed(0)}/s\n`,
    );
  }
  for (const [i, side] of sides.entries()) (figures[i] as Figures).rssAfter = rssOf(side.pid);
  return figures;
}

/** Median tasks/s of the rounds, and p50/p99 over every delegation of every round. */
function summary(runs: Run[]): { tasksPerSecond: number; p50: number; p99: number } {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  return {
    tasksPerSecond: median(runs.map((r) => r.tasksPerSecond)),
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

/** The median of the per-round ratios b/a. */
function roundRatio(b: Run[], a: Run[]): number {
  return median(b.map((run, i) => run.tasksPerSecond / (a[i] as Run).tasksPerSecond));
}

// ---- the @a2a-js/sdk side ----

async function sdkSide(): Promise<Side> {
  const script = fileURLToPath(new URL('./peer-sdk-server.mjs', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the SDK server exited (${code})`)));
    child.stdout?.once('data', (line: Buffer) => resolve((JSON.parse(line.toString('utf8')) as { port: number }).port));
  });
  const client = await new ClientFactory().createFromUrl(`http://127.0.0.1:${port}`);
  return {
    name: '@a2a-js/sdk',
    pid: child.pid as number,
    async delegate() {
      const result = (await client.sendMessage({
        tenant: '',
        message: {
          messageId: crypto.randomUUID(),
          contextId: '',
          taskId: '',
          role: Role.ROLE_USER,
          parts: [
            {
              content: { $case: 'text', value: 'do the thing' },
              metadata: undefined,
              filename: '',
              mediaType: 'text/plain',
            },
          ],
          metadata: undefined,
          extensions: [],
          referenceTaskIds: [],
        },
        configuration: undefined,
        metadata: undefined,
      } as never)) as { status?: { state: TaskState } };
      if (result.status?.state !== TaskState.TASK_STATE_COMPLETED) throw new Error('the SDK task did not complete');
    },
    close: () => stop(child),
  };
}

// ---- the switchboard side ----

/** Requesters rotate: a context may create 128 tasks and a registration send 200 messages. */
const TASKS_PER_REQUESTER = 120;

interface Requester {
  token: string;
  outstanding: number;
  retired: boolean;
}

async function switchboardSide(db: string): Promise<Side> {
  // Info level, piped: the broker's closing line reports its commits and the calls they carried.
  const client: SwitchboardClient = await connect({ spawn: { db, logLevel: 'info', stderr: 'pipe' } });
  const serve = client.serveProcess;
  const worker = await client.register({
    name: 'worker',
    contextId: 'bench-workers',
    description: 'completes every task',
  });
  let stopped = false;
  let failures = 0;
  const done = { parts: [{ kind: 'text' as const, text: 'done' }] };
  const workerLoop = (async () => {
    while (!stopped) {
      const events = await client.wait({ token: worker.token, timeoutSeconds: 1 });
      for (const event of events) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state !== 'submitted') continue;
        client
          .setStatus({ token: worker.token, id: event.params.event.taskId, state: 'completed', message: done })
          .catch(() => {
            failures++;
          });
      }
    }
  })();

  let contexts = 0;
  let used = TASKS_PER_REQUESTER;
  let current: Promise<Requester> | undefined;
  const register = async (): Promise<Requester> => {
    const { token } = await client.register({ name: 'requester', contextId: `bench-${contexts++}` });
    return { token, outstanding: 0, retired: false };
  };
  const acquire = async (): Promise<Requester> => {
    if (used >= TASKS_PER_REQUESTER || current === undefined) {
      const previous = current;
      current = register();
      used = 0;
      if (previous) void previous.then((r) => retire(r));
    }
    used++;
    const requester = await current;
    requester.outstanding++;
    return requester;
  };
  const retire = (requester: Requester) => {
    requester.retired = true;
    if (requester.outstanding === 0) void client.deregister({ token: requester.token });
  };
  const release = (requester: Requester) => {
    requester.outstanding--;
    if (requester.retired && requester.outstanding === 0) void client.deregister({ token: requester.token });
  };

  return {
    name: 'switchboard serve',
    pid: client.serveProcess?.pid as number,
    async delegate() {
      const requester = await acquire();
      const { task } = await client.send({
        token: requester.token,
        to: 'worker',
        message: { parts: [{ kind: 'text', text: 'do the thing' }] },
      });
      for (;;) {
        const events = await client.wait({ token: requester.token, taskId: task.id, timeoutSeconds: 30 });
        if (events.length === 0) throw new Error(`task ${task.id} did not complete within 30 s`);
        const final = events.find(
          (e) => e.method === 'a2a.task.event' && e.params.event.kind === 'status-update' && e.params.event.final,
        );
        if (final) {
          if (
            final.method === 'a2a.task.event' &&
            final.params.event.kind === 'status-update' &&
            final.params.event.status.state !== 'completed'
          ) {
            throw new Error('the switchboard task did not complete');
          }
          break;
        }
      }
      release(requester);
    },
    async close() {
      stopped = true;
      await workerLoop;
      if (failures > 0) throw new Error(`${failures} completions failed`);
      await client.close();
    },
    commits() {
      const line = (serve?.stderr ?? '').split('\n').find((l) => l.includes('a2a broker closed'));
      if (line === undefined) return undefined;
      const { commits, calls } = JSON.parse(line) as { commits?: unknown; calls?: unknown };
      return typeof commits === 'number' && typeof calls === 'number' ? { commits, calls } : undefined;
    },
  };
}

/**
 * What no broker could beat here: a delegation through the stdio binding is
 * two sequential round trips (the send, then the worker's completion) and two
 * durable commits (each call commits before it answers), so sequentially it
 * costs at least two echo round trips plus the raw writes at one commit per
 * call; concurrently, with commits shared, at least the raw grouped writes on
 * the broker's one thread. Ratios against the SDK are medians of the
 * per-round ratios, like the measured ones.
 */
function ceilingsOf(floors: Floors[], sdk: Figures) {
  const sequential = floors.map((f) => 1e6 / (2 * f.echoMicros + f.rawSingleMicros));
  const concurrent = floors.map((f) => 1e6 / f.rawGroupMicros);
  return {
    floors: {
      echoMicros: median(floors.map((f) => f.echoMicros)),
      rawSingleMicros: median(floors.map((f) => f.rawSingleMicros)),
      rawGroupMicros: median(floors.map((f) => f.rawGroupMicros)),
    },
    sequential: median(sequential),
    concurrent: median(concurrent),
    sequentialRatio: median(sequential.map((c, i) => c / (sdk.sequential[i] as Run).tasksPerSecond)),
    concurrentRatio: median(concurrent.map((c, i) => c / (sdk.concurrent[i] as Run).tasksPerSecond)),
  };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

function mb(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-peer-'));
  try {
    const sdk = await sdkSide();
    const switchboard = await switchboardSide(join(dir, 'bench.db'));
    const echo = spawnEchoChild();
    const [sdkRaw, sbRaw] = await measureBoth([sdk, switchboard], echo, dir);
    await sdk.close();
    await switchboard.close();
    await echo.close();
    const sdkFigures = { ...sdkRaw, sequential: summary(sdkRaw.sequential), concurrent: summary(sdkRaw.concurrent) };
    const sbFigures = { ...sbRaw, sequential: summary(sbRaw.sequential), concurrent: summary(sbRaw.concurrent) };
    const sequentialRatio = roundRatio(sbRaw.sequential, sdkRaw.sequential);
    const concurrentRatio = roundRatio(sbRaw.concurrent, sdkRaw.concurrent);
    const total = WARMUP_TASKS + ROUNDS * (SEQUENTIAL_TASKS + CONCURRENT_TASKS);

    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    const us = (v: number) => `${v.toFixed(0)} µs`;
    const cpuMedian = (runs: Run[], key: 'serverCpuMicros' | 'clientCpuMicros') => median(runs.map((r) => r[key]));
    const ceilings = ceilingsOf(sbRaw.floors, sdkRaw);
    const rows: string[][] = [
      ['', '@a2a-js/sdk (HTTP, in-memory)', 'switchboard (stdio, SQLite)', 'switchboard / sdk'],
      [
        'sequential tasks/s',
        sdkFigures.sequential.tasksPerSecond.toFixed(0),
        sbFigures.sequential.tasksPerSecond.toFixed(0),
        `${sequentialRatio.toFixed(2)}x`,
      ],
      [
        'sequential p50',
        ms(sdkFigures.sequential.p50),
        ms(sbFigures.sequential.p50),
        ratio(sbFigures.sequential.p50, sdkFigures.sequential.p50),
      ],
      [
        'sequential p99',
        ms(sdkFigures.sequential.p99),
        ms(sbFigures.sequential.p99),
        ratio(sbFigures.sequential.p99, sdkFigures.sequential.p99),
      ],
      [
        `${IN_FLIGHT} in flight tasks/s`,
        sdkFigures.concurrent.tasksPerSecond.toFixed(0),
        sbFigures.concurrent.tasksPerSecond.toFixed(0),
        `${concurrentRatio.toFixed(2)}x`,
      ],
      [
        `${IN_FLIGHT} in flight p50`,
        ms(sdkFigures.concurrent.p50),
        ms(sbFigures.concurrent.p50),
        ratio(sbFigures.concurrent.p50, sdkFigures.concurrent.p50),
      ],
      [
        `${IN_FLIGHT} in flight p99`,
        ms(sdkFigures.concurrent.p99),
        ms(sbFigures.concurrent.p99),
        ratio(sbFigures.concurrent.p99, sdkFigures.concurrent.p99),
      ],
      [
        'server CPU per task, sequential',
        us(cpuMedian(sdkRaw.sequential, 'serverCpuMicros')),
        us(cpuMedian(sbRaw.sequential, 'serverCpuMicros')),
        ratio(cpuMedian(sbRaw.sequential, 'serverCpuMicros'), cpuMedian(sdkRaw.sequential, 'serverCpuMicros')),
      ],
      [
        `server CPU per task, ${IN_FLIGHT} in flight`,
        us(cpuMedian(sdkRaw.concurrent, 'serverCpuMicros')),
        us(cpuMedian(sbRaw.concurrent, 'serverCpuMicros')),
        ratio(cpuMedian(sbRaw.concurrent, 'serverCpuMicros'), cpuMedian(sdkRaw.concurrent, 'serverCpuMicros')),
      ],
      [
        `client CPU per task, ${IN_FLIGHT} in flight`,
        us(cpuMedian(sdkRaw.concurrent, 'clientCpuMicros')),
        us(cpuMedian(sbRaw.concurrent, 'clientCpuMicros')),
        ratio(cpuMedian(sbRaw.concurrent, 'clientCpuMicros'), cpuMedian(sdkRaw.concurrent, 'clientCpuMicros')),
      ],
      ['server RSS before', mb(sdkFigures.rssBefore), mb(sbFigures.rssBefore), ''],
      [`server RSS after ${total} tasks`, mb(sdkFigures.rssAfter), mb(sbFigures.rssAfter), ''],
      [
        'RSS growth',
        mb(sdkFigures.rssAfter - sdkFigures.rssBefore),
        mb(sbFigures.rssAfter - sbFigures.rssBefore),
        ratio(sbFigures.rssAfter - sbFigures.rssBefore, sdkFigures.rssAfter - sdkFigures.rssBefore),
      ],
    ];
    const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
    process.stdout.write(
      `bench:peer: one delegation = requester creates a task, worker completes it, requester learns the outcome\n` +
        `${ROUNDS} interleaved rounds of ${SEQUENTIAL_TASKS} sequential and ${CONCURRENT_TASKS} concurrent delegations per side; ` +
        `tasks/s and ratios are medians of the rounds (load average at the end: ${loadavg()[0]?.toFixed(1)})\n`,
    );
    for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ')}\n`);
    const shared = switchboard.commits?.();
    if (shared !== undefined) {
      process.stdout.write(
        `switchboard commits: ${shared.commits} transactions for ${shared.calls} calls over the whole run ` +
          `(${(shared.calls / shared.commits).toFixed(1)} calls each; sequential calls commit alone, ` +
          `concurrent ones share)\n`,
      );
    }
    const f = ceilings.floors;
    process.stdout.write(
      `floors of this machine, same run (medians): a bare NDJSON echo round trip ${us(f.echoMicros)}; ` +
        `the raw SQLite writes of one delegation ${us(f.rawSingleMicros)} with a commit per call, ` +
        `${us(f.rawGroupMicros)} at ${RAW_GROUP} per commit\n` +
        `ceilings (floors alone, none of a broker's own work): sequential 1 / (2 round trips + 2 commits) = ` +
        `${ceilings.sequential.toFixed(0)}/s = ${ceilings.sequentialRatio.toFixed(2)}x the SDK; ` +
        `concurrent 1 / (grouped SQLite writes) = ${ceilings.concurrent.toFixed(0)}/s = ` +
        `${ceilings.concurrentRatio.toFixed(2)}x the SDK\n`,
    );
    // Concurrently both processes work at once: at the target rate, server and
    // client together have the machine's cores for each delegation's CPU.
    const cores = availableParallelism();
    const targetRate = CONCURRENT_TARGET * sdkFigures.concurrent.tasksPerSecond;
    const sbCpu = cpuMedian(sbRaw.concurrent, 'serverCpuMicros') + cpuMedian(sbRaw.concurrent, 'clientCpuMicros');
    process.stdout.write(
      `CPU budget at the concurrent target (${CONCURRENT_TARGET}x the SDK = ${targetRate.toFixed(0)}/s on ${cores} cores): ` +
        `${us((cores * 1e6) / targetRate)} per delegation for server and client together; ` +
        `switchboard uses ${us(sbCpu)} (server ${us(cpuMedian(sbRaw.concurrent, 'serverCpuMicros'))}, ` +
        `client ${us(cpuMedian(sbRaw.concurrent, 'clientCpuMicros'))}), of which the raw SQLite writes alone are ${us(f.rawGroupMicros)}\n`,
    );
    process.stdout.write(
      `targets: sequential >= 3x (${sequentialRatio.toFixed(2)}x), ` +
        `concurrent >= 5x (${concurrentRatio.toFixed(2)}x), ` +
        `lower RSS growth (${mb(sbFigures.rssAfter - sbFigures.rssBefore)} vs ${mb(sdkFigures.rssAfter - sdkFigures.rssBefore)})\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

(process.argv.includes('--socket') ? runSocketVariant() : main()).catch((error: unknown) => {
  process.stderr.write(`bench:peer failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exitCode = 1;
});
