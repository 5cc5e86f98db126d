import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { postgresGate } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { failoverCluster, isStandby, kill } from './failover-cluster.js';
import { isLog, runCli, sleep } from './processes.js';

/**
 * The failover's stated bound: after the leader is SIGKILLed, every work
 * item in flight has its next event within the lease's length plus 2 s.
 * Coordinators on a PostgreSQL database of the test's own (a leader and a
 * standby, a short lease), two worker processes per role on Redis with room
 * for every hop (none waits for a worker), 16 dev-sdlc items. The leader is
 * first stopped (SIGSTOP) for a moment, so that results pile up on the bus
 * unapplied, then SIGKILLed: some items are running a hop, some suspended on
 * a question, some have a result on its way back (left on the bus, or
 * handed to the stopped leader's blocking read, which never leases it: the
 * new leader claims those at once too). Each item's next event is
 * read from the database (when its next hop was dispatched or ended, or
 * the item ended), measured from the kill.
 */

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();
const ITEMS = 16;
const LEASE_MS = 2_500;
const RENEW_MS = 500;
const BOUND_MS = LEASE_MS + 2_000;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

interface HopRow {
  item_id: string;
  kind: string;
  role: string;
  state: string;
  key: string;
  dispatched_at: string;
  active_since: string | null;
  finished_at: string | null;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

describe.runIf(runPostgres && runRedis)('a SIGKILLed leader: time to each item’s next event', () => {
  it('every item in flight (running a hop, suspended on a query, a result on its way) has its next event within the lease plus 2 s', async () => {
    const prefix = `next-${randomUUID().slice(0, 8)}`;
    cleanups.push(() => deleteRedisPrefix(prefix));
    const c = await failoverCluster({
      name: 'next-event',
      busUrl: REDIS_URL,
      prefix,
      leaseMs: LEASE_MS,
      renewMs: RENEW_MS,
      // Hops of 0.8 to 2.5 s: when the leader stops, some end within the stop, some after the kill.
      hopDelayMs: 800,
      jitterMs: 1_700,
      cleanups,
    });
    const leader = c.coordinator();
    await leader.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const standby = c.coordinator();
    await standby.waitForLine(isStandby, 30_000, { seen: true });
    // 2 x 8 per role: room for every item's hop at once (a hop waiting for a worker would wait for it, not the takeover).
    c.workers(2, 8);
    // In two halves a second apart: items at different points of their runs.
    for (const half of [0, 1]) {
      if (half === 1) await sleep(1_000);
      const submitted = await runCli([
        ...['submit', ...c.bus],
        '--workflow',
        'dev-sdlc',
        '--input',
        'Add rate limiting to the public API',
        '--count',
        String(ITEMS / 2),
      ]);
      expect(submitted.code, submitted.stderr).toBe(0);
    }

    const hopsOut = (kind: string) =>
      c.count(`SELECT count(*) AS n FROM coord_hops WHERE state = 'dispatched' AND kind = '${kind}'`);
    // Questions out and stage hops running at once.
    await c.waitFor(
      'questions out and hops running',
      async () =>
        (await c.count('SELECT count(*) AS n FROM coord_items')) === ITEMS &&
        (await hopsOut('query')) >= 3 &&
        (await hopsOut('stage')) >= 3,
      60_000,
      c.byState,
    );
    // Stopped for half a second (well inside its lease), the leader applies nothing: hops that end meanwhile leave their
    // results on the bus. What the database holds now is what the kill finds.
    leader.child.kill('SIGSTOP');
    await sleep(500);
    const hops = await c.rows<HopRow>(
      `SELECT h.item_id, h.kind, h.role, h.state, h.idempotency_key AS key, h.dispatched_at, h.active_since, h.finished_at
         FROM coord_hops h JOIN coord_items i ON i.id = h.item_id WHERE i.finished_at IS NULL`,
    );
    // The last time each hop's handler returned, by its effect key.
    const returned = new Map(c.returns().map((r) => [r.key, r.at]));
    const killedAt = Date.now();
    await kill(leader);
    const inFlight = new Map<string, string>();
    for (const h of hops) {
      if (h.state !== 'dispatched') continue;
      // Its handler returned since the hop went out (or was resumed: a resumed hop keeps its key).
      const back = returned.get(`${h.key}/done`);
      const kind =
        back !== undefined && back >= Number(h.active_since ?? h.dispatched_at)
          ? 'result on its way'
          : h.kind === 'query'
            ? 'suspended on a query'
            : 'running a hop';
      // An item with a result on its way is counted so, whatever else it has out.
      if (inFlight.get(h.item_id) !== 'result on its way') inFlight.set(h.item_id, kind);
    }
    const live = new Set(hops.map((h) => h.item_id));
    for (const id of live) if (!inFlight.has(id)) inFlight.set(id, 'other');
    const kinds = new Set(inFlight.values());
    expect(kinds).toContain('running a hop');
    expect(kinds).toContain('suspended on a query');
    expect(kinds).toContain('result on its way');

    // Each item's next event: the first hop the Coordinators dispatched or ended after the kill, or its own end
    // (a suspension dispatches its query; a resume ends the query answered).
    const nextEvents = async () => {
      const rows = await c.rows<{ id: string; at: string | null }>(
        `SELECT i.id, LEAST(
            min(CASE WHEN h.dispatched_at > $1 THEN h.dispatched_at END),
            min(CASE WHEN h.finished_at > $1 THEN h.finished_at END),
            min(CASE WHEN i.finished_at > $1 THEN i.finished_at END)) AS at
           FROM coord_items i LEFT JOIN coord_hops h ON h.item_id = i.id
          WHERE i.id = ANY($2) GROUP BY i.id`,
        [killedAt, [...inFlight.keys()]],
      );
      return new Map(rows.filter((r) => r.at !== null).map((r) => [r.id, Number(r.at) - killedAt]));
    };
    let delays = new Map<string, number>();
    await c.waitFor(
      'every item in flight to have its next event',
      async () => {
        delays = await nextEvents();
        return delays.size === inFlight.size;
      },
      60_000,
      async () => `${delays.size} of ${inFlight.size}; ${await c.byState()}; ${standby.lines.slice(-3).join(' | ')}`,
    );
    const all = [...delays.values()];
    const byKind = [...kinds].map((kind) => {
      const ds = [...inFlight].filter(([, k]) => k === kind).map(([id]) => delays.get(id)!);
      return `${kind}: ${ds.length} items, max ${Math.max(...ds)} ms, median ${median(ds)} ms`;
    });
    console.log(
      `failover (lease ${LEASE_MS} ms, renew ${RENEW_MS} ms, bound ${BOUND_MS} ms): kill -> next event of ` +
        `${all.length} items in flight: max ${Math.max(...all)} ms, median ${median(all)} ms; ${byKind.join('; ')}`,
    );
    expect([...delays].filter(([, d]) => d > BOUND_MS)).toEqual([]);

    // And the run ends well: every item completes, the audit verifies.
    await c.waitFor(
      'every item to complete',
      async () => (await c.count("SELECT count(*) AS n FROM coord_items WHERE state = 'completed'")) === ITEMS,
      90_000,
      c.byState,
    );
    const verified = await runCli(['audit', 'verify', '--db', c.database.url]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
  }, 180_000);
});
