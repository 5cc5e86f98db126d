import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, postgresGate, withPassword } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { type Proc, isLog, runCli, startCli, terminate } from './processes.js';

/**
 * `switchboard coordinator --db postgres://... --bus redis://...` as a real
 * process: items submitted by `switchboard submit` run through the demo's
 * workers in it and complete; `items`, `usage` and `audit verify` read the
 * PostgreSQL database by its URL; the URL's password appears in no line the
 * processes write (trust auth ignores it, so it can be any secret).
 */

const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();
const SECRET = `pw-${randomUUID().slice(0, 12)}`;

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('switchboard coordinator --db postgres://', () => {
  it('without --bus redis:// is a usage error (exit 2), before connecting anywhere', async () => {
    const r = await runCli(['coordinator', '--db', `postgres://postgres:${SECRET}@127.0.0.1:1/none`]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--db postgres://... needs --bus redis://HOST:PORT');
    expect(r.stderr).not.toContain(SECRET);
  });

  it('takes --lease-ms and --renew-ms only on PostgreSQL, a renew at most half the lease (usage errors, exit 2)', async () => {
    const onFile = await runCli(['coordinator', '--db', '/tmp/never-opened.db', '--lease-ms', '5000']);
    expect(onFile.code).toBe(2);
    expect(onFile.stderr).toContain('--lease-ms and --renew-ms are for a Coordinator on PostgreSQL');
    const url = `postgres://postgres:${SECRET}@127.0.0.1:1/none`;
    const tooSlow = await runCli([
      'coordinator',
      '--db',
      url,
      '--bus',
      REDIS_URL,
      '--lease-ms',
      '2000',
      '--renew-ms',
      '1500',
    ]);
    expect(tooSlow.code).toBe(2);
    expect(tooSlow.stderr).toContain('--renew-ms (1500) must be at most half of --lease-ms (2000)');
    const bad = await runCli(['coordinator', '--db', url, '--bus', REDIS_URL, '--lease-ms', 'soon']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--lease-ms must be a whole number from 200 to 600000 (got 'soon')");
    for (const r of [onFile, tooSlow, bad]) expect(r.stderr).not.toContain(SECRET);
  });

  it.runIf(runRedis)('exits 1 with a clear message when PostgreSQL does not answer, the password nowhere', async () => {
    const r = await runCli([
      'coordinator',
      '--db',
      `postgres://postgres:${SECRET}@127.0.0.1:1/none`,
      '--bus',
      REDIS_URL,
      '--bus-prefix',
      `pgcli-${randomUUID().slice(0, 8)}`,
    ]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('cannot start the Coordinator');
    expect(r.stderr).toContain('postgres://postgres@127.0.0.1:1/none');
    expect(r.stderr).not.toContain(SECRET);
    expect(r.stdout).toBe('');
  });

  it.runIf(runPostgres && runRedis)(
    'runs submitted items to completion; items, usage and audit verify read the database by its URL',
    async () => {
      const database = await createTestDatabase('sb_cli');
      cleanups.push(() => database.drop());
      const prefix = `pgcli-${randomUUID().slice(0, 8)}`;
      cleanups.push(() => deleteRedisPrefix(prefix));
      const url = withPassword(database.url, SECRET);
      const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
      const start = (name: string): Proc => {
        const p = startCli(name, [
          'coordinator',
          '--db',
          url,
          ...bus,
          '--local-workers',
          '--auto-approve',
          'release-manager',
          '--log-level',
          'debug',
        ]);
        cleanups.push(() => void terminate(p));
        return p;
      };
      const coordinator = start('coordinator');
      await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
      const submitted = await runCli([
        'submit',
        ...bus,
        '--workflow',
        'dev-sdlc',
        '--input',
        'Add rate limiting',
        '--id',
        'pg',
        '--count',
        '2',
      ]);
      expect(submitted.code, submitted.stderr).toBe(0);
      const list = async () => {
        const r = await runCli(['items', 'list', '--db', url, '--json']);
        expect(r.code, r.stderr).toBe(0);
        return JSON.parse(r.stdout) as { total: number; items: { id: string; state: string }[] };
      };
      let items: { id: string; state: string }[] = [];
      const deadline = Date.now() + 60_000;
      for (;;) {
        items = (await list()).items;
        if (items.length === 2 && items.every((i) => i.state === 'completed')) break;
        if (Date.now() > deadline) throw new Error(`items: ${JSON.stringify(items)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      const shown = await runCli(['items', 'show', items[0]!.id, '--db', url, '--json']);
      expect(shown.code, shown.stderr).toBe(0);
      expect((JSON.parse(shown.stdout) as { hops: unknown[] }).hops).toHaveLength(7);
      const usage = await runCli(['usage', '--db', url, '--by', 'task', '--json']);
      expect(usage.code, usage.stderr).toBe(0);
      const report = JSON.parse(usage.stdout) as { groups: { state: string }[]; total: { costUsd: number } };
      expect(report.groups.map((g) => g.state)).toEqual(['completed', 'completed']);
      expect(report.total.costUsd).toBeGreaterThan(0);
      const audit = await runCli(['audit', 'verify', '--db', url]);
      expect(audit.code, audit.stdout + audit.stderr).toBe(0);
      expect(audit.stdout).toContain('Audit chain intact');
      const missing = await runCli(['items', 'show', 'nope', '--db', url]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain(`no work item nope in ${database.url.replace(/\/$/, '')}`);

      expect((await terminate(coordinator)).code).toBe(0);
      // A second start on the same database finds everything ended: nothing to restore.
      const again = start('coordinator-again');
      const ready = await again.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
      expect(JSON.parse(ready)).toMatchObject({ restored: 0, db: database.url.replace(/\/$/, '') });
      expect((await terminate(again)).code).toBe(0);
      for (const line of [...coordinator.lines, ...again.lines, missing.stderr, audit.stdout]) {
        expect(line).not.toContain(SECRET);
      }
    },
    120_000,
  );
});
