import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RedisQueue, createRedisQueue } from '../../src/bus/redis/queue.js';
import type { WorkQueue } from '../../src/bus/work-queue.js';
import { createWorker } from '../../src/actors/worker/worker.js';
import { SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { hop, takeResults } from '../worker/helpers.js';
import { type ContractQueueOptions, OffsetClock, runWorkQueueContract, sleep, workEnvelope } from './contract.js';
import { IN_CI, REDIS_URL, redisGate } from '../redis-availability.js';
import { TcpProxy } from '../persistence/tcp-proxy.js';

const { redisUp } = await redisGate();
const runRedis = redisUp || IN_CI;

/** The Redis Cluster slot of a key: CRC16 (XMODEM) of its hash tag, mod 16384. */
function clusterSlot(key: string): number {
  let tagged = key;
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) tagged = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(tagged)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

function testPrefix(): string {
  return `sbtest:${randomUUID().slice(0, 12)}`;
}

/** Deletes every key of a prefix (`SCAN` + `DEL`). */
async function dropPrefix(prefix: string): Promise<number> {
  const client = createClient({ url: REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  let dropped = 0;
  try {
    for await (const keys of client.scanIterator({ MATCH: `{${prefix}}:*`, COUNT: 500 })) {
      if (keys.length > 0) dropped += await client.del(keys);
    }
  } finally {
    await client.close();
  }
  return dropped;
}

const suiteName = runRedis
  ? 'Redis work queue'
  : `Redis work queue (not run: no Redis answers at ${REDIS_URL}; with CI=true this fails instead)`;

/**
 * A queue of a prefix of its own, and the script calls (`EVALSHA`/`EVAL`, as
 * Redis's MONITOR prints them) it makes while `body` runs.
 */
async function withScriptCalls(
  options: { publishBatch?: number },
  body: (queue: RedisQueue, scripts: string[]) => Promise<void>,
): Promise<void> {
  const prefix = testPrefix();
  const queue = await createRedisQueue({ url: REDIS_URL, prefix, ...options });
  const monitor = createClient({ url: REDIS_URL });
  await monitor.connect();
  const scripts: string[] = [];
  try {
    await monitor.monitor((line) => {
      if (line.includes(prefix) && /"evalsha"|"eval"/i.test(line)) scripts.push(line);
    });
    await body(queue, scripts);
  } finally {
    await monitor.close().catch(() => undefined);
    await queue.close();
    await dropPrefix(prefix);
  }
}

describe.runIf(runRedis)(suiteName, () => {
  beforeAll(() => {
    if (!redisUp) {
      throw new Error(
        `CI=true and no Redis answers at ${REDIS_URL}: the Redis work queue tests must run in CI (.ci/run starts one)`,
      );
    }
  });

  runWorkQueueContract('redis', async (options: ContractQueueOptions) => {
    const prefix = testPrefix();
    const open = (): Promise<RedisQueue> =>
      createRedisQueue({
        url: REDIS_URL,
        prefix,
        clock: options.clock,
        ...(options.random === undefined ? {} : { random: options.random }),
        ...(options.defaults === undefined ? {} : { defaults: options.defaults }),
      });
    const queue = await open();
    const handles: WorkQueue[] = [queue];
    return {
      queue,
      async connect() {
        const q = await open();
        handles.push(q);
        return q;
      },
      async cleanup() {
        for (const h of handles) await h.close();
        await dropPrefix(prefix);
      },
    };
  });

  it('publishes and acks made in one turn go as one script call each, and each caller gets its own answer (a duplicate key too)', async () => {
    await withScriptCalls({}, async (queue, scripts) => {
      const published = await Promise.all([
        queue.publish('turn', workEnvelope(1), { idempotencyKey: 'one' }),
        queue.publish('turn', workEnvelope(2), { idempotencyKey: 'two' }),
        queue.publish('other', workEnvelope(3), { idempotencyKey: 'three' }),
        queue.publish('turn', workEnvelope(4), { idempotencyKey: 'one' }),
      ]);
      expect(published.map((p) => p.duplicate)).toEqual([false, false, false, true]);
      expect(published[3]!.id).toBe(published[0]!.id);
      expect(new Set(published.slice(0, 3).map((p) => p.id)).size).toBe(3);
      const got = [
        ...(await queue.consume('turn', { consumer: 'c', visibilityTimeoutMs: 10_000, max: 10 })),
        ...(await queue.consume('other', { consumer: 'c', visibilityTimeoutMs: 10_000, max: 10 })),
      ];
      expect(got.map((d) => d.idempotencyKey).sort()).toEqual(['one', 'three', 'two']);
      const acked = await Promise.all([...got.map((d) => queue.ack(d)), queue.ack(got[0]!)]);
      expect(acked).toEqual([true, true, true, false]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // One publish call, two lease calls, one ack call.
      expect(scripts).toHaveLength(4);
    });
  });

  it("publishMany calls made in one turn go with the turn's publishes, whole calls packed up to the batch size (a call is never split between script calls)", async () => {
    await withScriptCalls({ publishBatch: 3 }, async (queue, scripts) => {
      const request = (key: string, n: number) => ({
        role: 'turn',
        envelope: workEnvelope(n),
        idempotencyKey: key,
      });
      const [a, b, c] = await Promise.all([
        queue.publishMany([request('call-a-1', 1), request('call-a-2', 2)]),
        queue.publishMany([request('call-b-1', 3), request('call-b-2', 4)]),
        queue.publish('turn', workEnvelope(5), { idempotencyKey: 'call-c-1' }),
      ]);
      expect([...a, ...b, c].every((r) => r.duplicate === false)).toBe(true);
      expect(new Set([...a, ...b, c].map((r) => r.id)).size).toBe(5);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // A's two messages fill a script call of 3 as far as whole calls go; B's two and C's one make the next.
      expect(scripts).toHaveLength(2);
      expect(scripts[0]).toContain('call-a-1');
      expect(scripts[0]).toContain('call-a-2');
      expect(scripts[0]).not.toContain('call-b-');
      expect(scripts[1]).toContain('call-b-1');
      expect(scripts[1]).toContain('call-b-2');
      expect(scripts[1]).toContain('call-c-1');
      const got = await queue.consume('turn', { consumer: 'c', visibilityTimeoutMs: 10_000, max: 10 });
      expect(got.map((d) => d.idempotencyKey).sort()).toEqual([
        'call-a-1',
        'call-a-2',
        'call-b-1',
        'call-b-2',
        'call-c-1',
      ]);
    });
  });

  it('a publish that Redis does not answer (a partition: the connection open, nothing flows) fails with BUS_BACKEND after the command timeout, and the queue works again once traffic flows', async () => {
    const redisPort = Number(new URL(REDIS_URL).port || 6379);
    const proxy = await TcpProxy.start('127.0.0.1', redisPort);
    const prefix = testPrefix();
    const queue = await createRedisQueue({ url: `redis://127.0.0.1:${proxy.port}`, prefix });
    try {
      await queue.publish('cut', workEnvelope(1), { idempotencyKey: 'before' });
      proxy.cut();
      const started = Date.now();
      const error = await queue.publish('cut', workEnvelope(2), { idempotencyKey: 'during' }).catch((e: unknown) => e);
      const waited = Date.now() - started;
      expect(error).toMatchObject({ code: 'BUS_BACKEND', message: expect.stringMatching(/timed out/) });
      expect(waited).toBeGreaterThanOrEqual(4_900);
      expect(waited).toBeLessThan(8_000);
      proxy.heal();
      // The connection carries on (the late answer is dropped): a publish goes through again.
      await expect(queue.publish('cut', workEnvelope(3), { idempotencyKey: 'after' })).resolves.toMatchObject({
        duplicate: false,
      });
    } finally {
      await queue.close();
      await proxy.close();
      await dropPrefix(prefix);
    }
  }, 30_000);

  describe('RedisQueue specifics', () => {
    const prefixes: string[] = [];
    const queues: RedisQueue[] = [];
    let admin: ReturnType<typeof createClient>;

    beforeAll(async () => {
      admin = createClient({ url: REDIS_URL });
      admin.on('error', () => undefined);
      await admin.connect();
    });
    afterAll(async () => {
      await admin?.close();
    });
    afterEach(async () => {
      for (const q of queues.splice(0)) await q.close();
      for (const p of prefixes.splice(0)) await dropPrefix(p);
    });

    async function open(prefix?: string): Promise<RedisQueue> {
      const p = prefix ?? testPrefix();
      if (!prefixes.includes(p)) prefixes.push(p);
      const q = await createRedisQueue({ url: REDIS_URL, prefix: p, clientName: `sbtest-${randomUUID().slice(0, 8)}` });
      queues.push(q);
      return q;
    }

    /** `CLIENT KILL` every connection of a queue (by the client name it sets). */
    async function killConnections(queue: RedisQueue, kind: 'cmd' | 'block'): Promise<number> {
      const list = await admin.clientList();
      const victims = list.filter((c) => c.name.startsWith('sbtest-') && c.name.includes(`:${kind}:`));
      let killed = 0;
      for (const c of victims) {
        if (!queueOwns(queue, c.name)) continue;
        killed += Number(await admin.sendCommand(['CLIENT', 'KILL', 'ID', String(c.id)]));
      }
      return killed;
    }

    /** Waits until one of the queue's blocking connections is blocked in XREADGROUP. */
    async function blocked(queue: RedisQueue): Promise<void> {
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const list = await admin.clientList();
        if (list.some((c) => queueOwns(queue, c.name) && c.name.includes(':block:') && c.flags.includes('b'))) return;
        await sleep(10);
      }
      throw new Error('the queue never blocked in XREADGROUP');
    }

    function queueOwns(queue: RedisQueue, name: string): boolean {
      return name.endsWith(`:${(queue as unknown as { nonce: string }).nonce}`);
    }

    it('keeps every key under the {prefix} hash tag, in one cluster slot', async () => {
      const prefix = testPrefix();
      const queue = await open(prefix);
      await queue.publish('coder', workEnvelope(1), { idempotencyKey: 'a', taskKey: 'T' });
      await queue.publish('coder', workEnvelope(2), { idempotencyKey: 'b', taskKey: 'T', delayMs: 60_000 });
      await queue.publish('reviewer', workEnvelope(3), { idempotencyKey: 'c', taskKey: 'T' });
      const [d] = await queue.consume('coder', { consumer: 'c', visibilityTimeoutMs: 60_000 });
      await queue.consume('reviewer', { consumer: 'c', visibilityTimeoutMs: 60_000 });
      await queue.nack(d!, { error: { type: 'E', message: 'm' }, retryable: false });
      const keys: string[] = [];
      for await (const batch of admin.scanIterator({ MATCH: `*${prefix}*`, COUNT: 1000 })) keys.push(...batch);
      expect(keys.length).toBeGreaterThanOrEqual(8);
      for (const key of keys) expect(key.startsWith(`{${prefix}}:`)).toBe(true);
      const slots = new Set<number>();
      for (const key of keys) slots.add(clusterSlot(key));
      expect(slots.size).toBe(1);
      expect(keys).toContain(queue.keys.stream('coder'));
      expect(keys).toContain(queue.keys.deadLetters('coder'));
      expect(keys).toContain(queue.keys.taskLock('T'));
    });

    it('fails with BUS_BACKEND, without hanging or showing the password, when no Redis answers', async () => {
      const started = Date.now();
      const error = await createRedisQueue({
        url: 'redis://worker:s3cret@127.0.0.1:1',
        prefix: testPrefix(),
        connectTimeoutMs: 300,
      }).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'BUS_BACKEND' });
      expect(String((error as Error).message)).not.toContain('s3cret');
      expect(Date.now() - started).toBeLessThan(3000);
    });

    it('refuses a prefix that would break the hash tag', async () => {
      expect(() => new RedisQueue({ url: REDIS_URL, prefix: 'a{b}' })).toThrow(/prefix/);
      expect(() => new RedisQueue({ url: REDIS_URL, prefix: '' })).toThrow(/prefix/);
      expect(() => new RedisQueue({ url: REDIS_URL, prefix: 'a b' })).toThrow(
        expect.objectContaining({ name: 'BusError', code: 'BUS_INVALID_ARGUMENT' }),
      );
    });

    it('uses one stream and one consumer group per role, and XACKs what is settled', async () => {
      const queue = await open();
      await queue.publish('coder', workEnvelope(1), { idempotencyKey: 'a' });
      await queue.publish('coder', workEnvelope(2), { idempotencyKey: 'b' });
      const got = await queue.consume('coder', { consumer: 'w1', visibilityTimeoutMs: 60_000, max: 2 });
      const stream = queue.keys.stream('coder');
      const groups = (await admin.sendCommand(['XINFO', 'GROUPS', stream])) as unknown[][];
      expect(groups).toHaveLength(1);
      const pending = (await admin.sendCommand(['XPENDING', stream, 'g'])) as [number, ...unknown[]];
      expect(Number(pending[0])).toBe(2);
      await queue.ackMany(got);
      const after = (await admin.sendCommand(['XPENDING', stream, 'g'])) as [number, ...unknown[]];
      expect(Number(after[0])).toBe(0);
    });

    it('trims acked entries below the oldest pending one and never drops unacked work', async () => {
      const queue = await open();
      const role = 'trim';
      await queue.publishMany(
        Array.from({ length: 20 }, (_, i) => ({ role, envelope: workEnvelope(i), idempotencyKey: `k${i}` })),
      );
      const stream = queue.keys.stream(role);
      // The 3 oldest are leased and held; the next 10 are acked; 7 were never read.
      const held = await queue.consume(role, { consumer: 'holder', visibilityTimeoutMs: 60_000, max: 3 });
      const done = await queue.consume(role, { consumer: 'fast', visibilityTimeoutMs: 60_000, max: 10 });
      expect(await queue.ackMany(done)).toEqual(Array(10).fill(true));
      await queue.trim(role);
      // Nothing below the oldest pending entry was acked yet: all 20 entries stay.
      expect(await admin.xLen(stream)).toBe(20);
      expect(await queue.ackMany(held.slice(0, 2))).toEqual([true, true]);
      await queue.trim(role);
      // The 2 acked below the oldest pending one go; the pending one, the 10
      // acked after it and the 7 unread stay until the pending one settles.
      expect(await admin.xLen(stream)).toBe(18);
      expect(await queue.ack(held[2]!)).toBe(true);
      await queue.trim(role);
      expect(await admin.xLen(stream)).toBe(7);
      const rest = await queue.consume(role, { consumer: 'fast', visibilityTimeoutMs: 60_000, max: 20 });
      expect(rest.map((d) => d.envelope.kind === 'work' && d.envelope.headers.taskId)).toEqual(
        Array.from({ length: 7 }, (_, i) => `task-${13 + i}`),
      );
      expect(await queue.ackMany(rest)).toEqual(Array(7).fill(true));
      await queue.trim(role);
      expect(await admin.xLen(stream)).toBeLessThanOrEqual(1);
      expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0 });
    });

    it('forgets idempotency keys the retention after their ack, and keeps live ones', async () => {
      const prefix = testPrefix();
      const clock = new OffsetClock();
      const queue = await createRedisQueue({ url: REDIS_URL, prefix, clock, idempotencyRetentionMs: 1000 });
      queues.push(queue);
      prefixes.push(prefix);
      const role = 'retain';
      const first = await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
      await queue.publish(role, workEnvelope(2), { idempotencyKey: 'live' });
      const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
      expect(await queue.ack(d!)).toBe(true);
      expect(await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' })).toEqual({
        id: first.id,
        duplicate: true,
      });
      clock.advance(1500);
      // The next ack forgets keys acked more than the retention ago.
      await queue.publish(role, workEnvelope(3), { idempotencyKey: 'b' });
      const got = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 5 });
      expect(got.map((x) => x.idempotencyKey)).toEqual(['live', 'b']);
      await queue.ack(got[1]!);
      expect((await admin.hGetAll(queue.keys.idempotency(role))).a).toBeUndefined();
      expect((await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' })).duplicate).toBe(false);
      // A message still queued or leased keeps its key, however old.
      expect((await queue.publish(role, workEnvelope(2), { idempotencyKey: 'live' })).duplicate).toBe(true);
    });

    it('resumes consuming after its blocking connection is killed mid-wait', async () => {
      const queue = await open();
      const role = 'reconnect';
      const started = Date.now();
      const waiting = queue.consume(role, { consumer: 'w', visibilityTimeoutMs: 60_000, waitMs: 8000 });
      await blocked(queue);
      expect(await killConnections(queue, 'block')).toBe(1);
      await sleep(150);
      await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
      const got = await waiting;
      expect(got).toHaveLength(1);
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await queue.ack(got[0]!)).toBe(true);
    });

    it('keeps its pending entries when its command connection is killed, and goes on consuming', async () => {
      const queue = await open();
      const role = 'reconnect-cmd';
      await queue.publishMany(
        Array.from({ length: 4 }, (_, i) => ({ role, envelope: workEnvelope(i), idempotencyKey: `k${i}` })),
      );
      const held = await queue.consume(role, { consumer: 'w', visibilityTimeoutMs: 60_000, max: 2 });
      expect(held).toHaveLength(2);
      expect(await killConnections(queue, 'cmd')).toBe(1);
      // The same queue object, no restart: the leases it holds are still its own.
      let acked: boolean[] = [];
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        try {
          acked = await queue.ackMany(held);
          break;
        } catch {
          await sleep(50);
        }
      }
      expect(acked).toEqual([true, true]);
      const rest = await queue.consume(role, { consumer: 'w', visibilityTimeoutMs: 60_000, max: 10, waitMs: 2000 });
      expect(rest).toHaveLength(2);
      expect(await queue.ackMany(rest)).toEqual([true, true]);
      expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
    });

    it('re-reads its own pending entries (id 0) after its blocking read fails, so a lost reply loses nothing', async () => {
      const queue = await open();
      const role = 'lost-reply';
      await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
      await queue.stats(role);
      // What a blocking read whose reply was lost with the connection leaves:
      // the entry is pending for the consumer, which never saw it.
      await admin.sendCommand(['XREADGROUP', 'GROUP', 'g', 'w', 'COUNT', '5', 'STREAMS', queue.keys.stream(role), '>']);
      const started = Date.now();
      const waiting = queue.consume(role, { consumer: 'w', visibilityTimeoutMs: 60_000, waitMs: 5000 });
      await blocked(queue);
      expect(await killConnections(queue, 'block')).toBe(1);
      const got = await waiting;
      expect(got.map((d) => d.deliveries)).toEqual([1]);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await queue.ack(got[0]!)).toBe(true);
    });

    it('carries the worker harness: a hop longer than its lease stays leased by heartbeats and completes once', async () => {
      const queue = await open();
      const dir = mkdtempSync(join(tmpdir(), 'sb-redis-worker-'));
      const db = openDatabase(join(dir, 'context.db'));
      const store = new SqliteContextStore({ database: db });
      let calls = 0;
      const worker = createWorker({
        role: 'coder',
        bus: queue,
        contextStore: store,
        visibilityTimeoutMs: 150,
        pollWaitMs: 100,
        handler: async ({ message }) => {
          calls++;
          await sleep(500);
          return { parts: [{ kind: 'text', text: `done: ${message.parts.length} part(s)` }] };
        },
      });
      try {
        await queue.publish('coder', hop('h1'), { idempotencyKey: 'hop-h1', taskKey: 'task-h1' });
        const [result] = await takeResults(queue, 1, 5000);
        expect(result).toMatchObject({ kind: 'result', outcome: 'completed', role: 'coder' });
        expect(result!.headers.idempotencyKey).toBe('hop-h1');
        expect(calls).toBe(1);
        expect(await queue.stats('coder')).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
      } finally {
        await worker.stop({ graceMs: 100 });
        await store.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('claims with XAUTOCLAIM the entries a consumer read but never leased (it died in between)', async () => {
      const prefix = testPrefix();
      const queue = await open(prefix);
      const role = 'orphans';
      await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
      await queue.publish(role, workEnvelope(2), { idempotencyKey: 'b' });
      await queue.stats(role);
      // What a consumer whose process died right after XREADGROUP leaves behind:
      // entries pending for it, which no lease covers.
      const stream = queue.keys.stream(role);
      await admin.sendCommand(['XREADGROUP', 'GROUP', 'g', 'dead-worker', 'COUNT', '2', 'STREAMS', stream, '>']);
      expect(await queue.consume(role, { consumer: 'other', visibilityTimeoutMs: 60_000, max: 5 })).toEqual([]);
      // Another process with a short orphan idle time claims them.
      const claimer = await createRedisQueue({ url: REDIS_URL, prefix, orphanIdleMs: 100 });
      queues.push(claimer);
      await sleep(250);
      const got = await claimer.consume(role, { consumer: 'claimer', visibilityTimeoutMs: 60_000, max: 5 });
      expect(got.map((d) => d.deliveries)).toEqual([1, 1]);
      expect(await claimer.ackMany(got)).toEqual([true, true]);
      expect(await claimer.stats(role)).toMatchObject({ depth: 0, inFlight: 0 });
      // Consumer names idle for 10 orphan periods with nothing pending leave the group.
      const names = async () => (await admin.xInfoConsumers(stream, 'g')).map((c) => String(c.name));
      expect(await names()).toContain('dead-worker');
      await sleep(1100);
      await claimer.consume(role, { consumer: 'claimer', visibilityTimeoutMs: 60_000 });
      expect(await names()).not.toContain('dead-worker');
      expect(await names()).toContain('claimer');
    });

    it('a consumer taking over a role (expireLeases) claims at once what a dead one read but never leased', async () => {
      const prefix = testPrefix();
      // The orphan idle time is long: only the takeover makes the claim immediate.
      const dead = await createRedisQueue({ url: REDIS_URL, prefix, orphanIdleMs: 60_000 });
      queues.push(dead);
      const role = 'taken-over';
      await dead.publish(role, workEnvelope(1), { idempotencyKey: 'leased' });
      const [held] = await dead.consume(role, { consumer: 'dead-leader', visibilityTimeoutMs: 60_000 });
      expect(held).toBeDefined();
      await dead.publish(role, workEnvelope(2), { idempotencyKey: 'read' });
      // The dead one's blocking read was answered as it died: pending for it, never leased.
      const stream = dead.keys.stream(role);
      await admin.sendCommand(['XREADGROUP', 'GROUP', 'g', 'dead-leader', 'COUNT', '1', 'STREAMS', stream, '>']);
      const next = await createRedisQueue({ url: REDIS_URL, prefix, orphanIdleMs: 60_000 });
      queues.push(next);
      expect(await next.consume(role, { consumer: 'before', visibilityTimeoutMs: 60_000, max: 5 })).toEqual([]);
      expect(await next.expireLeases(role)).toBe(1);
      const got = await next.consume(role, { consumer: 'new-leader', visibilityTimeoutMs: 60_000, max: 5 });
      expect(got.map((d) => d.idempotencyKey).sort()).toEqual(['leased', 'read']);
      expect(await next.ackMany(got)).toEqual([true, true]);
      expect(await dead.ack(held!)).toBe(false);
      expect(await next.stats(role)).toMatchObject({ depth: 0, inFlight: 0 });
      // Once: a later consume waits for the orphan idle time again.
      await dead.publish(role, workEnvelope(3), { idempotencyKey: 'later' });
      await admin.sendCommand(['XREADGROUP', 'GROUP', 'g', 'dead-leader', 'COUNT', '1', 'STREAMS', stream, '>']);
      expect(await next.consume(role, { consumer: 'new-leader', visibilityTimeoutMs: 60_000, max: 5 })).toEqual([]);
    });

    it('fences leases of messages whose task and idempotency keys contain the token separators', async () => {
      const queue = await open();
      const role = 'separators';
      await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k|1:|', taskKey: 't|a:2|' });
      await queue.publish(role, workEnvelope(2), { idempotencyKey: '||', taskKey: 't|a:2|' });
      const [first] = await queue.consume(role, { consumer: 'a', visibilityTimeoutMs: 60_000, max: 5 });
      expect(first).toMatchObject({ idempotencyKey: 'k|1:|', taskKey: 't|a:2|', deliveries: 1 });
      // The second waits behind the first's task lock.
      expect(await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: 60_000 })).toEqual([]);
      expect(await queue.heartbeat(first!, 30_000)).not.toBeNull();
      expect(await queue.ack({ ...first!, leaseId: `${first!.leaseId}x` })).toBe(false);
      expect(await queue.release(first!)).toBe(true);
      expect(await queue.ack(first!)).toBe(false);
      // The release frees the task for the message waiting behind it; its ack retains its key.
      const [second] = await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: 60_000 });
      expect(second).toMatchObject({ idempotencyKey: '||', taskKey: 't|a:2|', deliveries: 1 });
      expect(await queue.ack(second!)).toBe(true);
      expect((await queue.publish(role, workEnvelope(2), { idempotencyKey: '||' })).duplicate).toBe(true);
      const [again] = await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: 60_000 });
      expect(again).toMatchObject({ id: first!.id, idempotencyKey: 'k|1:|', deliveries: 2 });
      expect(again!.leaseId).not.toBe(first!.leaseId);
      expect(await queue.ack(again!)).toBe(true);
      expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
    });

    it('still leases and settles entries written with separate m, d, pa and av fields (the older entry layout)', async () => {
      const queue = await open();
      const role = 'older-entries';
      await queue.stats(role);
      await queue.publish(role, workEnvelope(0), { idempotencyKey: 'first' });
      const [current] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
      expect(await queue.ack(current!)).toBe(true);
      const stream = queue.keys.stream(role);
      const env = JSON.stringify(workEnvelope(1));
      // What the previous version wrote: a message delivered twice already.
      await admin.sendCommand([
        'XADD',
        stream,
        '*',
        'm',
        '9001',
        'k',
        'old',
        'env',
        env,
        'd',
        '2',
        'pa',
        '1000',
        'av',
        '2000',
      ]);
      const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
      expect(d).toMatchObject({ id: '9001', idempotencyKey: 'old', deliveries: 3, publishedAt: 1000 });
      expect(d!.envelope).toEqual(workEnvelope(1));
      expect(
        await queue.nack(d!, { error: { type: 'E', message: 'again' }, retryable: true, delayMs: 0 }),
      ).toMatchObject({
        outcome: 'retry',
      });
      const [retried] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
      expect(retried).toMatchObject({ id: '9001', deliveries: 4, lastError: { type: 'E', message: 'again' } });
      expect(await queue.ack(retried!)).toBe(true);
      expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0 });
    });

    it('consumes through killed connections without a restart: nothing lost, nothing completed twice', async () => {
      const queue = await open();
      const role = 'soak';
      const acked = new Map<string, number>();
      const unsure = new Set<string>();
      const controller = new AbortController();
      const loop = (async () => {
        while (!controller.signal.aborted) {
          let got: Awaited<ReturnType<WorkQueue['consume']>> = [];
          try {
            got = await queue.consume(role, {
              consumer: 'soak',
              visibilityTimeoutMs: 1000,
              max: 4,
              waitMs: 200,
              signal: controller.signal,
            });
          } catch {
            await sleep(20);
            continue;
          }
          for (const d of got) {
            try {
              if (await queue.ack(d)) acked.set(d.id, (acked.get(d.id) ?? 0) + 1);
            } catch {
              // The connection dropped under the ack: it may or may not have
              // happened. If not, the lease expires and the message comes back.
              unsure.add(d.id);
            }
          }
        }
      })();
      const total = 60;
      const ids = new Set<string>();
      for (let i = 0; i < total; i++) {
        for (;;) {
          try {
            // A publish retried after a dropped connection is deduplicated by its key.
            ids.add((await queue.publish(role, workEnvelope(i), { idempotencyKey: `k${i}` })).id);
            break;
          } catch {
            await sleep(20);
          }
        }
        if (i === 20) expect(await killConnections(queue, 'block')).toBeGreaterThanOrEqual(1);
        if (i === 40) expect(await killConnections(queue, 'cmd')).toBe(1);
        await sleep(5);
      }
      expect(ids.size).toBe(total);
      const settled = async () => {
        const s = await queue.stats(role).catch(() => undefined);
        return s !== undefined && s.depth === 0 && s.inFlight === 0;
      };
      const deadline = Date.now() + 15_000;
      while (Date.now() < deadline && !(acked.size + unsure.size >= total && (await settled()))) await sleep(50);
      controller.abort();
      await loop;
      expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0, delayed: 0, deadLetters: 0 });
      expect([...acked.values()].every((n) => n === 1)).toBe(true);
      for (const id of ids) expect(acked.has(id) || unsure.has(id)).toBe(true);
      expect(acked.size).toBeGreaterThanOrEqual(total - unsure.size);
    });
  });
});
