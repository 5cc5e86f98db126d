/**
 * `npm run bench:redis`: hops per second through the Redis Streams work bus
 * (`RedisQueue`) with 1, 2 and 4 worker PROCESSES, against BullMQ 6.7 doing
 * the same no-op jobs and raw `XADD` / `XREADGROUP` / `XACK` in batches, all
 * in the same run on the local Redis (127.0.0.1:6379, or REDIS_URL).
 *
 * A hop here is publish + lease + ack of one no-op job. Worker processes are
 * children of this script (the same file, `child` mode). The switchboard
 * workers run a minimal consume/ack loop on the `WorkQueue` interface (2
 * concurrent loops per process, `consume` up to 64 deliveries, then
 * `ackMany`: at most 128 leased per process, raw's loops hold up to 200),
 * not the worker harness, so the figure is the bus's own cost;
 * BullMQ workers are `Worker`s with concurrency 32; raw workers run 2 loops of
 * `XREADGROUP COUNT 100 BLOCK` + one `XACK` of the batch. Every job carries the
 * same ~170-byte envelope. The parent produces in batches of 100 (one
 * `publishMany` script call, one `addBulk`, or a pipeline of 100 `XADD`s)
 * while the workers consume; time runs from the first publish to the last ack
 * reported by the workers. Each configuration runs ROUNDS rounds with the same
 * worker processes; the table shows medians. CPU of redis-server, the workers
 * and the producer comes from /proc over each round (100% = one core), and
 * the whole machine's busy share from /proc/stat (other work on a shared
 * machine shows there).
 *
 * Progress goes to stderr, the table to stdout. Keys use their own prefix and
 * are deleted at the end.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from 'bullmq';
import { createClient } from 'redis';
import { createRedisQueue } from '../src/bus/redis/queue.js';
import type { Delivery, PublishRequest } from '../src/bus/work-queue.js';
import type { WorkEnvelope } from '../src/protocol/work-envelope.js';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const ROUNDS = 3;
const BATCH = 100;
/** BENCH_PROCESSES=1,2 and BENCH_SYSTEMS=raw,switchboard narrow a run (the table needs all three systems). */
const PROCESSES = (process.env.BENCH_PROCESSES ?? '1,2,4').split(',').map(Number);
const SYSTEMS = (process.env.BENCH_SYSTEMS ?? 'switchboard,bullmq,raw').split(',') as System[];
const JOBS: Record<System, number> = { switchboard: 12_000, bullmq: 5_000, raw: 40_000 };
const SB_LOOPS = 2;
const SB_MAX = 64;
const BULL_CONCURRENCY = 32;
const RAW_LOOPS = 2;
const RAW_COUNT = 100;

type System = 'switchboard' | 'bullmq' | 'raw';

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
    headers: { taskId: `task-${i}`, runId: 'bench-run', hop: 0, attempt: 1, idempotencyKey: `hop-${i}` },
    message: { role: 'user', parts: [{ kind: 'text', text: `no-op job ${i}` }] },
  };
}

function adminClient() {
  return createClient({ url: REDIS_URL });
}
type Admin = ReturnType<typeof adminClient>;

function redisConnection(): { host: string; port: number } {
  const u = new URL(REDIS_URL);
  return { host: u.hostname, port: Number(u.port || 6379) };
}

// ------------------------------------------------------------------ child (a worker process)

