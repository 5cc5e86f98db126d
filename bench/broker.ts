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
import { type Broker, createBroker } from '../src/actors/broker.js';
import { A2A_MIGRATION_SET } from '../src/persistence/a2a-schema.js';
import { openDatabase } from '../src/persistence/database.js';
import { createUuidV7Source } from '../src/persistence/ids.js';
import { migrate } from '../src/persistence/migrations.js';
import type { DurableEvent } from '../src/protocol/events.js';

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

/** A rate (per wall-clock second) and the process CPU time per unit, in µs. */
interface Rate {
  perSecond: number;
  cpuMicros: number;
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

/**
 * The reference: the broker's writes (and the reads they depend on), as plain
 * prepared statements on the same schema, one transaction per call.
 */
function rawRoundTrips(dir: string, round: number): Rate {
  const db = openDatabase(join(dir, `raw-${round}.db`));
  migrate(db, A2A_MIGRATION_SET);
  const ids = createUuidV7Source();
  const s = {
    insertAgent: db.prepare(
      `INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
       VALUES (?, ?, ?, 'subagent', '', '[]', 0, ?)`,
    ),
    count: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE context_id = ?'),
    insertTask: db.prepare(
      `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
         creation_message_id, history_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
    ),
    insertMessage: db.prepare(
      `INSERT INTO a2a_messages (task_id, message_id, position, role, from_name, body)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    putActor: db.prepare('INSERT INTO a2a_task_actors (task_id, machine_version, snapshot) VALUES (?, 1, ?)'),
    sends: db.prepare('UPDATE a2a_agents SET sends = sends + 1 WHERE agent_id = ?'),
    seq: db.prepare(
      'SELECT COALESCE(MAX(seq), 0) AS seq FROM a2a_events WHERE party_context_id = ? AND party_name = ?',
    ),
    event: db.prepare(
      `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task_id, params, created_at)
       VALUES (?, ?, ?, 'a2a.task.event', ?, ?, ?)`,
    ),
    head: db.prepare('SELECT * FROM a2a_tasks WHERE task_id = ?'),
    writeHead: db.prepare(
      'UPDATE a2a_tasks SET state = ?, status = ?, history_count = ?, updated_at = ? WHERE task_id = ?',
    ),
    deleteActor: db.prepare('DELETE FROM a2a_task_actors WHERE task_id = ?'),
    push: db.prepare('SELECT config FROM a2a_push_configs WHERE task_id = ?'),
  };
  const worker = { id: ids.next(), contextId: 'w', name: 'worker' };
  s.insertAgent.run(worker.id, worker.contextId, worker.name, new Date().toISOString());
  let requester = { id: '', contextId: '', name: 'req' };
  const create = db.transaction((taskId: string, messageId: string) => {
    const now = new Date().toISOString();
    s.count.get(requester.contextId);
    s.insertTask.run(
      taskId,
      requester.contextId,
      requester.name,
      worker.contextId,
      worker.name,
      'submitted',
      JSON.stringify({ state: 'submitted', timestamp: now }),
      messageId,
      now,
      now,
    );
    s.insertMessage.run(taskId, messageId, 1, 'user', requester.name, JSON.stringify({ messageId, ...message }));
    s.putActor.run(taskId, '{"status":"active","value":"submitted"}');
    s.sends.run(requester.id);
    const seq = (s.seq.get(worker.contextId, worker.name) as { seq: number }).seq + 1;
    s.event.run(worker.contextId, worker.name, seq, taskId, JSON.stringify({ seq, taskId }), now);
  });
  const complete = db.transaction((taskId: string, messageId: string) => {
    const now = new Date().toISOString();
    s.head.get(taskId);
    s.insertMessage.run(taskId, messageId, 2, 'agent', worker.name, JSON.stringify({ messageId, ...reply }));
    s.writeHead.run('completed', JSON.stringify({ state: 'completed', timestamp: now }), 2, now, taskId);
    s.deleteActor.run(taskId);
    const seq = (s.seq.get(requester.contextId, requester.name) as { seq: number }).seq + 1;
    s.event.run(requester.contextId, requester.name, seq, taskId, JSON.stringify({ seq, taskId }), now);
    s.push.get(taskId);
  });
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < ROUND_TRIPS; i++) {
    if (i % TASKS_PER_REQUESTER === 0) {
      requester = { id: ids.next(), contextId: `r-${i}`, name: 'req' };
      s.insertAgent.run(requester.id, requester.contextId, requester.name, new Date().toISOString());
    }
    const taskId = ids.next();
    create(taskId, ids.next());
    complete(taskId, ids.next());
  }
  const seconds = (performance.now() - started) / 1000;
  const micros = cpuMicros(cpu);
  db.close();
  return { perSecond: ROUND_TRIPS / seconds, cpuMicros: micros / ROUND_TRIPS };
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
      const r = rawRoundTrips(dir, round);
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
