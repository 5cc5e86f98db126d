import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresGate } from '../postgres-availability.js';
import { IN_CI } from '../redis-availability.js';
import { failoverCluster, isStandby, kill } from './failover-cluster.js';
import { isLog, runCli, sleep } from './processes.js';
import { freePort, hasRedisServer, startRedis, stopRedis } from './redis-server.js';

/**
 * Two failures back to back, with no `timeout` anywhere in the workflow
 * (the shipped dev-sdlc: a question to the architect, a failed test sent
 * back to coding, an approval gate auto-approved): Coordinators on a
 * PostgreSQL database of the test's own (a leader and a standby), two worker
 * processes per role on a Redis server of the test's own. Mid-run the Redis
 * server is restarted EMPTY (every hop and result on the bus, every consumer
 * lease, the Context Engine's outputs, checkpoints and effect markers: gone),
 * then the leader is SIGKILLed before it can be sure to have noticed. Nothing
 * but the reconcile with the bus (the new leader publishes again what was out
 * when it starts) can rescue the work: every item completes, each hop's
 * effect lands once in the system that deduplicates by its key, and the audit
 * chain verifies.
 */

const { runPostgres } = await postgresGate();
const redisServer = await hasRedisServer();
const ITEMS = 40;
const LEASE_MS = 2_000;
const RENEW_MS = 500;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe.runIf(runPostgres && (redisServer || IN_CI))('Redis restarted empty, then the leader SIGKILLed', () => {
  it('with no timeout anywhere, every item completes; each effect lands once; the audit verifies', async () => {
    const port = await freePort();
    let redis = await startRedis(port);
    cleanups.push(() => stopRedis(redis));
    const c = await failoverCluster({
      name: 'redis-loss',
      busUrl: `redis://127.0.0.1:${port}`,
      prefix: `loss-${randomUUID().slice(0, 8)}`,
      leaseMs: LEASE_MS,
      renewMs: RENEW_MS,
      hopDelayMs: 1_000,
      jitterMs: 500,
      cleanups,
    });
    const leader = c.coordinator();
    await leader.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const standby = c.coordinator();
    await standby.waitForLine(isStandby, 30_000, { seen: true });
    c.workers(2, 8);
    const submitted = await runCli([
      ...['submit', ...c.bus],
      '--workflow',
      'dev-sdlc',
      '--input',
      'Add rate limiting to the public API',
      '--count',
      String(ITEMS),
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);

    // Every item taken in, and the run well under way (a quarter of its hops ended): hops are running at the
    // workers, waiting on the bus, results on their way back, questions out.
    await c.waitFor(
      'the run under way',
      async () =>
        (await c.count('SELECT count(*) AS n FROM coord_items')) === ITEMS &&
        (await c.count("SELECT count(*) AS n FROM coord_hops WHERE state IN ('completed', 'failed')")) >= 70,
      60_000,
      c.byState,
    );
    expect(await c.count("SELECT count(*) AS n FROM coord_items WHERE state = 'completed'")).toBeLessThan(ITEMS);
    await stopRedis(redis);
    redis = await startRedis(port);
    // Within the leader's first look at the bus's generation (at most a second): it may not have noticed.
    await sleep(300);
    await kill(leader);
    await standby.waitForLine(isLog('coordinator ready'), LEASE_MS + 30_000);

    const live = () => c.count('SELECT count(*) AS n FROM coord_items WHERE finished_at IS NULL');
    await c.waitFor(
      'every item to end',
      async () => (await live()) === 0,
      120_000,
      async () =>
        `${await c.byState()}; unfinished hops: ${JSON.stringify(
          await c.rows(
            `SELECT h.item_id, h.kind, h.role, h.state, h.attempt FROM coord_hops h JOIN coord_items i ON i.id = h.item_id
               WHERE i.finished_at IS NULL AND h.state NOT IN ('completed', 'failed') LIMIT 10`,
          ),
        )}; leader: ${standby.lines.slice(-3).join(' | ')}`,
    );
    const failures = await c.rows<{ failure: string; n: number }>(
      "SELECT failure, count(*)::int AS n FROM coord_items WHERE state <> 'completed' GROUP BY failure",
    );
    expect(failures).toEqual([]);
    expect(JSON.parse(await c.byState())).toEqual([{ state: 'completed', n: ITEMS }]);

    // The new leader published again what was out, under each hop's own key.
    const reconciled = await c.count("SELECT count(*) AS n FROM audit_log WHERE kind = 'reconcile'");
    expect(reconciled).toBeGreaterThan(0);
    // Each hop's effect landed once, under its hop's key (a hop published again, or started over, keeps it):
    // the keys applied are exactly the hops the Coordinator recorded. An application the key caught (the
    // worker's own effect marker lost with Redis) is counted.
    const applied = c.applications();
    const fresh = applied.filter((a) => a.fresh).map((a) => a.key);
    const hopKeys = (await c.rows<{ key: string }>('SELECT idempotency_key AS key FROM coord_hops')).map(
      (h) => `${h.key}/done`,
    );
    expect(new Set(fresh).size).toBe(fresh.length);
    expect(new Set(fresh)).toEqual(new Set(hopKeys));
    const keysByField = new Map<string, Set<string>>();
    for (const a of applied) keysByField.set(a.field, (keysByField.get(a.field) ?? new Set()).add(a.key));
    expect([...keysByField].filter(([, keys]) => keys.size !== 1)).toEqual([]);
    const caught = applied.filter((a) => !a.fresh).length;
    console.log(
      `redis restarted empty, leader killed: ${ITEMS} items completed; ${reconciled} reconcile entries; ` +
        `${fresh.length} effects, ${caught} re-applications caught by their key`,
    );
    const verified = await runCli(['audit', 'verify', '--db', c.database.url]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 240_000);
});