async function child(system: System, prefix: string): Promise<void> {
  let round = -1;
  let name = '';
  let acked = 0;
  let controller = new AbortController();
  let scheduled = false;
  const report = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      process.stdout.write(`a ${round} ${acked}\n`);
    });
  };
  const loops: Promise<void>[] = [];

  const sb = system === 'switchboard' ? await createRedisQueue({ url: REDIS_URL, prefix }) : undefined;
  const raw =
    system === 'raw' ? Array.from({ length: RAW_LOOPS }, () => createClient({ url: REDIS_URL, RESP: 2 })) : [];
  for (const c of raw) await c.connect();
  let bull: Worker | undefined;

  const sbLoop = async (n: number, signal: AbortSignal) => {
    while (!signal.aborted) {
      let got: Delivery[];
      try {
        got = await sb!.consume(name, {
          consumer: `w${process.pid}-${n}`,
          visibilityTimeoutMs: 30_000,
          max: SB_MAX,
          waitMs: 200,
          signal,
        });
      } catch (error) {
        if (signal.aborted) return;
        throw error;
      }
      if (got.length === 0) continue;
      const ok = await sb!.ackMany(got);
      acked += ok.filter(Boolean).length;
      report();
    }
  };
  const rawLoop = async (n: number, signal: AbortSignal) => {
    const c = raw[n]!;
    while (!signal.aborted) {
      const reply = (await c.sendCommand([
        'XREADGROUP',
        'GROUP',
        'g',
        `w${process.pid}-${n}`,
        'COUNT',
        String(RAW_COUNT),
        'BLOCK',
        '100',
        'STREAMS',
        name,
        '>',
      ])) as [string, [string, string[]][]][] | null;
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) continue;
      await c.sendCommand(['XACK', name, 'g', ...entries.map(([id]) => id)]);
      acked += entries.length;
      report();
    }
  };

  const lines = createInterface({ input: process.stdin });
  process.stdout.write('ready\n');
  for await (const line of lines) {
    const [cmd, r, n] = line.split(' ');
    if (cmd === 'go') {
      round = Number(r);
      name = n!;
      acked = 0;
      controller = new AbortController();
      const signal = controller.signal;
      if (system === 'switchboard') {
        for (let i = 0; i < SB_LOOPS; i++) loops.push(sbLoop(i, signal));
      } else if (system === 'raw') {
        for (let i = 0; i < RAW_LOOPS; i++) loops.push(rawLoop(i, signal));
      } else {
        bull = new Worker(name, async () => undefined, {
          connection: redisConnection(),
          prefix,
          concurrency: BULL_CONCURRENCY,
        });
        bull.on('completed', () => {
          acked++;
          report();
        });
      }
    } else if (cmd === 'stop') {
      controller.abort();
      await Promise.all(loops.splice(0));
      if (bull !== undefined) {
        await bull.close();
        bull = undefined;
      }
      process.stdout.write(`a ${round} ${acked}\nstopped ${round}\n`);
    } else if (cmd === 'exit') {
      break;
    }
  }
  await sb?.close();
  for (const c of raw) await c.close();
  process.exit(0);
}

// ------------------------------------------------------------------ parent

interface WorkerProc {
  child: ChildProcess;
  acked: Map<number, number>;
  waiters: ((line: string) => void)[];
}

function spawnWorker(system: System, prefix: string): WorkerProc {
  const path = fileURLToPath(import.meta.url);
  const c = spawn(process.execPath, ['--import', 'tsx', path, 'child', system, prefix], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const proc: WorkerProc = { child: c, acked: new Map(), waiters: [] };
  createInterface({ input: c.stdout! }).on('line', (line) => {
    if (line.startsWith('a ')) {
      const [, r, n] = line.split(' ');
      proc.acked.set(Number(r), Math.max(proc.acked.get(Number(r)) ?? 0, Number(n)));
    }
    for (const w of proc.waiters.splice(0)) w(line);
  });
  return proc;
}

function nextLine(proc: WorkerProc, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const check = (line: string) => {
      if (line.startsWith(prefix)) resolve(line);
      else proc.waiters.push(check);
    };
    proc.waiters.push(check);
    proc.child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
  });
}

/** utime + stime of a process, in clock ticks (100 per second). */
function cpuTicks(pid: number | undefined): number {
  if (pid === undefined) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

/** Busy and total jiffies of all CPUs (/proc/stat), for the whole machine's load. */
function machineTicks(): { busy: number; total: number } {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const v = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = (v[3] ?? 0) + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return { busy: 0, total: 0 };
  }
}

interface Producer {
  prepare(round: number): Promise<string>;
  publish(name: string, from: number, to: number): Promise<void>;
  cleanup(): Promise<void>;
}

