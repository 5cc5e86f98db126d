import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type RedisQueue, createRedisQueue } from '../../src/bus/redis/queue.js';
import { TOP_FLAGS } from '../../src/cli/top.js';
import { queueViewOf } from '../../src/inspect/system-snapshot.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { workEnvelope } from '../bus/contract.js';
import { REDIS_URL, redisGate } from '../redis-availability.js';
import { RawServe, tempDir, text } from '../transport/helpers.js';
import { Tmux, quote } from './tmux.js';

const run = promisify(execFile);
const { redisUp, runRedis } = await redisGate();

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A deployment prefix of its own per test, dropped afterwards (`SCAN` + `DEL`). */
function testPrefix(): string {
  const prefix = `sbtop:${randomUUID().slice(0, 12)}`;
  cleanups.push(async () => {
    const client = createClient({ url: REDIS_URL });
    client.on('error', () => undefined);
    await client.connect();
    try {
      for await (const keys of client.scanIterator({ MATCH: `{${prefix}}:*`, COUNT: 500 })) {
        if (keys.length > 0) await client.del(keys);
      }
    } finally {
      await client.close();
    }
  });
  return prefix;
}

async function openQueue(prefix: string): Promise<RedisQueue> {
  const queue = await createRedisQueue({ url: REDIS_URL, prefix });
  cleanups.push(() => queue.close());
  return queue;
}

/** review: 3 published, 1 leased, 1 dead-lettered, 1 ready; coding: 1 delayed. */
async function fillQueues(queue: RedisQueue) {
  for (let i = 0; i < 3; i++) await queue.publish('review', workEnvelope(i), { idempotencyKey: `k${i}` });
  await queue.publish('coding', workEnvelope('later'), { idempotencyKey: 'later', delayMs: 600_000 });
  const [leased] = await queue.consume('review', { consumer: 'w1', visibilityTimeoutMs: 600_000 });
  const [failing] = await queue.consume('review', { consumer: 'w1', visibilityTimeoutMs: 600_000 });
  if (leased === undefined || failing === undefined) throw new Error('nothing leased');
  await queue.nack(failing, { error: { type: 'Broken', message: 'no' }, retryable: false });
  return { leased };
}

const suiteName = runRedis
  ? 'switchboard top --bus redis://'
  : `switchboard top --bus redis:// (not run: no Redis answers at ${REDIS_URL}; with CI=true this fails instead)`;

