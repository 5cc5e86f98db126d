import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorLoop } from '../../src/actors/coordinator/coordinator-loop.js';
import type { CoordinatorEngine, Step } from '../../src/actors/coordinator/engine.js';
import { createDispatcher } from '../../src/bus/dispatcher.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { createLogger } from '../../src/log/logger.js';
import type { CoordinatorTables } from '../../src/persistence/coordinator/coordinator-store.js';
import { resultRetry } from '../../src/decisions/result-retry.js';
import { RESULTS_ROLE, type ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { switchboardMetrics } from '../../src/telemetry/metrics.js';
import { OffsetClock, sleep } from '../bus/contract.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';

/**
 * A result the Coordinator could not apply goes back to the bus. When its
 * store could not take it (a SQLite file another connection holds locked:
 * `SQLITE_BUSY`, for real), the retries use up none of its attempts: it is
 * applied once the store is back, however many deliveries that took. When
 * its application fails for a reason of its own (a constraint its write
 * breaks, every time), it is dead-lettered on the results role once its
 * attempts are spent, and the log says how to replay it.
 *
 * The engine here is the part under fault: one real SQLite table the result
 * is written to, as the Coordinator's store commits it.
 */

const ATTEMPTS = 3;

interface Rig {
  dir: string;
  queue: SqliteQueue;
  clock: OffsetClock;
  loop: CoordinatorLoop;
  store: Database.Database;
  logs: { level: number; msg: string; deliveries?: number }[];
  tries: number;
}

const rigs: Rig[] = [];
afterEach(async () => {
  for (const r of rigs.splice(0)) {
    await r.loop.stopResults();
    await r.loop.drained();
    await r.queue.close();
    r.store.close();
    rmSync(r.dir, { recursive: true, force: true });
  }
});

function result(key: string): ResultEnvelope {
  return {
    kind: 'result',
    headers: { taskId: `t-${key}`, runId: `item-${key}`, hop: 1, attempt: 1, idempotencyKey: key },
    role: 'coding',
    outcome: 'completed',
    parts: [{ kind: 'text', text: 'done' }],
    artifacts: [],
  };
}

async function rig(table: string): Promise<Rig> {
  const dir = mkdtempSync(join(tmpdir(), 'sb-result-retry-'));
  const clock = new OffsetClock();
  const queue = new SqliteQueue({
    database: join(dir, 'bus.db'),
    clock,
    pollIntervalMs: { min: 5, max: 20 },
    roles: { [RESULTS_ROLE]: { retryPolicy: { maximumAttempts: ATTEMPTS } } },
  });
  const store = new Database(join(dir, 'store.db'));
  store.pragma('journal_mode = WAL');
  store.pragma('busy_timeout = 0');
  store.exec(table);
  const logs: Rig['logs'] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logs.push(JSON.parse(line));
      done();
    },
  });
  const r = { dir, queue, clock, store, logs, tries: 0 } as Rig;
  const insert = store.prepare('INSERT INTO applied (key) VALUES (?)');
  const engine = {
    applyResults: async (batch: readonly { result: ResultEnvelope }[]) =>
      batch.map(({ result }) => {
        r.tries++;
        try {
          insert.run(result.headers.idempotencyKey);
          return { step: { rows: [], outbox: [], events: [] } as unknown as Step, handling: 'applied' as const };
        } catch (error) {
          return { error };
        }
      }),
  } as unknown as CoordinatorEngine;
  r.loop = new CoordinatorLoop({
    dispatcher: createDispatcher({ bus: queue }),
    engine,
    tables: { recordForgetAgain: async () => {} } as unknown as CoordinatorTables,
    metrics: switchboardMetrics(),
    log: createLogger({ destination: sink, level: 'warn' }),
    after: async () => {},
    closed: () => false,
    consumer: 'coordinator-test',
    resultsVisibilityTimeoutMs: 60_000,
    timerIntervalMs: 3_600_000,
    chunk: () => {},
    generation: async () => null,
  });
  rigs.push(r);
  return r;
}

/** Waits for `done`, moving the bus's clock past any retry delay meanwhile. */
async function until(r: Rig, done: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + 20_000;
  while (!(await done())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    r.clock.advance(31_000);
    await sleep(20);
  }
}

