/**
 * `npm run bench:peer -- --socket` (or `npm run bench:peer:socket`): the
 * socket variant of bench:peer. One host broker, `switchboard serve --listen
 * unix:PATH` on a real SQLite file (durability normal), with 4 requester
 * processes and 4 worker processes connected to its socket (this package's
 * client); against the official @a2a-js/sdk server over JSON-RPC/HTTP with
 * the same 8 client processes (its worker is its executor, in its server).
 * Sequential (one delegation at a time, one client process) and 32 in flight
 * (spread over the client processes); the rounds interleave the sides. A
 * third side, the transport floor (bench/relay-server.mjs), serves the same
 * client processes with no validation and no storage: what the wire alone
 * costs a server here.
 *
 * The figure to trust on a noisy machine is the broker's CPU per delegation
 * (its process, all threads, from /proc), printed beside the CPU of the raw
 * SQLite writes of one delegation measured in the same run (bench/raw-delegation.ts:
 * one commit per call, and 32 delegations per commit). Targets: ahead of the
 * SDK on every figure; broker CPU per delegation at most 2x the raw writes;
 * 32-in-flight throughput at least 4x the SDK's. Commits per call over the
 * whole run are printed from the broker's closing log line.
 * `BENCH_SERVE_PROF=DIR` runs the broker under `--cpu-prof` and leaves its
 * profiles (one per thread) in DIR; `BENCH_CLIENT_PROF=DIR` does the same
 * for the client processes.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SWITCHBOARD_BIN } from '../src/transport/serve-process.js';
import { rawDelegations } from './raw-delegation.js';

const ROUNDS = 3;
const WARMUP_TASKS = 400;
const SEQUENTIAL_TASKS = 400;
const CONCURRENT_TASKS = 3200;
const IN_FLIGHT = 32;
const REQUESTERS = 4;
const WORKERS = 4;
const SDK_CLIENTS = REQUESTERS + WORKERS;
const RAW_SINGLE = 1000;
const RAW_GROUPED = 4000;
const RAW_GROUP = 32;

/**
 * Knobs for profiling one side or one mode (the figures of a partial run
 * print as NaN where the other side is missing): BENCH_ONLY=switchboard skips
 * the SDK's rounds; BENCH_MODE=sequential or concurrent runs that mode alone.
 */
const ONLY_SWITCHBOARD = process.env.BENCH_ONLY === 'switchboard';
const MODE = process.env.BENCH_MODE ?? 'both';

const CHILD = fileURLToPath(new URL('./peer-socket-child.ts', import.meta.url));

function cpuOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
}

function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** A bench client process driven by JSON lines. */
class Child {
  readonly process: ChildProcess;
  private readonly replies: ((line: Record<string, unknown>) => void)[] = [];
  readonly ready: Promise<unknown>;

  constructor(role: string, index: number, target: string) {
    const profile = process.env.BENCH_CLIENT_PROF;
    const flags = profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [];
    this.process = spawn(process.execPath, [...flags, '--import', 'tsx', CHILD, role, String(index), target], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    if (!this.process.stdout) throw new Error('no stdout');
    createInterface({ input: this.process.stdout }).on('line', (line) => {
      this.replies.shift()?.(JSON.parse(line) as Record<string, unknown>);
    });
    this.ready = this.next();
  }

  private next(): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.replies.push(resolve));
  }

  async run(tasks: number, inFlight: number): Promise<number[]> {
    const reply = this.next();
    this.process.stdin?.write(`${JSON.stringify({ run: { tasks, inFlight } })}\n`);
    return (await reply).latencies as number[];
  }

  async end(): Promise<void> {
    const exited = new Promise((resolve) => this.process.once('exit', resolve));
    this.process.stdin?.end();
    await exited;
  }

  get pid(): number {
    return this.process.pid as number;
  }
}

interface Side {
  name: string;
  serverPid: number;
  /** The processes that send (requesters, SDK clients); all client processes for CPU. */
  senders: Child[];
  clients: Child[];
}

interface Figures {
  sequential: Run[];
  concurrent: Run[];
}

interface Run {
  tasksPerSecond: number;
  latencies: number[];
  serverCpuMicros: number;
  clientCpuMicros: number;
}

