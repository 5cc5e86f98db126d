import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { createClient } from 'redis';
import { afterEach, describe, expect, it } from 'vitest';
import { ITEMS_ROLE, REQUEST_ATTRIBUTE } from '../../src/actors/coordinator/intake.js';
import { createRedisQueue } from '../../src/bus/redis/queue.js';
import {
  FIXTURE_HANDLER,
  type Proc,
  isHopStart,
  isLog,
  readItems,
  runCli,
  startCli,
  terminate,
  until,
} from './processes.js';
import { IN_CI, REDIS_URL, redisGate } from '../redis-availability.js';

/**
 * The Coordinator and its workers as separate processes (`switchboard
 * coordinator`, `switchboard worker`), items sent with `switchboard submit`:
 * on Redis (50 items, a worker SIGKILLed while it holds a lease, another
 * restarted gracefully) and on the default embedded SQLite bus (no Redis;
 * approvals sent with `switchboard approve`). Every item completes, the audit
 * verifies, and no hop's effect is applied twice.
 */

const { redisUp } = await redisGate();
/** In CI a missing Redis fails the suite (the coordinator cannot connect) instead of skipping it. */
const runRedis = redisUp || IN_CI;

/** Handler calls that return, per item, in the demo script: architect, coding (suspends), the architect's answer, coding resumed, coding's fix, testing, devops. */
const EFFECTS_PER_ITEM = 7;
const APPROVER = 'release-manager';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-scaleout-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function track(proc: Proc): Proc {
  cleanups.push(async () => {
    if (proc.child.exitCode === null && proc.child.signalCode === null) {
      proc.child.kill('SIGKILL');
      await proc.exited;
    }
  });
  return proc;
}

function completed(db: string): number {
  return readItems(db).filter((i) => i.state === 'completed').length;
}

function states(db: string): string {
  const counts: Record<string, number> = {};
  for (const i of readItems(db)) counts[i.state] = (counts[i.state] ?? 0) + 1;
  return JSON.stringify(counts);
}

