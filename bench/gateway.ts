/**
 * `npm run bench:gateway`: the same A2A delegation served over HTTP by
 *  - the official @a2a-js/sdk server (bench/peer-sdk-server.mjs: express,
 *    DefaultRequestHandler, InMemoryTaskStore; its agent completes each task
 *    at once, in memory): the reference of the target,
 *  - the same with the SDK's own durable store (DatabaseTaskStore on a SQLite
 *    file, WAL with synchronous=NORMAL as ours), for tasks durable on both
 *    sides, and
 *  - `switchboard gateway` in front of `switchboard serve` on a real SQLite
 *    file (durable tasks), with a worker process (bench/peer-socket-child.ts)
 *    that completes each task it is sent at once, and
 *  - the embedded gateway (bench/gateway-embedded-child.ts): broker, gateway
 *    and agent in one process, the broker on a real SQLite file, and
 *  - the floor (bench/gateway-floor-server.mjs): node:http and two SQLite
 *    transactions per task, nothing else; what any durable server spends
 *    here at the least (the machine's floor, not a contender), and
 *  - the broker's floor (bench/gateway-broker-floor-child.ts): the embedded
 *    side with a bare node:http front instead of its gateway (no keys, no
 *    checks, no client); what the broker itself spends over HTTP, so that
 *    the embedded side's cost splits into the broker's and the gateway's
 *    (not a contender either),
 * all driven by the same SDK client processes (bench/gateway-child.ts:
 * a blocking SendMessage, answered once the task has completed). Sequential
 * (one client process, one at a time) and 32 in flight (4 processes, 8
 * each); after BENCH_WARMUP runs of each (default 15: V8 is still compiling
 * the hot path before), the rounds interleave the sides, each going first in
 * turn. Figures:
 * tasks/s, p50/p99, and server CPU per task (from /proc's schedstat, all threads: the
 * SDK server's process; the sum of gateway, broker and worker on ours).
 * Target: ahead of the in-memory SDK server on both. A ratio is the median of
 * the per-round ratios.
 *
 * The broker holds at most A2A_MAX_TASKS_PER_CONTEXT tasks in the gateway's
 * context until a prune removes ended ones, so each run is that many tasks
 * at most, and ended tasks are pruned between runs (outside the measure).
 * Progress goes to stderr, figures to stdout. `BENCH_CPU_PROF=DIR`: the
 * gateway side's three processes write CPU profiles (`--cpu-prof`) to DIR.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { A2A_MAX_TASKS_PER_CONTEXT } from '../src/protocol/bounds.js';
import { type SwitchboardClient, connect } from '../src/transport/client.js';
import { SWITCHBOARD_BIN } from '../src/transport/serve-process.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 9);
/**
 * Warm-up runs per side and mode before the measured rounds. V8 goes on
 * compiling the hot path for a few thousand tasks: a side measured before
 * that is measured half cold: one at a time, both sides spent about twice
 * their steady CPU per task over their first 1,000 tasks.
 */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 15);
/** Per run: what the context may hold (a few left for the warm-up's stragglers). */
const TASKS = A2A_MAX_TASKS_PER_CONTEXT - 8;
const CLIENTS = 4;
const IN_FLIGHT = 32;

/** Node flags of the gateway side's processes: CPU profiles into BENCH_CPU_PROF when set. */
const PROFILE = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : [];

const EMBEDDED = fileURLToPath(new URL('./gateway-embedded-child.ts', import.meta.url));
const BROKER_FLOOR = fileURLToPath(new URL('./gateway-broker-floor-child.ts', import.meta.url));
const CLIENT = fileURLToPath(new URL('./gateway-child.ts', import.meta.url));
const WORKER = fileURLToPath(new URL('./peer-socket-child.ts', import.meta.url));

/**
 * A process's CPU time in µs, all its threads: the sum of their run times in
 * /proc/PID/task/TID/schedstat (nanoseconds). /proc/PID/stat counts in clock
 * ticks of 10 ms, more than the whole of a run of 120 tasks spends at times.
 * A thread that ends during a run takes its time with it; none of the
 * servers here starts or ends one per run (their threads live as long as
 * they do: V8's, the loader's, the broker's checkpoint thread).
 */