describe.runIf(runRedis)(suiteName, () => {
  beforeAll(() => {
    if (!redisUp) {
      throw new Error(`CI=true and no Redis answers at ${REDIS_URL}: the top --bus tests must run in CI`);
    }
  });

  it("statsOfAllRoles: every role's stats, by name, equal to stats(role); read-only", async () => {
    const queue = await openQueue(testPrefix());
    expect(await queue.statsOfAllRoles()).toEqual([]);
    await fillQueues(queue);
    const all = await queue.statsOfAllRoles();
    // $results: the dead letter's failed result, published by the dead-letter move.
    const roles = all.map((s) => s.role);
    expect(roles).toEqual([...roles].sort());
    expect(roles).toEqual(expect.arrayContaining(['coding', 'review']));
    for (const stats of all) {
      const one = await queue.stats(stats.role);
      expect({ ...stats, lag: 0 }).toEqual({ ...one, lag: 0 });
    }
    const review = all.find((s) => s.role === 'review');
    expect(review).toMatchObject({ depth: 1, delayed: 0, inFlight: 1, deadLetters: 1 });
    expect(all.find((s) => s.role === 'coding')).toMatchObject({ depth: 0, delayed: 1, inFlight: 0, deadLetters: 0 });
    // Reading changed nothing.
    expect((await queue.statsOfAllRoles()).map((s) => ({ ...s, lag: 0 }))).toEqual(all.map((s) => ({ ...s, lag: 0 })));
    expect(queueViewOf(review!)).toEqual({
      role: 'review',
      depth: 1,
      delayed: 0,
      inFlight: 1,
      deadLetters: 1,
      done: null,
      lagMs: review!.lag,
    });
  });

  it('prints the Redis queues (no DONE count) beside the tasks of --db, and with --bus alone', async () => {
    const prefix = testPrefix();
    const queue = await openQueue(prefix);
    await fillQueues(queue);
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new RawServe(tmp.db, ['--log-level', 'silent']);
    const lead = (await server.call('a2a.agents.register', { name: 'lead', contextId: 'c' })) as { token: string };
    await server.call('a2a.agents.register', { name: 'coder', contextId: 'c' });
    await server.call('a2a.message.send', { token: lead.token, to: 'coder', message: text('one') });
    await server.end();

    const both = await run(process.execPath, [
      SWITCHBOARD_BIN,
      'top',
      '--db',
      tmp.db,
      '--bus',
      REDIS_URL,
      '--bus-prefix',
      prefix,
    ]);
    expect(both.stdout).toMatch(/TASKS 1\s+submitted 1/);
    expect(both.stdout).toMatch(new RegExp(`QUEUES \\d+  on redis://[^ ]+ \\(prefix ${prefix}\\)`));
    // ROLE, READY, DELAYED, IN FLIGHT, DEAD, DONE (not kept by Redis), OLDEST
    expect(both.stdout).toMatch(/^review\s+1\s+0\s+1\s+1\s+-\s+\d/m);
    expect(both.stdout).toMatch(/^coding\s+0\s+1\s+0\s+0\s+-\s+-$/m);
    expect(both.stdout).not.toContain('\x1b[');

    const alone = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--bus', REDIS_URL, '--bus-prefix', prefix]);
    expect(alone.stdout).toContain(`(prefix ${prefix})`);
    expect(alone.stdout).toMatch(/^review\s+1\s+0\s+1\s+1\s+-/m);
    expect(alone.stdout).not.toContain('TASKS');

    // Another deployment on the same Redis: none of these queues.
    const empty = await run(process.execPath, [
      SWITCHBOARD_BIN,
      'top',
      '--bus',
      REDIS_URL,
      '--bus-prefix',
      `${prefix}-empty`,
    ]);
    expect(empty.stdout).toContain('QUEUES 0');
    expect(empty.stdout).toContain('no queue');
  }, 120_000);

  it('follows the Redis queues live under a terminal, and exits on q', async () => {
    const prefix = testPrefix();
    const queue = await openQueue(prefix);
    const tmux = new Tmux('switchboard-top-redis');
    cleanups.push(() => tmux.kill());
    const command = [
      process.execPath,
      SWITCHBOARD_BIN,
      'top',
      '--bus',
      REDIS_URL,
      '--bus-prefix',
      prefix,
      '--interval',
      '100',
    ]
      .map(quote)
      .join(' ');
    await tmux.start(`${command}; echo TOP-EXITED:$?; sleep 30`);
    await tmux.waitForScreen((s) => s.includes('QUEUES 0'), 'an empty deployment');
    const { leased } = await fillQueues(queue);
    await tmux.waitForScreen((s) => /review\s+1\s+0\s+1\s+1\s+-/.test(s), 'review: 1 ready, 1 in flight, 1 dead');
    await queue.ack(leased);
    await tmux.waitForScreen((s) => /review\s+1\s+0\s+0\s+1\s+-/.test(s), 'the acked message gone from in flight');
    await tmux.keys('q');
    const screen = await tmux.waitForScreen((s) => s.includes('TOP-EXITED:0'), 'top exiting with code 0');
    expect(screen).not.toContain('QUEUES');
  }, 120_000);
});

describe('switchboard top --bus: help and refusals', () => {
  it('--help documents every flag and the exit status', async () => {
    const help = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--help']);
    expect(Object.keys(TOP_FLAGS)).toEqual(expect.arrayContaining(['db', 'bus', 'bus-prefix']));
    for (const flag of Object.keys(TOP_FLAGS))
      expect(help.stdout, `--${flag}`).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    expect(help.stdout).toContain('Exit status:');
  });

  it('a bad --bus or --bus-prefix is exit 2; a Redis that does not answer is exit 1', async () => {
    const bad = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--bus', 'http://example']).catch((e) => e);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--bus must be a redis://HOST:PORT[/DB] URL');
    const prefixOnly = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--db', 'x.db', '--bus-prefix', 'p']).catch(
      (e) => e,
    );
    expect(prefixOnly.code).toBe(2);
    expect(prefixOnly.stderr).toContain('--bus-prefix is for a Redis --bus');
    const neither = await run(process.execPath, [SWITCHBOARD_BIN, 'top']).catch((e) => e);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('--db PATH is required');
    const down = await run(process.execPath, [SWITCHBOARD_BIN, 'top', '--bus', 'redis://127.0.0.1:1']).catch((e) => e);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain('cannot open the bus');
  }, 120_000);
});