describe.runIf(runRedis)('coordinator and worker processes on Redis', () => {
  it('run 50 items to completion through a SIGKILLed worker and a restarted one; audit intact, effects once', async () => {
    const dir = tempDir();
    const db = join(dir, 'coordinator.db');
    const prefix = `mp-${randomUUID().slice(0, 8)}`;
    const redis = createClient({ url: REDIS_URL });
    redis.on('error', () => undefined);
    await redis.connect();
    cleanups.push(async () => {
      const keys: string[] = [];
      for await (const batch of redis.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) keys.push(...batch);
      for (let i = 0; i < keys.length; i += 500) await redis.del(keys.slice(i, i + 500));
      await redis.close();
    });
    const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
    const env = {
      SB_EFFECTS: 'redis',
      SB_EFFECTS_PREFIX: prefix,
      SB_EFFECTS_REDIS_URL: REDIS_URL,
      SB_HOP_DELAY_MS: '100',
    };
    const coordinator = track(
      startCli('coordinator', ['coordinator', '--db', db, ...bus, '--auto-approve', APPROVER, '--log-level', 'info']),
    );
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });

    // Three processes; every role is served by two of them, so no kill stalls a role.
    const groups: Record<string, string[]> = {
      w1: ['architect', 'coding'],
      w2: ['coding', 'testing', 'devops'],
      w3: ['architect', 'testing', 'devops'],
    };
    const startWorker = (name: string, group = name) =>
      track(
        startCli(
          name,
          [
            'worker',
            ...bus,
            ...groups[group]!.flatMap((r) => ['--role', r]),
            '--handler',
            FIXTURE_HANDLER,
            '--concurrency',
            '4',
            '--lease-ms',
            '1500',
            '--grace-ms',
            '5000',
            '--log-level',
            'warn',
          ],
          // w1 is the one killed: its hops hold their lease longer, so the kill lands while it holds one.
          name === 'w1' ? { ...env, SB_HOP_DELAY_MS: '500' } : env,
        ),
      );
    const workers = { w1: startWorker('w1'), w2: startWorker('w2'), w3: startWorker('w3') };

    const submitted = await runCli([
      'submit',
      ...bus,
      '--workflow',
      'dev-sdlc',
      '--input',
      'Add rate limiting to the public API',
      '--id',
      `req-${prefix}`,
      '--count',
      '50',
    ]);
    expect(submitted.code, submitted.stderr).toBe(0);
    expect(submitted.stdout.trim().split('\n')).toHaveLength(50);

    // SIGKILL w1 right after it starts a hop (the fixture holds each of w1's hops for 500 ms), once it has run some.
    let started = 0;
    const killedLine = await workers.w1.waitForLine((line) => isHopStart(line) && ++started >= 8, 60_000);
    workers.w1.child.kill('SIGKILL');
    const killed = await workers.w1.exited;
    expect(killed.signal).toBe('SIGKILL');
    const killedField = (JSON.parse(killedLine) as { field: string }).field;

    // Restart w3 gracefully once it has run hops: SIGTERM, exit 0, start again.
    let w3Starts = 0;
    await workers.w3.waitForLine((line) => isHopStart(line) && ++w3Starts >= 8, 60_000);
    const stoppedW3 = await terminate(workers.w3);
    expect(stoppedW3.code, workers.w3.lines.slice(-5).join('\n')).toBe(0);
    workers.w3 = startWorker('w3-again', 'w3');

    await until(
      () => completed(db) === 50,
      90_000,
      () => `items by state: ${states(db)}`,
    );

    // A request id seen again (under another bus key, so only the Coordinator's own check can stop it) makes no item.
    const firstRequest = `req-${prefix}-1`;
    const queue = await createRedisQueue({ url: REDIS_URL, prefix });
    try {
      await queue.publish(
        ITEMS_ROLE,
        {
          kind: 'work',
          headers: { taskId: 'again', runId: 'again', hop: 0, attempt: 1, idempotencyKey: 'again' },
          message: {
            role: 'user',
            parts: [
              {
                kind: 'data',
                data: {
                  type: 'switchboard.create-item',
                  requestId: firstRequest,
                  workflow: 'dev-sdlc',
                  input: 'again',
                },
              },
            ],
          },
        },
        { idempotencyKey: `item:${firstRequest}:again` },
      );
      await coordinator.waitForLine(isLog('request already has its work item'), 20_000);
    } finally {
      await queue.close();
    }

    for (const w of Object.values(workers)) {
      if (w.child.signalCode === null && w.child.exitCode === null) expect((await terminate(w)).code).toBe(0);
    }
    expect((await terminate(coordinator)).code).toBe(0);

    const items = readItems(db);
    expect(items).toHaveLength(50);
    expect(items.every((i) => i.state === 'completed')).toBe(true);
    const requests = items.map((i) => (JSON.parse(i.attributes ?? '{}') as Record<string, string>)[REQUEST_ATTRIBUTE]);
    expect(new Set(requests).size).toBe(50);

    const audit = await runCli(['audit', 'verify', '--db', db]);
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);

    // Effects: one per hop, each applied once (attempts may be more: the killed worker's hop ran again elsewhere).
    const applied = await redis.hGetAll(`{${prefix}}:fx:applied`);
    expect(Object.keys(applied)).toHaveLength(50 * EFFECTS_PER_ITEM);
    expect(Object.entries(applied).filter(([, n]) => n !== '1')).toEqual([]);
    const runs = new Set(Object.keys(applied).map((f) => f.split('|')[0]));
    expect(runs.size).toBe(50);
    // The hop the killed worker held was started again by another process and applied once.
    const starts = await redis.hGet(`{${prefix}}:fx:starts`, killedField);
    expect(Number(starts)).toBeGreaterThanOrEqual(2);
  }, 150_000);
});