function cpuOf(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return ns / 1000;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** A process driven by JSON lines on stdin, answering one line per command. */
class Child {
  readonly process: ChildProcess;
  private readonly replies: ((line: Record<string, unknown>) => void)[] = [];
  readonly ready: Promise<unknown>;

  constructor(args: string[], env: NodeJS.ProcessEnv = process.env, flags: string[] = []) {
    this.process = spawn(process.execPath, [...flags, '--import', 'tsx', ...args], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env,
    });
    createInterface({ input: this.process.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      this.replies.shift()?.(JSON.parse(line) as Record<string, unknown>);
    });
    this.ready = this.next();
  }

  private next(): Promise<Record<string, unknown>> {
    return new Promise((resolve) => this.replies.push(resolve));
  }

  /** Sends one line and waits for the answer. */
  async command(line: string): Promise<Record<string, unknown>> {
    const reply = this.next();
    this.process.stdin?.write(`${line}\n`);
    return reply;
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
}

interface Side {
  name: string;
  /** The server's processes: their CPU is the server's. */
  pids: number[];
  clients: Child[];
  /** Between runs, outside the measure. */
  reset(): Promise<void>;
}

interface Run {
  tasksPerSecond: number;
  latencies: number[];
  serverCpuMicros: number;
  /** The same, per server process (in the order of `Side.pids`). */
  perProcessMicros: number[];
}

async function drive(side: Side, inFlight: number, round: number): Promise<Run> {
  const senders = inFlight === 1 ? [side.clients[round % side.clients.length] as Child] : side.clients;
  const perSender = Math.floor(TASKS / senders.length);
  const perLane = Math.max(1, Math.floor(inFlight / senders.length));
  const before = side.pids.map(cpuOf);
  const started = performance.now();
  const latencies = (await Promise.all(senders.map((s) => s.run(perSender, perLane)))).flat();
  const seconds = (performance.now() - started) / 1000;
  const total = perSender * senders.length;
  const perProcessMicros = side.pids.map((pid, i) => (cpuOf(pid) - (before[i] as number)) / total);
  const run = {
    tasksPerSecond: total / seconds,
    latencies,
    serverCpuMicros: perProcessMicros.reduce((a, b) => a + b, 0),
    perProcessMicros,
  };
  await side.reset();
  return run;
}

function lineOf(child: ChildProcess, pattern: RegExp, what: string): Promise<RegExpExecArray> {
  let text = '';
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`${what} exited (${code}): ${text.slice(-2000)}`)));
    const read = (chunk: Buffer) => {
      text += chunk.toString('utf8');
      const match = pattern.exec(text);
      if (match) resolve(match);
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', read);
  });
}

/**
 * A plain server of the A2A bench agent: the SDK's (its tasks in memory, or
 * with `sqlite` in its own `DatabaseTaskStore` on a SQLite file), or with
 * `floor` the bare durable server (bench/gateway-floor-server.mjs on that file).
 */
async function sdkSide(sqlite?: string, floor = false): Promise<{ side: Side; stop: () => Promise<void> }> {
  const script = fileURLToPath(
    new URL(floor ? './gateway-floor-server.mjs' : './peer-sdk-server.mjs', import.meta.url),
  );
  const args = sqlite === undefined ? [script] : floor ? [script, sqlite] : [script, '--sqlite', sqlite];
  const server = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = Number((await lineOf(server, /\{"port":(\d+)\}/, 'the SDK server'))[1]);
  const clients = Array.from({ length: CLIENTS }, () => new Child([CLIENT, `http://127.0.0.1:${port}/`]));
  await Promise.all(clients.map((c) => c.ready));
  return {
    side: {
      name: floor ? 'floor (bare, durable)' : sqlite === undefined ? 'SDK server' : 'SDK server, SQLite',
      pids: [server.pid as number],
      clients,
      reset: async () => {},
    },
    stop: async () => {
      await Promise.all(clients.map((c) => c.end()));
      server.kill('SIGTERM');
    },
  };
}