async function producerFor(system: System, prefix: string, admin: Admin): Promise<Producer> {
  if (system === 'switchboard') {
    const queue = await createRedisQueue({ url: REDIS_URL, prefix });
    return {
      prepare: async (round) => `noop-${round}`,
      async publish(name, from, to) {
        const batch: PublishRequest[] = [];
        for (let j = from; j < to; j++) batch.push({ role: name, envelope: envelope(j), idempotencyKey: `k${j}` });
        await queue.publishMany(batch);
      },
      cleanup: () => queue.close(),
    };
  }
  if (system === 'bullmq') {
    const queues = new Map<string, Queue>();
    return {
      async prepare(round) {
        const name = `noop-${round}`;
        const q = new Queue(name, { connection: redisConnection(), prefix });
        await q.obliterate({ force: true });
        queues.set(name, q);
        return name;
      },
      async publish(name, from, to) {
        const batch = [];
        for (let j = from; j < to; j++) {
          batch.push({ name: 'noop', data: envelope(j), opts: { jobId: `k${j}`, removeOnComplete: true } });
        }
        await queues.get(name)!.addBulk(batch);
      },
      async cleanup() {
        for (const q of queues.values()) {
          await q.obliterate({ force: true }).catch(() => undefined);
          await q.close();
        }
      },
    };
  }
  return {
    async prepare(round) {
      const name = `{${prefix}}:raw-${round}`;
      await admin.del(name);
      await admin.sendCommand(['XGROUP', 'CREATE', name, 'g', '0', 'MKSTREAM']);
      return name;
    },
    async publish(name, from, to) {
      const multi = admin.multi();
      for (let j = from; j < to; j++) multi.xAdd(name, '*', { d: JSON.stringify(envelope(j)) });
      await multi.execAsPipeline();
    },
    cleanup: async () => undefined,
  };
}

interface Measure {
  rate: number;
  redisCpu: number;
  workerCpu: number;
  producerCpu: number;
  /** Busy share of all the machine's CPUs over the round (everything running, not only this bench). */
  machineBusy: number;
  /** CPU time (redis-server + workers + producer) per hop, in microseconds: load-independent efficiency. */
  cpuPerHopUs: number;
}

interface Fleet {
  system: System;
  workers: WorkerProc[];
  producer: Producer;
}

