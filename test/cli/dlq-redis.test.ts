import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { type RedisQueue, createRedisQueue } from '../../src/bus/redis/queue.js';
import { workEnvelope } from '../bus/contract.js';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { runCli, runJson } from './helpers.js';

/**
 * `switchboard dlq list|show|replay --bus redis://...`: the dead letters of
 * a Redis Streams bus (where a Coordinator on PostgreSQL keeps them), made
 * by the real queue and read and replayed by the real CLI.
 */

const { runRedis } = await redisGate();

let cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.reverse()) await c();
  cleanups = [];
});

async function deployment(): Promise<{ prefix: string; queue: RedisQueue; bus: string[] }> {
  const prefix = `sbdlq-${randomUUID().slice(0, 8)}`;
  const queue = await createRedisQueue({ url: REDIS_URL, prefix });
  cleanups.push(async () => {
    await queue.close();
    await deleteRedisPrefix(prefix);
  });
  return { prefix, queue, bus: ['--bus', REDIS_URL, '--bus-prefix', prefix] };
}

/** Publishes `n` messages to `role` and dead-letters each (a non-retryable failure). */
async function deadLetters(queue: RedisQueue, role: string, n: number, first = 1): Promise<string[]> {
  const ids: string[] = [];
  for (let i = first; i < first + n; i++) {
    ids.push(
      (await queue.publish(role, workEnvelope(i, { runId: `item-${i}`, hop: i }), { idempotencyKey: `${role}-${i}` }))
        .id,
    );
  }
  for (let i = 0; i < n; i++) {
    const [leased] = await queue.consume(role, { consumer: 'test', visibilityTimeoutMs: 60_000 });
    if (leased === undefined) throw new Error('nothing leased');
    await queue.nack(leased, {
      error: { type: 'TestsFailed', message: `hop ${leased.envelope.headers.hop} failed` },
      retryable: false,
    });
  }
  return ids;
}

interface Listed {
  counts: Record<string, number>;
  deadLetters: { id: string; role: string; deliveries: number; lastError: { type: string } }[];
}

describe('switchboard dlq --db postgres:// without --bus', () => {
  it("is a usage error (exit 2) with the coordinator command's message, the password nowhere", async () => {
    for (const sub of [['list'], ['show', '1'], ['replay', '--role', 'coding']]) {
      const r = await runCli(['dlq', ...sub, '--db', 'postgres://postgres:sekrit@127.0.0.1:1/none']);
      expect(r.code, sub.join(' ')).toBe(2);
      expect(r.stderr).toContain(
        '--db postgres://... needs --bus redis://HOST:PORT: a Coordinator on PostgreSQL runs its hops on Redis',
      );
      expect(r.stderr).not.toContain('sekrit');
    }
    const coordinator = await runCli(['coordinator', '--db', 'postgres://postgres:sekrit@127.0.0.1:1/none']);
    const dlq = await runCli(['dlq', 'list', '--db', 'postgres://postgres:sekrit@127.0.0.1:1/none']);
    const message = (stderr: string) => stderr.split('\n')[0]!.replace(/^switchboard \w+: /, '');
    expect(message(dlq.stderr)).toBe(message(coordinator.stderr));
  });

  it('exits 1 with a clear message when Redis does not answer', async () => {
    const r = await runCli(['dlq', 'list', '--bus', 'redis://127.0.0.1:1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('switchboard dlq: cannot open the bus');
  });
});

describe.runIf(runRedis)('switchboard dlq --bus redis://', () => {
  it("lists the dead letters of every role or one, with or without the Coordinator's --db URL", async () => {
    const { queue, bus } = await deployment();
    const coding = await deadLetters(queue, 'coding', 2);
    const testing = await deadLetters(queue, 'testing', 1, 10);
    const all = await runJson<Listed>(['dlq', 'list', ...bus]);
    expect(all.code, all.stderr).toBe(0);
    expect(all.json.counts).toEqual({ coding: 2, testing: 1 });
    expect(all.json.deadLetters.map((l) => [l.role, l.id])).toEqual([
      ['coding', coding[0]],
      ['coding', coding[1]],
      ['testing', testing[0]],
    ]);
    expect(all.json.deadLetters[0]).toMatchObject({ deliveries: 1, lastError: { type: 'TestsFailed' } });
    const withDb = await runJson<Listed>([
      'dlq',
      'list',
      '--db',
      'postgres://postgres:sekrit@127.0.0.1:1/none',
      ...bus,
    ]);
    expect(withDb.code, withDb.stderr).toBe(0);
    expect(withDb.json).toEqual(all.json);
    const table = await runCli(['dlq', 'list', ...bus, '--role', 'coding']);
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toContain('2 dead letters (coding: 2)');
    expect(table.stdout).toContain('work item item-1 hop 1#1');
    expect(table.stdout).not.toContain('testing');
    const none = await runCli(['dlq', 'list', ...bus, '--role', 'devops']);
    expect(none.stdout).toContain('No dead letters for role devops.');
  });

  it('shows one dead letter in full', async () => {
    const { queue, bus } = await deployment();
    const [id] = await deadLetters(queue, 'testing', 1, 7);
    const json = await runJson<{ deadLetter: Listed['deadLetters'][number] }>(['dlq', 'show', id!, ...bus]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.json.deadLetter).toMatchObject({ id, role: 'testing', lastError: { type: 'TestsFailed' } });
    const text = await runCli(['dlq', 'show', id!, ...bus]);
    expect(text.stdout).toContain(`Dead letter ${id}`);
    expect(text.stdout).toContain('last error:  TestsFailed: hop 7 failed');
    const missing = await runCli(['dlq', 'show', '12345', ...bus]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('no dead letter 12345 in redis://127.0.0.1:6379');
  });

  it('replays one by id, then every one of a role in batches; a consumer takes them with a fresh attempt count', async () => {
    const { queue, bus } = await deployment();
    const ids = await deadLetters(queue, 'coding', 3);
    const other = await deadLetters(queue, 'testing', 1, 9);
    const refused = await runCli(['dlq', 'replay', ...bus, '--role', 'coding', '--id', ids[0]!, '--id', other[0]!]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`not dead letters of role coding: ${other[0]}`);
    expect((await queue.stats('coding')).deadLetters).toBe(3);

    const one = await runJson<{ role: string; replayed: number; ids: string[] }>([
      'dlq',
      'replay',
      ...bus,
      '--role',
      'coding',
      '--id',
      ids[0]!,
    ]);
    expect(one.code, one.stderr).toBe(0);
    expect(one.json).toEqual({ role: 'coding', replayed: 1, ids: [ids[0]] });
    expect((await queue.stats('coding')).deadLetters).toBe(2);
    const [again] = await queue.consume('coding', { consumer: 'test', visibilityTimeoutMs: 60_000 });
    expect(again?.envelope.headers.runId).toBe('item-1');
    expect(again?.deliveries).toBe(1);
    await queue.ack(again!);

    const rest = await runCli(['dlq', 'replay', ...bus, '--role', 'coding', '--batch', '1']);
    expect(rest.code, rest.stderr).toBe(0);
    expect(rest.stdout).toContain('Replayed 2 dead letters of role coding');
    expect(rest.stderr).toContain('replayed 2/2');
    const stats = await queue.stats('coding');
    expect(stats.deadLetters).toBe(0);
    expect(stats.depth).toBe(2);
    expect((await queue.stats('testing')).deadLetters).toBe(1);
  });
});