/** `tasks` delegations, `inFlight` at a time, spread over the first senders (one per sender up to their number). */
async function drive(side: Side, tasks: number, inFlight: number, round: number): Promise<Run> {
  const senders = inFlight === 1 ? [side.senders[round % side.senders.length] as Child] : side.senders;
  const perSender = Math.ceil(tasks / senders.length);
  const perLane = Math.max(1, Math.floor(inFlight / senders.length));
  const serverBefore = cpuOf(side.serverPid);
  const clientsBefore = side.clients.reduce((sum, c) => sum + cpuOf(c.pid), 0);
  const started = performance.now();
  const latencies = (await Promise.all(senders.map((s) => s.run(perSender, perLane)))).flat();
  const seconds = (performance.now() - started) / 1000;
  const total = perSender * senders.length;
  return {
    tasksPerSecond: total / seconds,
    latencies,
    serverCpuMicros: (cpuOf(side.serverPid) - serverBefore) / total,
    clientCpuMicros: (side.clients.reduce((sum, c) => sum + cpuOf(c.pid), 0) - clientsBefore) / total,
  };
}

async function startServe(db: string, socket: string): Promise<{ child: ChildProcess; stderr: () => string }> {
  const child = spawn(
    process.execPath,
    [
      ...(process.env.BENCH_SERVE_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_SERVE_PROF}`] : []),
      SWITCHBOARD_BIN,
      'serve',
      '--db',
      db,
      '--listen',
      `unix:${socket}`,
      '--log-level',
      'info',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (text: string) => {
    stderr += text;
  });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`serve exited (${code}): ${stderr}`)));
    const check = setInterval(() => {
      if (stderr.includes('serving on unix:')) {
        clearInterval(check);
        resolve();
      }
    }, 20);
  });
  return { child, stderr: () => stderr };
}

async function startSdk(): Promise<{ child: ChildProcess; url: string }> {
  const script = fileURLToPath(new URL('./peer-sdk-server.mjs', import.meta.url));
  const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the SDK server exited (${code})`)));
    child.stdout?.once('data', (line: Buffer) => resolve((JSON.parse(line.toString('utf8')) as { port: number }).port));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** The transport floor (bench/relay-server.mjs) listening on `socket`. */
