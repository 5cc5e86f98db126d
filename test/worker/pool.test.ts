import { afterEach, describe, expect, it } from 'vitest';
import { type Pool, createPool } from '../../src/actors/worker/pool.js';
import type { WorkHandler } from '../../src/actors/worker/worker.js';
import { type Harness, hop, openHarness, sleep, takeResults, until } from './helpers.js';

describe('pools', () => {
  let h: Harness;
  const pools: Pool[] = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.stop();
    await h?.close();
  });

  const slowHandler: WorkHandler = async () => {
    await sleep(60);
    return { parts: [{ kind: 'text', text: 'ok' }] };
  };

  function pool(role: string, deployment: Pool['deployment'], handler: WorkHandler = slowHandler): Pool {
    const p = createPool({
      role,
      bus: h.bus,
      contextStore: h.store,
      deployment,
      handler,
      observeIntervalMs: 20,
      pollWaitMs: 50,
    });
    pools.push(p);
    return p;
  }

  it('scale-to-zero: no worker without work, up to maxReplicas under a backlog, back to zero when idle', async () => {
    h = openHarness();
    const p = pool('batch', { minReplicas: 0, maxReplicas: 3, idleTimeoutMs: 150, concurrency: 1 });
    const seen: number[] = [];
    p.replicas$.subscribe((n) => seen.push(n));
    await sleep(200);
    expect(p.replicas).toBe(0);
    expect(p.starts).toBe(0);
    await h.bus.publishMany(
      Array.from({ length: 12 }, (_, i) => ({ role: 'batch', envelope: hop(i), idempotencyKey: `k${i}` })),
    );
    expect(await takeResults(h.bus, 12)).toHaveLength(12);
    expect(Math.max(...seen)).toBe(3);
    await until(() => p.replicas === 0, 3000, 'scale to zero');
    expect(p.stops).toBe(p.starts);
    expect(seen[0]).toBe(0);
    expect(seen.at(-1)).toBe(0);
  });

  it('warm: keeps minReplicas running with no work and after the idle timeout', async () => {
    h = openHarness();
    const p = pool('warm', { minReplicas: 2, maxReplicas: 4, idleTimeoutMs: 50, concurrency: 2 });
    await until(() => p.replicas === 2, 2000, 'two warm workers');
    await h.bus.publishMany(
      Array.from({ length: 16 }, (_, i) => ({ role: 'warm', envelope: hop(i), idempotencyKey: `k${i}` })),
    );
    expect(await takeResults(h.bus, 16)).toHaveLength(16);
    await sleep(300);
    expect(p.replicas).toBe(2);
  });

  it('flips between warm and scale-to-zero by configuration alone', async () => {
    h = openHarness();
    const p = pool('flip', { minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 50, concurrency: 1 });
    await until(() => p.replicas === 1, 2000, 'warm');
    p.configure({ minReplicas: 0, maxReplicas: 2, idleTimeoutMs: 50, concurrency: 1 });
    await until(() => p.replicas === 0, 2000, 'zero');
    await h.bus.publish('flip', hop(1), { idempotencyKey: 'one' });
    expect(await takeResults(h.bus, 1)).toHaveLength(1);
    await until(() => p.replicas === 0, 2000, 'zero again');
    p.configure({ minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 50, concurrency: 1 });
    await until(() => p.replicas === 1, 2000, 'warm again');
    expect(p.deployment.minReplicas).toBe(1);
  });

  it('never stops a busy worker, and stop() finishes its hop', async () => {
    h = openHarness();
    let finished = 0;
    const p = pool('long', { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 10, concurrency: 1 }, async () => {
      await sleep(300);
      finished++;
      return { parts: [{ kind: 'text', text: 'long' }] };
    });
    await h.bus.publish('long', hop(1), { idempotencyKey: 'one' });
    await until(async () => (await h.bus.stats('long')).inFlight === 1, 2000, 'the hop to start');
    await sleep(100);
    expect(p.replicas).toBe(1);
    await p.stop();
    expect(finished).toBe(1);
    expect(p.replicas).toBe(0);
    expect(await h.bus.stats('long')).toMatchObject({ depth: 0, inFlight: 0 });
  });

  it('reports its supervisor to an inspector: the worker actors appear as its children', async () => {
    h = openHarness();
    const events: string[] = [];
    const p = createPool({
      role: 'seen',
      bus: h.bus,
      contextStore: h.store,
      deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 50, concurrency: 1 },
      handler: slowHandler,
      observeIntervalMs: 20,
      inspect: {
        next: (event) => {
          if (event.type === '@xstate.actor') events.push((event.actorRef as unknown as { id: string }).id);
        },
      },
    });
    pools.push(p);
    await until(() => p.replicas === 1, 2000, 'one worker');
    expect(events).toContain('seen#1');
  });

  it('refuses an invalid deployment', () => {
    h = openHarness();
    expect(() => pool('bad', { minReplicas: 3, maxReplicas: 1, idleTimeoutMs: 10, concurrency: 1 })).toThrow(
      expect.objectContaining({ name: 'WorkerError', code: 'POOL_INVALID_DEPLOYMENT' }),
    );
    expect(() => pool('bad', { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 10, concurrency: 0 })).toThrow(
      expect.objectContaining({ name: 'WorkerError', code: 'POOL_INVALID_DEPLOYMENT' }),
    );
  });
});
