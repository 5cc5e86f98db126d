import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { decide } from '../../src/decisions/coordinator-decisions.js';
import { PostgresLease } from '../../src/persistence/coordinator/postgres-lease.js';
import { PostgresCoordinatorStore } from '../../src/persistence/coordinator/postgres-store.js';
import { openPgPool } from '../../src/persistence/kernel/postgres.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { governanceCascade } from '../../src/workflow/governance-cascade.js';
import { type TestDatabase, createTestDatabase, postgresGate, withPassword } from '../postgres-availability.js';
import { runCli } from './helpers.js';

const { postgresUp, runPostgres } = await postgresGate();

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function database(): Promise<TestDatabase> {
  const db = await createTestDatabase('sb_status');
  cleanups.push(() => db.drop());
  return db;
}

function started(url: string): PostgresLease {
  const lease = new PostgresLease({ url, leaseMs: 20_000, renewMs: 2_000 });
  cleanups.push(() => lease.close());
  return lease;
}

const suiteName = runPostgres
  ? 'switchboard coordinator status'
  : 'switchboard coordinator status (skipped: no PostgreSQL at 127.0.0.1:5432; CI=true makes this fail)';

describe.runIf(runPostgres)(suiteName, () => {
  it('is reachable (in CI a missing PostgreSQL fails here)', () => {
    expect(postgresUp).toBe(true);
  });

  it('prints the leader and the standbys seen, as text and as JSON, never the password', async () => {
    const db = await database();
    const url = withPassword(db.url, 'hunter2');
    const leader = started(url);
    const standby = started(url);
    expect(await leader.acquire()).toBe('leader');
    expect(await standby.acquire()).toBe('standby');

    const text = await runCli(['coordinator', 'status', '--db', url]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).not.toContain('hunter2');
    expect(text.stdout).toContain(`database  postgres://postgres:***@127.0.0.1:5432/${db.name}`);
    expect(text.stdout).toMatch(new RegExp(`^leader {4}pid ${process.pid} on \\S+, epoch 1, since \\d{4}-`, 'm'));
    expect(text.stdout).toContain(`(id ${leader.id})`);
    expect(text.stdout).toMatch(/^standbys$/m);
    expect(text.stdout).toContain(standby.id);

    const json = await runCli(['coordinator', 'status', '--db', url, '--json']);
    expect(json.code).toBe(0);
    expect(json.stdout).not.toContain('hunter2');
    const status = JSON.parse(json.stdout);
    expect(status).toMatchObject({
      database: `postgres://postgres:***@127.0.0.1:5432/${db.name}`,
      epoch: 1,
      leader: { holder: leader.id, pid: process.pid, epoch: 1, live: true },
      standbys: [{ id: standby.id, pid: process.pid }],
    });
    expect(Date.parse(status.leader.expiresAt)).toBeGreaterThan(Date.parse(status.now));
    expect(Date.parse(status.leader.since)).toBeLessThanOrEqual(Date.parse(status.now));
    // No Coordinator tables yet: what items wait for is not known.
    expect(status.waiting).toBeNull();
    expect(text.stdout).toMatch(/^waiting {3}unknown: the database holds no Coordinator tables yet$/m);
  });

  it('shows what a running item waits for on the bus: its hop, stage, role, since when and for how long', async () => {
    const db = await database();
    const url = withPassword(db.url, 'hunter2');
    expect(await started(url).acquire()).toBe('leader');
    // A Coordinator's tables with one item whose first hop went out 90 s ago (decided and committed as a Coordinator does).
    const pool = await openPgPool(db.url, { max: 1 });
    try {
      const store = await PostgresCoordinatorStore.open(pool);
      const definition = parseWorkflowDefinition({
        id: 'waits',
        version: 1,
        start: 'review',
        stages: { review: { role: 'reviewer', next: [{ on: 'succeeded', end: 'completed' }] } },
      });
      const sentAt = Date.now() - 90_000;
      let n = 0;
      const d = decide(
        undefined,
        {
          kind: 'create',
          itemId: 'item-waiting',
          taskId: null,
          definition,
          keepDefinition: true,
          input: [{ kind: 'text', text: 'look' }],
          budget: null,
          attributes: null,
        },
        { now: sentAt, nextId: () => `id-${++n}`, governance: governanceCascade({ knownRoles: ['reviewer'] }) },
      );
      // Its rows alone: the audit is not what this reads.
      await store.commit({ changes: [{ ...d.changes!, audit: [] }], deleteOutbox: [] });
    } finally {
      await pool.end();
    }

    const text = await runCli(['coordinator', 'status', '--db', url]);
    expect(text.stderr).toBe('');
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^waiting {3}1 hop out on the bus, oldest first$/m);
    const row = text.stdout.split('\n').find((l) => l.startsWith('item-waiting'));
    expect(row).toMatch(/^item-waiting +waits +hop 1 +review +reviewer +1 +\d{4}-\S+Z +(\d+\.\d) s +0$/);
    expect(Number(/(\d+\.\d) s/.exec(row!)![1])).toBeGreaterThanOrEqual(90);

    const json = JSON.parse((await runCli(['coordinator', 'status', '--db', url, '--json'])).stdout);
    expect(json.waiting).toHaveLength(1);
    expect(json.waiting[0]).toMatchObject({
      itemId: 'item-waiting',
      workflow: 'waits',
      itemState: 'running',
      kind: 'stage',
      hop: 1,
      attempt: 1,
      stage: 'review',
      role: 'reviewer',
      timeouts: 0,
      bus: null,
    });
    expect(json.waiting[0].ageMs).toBeGreaterThanOrEqual(90_000);
    expect(Date.parse(json.waiting[0].since)).toBeLessThanOrEqual(Date.now() - 90_000);
  });

  it('shows a lease given up as lapsed: no leader until a standby takes it', async () => {
    const db = await database();
    const lease = started(db.url);
    await lease.acquire();
    await lease.close();
    const r = await runCli(['coordinator', 'status', '--db', db.url]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(
      /^leader {4}none: the lease lapsed .* ago \(last held by pid \d+ on \S+, epoch 1, since /m,
    );
    expect(r.stdout).toMatch(/^standbys {2}none seen$/m);
    const json = JSON.parse((await runCli(['coordinator', 'status', '--db', db.url, '--json'])).stdout);
    expect(json).toMatchObject({ epoch: 1, leader: { epoch: 1, live: false }, standbys: [] });
  });

  it('says so when the database has no lease table yet', async () => {
    const db = await database();
    const r = await runCli(['coordinator', 'status', '--db', withPassword(db.url, 'hunter2')]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toBe(
      `switchboard coordinator status: postgres://postgres:***@127.0.0.1:5432/${db.name} holds no leader lease (no coordinator_lease table): no Coordinator has taken the lease on this database yet\n`,
    );
  });

  it('refuses a lease of a newer version (exit 2), the URL redacted', async () => {
    const db = await database();
    const lease = started(db.url);
    await lease.acquire();
    await lease.close();
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query("UPDATE schema_version SET version = version + 1 WHERE component = 'coordinator-lease'");
    await admin.end();
    const r = await runCli(['coordinator', 'status', '--db', withPassword(db.url, 'hunter2')]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('coordinator-lease');
    expect(r.stderr).not.toContain('hunter2');
  });

  it('an unreachable server and a missing database fail with the URL redacted', async () => {
    const down = await runCli(['coordinator', 'status', '--db', 'postgres://postgres:hunter2@127.0.0.1:1/nowhere']);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot connect to PostgreSQL at postgres://postgres:***@127.0.0.1:1/nowhere');
    expect(down.stderr).not.toContain('hunter2');
    const missing = await runCli([
      'coordinator',
      'status',
      '--db',
      'postgres://postgres:hunter2@127.0.0.1:5432/sb_status_no_such_database',
    ]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('database "sb_status_no_such_database" does not exist');
    expect(missing.stderr).not.toContain('hunter2');
  });
});

describe('switchboard coordinator status: usage', () => {
  it('needs a PostgreSQL URL, and documents itself in coordinator --help', async () => {
    const none = await runCli(['coordinator', 'status']);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('--db postgres://... is required');
    const file = await runCli(['coordinator', 'status', '--db', 'coord.db']);
    expect(file.code).toBe(2);
    expect(file.stderr).toContain('--db must be a PostgreSQL URL');
    const extra = await runCli(['coordinator', 'status', 'now', '--db', 'postgres://h/d']);
    expect(extra.code).toBe(2);
    const help = await runCli(['coordinator', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: switchboard coordinator status --db postgres://');
    for (const flag of ['--db URL', '--json']) expect(help.stdout).toContain(`  ${flag}`);
  });
});
