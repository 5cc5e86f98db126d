import { randomUUID } from 'node:crypto';
import { afterAll, describe, it } from 'vitest';
import { REDIS_URL, deleteRedisPrefix, redisGate } from '../redis-availability.js';
import { type Proc, terminate } from '../scaleout/processes.js';
import { askThenKill, scenarioDir } from './ask-kill-scenario.js';

// The ask-then-SIGKILL scenario of model agents (ask-kill-scenario.ts) over
// the Redis bus: the workers' Context Engine (checkpoints, recorded steps) is
// on Redis too, under a key prefix of this test's own. Without a Redis the
// suite is skipped, except in CI (CI=true), where it fails.

const { runRedis } = await redisGate();
const prefix = `agents-${randomUUID().slice(0, 8)}`;
const { dir, cleanup } = scenarioDir();
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  cleanup();
  if (runRedis) await deleteRedisPrefix(prefix).catch(() => undefined);
});

describe.runIf(runRedis)('switchboard worker --agent on the Redis bus', () => {
  it('resumes an asking agent in a new process after a SIGKILL: checkpoint + answer, no step twice, cost = priced usage', async () => {
    await askThenKill({ dir, bus: ['--bus', REDIS_URL, '--bus-prefix', prefix], workerStore: () => [], procs });
  }, 240_000);
});
