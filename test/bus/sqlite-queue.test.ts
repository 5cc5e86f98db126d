import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import type { WorkQueue } from '../../src/bus/work-queue.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import { type ContractQueueOptions, runWorkQueueContract, workEnvelope } from './contract.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'sb-bus-'));
}

runWorkQueueContract('sqlite', async (options: ContractQueueOptions) => {
  const dir = tempDir();
  const path = join(dir, 'bus.db');
  const open = (): SqliteQueue =>
    new SqliteQueue({
      database: path,
      clock: options.clock,
      ...(options.random === undefined ? {} : { random: options.random }),
      ...(options.defaults === undefined ? {} : { defaults: options.defaults }),
    });
  const queue = open();
  const handles: WorkQueue[] = [queue];
  return {
    queue,
    async connect() {
      const q = open();
      handles.push(q);
      return q;
    },
    async cleanup() {
      for (const h of handles) await h.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe('SqliteQueue specifics', () => {
  it('keeps its schema as the `bus` migration component in the file the user passes', async () => {
    const dir = tempDir();
    try {
      const db = openDatabase(join(dir, 'app.db'));
      const queue = new SqliteQueue({ database: db });
      expect(schemaVersion(db, 'bus')).toBe(1);
      await queue.publish('role', workEnvelope(1), { idempotencyKey: 'k' });
      await queue.close();
      // The caller's database stays open and holds the message.
      const row = db.prepare("SELECT count(*) AS n FROM bus_jobs WHERE state = 'ready'").get() as { n: number };
      expect(row.n).toBe(1);
      db.prepare("UPDATE schema_version SET version = 2 WHERE component = 'bus'").run();
      expect(() => new SqliteQueue({ database: db })).toThrow(SchemaVersionError);
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('survives a reopen: published and leased work is still there', async () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'bus.db');
      const first = new SqliteQueue({ database: path });
      await first.publish('r', workEnvelope(1), { idempotencyKey: 'a' });
      await first.publish('r', workEnvelope(2), { idempotencyKey: 'b' });
      const [leased] = await first.consume('r', { consumer: 'c', visibilityTimeoutMs: 60_000 });
      await first.close();
      const second = new SqliteQueue({ database: path });
      expect(await second.stats('r')).toMatchObject({ depth: 1, inFlight: 1 });
      expect((await second.publish('r', workEnvelope(1), { idempotencyKey: 'a' })).duplicate).toBe(true);
      expect(await second.ack(leased!)).toBe(true);
      await second.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prunes acked rows past the idempotency retention, freeing their keys', async () => {
    const db = openDatabase(':memory:');
    let now = 1_000_000;
    const queue = new SqliteQueue({ database: db, clock: { now: () => now }, idempotencyRetentionMs: 1000 });
    const cycle = async (from: number, count: number) => {
      await queue.publishMany(
        Array.from({ length: count }, (_, i) => ({
          role: 'r',
          envelope: workEnvelope(from + i),
          idempotencyKey: `k${from + i}`,
        })),
      );
      const got = await queue.consume('r', { consumer: 'c', visibilityTimeoutMs: 60_000, max: 1000 });
      expect(await queue.ackMany(got)).toEqual(got.map(() => true));
    };
    await cycle(0, 400);
    expect((await queue.publish('r', workEnvelope(0), { idempotencyKey: 'k0' })).duplicate).toBe(true);
    now += 5000;
    await cycle(400, 200);
    const count = (db.prepare("SELECT count(*) AS n FROM bus_jobs WHERE state = 'done'").get() as { n: number }).n;
    expect(count).toBe(200);
    expect((await queue.publish('r', workEnvelope(0), { idempotencyKey: 'k0' })).duplicate).toBe(false);
    expect((await queue.publish('r', workEnvelope(450), { idempotencyKey: 'k450' })).duplicate).toBe(true);
    await queue.close();
    db.close();
  });

  it('leases nothing for a consume whose signal is already aborted', async () => {
    const queue = new SqliteQueue({ database: ':memory:' });
    await queue.publish('r', workEnvelope(1), { idempotencyKey: 'k' });
    const controller = new AbortController();
    controller.abort();
    expect(await queue.consume('r', { consumer: 'c', visibilityTimeoutMs: 1000, signal: controller.signal })).toEqual(
      [],
    );
    expect(await queue.stats('r')).toMatchObject({ depth: 1, inFlight: 0 });
    await queue.close();
  });

  it('uses the indexes for its hot queries', () => {
    const db = openDatabase(':memory:');
    const queue = new SqliteQueue({ database: db });
    const plan = db
      .prepare(
        `EXPLAIN QUERY PLAN SELECT seq FROM bus_jobs AS c WHERE c.role = ? AND c.state = 'ready' AND c.available_at <= ?
         ORDER BY c.available_at, c.seq LIMIT 5`,
      )
      .all('r', 0) as { detail: string }[];
    expect(plan.map((p) => p.detail).join(' ')).toContain('bus_jobs_ready');
    void queue.close();
    db.close();
  });
});