describe('coordinator and worker processes on the default SQLite bus (no Redis)', () => {
  it('run items to completion with approvals sent by switchboard approve; audit intact, effects once', async () => {
    const dir = tempDir();
    const db = join(dir, 'switchboard.db');
    const env = { SB_EFFECTS: 'sqlite', SB_HOP_DELAY_MS: '20' };
    const coordinator = track(startCli('coordinator', ['coordinator', '--db', db, '--log-level', 'info']));
    await coordinator.waitForLine(isLog('coordinator ready'), 30_000, { seen: true });
    const worker = (name: string, roles: string[]) =>
      track(
        startCli(
          name,
          [
            'worker',
            '--db',
            db,
            ...roles.flatMap((r) => ['--role', r]),
            '--handler',
            FIXTURE_HANDLER,
            '--concurrency',
            '2',
            '--lease-ms',
            '2000',
            '--log-level',
            'info',
          ],
          env,
        ),
      );
    const a = worker('a', ['architect', 'coding', 'testing']);
    let b = worker('b', ['coding', 'testing', 'devops']);
    // Both workers take work before any is submitted: on a loaded machine a
    // slow start of b would let a run every hop up to the approval gate alone.
    await Promise.all([a, b].map((w) => w.waitForLine(isLog('worker ready'), 30_000, { seen: true })));

    const submit = (id: string, count: string) =>
      runCli([
        'submit',
        '--db',
        db,
        '--workflow',
        'dev-sdlc',
        '--input',
        'Export invoices as CSV',
        '--id',
        id,
        '--count',
        count,
      ]);
    const first = await submit('sq', '6');
    expect(first.code, first.stderr).toBe(0);
    // The same request ids again: no new items.
    const again = await submit('sq', '6');
    expect(again.code).toBe(0);
    expect(
      again.stdout
        .trim()
        .split('\n')
        .every((l) => l.endsWith(' duplicate')),
    ).toBe(true);

    // b restarted gracefully while items are in flight.
    await until(
      () => b.lines.filter(isHopStart).length >= 2,
      60_000,
      () => 'b started no hop',
    );
    expect((await terminate(b)).code).toBe(0);
    b = worker('b-again', ['coding', 'testing', 'devops']);

    // Each item stops at the devops gate: approve them from another process.
    const approved = new Set<string>();
    await until(
      () => {
        for (const item of readItems(db)) {
          if (item.state === 'awaiting-approval' && !approved.has(item.id)) {
            approved.add(item.id);
            void runCli(['approve', '--db', db, '--item', item.id, '--approver', APPROVER]).then((r) => {
              if (r.code !== 0) approved.delete(item.id);
            });
          }
        }
        return completed(db) === 6;
      },
      90_000,
      () => `items by state: ${states(db)}`,
    );

    for (const p of [a, b, coordinator]) expect((await terminate(p)).code).toBe(0);
    expect(readItems(db)).toHaveLength(6);
    const audit = await runCli(['audit', 'verify', '--db', db]);
    expect(audit.code, audit.stdout + audit.stderr).toBe(0);

    const file = new Database(db, { readonly: true });
    try {
      const rows = file.prepare('SELECT field, n FROM test_effects').all() as { field: string; n: number }[];
      expect(rows).toHaveLength(6 * EFFECTS_PER_ITEM);
      expect(rows.filter((r) => r.n !== 1)).toEqual([]);
    } finally {
      file.close();
    }
  }, 150_000);

  it('refuses bad flags with exit 2 and the help, a handler it cannot load with exit 1', async () => {
    const r = await runCli(['worker', '--role', 'coding']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--handler MODULE is required');
    const bus = await runCli(['coordinator', '--db', '/nonexistent/x.db', '--bus', 'http://example']);
    expect(bus.code).toBe(2);
    expect(bus.stderr).toContain('--bus must be a redis://HOST:PORT[/DB] URL');
    const dir = tempDir();
    const missing = await runCli(['worker', '--db', join(dir, 'x.db'), '--role', 'coding', '--handler', './nope.mjs']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain("cannot load handler module './nope.mjs'");
    const unknownDemo = await runCli(['worker', '--db', join(dir, 'x.db'), '--role', 'coding', '--handler', 'demo:qa']);
    expect(unknownDemo.code).toBe(1);
    expect(unknownDemo.stderr).toContain("no demo handler 'demo:qa'");
    const noBus = await runCli(['submit', '--workflow', 'dev-sdlc', '--input', 'x']);
    expect(noBus.code).toBe(2);
    expect(noBus.stderr).toContain('give --bus redis://HOST:PORT, or --db PATH');
  });
});
