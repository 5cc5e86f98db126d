import { createClient } from 'redis';

/** The Redis the tests use (`SWITCHBOARD_TEST_REDIS_URL` overrides it). */
export const REDIS_URL = process.env.SWITCHBOARD_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const IN_CI = process.env.CI === 'true';

/** Whether a Redis answers a PING within a second. */
export async function probeRedis(url = REDIS_URL): Promise<boolean> {
  const client = createClient({ url, socket: { reconnectStrategy: false, connectTimeout: 1000 } });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.ping();
    await client.close();
    return true;
  } catch {
    client.destroy();
    return false;
  }
}

/**
 * Decided once, before a file's suites are declared: `redisUp` when a Redis
 * answers; `runRedis` also in CI, where a missing Redis must FAIL the Redis
 * suites (they cannot connect) instead of skipping them.
 */
export async function redisGate(): Promise<{ redisUp: boolean; runRedis: boolean }> {
  const redisUp = await probeRedis();
  return { redisUp, runRedis: redisUp || IN_CI };
}

/** Deletes every key of a test's (or a bench's) `{prefix}` on the Redis at `url`. */
export async function deleteRedisPrefix(prefix: string, url = REDIS_URL): Promise<void> {
  const client = createClient({ url });
  await client.connect();
  try {
    for await (const keys of client.scanIterator({ MATCH: `{${prefix}}*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.del(keys);
    }
  } finally {
    await client.close();
  }
}
