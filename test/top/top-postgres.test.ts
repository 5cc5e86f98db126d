import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createRedisQueue } from '../../src/bus/redis/queue.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { workEnvelope } from '../bus/contract.js';
import { type PostgresWithItems, postgresOfNewerSchema, postgresWithItems } from '../cli/postgres-coordinator.js';
import { postgresGate, withPassword } from '../postgres-availability.js';
import { REDIS_URL, redisGate } from '../redis-availability.js';
import { Tmux, quote } from './tmux.js';

/**
 * `switchboard top --db postgres://... [--bus redis://...]`: the screen
 * from a real Coordinator's PostgreSQL tables (tasks derived from the item
 * and hop rows) and the Redis queue counters, once as plain text and live
 * in a real terminal (tmux); a newer schema and an unreachable server; the
 * URL's password on no screen and in no message.
 */

const run = promisify(execFile);
const { runPostgres } = await postgresGate();
const { runRedis } = await redisGate();

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function top(args: readonly string[]) {
  return run(process.execPath, [SWITCHBOARD_BIN, 'top', ...args]).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

describe('switchboard top --db postgres:// (refusals)', () => {
  it('exits 1 with a clear message when PostgreSQL does not answer, the password nowhere', async () => {
    const r = await top(['--db', 'postgres://postgres:sekrit@127.0.0.1:1/none', '--once']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('switchboard top');
    expect(r.stderr).toContain('cannot reach PostgreSQL');
    expect(r.stderr).toContain('postgres://postgres@127.0.0.1:1/none');
    expect(r.stderr + r.stdout).not.toContain('sekrit');
  });

  it.runIf(runPostgres)('refuses tables of a newer schema (exit 2) with the message a file gets', async () => {
    const newer = await postgresOfNewerSchema();
    cleanups.push(() => newer.drop());
    const r = await top(['--db', withPassword(newer.url, 'sekrit'), '--once']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('newer than this switchboard supports');
    expect(r.stderr).not.toContain('sekrit');
  });
});

describe.runIf(runPostgres && runRedis)('switchboard top --db postgres:// (a Coordinator run on it)', () => {
  let pg: PostgresWithItems;
  beforeAll(async () => {
    // One item waits for the release manager's approval: a live task (auth-required) the screen lists.
    pg = await postgresWithItems(1, { approve: false });
  }, 150_000);
  afterAll(async () => {
    await pg?.cleanup();
  });

  it('prints one snapshot: tasks derived from the rows, the work items, and the Redis queues', async () => {
    const r = await top(['--db', pg.url, ...pg.bus, '--once']);
    expect(r.code, r.stderr).toBe(0);
    const item = pg.itemIds[0]!;
    expect(r.stdout).toMatch(/switchboard top {2}postgres:\/\/postgres@127\.0\.0\.1:5432\/sb_cliurl_\w+ /);
    expect(r.stdout).toMatch(/auth-required 1 /);
    expect(r.stdout).toMatch(/\S+\s+auth-required\s+coordinator\s+edge/);
    expect(r.stdout).toContain('WORK ITEMS 1');
    expect(r.stdout).toMatch(new RegExp(`${item}\\s+dev-sdlc@\\d+\\s+awaiting-approval`));
    expect(r.stdout).toMatch(/QUEUES \d+ {2}on redis:\/\//);
    expect(r.stdout + r.stderr).not.toContain(pg.secret);

    const noBus = await top(['--db', pg.url, '--once']);
    expect(noBus.code, noBus.stderr).toBe(0);
    expect(noBus.stdout).toContain('WORK ITEMS 1');
    expect(noBus.stdout).not.toContain('QUEUES');
  });

  it('redraws live in a terminal as the queues move, and exits on q', async () => {
    const tmux = new Tmux('switchboard-top-postgres');
    cleanups.push(() => tmux.kill());
    const command = [process.execPath, SWITCHBOARD_BIN, 'top', '--db', pg.url, ...pg.bus, '--interval', '100']
      .map(quote)
      .join(' ');
    await tmux.start(`${command}; echo TOP-EXITED:$?; sleep 30`, 140, 50);
    const first = await tmux.waitForScreen((s) => s.includes(pg.itemIds[0]!), 'the work item');
    expect(first).toContain('awaiting-approval');
    expect(first).not.toContain(pg.secret);
    const prefix = pg.bus[pg.bus.indexOf('--bus-prefix') + 1]!;
    const queue = await createRedisQueue({ url: REDIS_URL, prefix });
    cleanups.push(() => queue.close());
    await queue.publish('toproles', workEnvelope(1), { idempotencyKey: 'top-1' });
    await tmux.waitForScreen((s) => /toproles\s+1\s+0\s+0\s+0\s+-/.test(s), 'the new queue with one ready');
    await tmux.keys('q');
    const screen = await tmux.waitForScreen((s) => s.includes('TOP-EXITED:0'), 'top exiting with code 0');
    expect(screen).not.toContain('WORK ITEMS');
  }, 120_000);
});