async function gatewaySide(dir: string): Promise<{ side: Side; stop: () => Promise<void> }> {
  const socket = join(dir, 'broker.sock');
  const keys = join(dir, 'keys.json');
  const serve = spawn(
    process.execPath,
    [
      ...PROFILE,
      SWITCHBOARD_BIN,
      'serve',
      '--db',
      join(dir, 'broker.db'),
      '--listen',
      `unix:${socket}`,
      '--log-level',
      'info',
    ],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  await lineOf(serve, /serving on unix:/, 'serve');
  const worker = new Child([WORKER, 'worker', '0', socket], process.env, PROFILE);
  await worker.ready;
  const added = spawnSync(
    process.execPath,
    [SWITCHBOARD_BIN, 'gateway', 'keys', 'add', 'bench', '--agents', 'worker-0', '--keys', keys],
    {
      encoding: 'utf8',
    },
  );
  if (added.status !== 0) throw new Error(`gateway keys add: ${added.stderr}`);
  const key = added.stdout.split('\n')[0] as string;
  const gateway = spawn(
    process.execPath,
    [
      ...PROFILE,
      SWITCHBOARD_BIN,
      'gateway',
      '--agents',
      'worker-0',
      '--socket',
      socket,
      '--keys',
      keys,
      '--listen',
      '127.0.0.1:0',
      '--rate',
      '100000',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const url = (await lineOf(gateway, /switchboard gateway on (http\S+)/, 'the gateway'))[1] as string;
  const clients = Array.from(
    { length: CLIENTS },
    () => new Child([CLIENT, `${url}/agents/worker-0/`], { ...process.env, BENCH_BEARER: key }),
  );
  await Promise.all(clients.map((c) => c.ready));
  const admin: SwitchboardClient = await connect({ socket });
  return {
    side: {
      name: 'switchboard gateway',
      pids: [gateway.pid as number, serve.pid as number, worker.process.pid as number],
      clients,
      reset: async () => {
        await admin.call('broker.tasks.prune', { endedBefore: new Date(Date.now() + 1000).toISOString() });
      },
    },
    stop: async () => {
      await Promise.all(clients.map((c) => c.end()));
      await admin.close();
      gateway.kill('SIGTERM');
      await new Promise((resolve) => gateway.once('exit', resolve));
      await worker.end();
      serve.kill('SIGTERM');
      await new Promise((resolve) => serve.once('exit', resolve));
    },
  };
}

/**
 * A side served by one process of ours that prints its URL and prunes on a
 * `prune` line, driven by CLIENTS client processes at `${url}${path}`.
 */
async function hostedSide(
  name: string,
  host: Child,
  path: string,
  clientEnv: NodeJS.ProcessEnv = process.env,
): Promise<{ side: Side; stop: () => Promise<void> }> {
  const { url } = (await host.ready) as { url: string };
  const clients = Array.from({ length: CLIENTS }, () => new Child([CLIENT, `${url}${path}`], clientEnv));
  await Promise.all(clients.map((c) => c.ready));
  return {
    side: {
      name,
      pids: [host.process.pid as number],
      clients,
      reset: async () => {
        await host.command('prune');
      },
    },
    stop: async () => {
      await Promise.all(clients.map((c) => c.end()));
      await host.end();
    },
  };
}

/** Gateway, broker and agent in one process (bench/gateway-embedded-child.ts). */
function embeddedSide(dir: string): Promise<{ side: Side; stop: () => Promise<void> }> {
  const keys = join(dir, 'embedded-keys.json');
  const added = spawnSync(
    process.execPath,
    [SWITCHBOARD_BIN, 'gateway', 'keys', 'add', 'bench', '--agents', 'worker-0', '--keys', keys],
    { encoding: 'utf8' },
  );
  if (added.status !== 0) throw new Error(`gateway keys add: ${added.stderr}`);
  const key = added.stdout.split('\n')[0] as string;
  const host = new Child([EMBEDDED, join(dir, 'embedded.db'), keys], process.env, PROFILE);
  return hostedSide('embedded gateway', host, '/agents/worker-0/', { ...process.env, BENCH_BEARER: key });
}

/** The embedded side without its gateway (bench/gateway-broker-floor-child.ts). */
function brokerFloorSide(dir: string): Promise<{ side: Side; stop: () => Promise<void> }> {
  const host = new Child([BROKER_FLOOR, join(dir, 'broker-floor.db')], process.env, PROFILE);
  return hostedSide("broker's floor", host, '/');
}

function fmt(n: number, digits = 0): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

async function main() {
  const dir = mkdtempSync(join(tmpdir(), 'bench-gateway-'));
  const sdk = await sdkSide();
  const sdkSqlite = await sdkSide(join(dir, 'sdk.db'));
  const ours = await gatewaySide(dir);
  const embedded = await embeddedSide(dir);
  const floor = await sdkSide(join(dir, 'floor.db'), true);
  const brokerFloor = await brokerFloorSide(dir);
  const sides = [sdk.side, sdkSqlite.side, ours.side, embedded.side, floor.side, brokerFloor.side];
  const runs = new Map(sides.map((s) => [s.name, { sequential: [] as Run[], concurrent: [] as Run[] }]));
  try {
    for (let w = 0; w < WARMUP; w++) {
      for (const side of sides) {
        await drive(side, IN_FLIGHT, w);
        await drive(side, 1, w);
      }
      process.stderr.write(`warming up ${w + 1}/${WARMUP}\n`);
    }
    for (let round = 0; round < ROUNDS; round++) {
      // Each side goes first in turn, the others after it in order.
      const order = sides.map((_, i) => sides[(i + round) % sides.length] as Side);
      for (const side of order) {
        const r = runs.get(side.name) as { sequential: Run[]; concurrent: Run[] };
        r.sequential.push(await drive(side, 1, round));
        r.concurrent.push(await drive(side, IN_FLIGHT, round));
      }
      process.stderr.write(`round ${round + 1}/${ROUNDS}\n`);
    }
  } finally {
    await sdk.stop();
    await sdkSqlite.stop();
    await ours.stop();
    await embedded.stop();
    await floor.stop();
    await brokerFloor.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  const lines = [
    `bench:gateway: ${ROUNDS} rounds of ${TASKS} tasks per side and mode after ${WARMUP} of warm-up; medians (load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')})`,
  ];
  for (const mode of ['sequential', 'concurrent'] as const) {
    const of = (side: Side) => (runs.get(side.name) as { sequential: Run[]; concurrent: Run[] })[mode];
    /** Medians of the rounds' ratios, a's figure over b's. */
    const rateRatio = (a: Run[], b: Run[]) =>
      median(a.map((run, i) => run.tasksPerSecond / (b[i] as Run).tasksPerSecond));
    const cpuRatio = (a: Run[], b: Run[]) =>
      median(a.map((run, i) => run.serverCpuMicros / (b[i] as Run).serverCpuMicros));
    lines.push(`${mode === 'sequential' ? 'sequential' : `${IN_FLIGHT} in flight`}:`);
    for (const side of sides) {
      const r = runs.get(side.name) as { sequential: Run[]; concurrent: Run[] };
      const latencies = r[mode].flatMap((run) => run.latencies).sort((x, y) => x - y);
      lines.push(
        `  ${side.name.padEnd(20)} ${fmt(median(r[mode].map((run) => run.tasksPerSecond))).padStart(6)} tasks/s  p50 ${fmt(percentile(latencies, 50), 2)} ms  p99 ${fmt(percentile(latencies, 99), 2)} ms  server CPU ${fmt(median(r[mode].map((run) => run.serverCpuMicros)))} µs/task`,
      );
    }
    const b = runs.get(ours.side.name) as { sequential: Run[]; concurrent: Run[] };
    const split = ['gateway', 'broker', 'worker'].map(
      (name, i) => `${name} ${fmt(median(b[mode].map((run) => run.perProcessMicros[i] as number)))}`,
    );
    lines.push(`  ${ours.side.name}'s CPU per task by process (µs): ${split.join(', ')}`);
    for (const side of [ours.side, embedded.side]) {
      for (const reference of [sdk.side, sdkSqlite.side]) {
        const rate = rateRatio(of(side), of(reference));
        const cpu = cpuRatio(of(reference), of(side));
        lines.push(
          `  ${side.name} against the ${reference.name} (medians of the rounds' ratios): tasks/s ${rate.toFixed(2)}; server CPU per task SDK/ours ${cpu.toFixed(2)} (above 1: ours spends less)`,
        );
      }
      lines.push(
        `  ${side.name}: server CPU per task ${cpuRatio(of(side), of(floor.side)).toFixed(2)} times the floor's`,
      );
    }
    // What the broker spends before any gateway, and the embedded gateway's share of its side's cost.
    const bare = of(brokerFloor.side);
    lines.push(
      `  ${brokerFloor.side.name} against the ${sdk.side.name}: tasks/s ${rateRatio(bare, of(sdk.side)).toFixed(2)}; server CPU per task SDK/ours ${cpuRatio(of(sdk.side), bare).toFixed(2)} (the most a gateway on this broker could reach)`,
      `  ${brokerFloor.side.name}: server CPU per task ${cpuRatio(bare, of(floor.side)).toFixed(2)} times the floor's; the embedded gateway's ${cpuRatio(of(embedded.side), bare).toFixed(2)} times the broker's floor's`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
