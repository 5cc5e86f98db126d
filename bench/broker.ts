/**
 * `npm run bench:broker`: the embedded broker's figures, each against a
 * reference measured in the same run.
 *
 * 1. Durable round trips per second: a requester creates a task, the worker
 *    moves it to completed, the requester's event arrives. One at a time
 *    (every call its own commit) and 32 in flight (group commit). The
 *    reference is a raw better-sqlite3 loop doing the same writes (the same
 *    statements on the same schema, one transaction per call) with none of
 *    the broker's work (validation, actors, routing). Target: >= 50%.
 * 2. Heap bytes per live task at 10,000 live tasks (after gc). Target: <= 8 KiB.
 * 3. Time to reopen a database with 10,000 live tasks. Target: < 1 s.
 *
 * Progress goes to stderr, the figures to stdout. Medians of the rounds; a
 * ratio is the median of the per-round ratios (raw and broker run back to back).
 * Needs `--expose-gc` (the npm script passes it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstValueFrom } from 'rxjs';
import { filter, take } from 'rxjs/operators';
import { type Broker, createBroker } from '../src/actors/broker/broker.js';
import type { DurableEvent } from '../src/protocol/events.js';
import { type Rate, rawDelegations } from './raw-delegation.js';

const ROUNDS = 7;
const ROUND_TRIPS = 1000;
const IN_FLIGHT = 32;
const LIVE_TASKS = 10_000;
/** A requester registration sends at most 200 messages and a context holds 128 tasks. */
const TASKS_PER_REQUESTER = 100;

