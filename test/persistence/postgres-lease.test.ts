import { type ChildProcess, spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { filter, firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { SchemaVersionError } from '../../src/persistence/kernel/migrations.js';
import { isSwitchboardError } from '../../src/protocol/switchboard-error.js';
import {
  CoordinatorLeaseError,
  LEASE_MIGRATION_SET,
  type LeaseRoleChange,
  PostgresLease,
  type PostgresLeaseOptions,
  readLeaseStatus,
} from '../../src/persistence/coordinator/postgres-lease.js';
import { type TestDatabase, createTestDatabase, postgresGate } from '../postgres-availability.js';
import { TcpProxy } from './tcp-proxy.js';

const { postgresUp, runPostgres } = await postgresGate();
const fixture = fileURLToPath(new URL('./fixtures/lease-holder.ts', import.meta.url));

/**
 * Short leases so that the takeovers happen within a test; an attempt may take
 * up to a second before it counts as failed (the machine is loaded).
 */
const FAST = { leaseMs: 1_500, renewMs: 300, queryTimeoutMs: 1_000 } as const;

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) {
    try {
      await cleanup();
    } catch (error) {
      console.error('cleanup failed', error);
    }
  }
  cleanups = [];
});

async function database(): Promise<TestDatabase> {
  const db = await createTestDatabase('sb_lease');
  cleanups.push(() => db.drop());
  return db;
}

function lease(options: PostgresLeaseOptions): PostgresLease {
  const made = new PostgresLease(options);
  cleanups.push(() => made.close());
  return made;
}

async function client(url: string): Promise<pg.Client> {
  const made = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  made.on('error', () => undefined);
  await made.connect();
  cleanups.push(() => made.end().catch(() => undefined));
  return made;
}

/** Every role change of a lease, as it happens. */
function record(made: PostgresLease): LeaseRoleChange[] {
  const changes: LeaseRoleChange[] = [];
  made.roles$.subscribe((change) => changes.push(change));
  return changes;
}

function nextLeader(made: PostgresLease): Promise<LeaseRoleChange> {
  return firstValueFrom(made.roles$.pipe(filter((c) => c.role === 'leader')));
}

function holder(url: string, options: { leaseMs: number; renewMs: number }) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', fixture, url, String(options.leaseMs), String(options.renewMs)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const started = new Promise<{ role: string; epoch: number | null; id: string; pid: number }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line !== undefined) resolve(JSON.parse(line));
    });
    child.on('exit', (code, signal) =>
      reject(new Error(`the lease holder exited (${code ?? signal}) before it started`)),
    );
  });
  const killed = () =>
    new Promise<void>((resolve) => {
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });
  return { child, started, killed };
}

async function status(url: string) {
  const reader = await client(url);
  try {
    const read = await readLeaseStatus(reader);
    if (read === undefined) throw new Error('no lease table');
    return read;
  } finally {
    await reader.end();
  }
}

const suiteName = runPostgres
  ? 'PostgresLease on PostgreSQL'
  : 'PostgresLease on PostgreSQL (skipped: no PostgreSQL at 127.0.0.1:5432; CI=true makes this fail)';