async function startRelay(socket: string): Promise<ChildProcess> {
  const script = fileURLToPath(new URL('./relay-server.mjs', import.meta.url));
  const child = spawn(process.execPath, [script, socket], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the relay exited (${code})`)));
    child.stdout?.once('data', () => resolve());
  });
  return child;
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

export async function runSocketVariant(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-socket-'));
  try {
    const socket = join(dir, 'broker.sock');
    const serve = await startServe(join(dir, 'bench.db'), socket);
    const sdk = await startSdk();
    const relaySocket = join(dir, 'relay.sock');
    const relay = await startRelay(relaySocket);
    const workers = Array.from({ length: WORKERS }, (_, i) => new Child('worker', i, socket));
    const requesters = Array.from({ length: REQUESTERS }, (_, i) => new Child('requester', i, socket));
    const sdkClients = Array.from({ length: SDK_CLIENTS }, (_, i) => new Child('sdk', i, sdk.url));
    const relayWorkers = Array.from({ length: WORKERS }, (_, i) => new Child('worker', i, relaySocket));
    const relayRequesters = Array.from({ length: REQUESTERS }, (_, i) => new Child('requester', i, relaySocket));
    const children = [...workers, ...requesters, ...sdkClients, ...relayWorkers, ...relayRequesters];
    await Promise.all(children.map((c) => c.ready));
    const sides: Side[] = [
      { name: '@a2a-js/sdk', serverPid: sdk.child.pid as number, senders: sdkClients, clients: sdkClients },
      {
        name: 'switchboard',
        serverPid: serve.child.pid as number,
        senders: requesters,
        clients: [...requesters, ...workers],
      },
      {
        name: 'relay floor',
        serverPid: relay.pid as number,
        senders: relayRequesters,
        clients: [...relayRequesters, ...relayWorkers],
      },
    ];
    const figures = sides.map(() => ({ sequential: [] as Run[], concurrent: [] as Run[] }));
    const raw = { single: [] as number[], group: [] as number[] };
    for (const side of sides) {
      if (ONLY_SWITCHBOARD && side.name !== 'switchboard') continue;
      process.stderr.write(`${side.name}: warm-up (${WARMUP_TASKS} tasks)\n`);
      await drive(side, WARMUP_TASKS, IN_FLIGHT, 0);
    }
    for (let round = 0; round < ROUNDS; round++) {
      // The order rotates round by round, so that no side always runs first.
      const order = [0, 1, 2].map((k) => (k + round) % 3).filter((i) => !ONLY_SWITCHBOARD || i === 1);
      for (const i of order) {
        if (MODE === 'concurrent') break;
        process.stderr.write(`round ${round + 1}, ${sides[i]?.name}: sequential (${SEQUENTIAL_TASKS})\n`);
        figures[i]?.sequential.push(await drive(sides[i] as Side, SEQUENTIAL_TASKS, 1, round));
      }
      for (const i of order) {
        if (MODE === 'sequential') break;
        process.stderr.write(`round ${round + 1}, ${sides[i]?.name}: ${IN_FLIGHT} in flight (${CONCURRENT_TASKS})\n`);
        figures[i]?.concurrent.push(await drive(sides[i] as Side, CONCURRENT_TASKS, IN_FLIGHT, round));
      }
      process.stderr.write(`round ${round + 1}: raw SQLite delegations\n`);
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
      // CPU, as the servers' figures are: wall time would count the moments another process had the core.
      raw.single.push(single.cpuMicros);
      raw.group.push(group.cpuMicros);
    }
    await Promise.all(children.map((c) => c.end()));
    await stop(serve.child);
    await stop(sdk.child);
    await stop(relay);

    const [a, b, floor] = figures as [Figures, Figures, Figures];
    const rate = (runs: Run[]) => median(runs.map((r) => r.tasksPerSecond));
    const lat = (runs: Run[], p: number) =>
      percentile(
        runs.flatMap((r) => r.latencies).sort((x, y) => x - y),
        p,
      );
    const cpu = (runs: Run[], key: 'serverCpuMicros' | 'clientCpuMicros') => median(runs.map((r) => r[key]));
    const ratioOfRounds = (x: Run[], y: Run[]) =>
      median(x.map((r, i) => r.tasksPerSecond / (y[i]?.tasksPerSecond ?? Number.NaN)));
    const us = (v: number) => `${v.toFixed(0)} µs`;
    const ms = (v: number) => `${v.toFixed(2)} ms`;
    const x = (v: number) => `${v.toFixed(2)}x`;
    const rawSingle = median(raw.single);
    const rawGroup = median(raw.group);
    const rows: string[][] = [
      ['', '@a2a-js/sdk (HTTP, 8 clients)', 'switchboard (socket, 4+4)', 'switchboard vs sdk'],
      [
        'sequential tasks/s',
        rate(a.sequential).toFixed(0),
        rate(b.sequential).toFixed(0),
        x(ratioOfRounds(b.sequential, a.sequential)),
      ],
      [
        'sequential p50',
        ms(lat(a.sequential, 50)),
        ms(lat(b.sequential, 50)),
        x(lat(b.sequential, 50) / lat(a.sequential, 50)),
      ],
      [
        'sequential p99',
        ms(lat(a.sequential, 99)),
        ms(lat(b.sequential, 99)),
        x(lat(b.sequential, 99) / lat(a.sequential, 99)),
      ],
      [
        `${IN_FLIGHT} in flight tasks/s`,
        rate(a.concurrent).toFixed(0),
        rate(b.concurrent).toFixed(0),
        x(ratioOfRounds(b.concurrent, a.concurrent)),
      ],
      [
        `${IN_FLIGHT} in flight p50`,
        ms(lat(a.concurrent, 50)),
        ms(lat(b.concurrent, 50)),
        x(lat(b.concurrent, 50) / lat(a.concurrent, 50)),
      ],
      [
        `${IN_FLIGHT} in flight p99`,
        ms(lat(a.concurrent, 99)),
        ms(lat(b.concurrent, 99)),
        x(lat(b.concurrent, 99) / lat(a.concurrent, 99)),
      ],
      [
        'server CPU per delegation, sequential',
        us(cpu(a.sequential, 'serverCpuMicros')),
        us(cpu(b.sequential, 'serverCpuMicros')),
        x(cpu(b.sequential, 'serverCpuMicros') / cpu(a.sequential, 'serverCpuMicros')),
      ],
      [
        `server CPU per delegation, ${IN_FLIGHT} in flight`,
        us(cpu(a.concurrent, 'serverCpuMicros')),
        us(cpu(b.concurrent, 'serverCpuMicros')),
        x(cpu(b.concurrent, 'serverCpuMicros') / cpu(a.concurrent, 'serverCpuMicros')),
      ],
      [
        `clients CPU per delegation, ${IN_FLIGHT} in flight`,
        us(cpu(a.concurrent, 'clientCpuMicros')),
        us(cpu(b.concurrent, 'clientCpuMicros')),
        x(cpu(b.concurrent, 'clientCpuMicros') / cpu(a.concurrent, 'clientCpuMicros')),
      ],
    ];
    const widths = rows[0]?.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length))) ?? [];
    process.stdout.write(
      `bench:peer --socket: ${REQUESTERS} requester + ${WORKERS} worker processes on one broker's socket vs the SDK with ${SDK_CLIENTS} client processes over HTTP\n` +
        `${ROUNDS} interleaved rounds of ${SEQUENTIAL_TASKS} sequential and ${CONCURRENT_TASKS} at ${IN_FLIGHT} in flight per side; medians of the rounds (load average at the end: ${loadavg()[0]?.toFixed(1)})\n`,
    );
    for (const row of rows) process.stdout.write(`${row.map((cell, c) => cell.padEnd(widths[c] ?? 0)).join('  ')}\n`);
    const closing = serve
      .stderr()
      .split('\n')
      .find((l) => l.includes('a2a broker closed'));
    const stats = closing === undefined ? undefined : (JSON.parse(closing) as { commits: number; calls: number });
    if (stats !== undefined) {
      process.stdout.write(
        `broker commits: ${stats.commits} transactions for ${stats.calls} calls over the whole run (${(stats.calls / stats.commits).toFixed(2)} calls per commit, ${(stats.commits / stats.calls).toFixed(2)} commits per call)\n`,
      );
    }
    const seqCpu = cpu(b.sequential, 'serverCpuMicros');
    const conCpu = cpu(b.concurrent, 'serverCpuMicros');
    process.stdout.write(
      `raw SQLite writes of one delegation, same run (medians of their CPU): ${us(rawSingle)} with a commit per call, ${us(rawGroup)} at ${RAW_GROUP} per commit\n` +
        `broker CPU per delegation over the raw writes (target <= 2x): sequential ${us(seqCpu)} / ${us(rawSingle)} = ${x(seqCpu / rawSingle)}, ` +
        `${IN_FLIGHT} in flight ${us(conCpu)} / ${us(rawGroup)} = ${x(conCpu / rawGroup)}\n` +
        `${IN_FLIGHT}-in-flight throughput over the SDK's (target >= 4x): ${x(ratioOfRounds(b.concurrent, a.concurrent))}\n`,
    );
    const floorSeq = cpu(floor.sequential, 'serverCpuMicros');
    const floorCon = cpu(floor.concurrent, 'serverCpuMicros');
    const floorClients = cpu(floor.concurrent, 'clientCpuMicros');
    const sdkSeq = cpu(a.sequential, 'serverCpuMicros');
    const sdkTotal = cpu(a.concurrent, 'serverCpuMicros') + cpu(a.concurrent, 'clientCpuMicros');
    process.stdout.write(
      `transport floor (bench/relay-server.mjs: the same clients and calls, no validation and no storage): server CPU per delegation ` +
        `sequential ${us(floorSeq)}, ${IN_FLIGHT} in flight ${us(floorCon)} (clients ${us(floorClients)}; ${rate(floor.concurrent).toFixed(0)} tasks/s)\n` +
        `floor of a socket broker that keeps the rows (relay + raw writes) over the raw writes: ` +
        `sequential ${us(floorSeq + rawSingle)} = ${x((floorSeq + rawSingle) / rawSingle)}, ` +
        `${IN_FLIGHT} in flight ${us(floorCon + rawGroup)} = ${x((floorCon + rawGroup) / rawGroup)}; ` +
        `broker CPU over that floor: sequential ${x(seqCpu / (floorSeq + rawSingle))}, ${IN_FLIGHT} in flight ${x(conCpu / (floorCon + rawGroup))}\n` +
        `that floor sequential over the SDK server's CPU: ${x((floorSeq + rawSingle) / sdkSeq)}; ` +
        `CPU-bound ceiling of ${IN_FLIGHT}-in-flight throughput over the SDK's (its server and clients' CPU per delegation over the floor's with its clients): ` +
        `${x(sdkTotal / (floorCon + rawGroup + floorClients))}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
