import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type Proc, isLog, readItems, runCli, startCli, terminate, until } from './processes.js';
import { freePort, hasRedisServer, startRedis, stopRedis } from './redis-server.js';

/**
 * The Redis server under a multi-process run (its own `redis-server`, on a
 * free port, no persistence) is restarted EMPTY mid-run: every message on the
 * bus is gone, hops in flight and results on their way among them. Each stage
 * has a `timeout`, so the Coordinator finds every lost hop again and
 * re-publishes it under its idempotency key: every item completes, each hop's
 * effect (recorded outside Redis, keyed by the hop) is applied once, and the
 * audit verifies.
 */

const TIMED_HANDLER = new URL('./fixtures/timed-handler.mjs', import.meta.url).pathname;
const ITEMS = 12;
const STAGES = ['plan', 'build', 'ship'] as const;

const redisServer = await hasRedisServer();
const IN_CI = process.env.CI === 'true';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function track(proc: Proc): Proc {
  cleanups.push(async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  });
  return proc;
}

const completed = (db: string) => readItems(db).filter((i) => i.state === 'completed').length;
function states(db: string): string {
  const counts: Record<string, number> = {};
  for (const i of readItems(db)) counts[i.state] = (counts[i.state] ?? 0) + 1;
  return JSON.stringify(counts);
}

describe.runIf(redisServer || IN_CI)('a Redis server restarted empty mid-run', () => {
  it('with stage timeouts, every item still completes; each effect applied once; the audit verifies', async () => {
    await restartMidRun({ timeouts: true });
  }, 240_000);

  it('with no timeout anywhere, the Coordinator sees the bus lost its state and publishes again what was out', async () => {
    await restartMidRun({ timeouts: false });
  }, 240_000);
});

/**
 * The run: 12 items of a 3-stage workflow, Redis restarted empty once some
 * are done. With `timeouts`, each stage has one (2 s): lost hops are found
 * by it. Without, nothing but the Coordinator's look at the bus's generation
 * finds them (audited `reconcile`).
 */
async function restartMidRun({ timeouts }: { timeouts: boolean }): Promise<void> {
  {
    const dir = mkdtempSync(join(tmpdir(), 'sb-redis-restart-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const port = await freePort();
    let redis = await startRedis(port);
    cleanups.push(() => stopRedis(redis));
    const url = `redis://127.0.0.1:${port}`;
    const db = join(dir, 'coordinator.db');
    const effectsDb = join(dir, 'effects.db');
    const workflow = join(dir, 'timed.json');
    const timeout = timeouts ? { timeout: '2s' } : {};
    writeFileSync(
      workflow,
      JSON.stringify({
        id: 'timed',
        version: 1,
        start: 'plan',
        defaults: { retry: { initialInterval: '100ms', maximumInterval: '1s', maximumAttempts: 0 } },
        stages: {
          plan: { role: 'plan', ...timeout, next: [{ on: 'succeeded', goto: 'build' }] },
          build: { role: 'build', ...timeout, next: [{ on: 'succeeded', goto: 'ship' }] },
          ship: { role: 'ship', ...timeout, next: [{ on: 'succeeded', end: 'completed' }] },
        },
      }),
    );
    const bus = ['--bus', url, '--bus-prefix', 'restart'];
    const coordinator = track(
      startCli('coordinator', ['coordinator', '--db', db, ...bus, '--workflows', workflow, '--log-level', 'info']),
    );
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const worker = track(
      startCli(
        'worker',
        [
          'worker',
          ...bus,
          ...STAGES.flatMap((r) => ['--role', r]),
          '--handler',
          TIMED_HANDLER,
          // 2 per role: 6 hops at the worker at most, so of the 10 or more items still going when Redis
          // goes, at least 4 have their hop waiting on the bus (lost with it, found again by its timeout).
          // A queue's wait stays under the 2 s timeout (6 hops of 150 ms), so only the loss makes timeouts.
          '--concurrency',
          '2',
          '--lease-ms',
          '1500',
          '--log-level',
          'warn',
        ],
        { SB_EFFECTS_DB: effectsDb, SB_HOP_DELAY_MS: '150' },
      ),
    );
    const submitted = await runCli([
      ...['submit', ...bus],
      '--workflow',
      'timed',
      '--input',
      'go',
      '--count',
      String(ITEMS),
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    // Every item exists (the Coordinator took every request) and some are done: then Redis goes, and comes back empty.
    await until(
      () => readItems(db).length === ITEMS && completed(db) >= 2,
      60_000,
      () => `items by state: ${states(db)}`,
    );
    expect(completed(db)).toBeLessThan(ITEMS);
    await stopRedis(redis);
    redis = await startRedis(port);

    await until(
      () => completed(db) === ITEMS,
      120_000,
      () => `items by state: ${states(db)}; coordinator: ${coordinator.lines.slice(-3).join(' | ')}`,
    );
    expect((await terminate(worker)).code).toBe(0);
    expect((await terminate(coordinator)).code).toBe(0);

    // Lost hops were found again (by their stage timeout, or by the Coordinator's look at the bus's
    // generation), re-published under their own key.
    const coord = new Database(db, { readonly: true });
    try {
      const republished = coord
        .prepare(
          // With timeouts, whichever comes first finds a lost hop: its stage's timeout, or the Coordinator's
          // look at the bus's generation (at most a second after the restart, usually first).
          timeouts
            ? `SELECT COUNT(*) AS n FROM audit_log WHERE (kind = 'timeout' AND data LIKE '%republished%')
                 OR (kind = 'reconcile' AND data LIKE '%the bus lost its state%')`
            : "SELECT COUNT(*) AS n FROM audit_log WHERE kind = 'reconcile' AND data LIKE '%the bus lost its state%'",
        )
        .get() as { n: number };
      expect(republished.n).toBeGreaterThan(0);
      const hops = coord.prepare("SELECT COUNT(*) AS n FROM coord_hops WHERE state = 'completed'").get() as {
        n: number;
      };
      expect(hops.n).toBe(ITEMS * STAGES.length);
    } finally {
      coord.close();
    }
    // Each hop's effect applied once: one application per hop, whatever the attempts.
    const fx = new Database(effectsDb, { readonly: true });
    try {
      const applied = fx.prepare('SELECT field, COUNT(*) AS n FROM applied GROUP BY field').all() as { n: number }[];
      expect(applied).toHaveLength(ITEMS * STAGES.length);
      expect(applied.every((r) => r.n === 1)).toBe(true);
      const attempts = fx.prepare('SELECT COUNT(*) AS n FROM attempts').get() as { n: number };
      expect(attempts.n).toBeGreaterThanOrEqual(ITEMS * STAGES.length);
    } finally {
      fx.close();
    }
    const verified = await runCli(['audit', 'verify', '--db', db]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }
}