describe.runIf(runPostgres)(suiteName, () => {
  it('is reachable (in CI a missing PostgreSQL fails here)', () => {
    expect(postgresUp).toBe(true);
  });

  it('of two leases one leads; closing it lets the other take over with the next epoch', async () => {
    const db = await database();
    const a = lease({ url: db.url, ...FAST });
    const b = lease({ url: db.url, ...FAST });
    await Promise.all([a.acquire(), b.acquire()]);
    // (A first attempt that timed out leaves a standby that looks again.)
    await until(() => a.role === 'leader' || b.role === 'leader');
    expect([a.role, b.role].sort()).toEqual(['leader', 'standby']);
    const [leader, standby] = a.role === 'leader' ? [a, b] : [b, a];
    const first = leader.epoch!;
    expect(first).toBeGreaterThanOrEqual(1);
    expect(standby.epoch).toBeUndefined();
    const before = await status(db.url);
    expect(before.holder).toMatchObject({ epoch: first, holder: leader.id, pid: process.pid, live: true });
    expect(before.standbys.map((s) => s.id)).toEqual([standby.id]);
    // A member that stopped without closing is forgotten once unseen for five minutes (ten leases here are less).
    const admin = await client(db.url);
    await admin.query(
      `INSERT INTO coordinator_lease_members (id, pid, host, process_start, last_seen) VALUES
         ('gone', 1, 'h', now(), now() - interval '301 seconds'), ('recent', 1, 'h', now(), now() - interval '299 seconds')`,
    );
    await until(async () => !(await status(db.url)).standbys.some((s) => s.id === 'gone'));
    expect((await status(db.url)).standbys.map((s) => s.id)).toContain('recent');
    await admin.query("DELETE FROM coordinator_lease_members WHERE id = 'recent'");

    const took = nextLeader(standby);
    const leaderChanges = record(leader);
    await leader.close();
    expect(leaderChanges).toEqual([{ role: 'lost', epoch: first, reason: 'closed' }]);
    expect(await took).toEqual({ role: 'leader', epoch: first + 1 });
    expect(standby.role).toBe('leader');
    const after = await status(db.url);
    expect(after.holder).toMatchObject({ epoch: first + 1, holder: standby.id, live: true });
    // The closed lease left the members.
    expect(after.standbys).toEqual([]);
  });

  it('a dead process of this host is taken over at once, before its lease lapses', async () => {
    const db = await database();
    const child = holder(db.url, { leaseMs: 30_000, renewMs: 300 });
    const started = await child.started;
    expect(started).toMatchObject({ role: 'leader', epoch: expect.any(Number) });
    const b = lease({ url: db.url, ...FAST });
    expect(await b.acquire()).toBe('standby');
    const held = await status(db.url);
    expect(held.holder).toMatchObject({ pid: started.pid, epoch: started.epoch, live: true });
    const took = nextLeader(b);
    await child.killed();
    const change = await took;
    expect(change).toEqual({ role: 'leader', epoch: expect.any(Number) });
    expect(b.epoch).toBeGreaterThan(started.epoch!);
    const after = await status(db.url);
    expect(after.holder).toMatchObject({ holder: b.id, epoch: b.epoch });
    // Taken while the dead holder's lease still held.
    expect(after.holder!.since).toBeLessThan(held.holder!.expiresAt);
  });

  it('a holder that cannot be seen dead (another host) is taken over only once its lease lapsed', async () => {
    const db = await database();
    const child = holder(db.url, FAST);
    const started = await child.started;
    expect(started.role).toBe('leader');
    const b = lease({ url: db.url, ...FAST, alive: () => true });
    expect(await b.acquire()).toBe('standby');
    const took = nextLeader(b);
    await child.killed();
    // No renewal after the kill: this is the lease's last expiry.
    const last = await status(db.url);
    expect(last.holder).toMatchObject({ epoch: started.epoch, pid: started.pid });
    await took;
    expect(b.epoch).toBeGreaterThan(started.epoch!);
    const after = await status(db.url);
    expect(after.holder!.since).toBeGreaterThanOrEqual(last.holder!.expiresAt);
  });

  it('of several leases racing, repeatedly, exactly one leads each round, with one epoch each', async () => {
    const db = await database();
    const epochs: number[] = [];
    for (let round = 0; round < 4; round++) {
      const leases = Array.from({ length: 5 }, () => lease({ url: db.url, ...FAST }));
      const changes = leases.map(record);
      await Promise.all(leases.map((l) => l.acquire()));
      await until(() => leases.some((l) => l.role === 'leader'));
      const leaders = leases.filter((l) => l.role === 'leader');
      expect(leaders).toHaveLength(1);
      const leader = leaders[0]!;
      epochs.push(leader.epoch!);
      const announced = changes.flat().filter((c) => c.role === 'leader');
      expect(announced).toEqual([{ role: 'leader', epoch: leader.epoch }]);
      expect((await status(db.url)).holder).toMatchObject({ holder: leader.id, epoch: leader.epoch });
      for (const l of leases) await l.close();
    }
    // One epoch per leader, each later than the last (a round's first epoch is the last one's + 1
    // unless an attempt that timed out on the client had taken one).
    expect(epochs[0]).toBeGreaterThanOrEqual(1);
    for (let i = 1; i < epochs.length; i++) expect(epochs[i]).toBeGreaterThan(epochs[i - 1]!);
  });

  it('a replaced leader that still believes it leads (paused) is fenced by the epoch in the database', async () => {
    const db = await database();
    const store = await client(db.url);
    await store.query('CREATE TABLE writes (id bigserial PRIMARY KEY, writer text NOT NULL, epoch bigint NOT NULL)');
    // A renews too seldom to notice within the test: only the row can stop it.
    const a = lease({ url: db.url, leaseMs: 60_000, renewMs: 30_000 });
    await lead(a);
    const epochA = a.epoch!;
    await commitAs(a, store, 'A');
    // B sees A's pid as dead and takes over at once.
    const b = lease({ url: db.url, ...FAST, alive: () => false });
    await lead(b);
    expect(a.role).toBe('leader');
    const refused = await commitAs(a, store, 'A').catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(CoordinatorLeaseError);
    expect(refused).toMatchObject({ code: 'COORD_FENCED', details: { epoch: epochA, currentEpoch: b.epoch } });
    expect(b.epoch).toBeGreaterThan(epochA);
    await commitAs(b, store, 'B');
    const rows = await store.query('SELECT writer, epoch::int AS epoch FROM writes ORDER BY id');
    expect(rows.rows).toEqual([
      { writer: 'A', epoch: epochA },
      { writer: 'B', epoch: b.epoch },
    ]);
  });

  it('a leader cut off from the database stops by itself; healed, every commit it attempts is fenced and it rejoins as a standby', async () => {
    const db = await database();
    const direct = await client(db.url);
    await direct.query('CREATE TABLE writes (id bigserial PRIMARY KEY, writer text NOT NULL, epoch bigint NOT NULL)');
    const proxy = await TcpProxy.start('127.0.0.1', 5432);
    cleanups.push(() => proxy.close());
    const proxied = new URL(db.url);
    proxied.port = String(proxy.port);

    const a = lease({ url: proxied.toString(), ...FAST });
    const aChanges = record(a);
    await lead(a);
    const b = lease({ url: db.url, ...FAST });
    expect(await b.acquire()).toBe('standby');

    // A's store: its own connection through the proxy, committing in a loop.
    const attempts: { at: number; outcome: 'committed' | 'fenced' | 'failed' }[] = [];
    let writing = true;
    const writer = (async () => {
      let store: pg.Client | undefined;
      while (writing) {
        try {
          store ??= await proxiedStore(proxied.toString());
          const at = performance.now();
          try {
            await commitAs(a, store, 'A');
            attempts.push({ at, outcome: 'committed' });
          } catch (error) {
            if (isSwitchboardError(error) && error.code === 'COORD_FENCED') attempts.push({ at, outcome: 'fenced' });
            else throw error;
          }
        } catch {
          // Cut off: this connection's state is unknown; a new one next time.
          store?.connection.stream.destroy();
          store = undefined;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      store?.connection.stream.destroy();
    })();
    cleanups.push(async () => {
      writing = false;
      await writer;
    });
    await until(() => attempts.some((t) => t.outcome === 'committed'));

    const epochA = a.epoch!;
    // One commit of A is cut off mid-transaction, holding the lease row FOR SHARE; its write is sent
    // during the cut and held by the proxy until the heal (no client timeout: the worst case).
    const stuck = await client(proxied.toString());
    await stuck.query('BEGIN');
    await a.assertEpoch(stuck);
    const lost = firstValueFrom(a.roles$.pipe(filter((c) => c.role === 'lost')));
    const took = nextLeader(b);
    proxy.cut();
    const stuckWrite = (async () => {
      await stuck.query('INSERT INTO writes (writer, epoch) VALUES ($1, $2)', ['A', epochA]);
      await stuck.query('COMMIT');
    })().then(
      () => 'committed',
      () => 'failed',
    );
    expect(await lost).toEqual({ role: 'lost', epoch: epochA, reason: 'expired' });
    expect(await took).toEqual({ role: 'leader', epoch: epochA + 1 });
    const newEpochAt = performance.now();
    // A's process lived all along; it stopped leading by its own deadline.
    expect(a.role).toBe('standby');
    await commitAs(b, direct, 'B');
    const marker = Number((await direct.query("SELECT max(id) AS id FROM writes WHERE writer = 'B'")).rows[0].id);

    proxy.heal();
    const healedAt = Number(
      (await direct.query('SELECT (extract(epoch from now()) * 1000)::float8 AS now')).rows[0].now,
    );
    // A reaches the database again: it looks as a standby, and its store's commits are refused.
    await until(async () => {
      const seen = (await status(db.url)).standbys.find((s) => s.id === a.id);
      return seen !== undefined && seen.lastSeen > healedAt;
    });
    await until(() => attempts.filter((t) => t.at > newEpochAt).length >= 5);
    writing = false;
    await writer;
    // The server ended the cut-off transaction (idle in it past the fence's timeout): its write never lands.
    expect(await stuckWrite).toBe('failed');

    const after = attempts.filter((t) => t.at > newEpochAt);
    expect(after.length).toBeGreaterThanOrEqual(5);
    expect(after.every((t) => t.outcome === 'fenced')).toBe(true);
    const late = await direct.query("SELECT count(*)::int AS n FROM writes WHERE writer = 'A' AND id > $1", [marker]);
    expect(late.rows[0].n).toBe(0);
    const early = await direct.query("SELECT DISTINCT epoch::int AS epoch FROM writes WHERE writer = 'A'");
    expect(early.rows).toEqual([{ epoch: epochA }]);
    expect(a.role).toBe('standby');
    expect(a.epoch).toBeUndefined();
    expect(b.epoch).toBe(epochA + 1);
    expect(aChanges).toEqual([
      { role: 'leader', epoch: epochA },
      { role: 'lost', epoch: epochA, reason: 'expired' },
      { role: 'standby' },
    ]);
  });

  it('the lease tables carry a schema version: tables made before it are version 1, a newer version is refused', async () => {
    // Tables an earlier version made, with no version row: taken as version 1, the epoch kept.
    const old = await database();
    const admin = await client(old.url);
    try {
      for (const statement of LEASE_MIGRATION_SET.migrations[0]?.sql ?? []) await admin.query(statement);
      await admin.query('UPDATE coordinator_lease SET epoch = 5 WHERE id = 1');
      const a = lease({ url: old.url, ...FAST });
      await lead(a);
      expect(a.epoch).toBe(6);
      const version = await admin.query("SELECT version FROM schema_version WHERE component = 'coordinator-lease'");
      expect(version.rows).toEqual([{ version: 1 }]);
      await a.close();
      // A newer version: refused by a lease starting and by the status read, nothing changed.
      await admin.query("UPDATE schema_version SET version = 2 WHERE component = 'coordinator-lease'");
      const b = lease({ url: old.url, ...FAST });
      const refusal = await b.acquire().catch((e: unknown) => e);
      expect(refusal).toBeInstanceOf(SchemaVersionError);
      expect(refusal).toMatchObject({ code: 'SCHEMA_TOO_NEW' });
      expect(b.role).toBe('closed');
      await expect(status(old.url)).rejects.toMatchObject({ code: 'SCHEMA_TOO_NEW' });
      expect((await admin.query('SELECT epoch::int AS epoch FROM coordinator_lease')).rows).toEqual([{ epoch: 6 }]);
    } finally {
      await admin.end();
    }
  });

  it('a standby is fenced without a query; bad options and an unreachable database are clear errors', async () => {
    const db = await database();
    const a = lease({ url: db.url, ...FAST });
    const b = lease({ url: db.url, ...FAST });
    await a.acquire();
    expect(await b.acquire()).toBe('standby');
    const never = { query: () => Promise.reject(new Error('queried')) };
    await expect(b.assertEpoch(never)).rejects.toMatchObject({ code: 'COORD_FENCED', details: { epoch: null } });

    expect(() => new PostgresLease({ url: db.url, leaseMs: 1_000, renewMs: 600 })).toThrow(
      expect.objectContaining({ code: 'COORD_LEASE_INVALID_OPTIONS' }),
    );
    expect(() => new PostgresLease({ url: db.url, leaseMs: -1 })).toThrow(/leaseMs must be a positive number/);

    const unreachable = new PostgresLease({ url: 'postgres://postgres:s3cret@127.0.0.1:1/nowhere', ...FAST });
    const error = await unreachable.acquire().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'COORD_LEASE_BACKEND' });
    expect((error as Error).message).toContain('postgres://postgres:***@127.0.0.1:1/nowhere');
    expect((error as Error).message).not.toContain('s3cret');
    expect(unreachable.role).toBe('closed');
  });
});

async function proxiedStore(url: string): Promise<pg.Client> {
  const store = new pg.Client({ connectionString: url, connectionTimeoutMillis: 500, query_timeout: 500 });
  store.on('error', () => undefined);
  try {
    await store.connect();
  } catch (error) {
    store.connection.stream.destroy();
    throw error;
  }
  return store;
}

/** One commit of the store standing in for the Coordinator's: the fence first, then its write. */
async function commitAs(made: PostgresLease, store: pg.Client, writer: string): Promise<void> {
  await store.query('BEGIN');
  try {
    await made.assertEpoch(store);
    await store.query('INSERT INTO writes (writer, epoch) VALUES ($1, $2)', [writer, made.epoch ?? -1]);
    await store.query('COMMIT');
  } catch (error) {
    await store.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** Starts a lease expected to lead (a first attempt that timed out is retried: wait for it). */
async function lead(made: PostgresLease): Promise<void> {
  await made.acquire();
  await until(() => made.role === 'leader');
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