describe('a result the Coordinator could not apply', () => {
  it('while its store is unavailable (SQLITE_BUSY): retried past its attempts without using them up, applied once the store is back', async () => {
    const r = await rig('CREATE TABLE applied (key TEXT PRIMARY KEY)');
    const locker = new Database(join(r.dir, 'store.db'));
    locker.exec('BEGIN EXCLUSIVE');
    await r.queue.publish(RESULTS_ROLE, result('a'), { idempotencyKey: 'a' });
    r.loop.start();
    await until(r, () => r.tries >= ATTEMPTS * 2, `${ATTEMPTS * 2} tries`);
    expect(r.store.prepare('SELECT count(*) AS n FROM applied').get()).toEqual({ n: 0 });
    expect((await r.queue.stats(RESULTS_ROLE)).deadLetters).toBe(0);
    const unavailable = r.logs.filter((l) => l.msg.includes('the store is unavailable'));
    expect(unavailable.length).toBeGreaterThanOrEqual(ATTEMPTS * 2);
    expect(Math.max(...unavailable.map((l) => l.deliveries ?? 0))).toBeGreaterThan(ATTEMPTS);
    locker.exec('COMMIT');
    locker.close();
    const count = r.store.prepare<[], { n: number }>('SELECT count(*) AS n FROM applied');
    await until(r, () => count.get()?.n === 1, 'the result applied');
    await until(r, async () => (await r.queue.stats(RESULTS_ROLE)).inFlight === 0, 'the result acked');
    await r.loop.drained();
    expect(r.store.prepare('SELECT key FROM applied').all()).toEqual([{ key: 'a' }]);
    expect(await r.queue.stats(RESULTS_ROLE)).toMatchObject({ deadLetters: 0, inFlight: 0 });
  });

  it('that fails every time for a reason of its own (a constraint): dead-lettered once its attempts are spent, the log says how to replay it', async () => {
    const r = await rig("CREATE TABLE applied (key TEXT PRIMARY KEY CHECK (key <> 'poison'))");
    await r.queue.publish(RESULTS_ROLE, result('poison'), { idempotencyKey: 'poison' });
    await r.queue.publish(RESULTS_ROLE, result('fine'), { idempotencyKey: 'fine' });
    r.loop.start();
    await until(r, async () => (await r.queue.stats(RESULTS_ROLE)).deadLetters === 1, 'the dead letter');
    await r.loop.drained();
    const [dead] = await r.queue.deadLetters.list(RESULTS_ROLE);
    expect(dead).toMatchObject({ idempotencyKey: 'poison', deliveries: ATTEMPTS });
    expect(dead!.lastError.message).toContain('CHECK constraint failed');
    expect(r.store.prepare('SELECT key FROM applied').all()).toEqual([{ key: 'fine' }]);
    const said = r.logs.find((l) => l.msg.includes('was dead-lettered'));
    expect(said?.msg).toContain(`switchboard dlq replay --db PATH|--bus URL --role ${RESULTS_ROLE} --id ${dead!.id}`);
    expect(r.logs.some((l) => l.msg.includes('the store is unavailable'))).toBe(false);
  });
});

const { runPostgres } = await postgresGate();

/** The error `fn` throws (it must throw). */
async function thrown(fn: () => unknown): Promise<unknown> {
  try {
    await fn();
  } catch (error) {
    return error;
  }
  throw new Error('it did not throw');
}

describe('the errors of the real stores, as the retry reads them', () => {
  it("SQLite: a locked file is unavailable (not counted); a broken constraint is the result's own (counted)", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-result-errors-'));
    try {
      const a = new Database(join(dir, 's.db'));
      a.pragma('journal_mode = WAL');
      a.exec("CREATE TABLE t (k TEXT PRIMARY KEY CHECK (k <> 'bad'))");
      const b = new Database(join(dir, 's.db'));
      b.pragma('busy_timeout = 0');
      a.exec('BEGIN EXCLUSIVE');
      const busy = await thrown(() => b.prepare("INSERT INTO t VALUES ('x')").run());
      a.exec('COMMIT');
      const check = await thrown(() => b.prepare("INSERT INTO t VALUES ('bad')").run());
      b.prepare("INSERT INTO t VALUES ('x')").run();
      const unique = await thrown(() => b.prepare("INSERT INTO t VALUES ('x')").run());
      a.close();
      b.close();
      expect((busy as { code: string }).code).toMatch(/^SQLITE_BUSY/);
      expect(resultRetry(busy, 1)).toEqual({ cause: 'unavailable', counted: false, delayMs: 1_000 });
      for (const own of [check, unique]) {
        expect((own as { code: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
        expect(resultRetry(own, 3)).toEqual({ cause: 'failed', counted: true, delayMs: 1_000 });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(runPostgres)(
    "PostgreSQL: a refused connection and a session the server ended are unavailable; a broken constraint is the result's own",
    async () => {
      const db = await createTestDatabase('sb_result_retry');
      const client = new pg.Client({ connectionString: db.url });
      client.on('error', () => undefined);
      const admin = new pg.Client({ connectionString: db.url });
      try {
        await client.connect();
        await admin.connect();
        await client.query('CREATE TABLE t (k TEXT PRIMARY KEY)');
        await client.query("INSERT INTO t VALUES ('x')");
        const unique = await thrown(() => client.query("INSERT INTO t VALUES ('x')"));
        expect((unique as { code: string }).code).toBe('23505');
        expect(resultRetry(unique, 1)).toMatchObject({ cause: 'failed', counted: true });
        const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
        await admin.query('SELECT pg_terminate_backend($1)', [pid]);
        const ended = await thrown(() => client.query('SELECT 1'));
        expect(resultRetry(ended, 2)).toEqual({ cause: 'unavailable', counted: false, delayMs: 2_000 });
        const refused = new pg.Client({ host: '127.0.0.1', port: 1, user: 'postgres', connectionTimeoutMillis: 1000 });
        const notThere = await thrown(() => refused.connect());
        expect(resultRetry(notThere, 6)).toEqual({ cause: 'unavailable', counted: false, delayMs: 30_000 });
      } finally {
        await client.end().catch(() => undefined);
        await admin.end();
        await db.drop();
      }
    },
  );
});
