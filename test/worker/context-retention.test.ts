import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/actors/worker/worker.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_MS } from '../../src/bus/work-queue.js';
import {
  DEFAULT_CONTEXT_RETENTION_MS,
  type PruneCounts,
  SqliteContextStore,
} from '../../src/persistence/context/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { chargingWorker, completionRecord, hop, sleep, until } from './helpers.js';

/**
 * The SQLite Context Engine forgets its idempotency records after the
 * retention, by itself (a timer in the store), in batches, and keeps what a
 * live run needs: checkpoints not yet resumed, outputs, memory.
 */

const HOUR = 60 * 60 * 1000;

describe('the Context Engine retention on SQLite', () => {
  let dir: string;
  const closers: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close();
    rmSync(dir, { recursive: true, force: true });
  });
  const file = () => {
    dir = mkdtempSync(join(tmpdir(), 'sb-ctx-retention-'));
    return join(dir, 'ctx.db');
  };

  const count = (db: SqliteDatabase, table: string): number =>
    (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

  it('defaults to a day, longer than the bus keeps an acked idempotency key', () => {
    expect(DEFAULT_CONTEXT_RETENTION_MS).toBe(24 * HOUR);
    expect(DEFAULT_CONTEXT_RETENTION_MS).toBeGreaterThanOrEqual(DEFAULT_IDEMPOTENCY_RETENTION_MS);
    const store = new SqliteContextStore({ database: file() });
    closers.push(() => store.close());
    expect(store.retentionMs).toBe(DEFAULT_CONTEXT_RETENTION_MS);
    for (const bad of [0, -1, 1.5, Number.NaN, '1000' as unknown as number]) {
      expect(() => new SqliteContextStore({ database: store.database, retentionMs: bad })).toThrow(
        expect.objectContaining({ code: 'CONTEXT_INVALID_ARGUMENT' }),
      );
    }
    expect(() => new SqliteContextStore({ database: store.database, pruneBatch: 0 })).toThrow(/pruneBatch/);
    expect(() => new SqliteContextStore({ database: store.database, pruneIntervalMs: -5 })).toThrow(/pruneIntervalMs/);
  });

  it('prunes, on its own timer, what is older than the retention and keeps the rest', async () => {
    let now = 1_000_000;
    const passes: ({ pruned: PruneCounts; ms: number } | { error: unknown })[] = [];
    const store = new SqliteContextStore({
      database: file(),
      clock: { now: () => now },
      retentionMs: HOUR,
      pruneIntervalMs: 20,
      onPrune: (outcome) => passes.push(outcome),
    });
    closers.push(() => store.close());
    const db = store.database;

    // t0: a hop that suspended (checkpoint tok-resumed), another that is still suspended (tok-live),
    // the resumed hop's completion, plain effects and memory.
    await store.updateMemory('run-1', { plan: 'a' });
    await store.complete(
      completionRecord('suspends', {
        checkpoint: { token: 'tok-resumed', state: { s: 1 }, headers: hop('s').headers },
      }),
    );
    await store.complete(
      completionRecord('suspends-too', {
        runId: 'run-2',
        checkpoint: { token: 'tok-live', state: { s: 2 }, headers: hop('l').headers },
      }),
    );
    await store.complete(completionRecord('resumes', { resumedToken: 'tok-resumed' }));
    expect(await store.recordEffect('suspends', 'charge', { id: 1 })).toBe(true);

    // 59 minutes later: nothing is due yet; a new completion and effect.
    now += 59 * 60 * 1000;
    await store.complete(completionRecord('recent'));
    expect(await store.recordEffect('recent', 'charge', { id: 2 })).toBe(true);
    const before = passes.length;
    await until(() => passes.length >= before + 2, 2000, 'two pruning passes');
    expect(count(db, 'context_completions')).toBe(4);

    // Past the retention of the t0 records (not of the recent ones).
    now += 2 * 60 * 1000;
    await until(async () => (await store.completion('suspends')) === undefined, 2000, 'the timer to prune');
    expect(await store.completion('suspends-too')).toBeUndefined();
    expect(await store.completion('resumes')).toBeUndefined();
    expect(await store.effect('suspends', 'charge')).toBeUndefined();
    expect(await store.checkpoint('tok-resumed')).toBeUndefined();
    // Kept: newer records, the checkpoint a suspended run resumes from, outputs and memory.
    expect(await store.completion('recent')).toMatchObject({ outcome: 'completed' });
    expect(await store.effect('recent', 'charge')).toEqual({ value: { id: 2 } });
    expect(await store.checkpoint('tok-live')).toMatchObject({ state: { s: 2 }, resumedAt: undefined });
    const ctx = await store.hydrate('run-1');
    expect(ctx.outputs.map((o) => o.idempotencyKey)).toEqual(['suspends', 'resumes', 'recent']);
    expect(ctx.memory).toEqual({ plan: 'a' });
    expect((await store.hydrate('run-2')).outputs).toHaveLength(1);
    const pruned = passes.filter((p): p is { pruned: PruneCounts; ms: number } => 'pruned' in p);
    expect(passes.some((p) => 'error' in p)).toBe(false);
    const total = pruned.reduce(
      (sum, p) => ({
        completions: sum.completions + p.pruned.completions,
        effects: sum.effects + p.pruned.effects,
        checkpoints: sum.checkpoints + p.pruned.checkpoints,
      }),
      { completions: 0, effects: 0, checkpoints: 0 },
    );
    expect(total).toEqual({ completions: 3, effects: 1, checkpoints: 1 });

    // A checkpoint never resumed is kept however old it gets.
    now += 365 * 24 * HOUR;
    await until(async () => (await store.completion('recent')) === undefined, 2000, 'the recent ones to go');
    expect(await store.checkpoint('tok-live')).toMatchObject({ state: { s: 2 } });
    expect(count(db, 'context_checkpoints')).toBe(1);
    expect(count(db, 'context_effects')).toBe(0);
  });

  it('prunes in batches: each call deletes at most a batch, and a pass makes progress turn by turn', async () => {
    let now = 0;
    const store = new SqliteContextStore({
      database: file(),
      clock: { now: () => now },
      retentionMs: 1000,
      pruneIntervalMs: 0,
      pruneBatch: 40,
    });
    closers.push(() => store.close());
    const db = store.database;
    const insert = db.prepare(
      "INSERT INTO context_completions (idempotency_key, outcome, publishes, recorded_at) VALUES (?, 'completed', '[]', ?)",
    );
    db.transaction(() => {
      for (let i = 0; i < 1000; i++) insert.run(`old-${i}`, i);
      for (let i = 0; i < 10; i++) insert.run(`new-${i}`, 5000 + i);
    })();
    now = 5500;

    // One call: one batch, the oldest first.
    expect(await store.prune(now - 1000)).toEqual({ completions: 40, effects: 0, checkpoints: 0 });
    expect(await store.completion('old-39')).toBeUndefined();
    expect(await store.completion('old-40')).toBeDefined();
    expect(await store.prune(now - 1000, 7)).toEqual({ completions: 7, effects: 0, checkpoints: 0 });
    expect(count(db, 'context_completions')).toBe(1010 - 47);

    // A pass runs batch after batch, each in its own event-loop turn: others run between them.
    let turns = 0;
    let done = false;
    const pass = store.pruneExpired().then((counts) => {
      done = true;
      return counts;
    });
    const seen: number[] = [];
    while (!done) {
      await new Promise((resolve) => setImmediate(resolve));
      turns += 1;
      seen.push(count(db, 'context_completions'));
    }
    expect(await pass).toEqual({ completions: 953, effects: 0, checkpoints: 0 });
    expect(turns).toBeGreaterThan(10);
    // Progress across turns, never all at once.
    expect(new Set(seen).size).toBeGreaterThan(10);
    expect(seen[0]).toBeGreaterThan(10);
    expect(count(db, 'context_completions')).toBe(10);
    // A second pass while one runs joins it.
    expect(store.pruneExpired()).toBe(store.pruneExpired());
  });

  it('stops its unref’d timer on close', async () => {
    let passes = 0;
    const store = new SqliteContextStore({
      database: file(),
      retentionMs: 1000,
      pruneIntervalMs: 10,
      onPrune: () => {
        passes += 1;
      },
    });
    const timer = (store as unknown as { pruneTimer: NodeJS.Timeout }).pruneTimer;
    expect(timer.hasRef()).toBe(false);
    await until(() => passes > 0, 2000, 'a pass');
    await store.close();
    await sleep(5); // a pass in flight at close settles (its batch commits in close's flush)
    const after = passes;
    await sleep(60);
    expect(passes).toBe(after);
    await expect(store.pruneExpired()).rejects.toMatchObject({ code: 'CONTEXT_CLOSED' });
    const quiet = new SqliteContextStore({ database: join(dir, 'quiet.db'), pruneIntervalMs: 0 });
    expect((quiet as unknown as { pruneTimer: NodeJS.Timeout | undefined }).pruneTimer).toBeUndefined();
    await quiet.close();
  });

  describe('a redelivered hop and the worker harness', () => {
    const workers: Worker[] = [];
    afterEach(async () => {
      for (const w of workers.splice(0)) await w.stop({ graceMs: 100 });
    });

    it('is recognised as done within the retention, while the store prunes, and runs again after it', async () => {
      let now = 10_000_000;
      const path = file();
      const db = openDatabase(path);
      closers.push(() => {
        db.close();
      });
      const bus = new SqliteQueue({ database: db, pollIntervalMs: { min: 2, max: 20 } });
      closers.push(() => bus.close());
      const store = new SqliteContextStore({
        database: db,
        clock: { now: () => now },
        retentionMs: 2 * HOUR,
        pruneIntervalMs: 15,
      });
      closers.push(() => store.close());
      // The same hop under new bus keys: as a Coordinator re-publishing its outbox after the bus forgot the first.
      const { worker, calls, deliver } = chargingWorker(bus, store);
      workers.push(worker);

      await deliver('first');
      expect(calls()).toBe(1);
      now += 90 * 60 * 1000; // 1.5 h: past the bus's hour, inside the Context Engine's 2 h
      await sleep(60); // pruning passes run meanwhile
      await deliver('again-within');
      expect(calls()).toBe(1);
      expect(await store.effect('hop-1', 'charge')).toEqual({ value: 1 });

      now += 60 * 60 * 1000; // 2.5 h after it completed
      await until(async () => (await store.completion('hop-1')) === undefined, 2000, 'the completion to be pruned');
      expect(await store.effect('hop-1', 'charge')).toBeUndefined();
      await deliver('again-after');
      // Past the retention nothing remembers the hop: it runs, and applies its effect, again.
      expect(calls()).toBe(2);
      expect(await store.effect('hop-1', 'charge')).toEqual({ value: 2 });
      // Its output is recorded once: the run's context holds the first.
      expect((await store.hydrate('run-1')).outputs.map((o) => o.idempotencyKey)).toEqual(['hop-1']);
      expect((await bus.stats('r')).deadLetters).toBe(0);
    });
  });
});
