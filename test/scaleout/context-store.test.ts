import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRedisContextStore } from '../../src/persistence/context/redis-store.js';
import { ContextStoreError, SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { runContextStoreContract } from './context-contract.js';
import { IN_CI, REDIS_URL, redisGate } from '../redis-availability.js';

const { redisUp } = await redisGate();
const runRedis = redisUp || IN_CI;

const dirs: string[] = [];
const prefixes: string[] = [];
afterAll(async () => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  if (prefixes.length === 0 || !redisUp) return;
  const client = createClient({ url: REDIS_URL });
  await client.connect();
  for (const prefix of prefixes) {
    for await (const keys of client.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.del(keys);
    }
  }
  await client.close();
});

runContextStoreContract('SQLite', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-ctx-contract-'));
  dirs.push(dir);
  const path = join(dir, 'ctx.db');
  return { open: async () => new SqliteContextStore({ database: path }) };
});

describe('the Context Engine on Redis, before it connects', () => {
  it("refuses a prefix that would break the hash tag with the Context Engine's own code, not the bus's", async () => {
    for (const prefix of ['a{b}', '']) {
      const error = await createRedisContextStore({ url: 'redis://127.0.0.1:1', prefix }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContextStoreError);
      expect(error).toMatchObject({
        code: 'CONTEXT_INVALID_ARGUMENT',
        message: 'prefix must be 1-64 letters, digits, . _ : or -',
      });
    }
  });
});

// Skipped (with this reason in its name) only outside CI when no Redis answers; in CI a missing Redis fails.
describe.runIf(runRedis)(`on Redis at ${REDIS_URL}${redisUp ? '' : ' (no Redis answers)'}`, () => {
  runContextStoreContract('Redis', () => {
    const prefix = `ctx-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    return { open: () => createRedisContextStore({ url: REDIS_URL, prefix }) };
  });
});

describe.runIf(runRedis)('the Context Engine on Redis', () => {
  it('keeps every key under the deployment hash tag', async () => {
    const prefix = `ctx-${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    const store = await createRedisContextStore({ url: REDIS_URL, prefix });
    await store.updateMemory('r', { a: 1 });
    await store.recordEffect('s', 'k', true);
    const client = createClient({ url: REDIS_URL });
    await client.connect();
    const keys: string[] = [];
    for await (const batch of client.scanIterator({ MATCH: `*${prefix}*`, COUNT: 1000 })) keys.push(...batch);
    await client.close();
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.startsWith(`{${prefix}}:cx:`))).toBe(true);
    await store.close();
  });

  it('fails with CONTEXT_BACKEND when Redis cannot be reached', async () => {
    await expect(
      createRedisContextStore({ url: 'redis://127.0.0.1:1', prefix: 'x', connectTimeoutMs: 500 }),
    ).rejects.toMatchObject({ code: 'CONTEXT_BACKEND' });
  });
});