function log(message: string): void {
  process.stderr.write(`${message}\n`);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

const gc = (globalThis as { gc?: () => void }).gc;
function collect(): void {
  if (gc === undefined) throw new Error('run with --expose-gc (npm run bench:broker does)');
  for (let i = 0; i < 3; i++) gc();
}

const message = { parts: [{ kind: 'text' as const, text: 'please do the thing' }] };
const reply = { parts: [{ kind: 'text' as const, text: 'done' }] };

/** A requester that rotates (a new registration in a new context) before any bound is reached. */
function rotatingRequester(broker: Broker, tag: string) {
  let current = { agentId: '', token: '' };
  let used = TASKS_PER_REQUESTER;
  let generation = 0;
  return async () => {
    if (used >= TASKS_PER_REQUESTER) {
      const previous = current.token;
      generation++;
      current = await broker.register({ name: `req-${tag}`, contextId: `r-${tag}-${generation}` });
      if (previous !== '') await broker.deregister({ token: previous });
      used = 0;
    }
    used++;
    return current;
  };
}

/** One durable round trip, ending when the requester's completion event arrives. */
async function roundTrip(
  broker: Broker,
  worker: { token: string; agentId: string },
  requester: { agentId: string; token: string },
) {
  const arrived = firstValueFrom(
    broker.events(requester.agentId).pipe(
      filter(
        (e: DurableEvent) =>
          e.method === 'a2a.task.event' && e.params.event.kind === 'status-update' && e.params.event.final,
      ),
      take(1),
    ),
  );
  const { task } = await broker.send({ token: requester.token, to: worker.agentId, message });
  await broker.setStatus({ token: worker.token, id: task.id, state: 'completed', message: reply });
  await arrived;
}

function cpuMicros(since: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(since);
  return used.user + used.system;
}

async function brokerRoundTrips(dir: string, round: number, inFlight: number): Promise<Rate> {
  const broker = createBroker({ path: join(dir, `rt-${inFlight}-${round}.db`) });
  const worker = await broker.register({ name: 'worker', contextId: `w-${round}` });
  const lanes = Array.from({ length: inFlight }, (_, lane) => rotatingRequester(broker, `${round}-${lane}`));
  const perLane = Math.ceil(ROUND_TRIPS / inFlight);
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    lanes.map(async (requester) => {
      for (let i = 0; i < perLane; i++) await roundTrip(broker, worker, await requester());
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const micros = cpuMicros(cpu);
  await broker.close();
  return { perSecond: (perLane * inFlight) / seconds, cpuMicros: micros / (perLane * inFlight) };
}

async function liveTasks(dir: string): Promise<{ heapPerTask: number; reopenMs: number[]; reopenCpuMs: number[] }> {
  const path = join(dir, 'live.db');
  let broker = createBroker({ path });
  const worker = await broker.register({ name: 'worker', contextId: 'w' });
  const requesters = await Promise.all(
    Array.from({ length: LIVE_TASKS / TASKS_PER_REQUESTER }, (_, i) =>
      broker.register({ name: 'req', contextId: `r-${i}` }),
    ),
  );
  collect();
  const before = process.memoryUsage().heapUsed;
  for (const [i, r] of requesters.entries()) {
    await Promise.all(
      Array.from({ length: TASKS_PER_REQUESTER }, () => broker.send({ token: r.token, to: worker.agentId, message })),
    );
    if (i % 20 === 19) log(`  ${(i + 1) * TASKS_PER_REQUESTER} live tasks`);
  }
  collect();
  const after = process.memoryUsage().heapUsed;
  if (broker.liveTaskCount() !== LIVE_TASKS) throw new Error(`expected ${LIVE_TASKS} live tasks`);
  const heapPerTask = (after - before) / LIVE_TASKS;
  await broker.close();
  const reopenMs: number[] = [];
  const reopenCpuMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    // As in a fresh process: the previous broker's actors are not left for this open to collect.
    collect();
    const cpu = process.cpuUsage();
    const started = performance.now();
    broker = createBroker({ path });
    reopenMs.push(performance.now() - started);
    reopenCpuMs.push(cpuMicros(cpu) / 1000);
    if (broker.opened.restoredTasks !== LIVE_TASKS) throw new Error('not every task was restored');
    await broker.close();
  }
  return { heapPerTask, reopenMs, reopenCpuMs };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-bench-broker-'));
  try {
    log(`broker bench: ${ROUNDS} rounds of ${ROUND_TRIPS} round trips; ${LIVE_TASKS} live tasks`);
    const raw: Rate[] = [];
    const sequential: Rate[] = [];
    const pipelined: Rate[] = [];
    const seqRatios: number[] = [];
    const pipeRatios: number[] = [];
    // Interleaved, so that each ratio compares runs made under the same machine load.
    for (let round = 0; round < ROUNDS; round++) {
      const r = rawDelegations(dir, `raw-${round}`, {
        delegations: ROUND_TRIPS,
        perTransaction: 1,
        tasksPerRequester: TASKS_PER_REQUESTER,
      });
      const b = await brokerRoundTrips(dir, round, 1);
      const p = await brokerRoundTrips(dir, round, IN_FLIGHT);
      raw.push(r);
      sequential.push(b);
      pipelined.push(p);
      seqRatios.push(b.perSecond / r.perSecond);
      pipeRatios.push(p.perSecond / r.perSecond);
      log(
        `round ${round + 1}: raw ${r.perSecond.toFixed(0)}/s, broker ${b.perSecond.toFixed(0)}/s ` +
          `(${(b.perSecond / r.perSecond).toFixed(2)}), broker x${IN_FLIGHT} ${p.perSecond.toFixed(0)}/s ` +
          `(${(p.perSecond / r.perSecond).toFixed(2)})`,
      );
    }
    log('live tasks: creating, measuring heap, reopening');
    const { heapPerTask, reopenMs, reopenCpuMs } = await liveTasks(dir);
    const rate = (rs: Rate[]) => median(rs.map((x) => x.perSecond)).toFixed(0);
    const cpuOf = (rs: Rate[]) => median(rs.map((x) => x.cpuMicros)).toFixed(0);
    const lines = [
      `broker bench (medians of ${ROUNDS} rounds; load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores)`,
      `  raw better-sqlite3, same writes, 1 txn/call : ${rate(raw)} round trips/s, ${cpuOf(raw)} µs CPU each`,
      `  broker, one at a time                      : ${rate(sequential)} round trips/s, ${cpuOf(sequential)} µs CPU each, ratio ${median(seqRatios).toFixed(2)} (target >= 0.50)`,
      `  broker, ${IN_FLIGHT} in flight (group commit)       : ${rate(pipelined)} round trips/s, ${cpuOf(pipelined)} µs CPU each, ratio ${median(pipeRatios).toFixed(2)}`,
      `  heap per live task at ${LIVE_TASKS}               : ${heapPerTask.toFixed(0)} bytes (target <= 8192)`,
      `  reopen with ${LIVE_TASKS} live tasks              : ${median(reopenMs).toFixed(0)} ms wall, ${median(reopenCpuMs).toFixed(0)} ms CPU (target < 1000; runs ${reopenMs.map((m) => m.toFixed(0)).join(', ')})`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
