import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Worker, complete, createWorker } from '../../src/actors/worker/worker.js';
import { SqliteQueue, type SqliteQueueOptions } from '../../src/bus/sqlite/queue.js';
import type { WorkQueue } from '../../src/bus/work-queue.js';
import {
  type CompletionRecord,
  type ContextStore,
  SqliteContextStore,
} from '../../src/persistence/context/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { RESULTS_ROLE, type ResultEnvelope, type WorkEnvelope } from '../../src/protocol/work-envelope.js';

export interface Harness {
  dir: string;
  path: string;
  db: SqliteDatabase;
  bus: SqliteQueue;
  store: SqliteContextStore;
  close(): Promise<void>;
}

export function openHarness(queueOptions: Partial<SqliteQueueOptions> = {}): Harness {
  const dir = mkdtempSync(join(tmpdir(), 'sb-worker-'));
  const path = join(dir, 'switchboard.db');
  const db = openDatabase(path);
  const bus = new SqliteQueue({ database: db, pollIntervalMs: { min: 2, max: 20 }, ...queueOptions });
  const store = new SqliteContextStore({ database: db });
  return {
    dir,
    path,
    db,
    bus,
    store,
    async close() {
      await bus.close();
      await store.close();
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function hop(n: number | string, extra: Partial<WorkEnvelope['headers']> = {}, text = `do ${n}`): WorkEnvelope {
  return {
    kind: 'work',
    headers: { taskId: `task-${n}`, runId: 'run-1', hop: 0, attempt: 1, idempotencyKey: `hop-${n}`, ...extra },
    message: { role: 'user', parts: [{ kind: 'text', text }] },
  };
}

/** A completed hop `key` of run-1 with an output and one result to publish; `extra` overrides any field. */
export function completionRecord(key: string, extra: Partial<CompletionRecord> = {}): CompletionRecord {
  return {
    idempotencyKey: key,
    runId: 'run-1',
    taskId: 't1',
    hop: 0,
    role: 'coder',
    outcome: 'completed',
    output: { parts: [{ kind: 'text', text: key }], artifacts: [] },
    publishes: [{ role: '$results', envelope: hop(key), idempotencyKey: `${key}:result` }],
    ...extra,
  };
}

/**
 * A worker of role `r` whose handler counts its runs and applies one effect
 * per hop (`effects.once('charge', ...)`, recording the run count), and
 * `deliver(busKey)`: the same hop (`hop(1)`, idempotency key `hop-1`)
 * published under a new bus key, as a Coordinator re-publishing its outbox
 * after the bus forgot the first key sends it; it resolves once the role's
 * queue is drained. The caller stops the worker.
 */
export function chargingWorker(
  bus: WorkQueue,
  store: ContextStore,
): { worker: Worker; calls(): number; deliver(busKey: string): Promise<void> } {
  let calls = 0;
  const worker = createWorker({
    role: 'r',
    bus,
    contextStore: store,
    pollWaitMs: 20,
    handler: async ({ effects }) => {
      calls += 1;
      await effects.once('charge', () => calls);
      return complete({ parts: [{ kind: 'text', text: 'ok' }] });
    },
  });
  const drained = async () => {
    const stats = await bus.stats('r');
    return stats.depth === 0 && stats.inFlight === 0 && stats.delayed === 0;
  };
  return {
    worker,
    calls: () => calls,
    async deliver(busKey: string) {
      await bus.publish('r', hop(1), { idempotencyKey: busKey });
      await until(drained, 5000, `${busKey} to be taken`);
    },
  };
}

/** Consumes results until `count` arrive or the time runs out; acks each, and takes no more than `count`. */
export async function takeResults(bus: WorkQueue, count: number, timeoutMs = 5000): Promise<ResultEnvelope[]> {
  const out: ResultEnvelope[] = [];
  const deadline = Date.now() + timeoutMs;
  while (out.length < count && Date.now() < deadline) {
    const got = await bus.consume(RESULTS_ROLE, {
      consumer: 'test-coordinator',
      visibilityTimeoutMs: 10_000,
      max: count - out.length,
      waitMs: Math.max(1, Math.min(200, deadline - Date.now())),
    });
    for (const d of got) {
      if (d.envelope.kind === 'result') out.push(d.envelope);
      await bus.ack(d);
    }
  }
  return out;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function until(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5000,
  what = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}