/** One round of one system: publish JOBS while its workers consume; time to the last ack. */
async function runRound(fleet: Fleet, processes: number, round: number, redisPid: number | undefined, r: number) {
  const { system, workers, producer } = fleet;
  const jobs = JOBS[system];
  const name = await producer.prepare(round);
  for (const w of workers) w.child.stdin!.write(`go ${round} ${name}\n`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const redis0 = cpuTicks(redisPid);
  const workers0 = workers.reduce((sum, w) => sum + cpuTicks(w.child.pid), 0);
  const self0 = process.cpuUsage();
  const machine0 = machineTicks();
  const started = performance.now();
  for (let i = 0; i < jobs; i += BATCH) await producer.publish(name, i, Math.min(jobs, i + BATCH));
  const total = () => workers.reduce((sum, w) => sum + (w.acked.get(round) ?? 0), 0);
  const deadline = Date.now() + 60_000;
  while (total() < jobs) {
    if (Date.now() > deadline) throw new Error(`${system} round ${round}: ${total()} of ${jobs} acked in 60 s`);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  const elapsed = performance.now() - started;
  const seconds = elapsed / 1000;
  const redisCpu = (cpuTicks(redisPid) - redis0) / 100 / seconds;
  const workerCpu = (workers.reduce((sum, w) => sum + cpuTicks(w.child.pid), 0) - workers0) / 100 / seconds;
  const self = process.cpuUsage(self0);
  const producerCpu = (self.user + self.system) / 1e6 / seconds;
  const machine1 = machineTicks();
  const machineBusy = (machine1.busy - machine0.busy) / Math.max(1, machine1.total - machine0.total);
  for (const w of workers) w.child.stdin!.write('stop\n');
  await Promise.all(workers.map((w) => nextLine(w, 'stopped')));
  const rate = (jobs / elapsed) * 1000;
  const cpuPerHopUs = ((redisCpu + workerCpu + producerCpu) * seconds * 1e6) / jobs;
  log(
    `  ${system} p=${processes} round ${r + 1}: ${jobs} hops in ${elapsed.toFixed(0)} ms = ${rate.toFixed(0)}/s` +
      ` (cpu: redis ${pct(redisCpu)}, workers ${pct(workerCpu)}, producer ${pct(producerCpu)}; ${cpuPerHopUs.toFixed(0)} us of CPU per hop; machine ${pct(machineBusy)} busy)`,
  );
  return { rate, redisCpu, workerCpu, producerCpu, machineBusy, cpuPerHopUs };
}

/**
 * Every system at one process count, rounds interleaved (round 1 of each,
 * then round 2 of each, ...) so that a load that comes and goes on a shared
 * machine falls on all of them alike.
 */
async function runProcessCount(
  processes: number,
  prefix: string,
  admin: Admin,
  redisPid: number | undefined,
  roundBase: number,
): Promise<Map<System, Measure[]>> {
  const fleets: Fleet[] = [];
  const out = new Map<System, Measure[]>();
  try {
    for (const system of SYSTEMS) {
      const workers = Array.from({ length: processes }, () => spawnWorker(system, prefix));
      fleets.push({ system, workers, producer: await producerFor(system, prefix, admin) });
      await Promise.all(workers.map((w) => nextLine(w, 'ready')));
      out.set(system, []);
    }
    for (let r = 0; r < ROUNDS; r++) {
      for (const [i, fleet] of fleets.entries()) {
        const m = await runRound(fleet, processes, roundBase + r * fleets.length + i, redisPid, r);
        out.get(fleet.system)!.push(m);
      }
    }
  } finally {
    for (const fleet of fleets) {
      for (const w of fleet.workers) w.child.stdin!.write('exit\n');
      await Promise.all(
        fleet.workers.map(
          (w) =>
            new Promise<void>((resolve) => {
              if (w.child.exitCode !== null) resolve();
              else w.child.once('exit', () => resolve());
            }),
        ),
      );
      await fleet.producer.cleanup();
    }
  }
  return out;
}

async function dropPrefix(admin: Admin, pattern: string): Promise<number> {
  let n = 0;
  for await (const keys of admin.scanIterator({ MATCH: pattern, COUNT: 1000 })) {
    if (keys.length > 0) n += await admin.del(keys);
  }
  return n;
}

function pct(x: number): string {
  return `${(x * 100).toFixed(0)}%`;
}

async function main(): Promise<void> {
  const prefix = `sbbench-redis-${process.pid}`;
  const admin = adminClient();
  await admin.connect();
  const info = await admin.info('server');
  const redisPid = Number(/process_id:(\d+)/.exec(info)?.[1]) || undefined;
  const version = /redis_version:([\d.]+)/.exec(info)?.[1] ?? '?';
  log(`bench:redis against Redis ${version} at ${REDIS_URL} (redis-server pid ${redisPid ?? 'unknown'})`);
  const results = new Map<string, Measure>();
  let roundBase = 0;
  const started = Date.now();
  try {
    for (const processes of PROCESSES) {
      log(`${processes} worker process(es) per system, rounds interleaved:`);
      const measured = await runProcessCount(processes, prefix, admin, redisPid, roundBase);
      roundBase += ROUNDS * SYSTEMS.length;
      for (const [system, rounds] of measured) {
        const m = rounds.find((x) => x.rate === median(rounds.map((y) => y.rate)))!;
        results.set(`${system}/${processes}`, { ...m, cpuPerHopUs: median(rounds.map((y) => y.cpuPerHopUs)) });
      }
    }
  } finally {
    const dropped =
      (await dropPrefix(admin, `{${prefix}}:*`)) + (await dropPrefix(admin, `${prefix}:*`).catch(() => 0));
    log(`cleaned up ${dropped} keys`);
    await admin.close();
  }

  if (results.size < PROCESSES.length * 3) {
    // A narrowed run: the per-round lines above are the figures.
    process.stdout.write(
      `${[...results].map(([k, m]) => `${k}: ${m.rate.toFixed(0)}/s (cpu redis ${pct(m.redisCpu)}, workers ${pct(m.workerCpu)}, producer ${pct(m.producerCpu)})`).join('\n')}\n`,
    );
    return;
  }
  const get = (s: System, p: number) => results.get(`${s}/${p}`)!;
  const lines: string[] = [];
  lines.push(
    `\nHops/s (publish + lease + ack of a no-op job), median of ${ROUNDS} interleaved rounds; Redis ${version}; ${PROCESSES.join('/')} worker processes; 2 CPUs shared with everything else on the machine:\n`,
  );
  lines.push(
    '| processes | switchboard RedisQueue | BullMQ 6.7 | raw Streams | vs BullMQ | vs raw | CPU us per hop: switchboard / BullMQ / raw | redis-server CPU (switchboard) |',
  );
  lines.push('|---:|---:|---:|---:|---:|---:|---|---:|');
  for (const p of PROCESSES) {
    const sb = get('switchboard', p);
    const bull = get('bullmq', p);
    const raw = get('raw', p);
    lines.push(
      `| ${p} | ${sb.rate.toFixed(0)} | ${bull.rate.toFixed(0)} | ${raw.rate.toFixed(0)} | ${(sb.rate / bull.rate).toFixed(2)}x | ${pct(sb.rate / raw.rate)} | ${sb.cpuPerHopUs.toFixed(0)} / ${bull.cpuPerHopUs.toFixed(0)} / ${raw.cpuPerHopUs.toFixed(0)} | ${pct(sb.redisCpu)} |`,
    );
  }
  lines.push('\nCPU per system at each process count (redis-server / workers / producer; 100% = one core):');
  for (const system of SYSTEMS) {
    const cells = PROCESSES.map((p) => {
      const m = get(system, p);
      return `p=${p}: ${pct(m.redisCpu)} / ${pct(m.workerCpu)} / ${pct(m.producerCpu)} (machine ${pct(m.machineBusy)} busy)`;
    });
    lines.push(`  ${system.padEnd(11)} ${cells.join('   ')}`);
  }
  const perRow = PROCESSES.map((p) => {
    const sb = get('switchboard', p);
    const okBull = sb.rate >= get('bullmq', p).rate;
    const okRaw = sb.rate >= 0.3 * get('raw', p).rate;
    return `p=${p}: >= BullMQ ${okBull ? 'met' : 'NOT met'}, >= 30% of raw ${okRaw ? 'met' : 'NOT met'}`;
  });
  lines.push(`\nTargets per process count: ${perRow.join('; ')}.`);
  const cpu = (system: System) => median(PROCESSES.map((p) => get(system, p).cpuPerHopUs));
  lines.push(
    `CPU per hop (median over process counts; independent of how much of the machine the bench got): switchboard ${cpu('switchboard').toFixed(0)} us, BullMQ ${cpu('bullmq').toFixed(0)} us, raw ${cpu('raw').toFixed(0)} us: switchboard does a hop on ${pct(cpu('raw') / cpu('switchboard'))} of raw's efficiency and ${(cpu('bullmq') / cpu('switchboard')).toFixed(2)}x BullMQ's.`,
  );
  const sbRates = PROCESSES.map((p) => get('switchboard', p));
  const grows = PROCESSES.map((p, i) =>
    i === 0 ? '' : `${PROCESSES[i - 1]}->${p}: ${pct(sbRates[i]!.rate / sbRates[i - 1]!.rate - 1)}`,
  )
    .filter(Boolean)
    .join(', ');
  const top = sbRates[sbRates.length - 1]!;
  const ours = top.redisCpu + top.workerCpu + top.producerCpu;
  const saturated =
    top.redisCpu >= 0.85
      ? `redis-server is near one full core (${pct(top.redisCpu)}): Redis-bound`
      : top.machineBusy >= 0.9
        ? `the 2 CPUs are saturated (machine ${pct(top.machineBusy)} busy, of which this bench ${pct(ours / 2)}; redis-server ${pct(top.redisCpu)} of one core): CPU-bound, not Redis-bound`
        : `neither Redis (${pct(top.redisCpu)} of a core) nor the CPUs (machine ${pct(top.machineBusy)} busy) are saturated`;
  lines.push(
    `Scaling of switchboard with worker processes: ${grows}; at ${PROCESSES[PROCESSES.length - 1]} processes ${saturated}.`,
  );
  lines.push(
    "What each system does per hop: switchboard and BullMQ are at-least-once queues (idempotent publish by key, a lease per job with its own deadline, fenced acks, retries and dead letters, completed work removed; switchboard validates every envelope on publish and parses it on lease, BullMQ parses the job data). The raw loop is a floor, not an equal: no idempotency, no lease deadlines (a crashed worker's entries stay pending: nothing here runs XAUTOCLAIM), no fencing (a late XACK succeeds), no delivery counts or dead letters, no trimming (its stream keeps every acked entry), no validation, and its workers never parse the message.",
  );
  lines.push(`(run took ${((Date.now() - started) / 1000).toFixed(0)} s)`);
  process.stdout.write(`${lines.join('\n')}\n`);
}

if (process.argv[2] === 'child') {
  child(process.argv[3] as System, process.argv[4]!).catch((error: unknown) => {
    process.stderr.write(`worker failed: ${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
} else {
  main().catch((error: unknown) => {
    process.stderr.write(`${(error as Error)?.stack ?? String(error)}\n`);
    process.exit(1);
  });
}
