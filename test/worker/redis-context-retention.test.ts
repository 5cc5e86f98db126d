import { randomUUID } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '../../src/actors/worker/worker.js';
import { type RedisContextStore, createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { type RedisQueue, createRedisQueue } from '../../src/bus/redis/queue.js';
import { DEFAULT_CONTEXT_RETENTION_MS } from '../../src/persistence/context/sqlite-store.js';
import { IN_CI, REDIS_URL, redisGate } from '../redis-availability.js';
import { chargingWorker, completionRecord, hop, sleep, until } from './helpers.js';

/**
 * The Redis Context Engine's retention: its idempotency records carry a TTL
 * set by the script that writes them (completions when written, checkpoints
 * when resumed, effect scopes per new marker); what a live run needs has none.
 */

const { redisUp } = await redisGate();
const runRedis = redisUp || IN_CI;

type Client = ReturnType<typeof createClient>;

describe.runIf(runRedis)(
  `the Context Engine retention on Redis at ${REDIS_URL}${redisUp ? '' : ' (no Redis answers)'}`,
  () => {
    let client: Client;
    const prefixes: string[] = [];
    const closers: (() => Promise<unknown> | unknown)[] = [];
    beforeAll(async () => {
      client = createClient({ url: REDIS_URL });
      client.on('error', () => undefined);
      await client.connect();
    });
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
    });
    afterAll(async () => {
      for (const prefix of prefixes) {
        for await (const keys of client.scanIterator({ MATCH: `{${prefix}}:*`, COUNT: 1000 })) {
          if (keys.length > 0) await client.del(keys);
        }
      }
      await client.close();
    });

    const newPrefix = () => {
      const prefix = `sbtest:${randomUUID().slice(0, 8)}`;
      prefixes.push(prefix);
      return prefix;
    };
    const open = async (prefix: string, retentionMs?: number): Promise<RedisContextStore> => {
      const store = await createRedisContextStore({
        url: REDIS_URL,
        prefix,
        ...(retentionMs === undefined ? {} : { retentionMs }),
      });
      closers.push(() => store.close());
      return store;
    };
    const ttl = (prefix: string, rest: string) => client.pTTL(`{${prefix}}:cx:${rest}`);

    it('writes the idempotency records with the retention as TTL, and nothing a live run needs', async () => {
      const prefix = newPrefix();
      const store = await open(prefix, 60_000);
      expect(store.retentionMs).toBe(60_000);
      await store.updateMemory('run-1', { plan: 'a' });
      await store.complete(
        completionRecord('suspends', { checkpoint: { token: 'tok-1', state: { s: 1 }, headers: hop('s').headers } }),
      );
      await store.complete(
        completionRecord('suspends-too', {
          checkpoint: { token: 'tok-live', state: { s: 2 }, headers: hop('l').headers },
        }),
      );
      expect(await store.recordEffect('suspends', 'charge', { id: 1 })).toBe(true);

      for (const key of ['d:suspends', 'd:suspends-too', 'e:suspends']) {
        const left = await ttl(prefix, key);
        expect(left, key).toBeGreaterThan(55_000);
        expect(left, key).toBeLessThanOrEqual(60_000);
      }
      // A checkpoint not yet resumed, the outputs and the memory never expire.
      expect(await ttl(prefix, 'c:tok-1')).toBe(-1);
      expect(await ttl(prefix, 'c:tok-live')).toBe(-1);
      expect(await ttl(prefix, 'o:run-1')).toBe(-1);
      expect(await ttl(prefix, 'm:run-1')).toBe(-1);

      // Resumed: the checkpoint expires from now on; the one still suspended does not.
      await store.complete(completionRecord('resumes', { resumedToken: 'tok-1' }));
      expect((await store.checkpoint('tok-1'))!.resumedAt).toBeTypeOf('number');
      expect(await ttl(prefix, 'c:tok-1')).toBeGreaterThan(55_000);
      expect(await ttl(prefix, 'c:tok-live')).toBe(-1);
      expect(await ttl(prefix, 'd:resumes')).toBeGreaterThan(55_000);

      // A marker already recorded changes nothing; a new one in the scope renews the scope's TTL.
      await client.pExpire(`{${prefix}}:cx:e:suspends`, 10_000);
      expect(await store.recordEffect('suspends', 'charge', { id: 2 })).toBe(false);
      expect(await ttl(prefix, 'e:suspends')).toBeLessThanOrEqual(10_000);
      expect(await store.recordEffect('suspends', 'refund', { id: 3 })).toBe(true);
      expect(await ttl(prefix, 'e:suspends')).toBeGreaterThan(55_000);
      // A second completion of a key writes nothing, its TTL included.
      await client.pExpire(`{${prefix}}:cx:d:suspends`, 10_000);
      expect((await store.complete(completionRecord('suspends'))).first).toBe(false);
      expect(await ttl(prefix, 'd:suspends')).toBeLessThanOrEqual(10_000);
    });

    it("keeps a hop's first output when the hop completes again after its record expired (as SQLite does)", async () => {
      const prefix = newPrefix();
      const store = await open(prefix, 60_000);
      await store.complete(
        completionRecord('k1', { output: { parts: [{ kind: 'text', text: 'first' }], artifacts: [] } }),
      );
      await store.complete(completionRecord('k2', { hop: 1 }));
      // The completion record of k1 expires: the hop comes back and runs again.
      await client.del(`{${prefix}}:cx:d:k1`);
      const again = await store.complete(
        completionRecord('k1', { output: { parts: [{ kind: 'text', text: 'second' }], artifacts: [] } }),
      );
      expect(again.first).toBe(true);
      const { outputs } = await store.hydrate('run-1');
      expect(outputs.map((o) => [o.idempotencyKey, o.parts])).toEqual([
        ['k1', [{ kind: 'text', text: 'first' }]],
        ['k2', [{ kind: 'text', text: 'k2' }]],
      ]);
      // Forgetting the run takes the set of its outputs' hops with it.
      await store.forgetRun('run-1');
      expect(await client.exists([`{${prefix}}:cx:o:run-1`, `{${prefix}}:cx:q:run-1`])).toBe(0);
    });

    it('keeps a day by default and refuses a bad retention without connecting', async () => {
      const prefix = newPrefix();
      const store = await open(prefix);
      expect(store.retentionMs).toBe(DEFAULT_CONTEXT_RETENTION_MS);
      await store.complete(completionRecord('k'));
      expect(await ttl(prefix, 'd:k')).toBeGreaterThan(DEFAULT_CONTEXT_RETENTION_MS - 60_000);
      await expect(
        createRedisContextStore({ url: 'redis://127.0.0.1:1', prefix, retentionMs: 0, connectTimeoutMs: 200 }),
      ).rejects.toMatchObject({ code: 'CONTEXT_INVALID_ARGUMENT' });
    });

    describe('with the worker harness on the Redis bus', () => {
      const workers: Worker[] = [];
      afterEach(async () => {
        for (const w of workers.splice(0)) await w.stop({ graceMs: 100 });
      });

      it('recognises a redelivered hop within the retention, forgets it after, and keeps a live checkpoint', async () => {
        const prefix = newPrefix();
        const retentionMs = 4000;
        const store = await open(prefix, retentionMs);
        const bus: RedisQueue = await createRedisQueue({ url: REDIS_URL, prefix });
        closers.push(() => bus.close());
        // The same hop under new bus keys, as a re-published outbox sends it.
        const { worker, calls, deliver } = chargingWorker(bus, store);
        workers.push(worker);
        // A suspended run's checkpoint, older than the retention by the end.
        await store.complete(
          completionRecord('other-hop', {
            runId: 'run-2',
            checkpoint: { token: 'tok-live', state: {}, headers: hop('x').headers },
          }),
        );
        // The record is written during the first delivery: it expires no sooner than `retentionMs`
        // after the delivery began, and has not expired `retentionMs` after it returned.
        const deliveredFrom = Date.now();
        await deliver('first');
        const recordedAt = Date.now();
        expect(calls()).toBe(1);
        await deliver('again-within');
        expect(calls()).toBe(1);
        expect(Date.now() - recordedAt).toBeLessThan(retentionMs);

        await until(async () => (await store.completion('hop-1')) === undefined, 5000, 'the completion to expire');
        expect(Date.now() - deliveredFrom).toBeGreaterThanOrEqual(retentionMs - 50);
        await until(async () => (await store.effect('hop-1', 'charge')) === undefined, 2000, 'the effect to expire');
        await deliver('again-after');
        expect(calls()).toBe(2);
        expect(await store.effect('hop-1', 'charge')).toEqual({ value: 2 });
        await sleep(50);
        expect(await store.checkpoint('tok-live')).toMatchObject({ runId: 'run-2', resumedAt: undefined });
        // Run again, but its output is recorded once, as on SQLite.
        expect((await store.hydrate('run-1')).outputs).toHaveLength(1);
        expect((await bus.stats('r')).deadLetters).toBe(0);
      });
    });
  },
);
