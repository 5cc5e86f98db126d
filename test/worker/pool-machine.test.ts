import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback } from 'xstate';
import {
  POOL_TRANSITIONS,
  type PoolDeployment,
  type WorkerObservation,
  checkDeployment,
  createPoolMachine,
  planScale,
} from '../../src/machines/pool-machine.js';

const deploymentArb: fc.Arbitrary<PoolDeployment> = fc
  .record({
    minReplicas: fc.integer({ min: 0, max: 4 }),
    extra: fc.integer({ min: 0, max: 4 }),
    idleTimeoutMs: fc.integer({ min: 0, max: 1000 }),
    concurrency: fc.integer({ min: 1, max: 8 }),
  })
  .map(({ minReplicas, extra, idleTimeoutMs, concurrency }) => ({
    minReplicas,
    maxReplicas: Math.max(1, minReplicas + extra),
    idleTimeoutMs,
    concurrency,
  }));

const workersArb = (now: number): fc.Arbitrary<WorkerObservation[]> =>
  fc
    .array(fc.option(fc.integer({ min: 0, max: 2000 }), { nil: null }), { maxLength: 10 })
    .map((ages) => ages.map((age, i) => ({ id: `w${i}`, idleSince: age === null ? null : now - age })));

describe('planScale', () => {
  const now = 1_000_000;

  it('keeps the pool within its bounds and never stops a busy worker', () => {
    fc.assert(
      fc.property(deploymentArb, workersArb(now), fc.integer({ min: 0, max: 100 }), (deployment, workers, depth) => {
        const plan = planScale(deployment, { now, depth, workers });
        const busy = new Set(workers.filter((w) => w.idleSince === null).map((w) => w.id));
        expect(plan.start).toBeGreaterThanOrEqual(0);
        expect(new Set(plan.stop).size).toBe(plan.stop.length);
        for (const id of plan.stop) {
          expect(workers.some((w) => w.id === id)).toBe(true);
          expect(busy.has(id)).toBe(false);
        }
        expect(plan.start > 0 && plan.stop.length > 0).toBe(false);
        const after = workers.length + plan.start - plan.stop.length;
        if (workers.length <= deployment.maxReplicas) expect(after).toBeLessThanOrEqual(deployment.maxReplicas);
        expect(after).toBeGreaterThanOrEqual(
          Math.min(deployment.minReplicas, Math.max(workers.length, deployment.minReplicas)),
        );
        if (depth > 0 && workers.length <= deployment.maxReplicas) expect(plan.stop).toEqual([]);
      }),
      { numRuns: 500 },
    );
  });

  it('scales from zero when work arrives, and to minReplicas when everyone idled past the timeout', () => {
    fc.assert(
      fc.property(deploymentArb, fc.integer({ min: 1, max: 100 }), (deployment, depth) => {
        const up = planScale(deployment, { now, depth, workers: [] });
        expect(up.start).toBe(
          Math.max(deployment.minReplicas, Math.min(deployment.maxReplicas, Math.ceil(depth / deployment.concurrency))),
        );
        const idle = Array.from({ length: deployment.maxReplicas }, (_, i) => ({
          id: `w${i}`,
          idleSince: now - deployment.idleTimeoutMs,
        }));
        const down = planScale(deployment, { now, depth: 0, workers: idle });
        expect(idle.length - down.stop.length).toBe(deployment.minReplicas);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps a worker idle for less than the timeout', () => {
    const plan = planScale(
      { minReplicas: 0, maxReplicas: 2, idleTimeoutMs: 100, concurrency: 1 },
      {
        now,
        depth: 0,
        workers: [
          { id: 'a', idleSince: now - 99 },
          { id: 'b', idleSince: now - 100 },
        ],
      },
    );
    expect(plan).toEqual({ start: 0, stop: ['b'] });
  });
});

describe('pool machine', () => {
  it('exports its transitions as data', () => {
    expect(POOL_TRANSITIONS.map((t) => `${t.from}:${t.event}->${t.to}`)).toEqual([
      'running:OBSERVE->running',
      'running:CONFIGURE->running',
      'running:STOP->stopped',
    ]);
    // Each says, for people reading the table (docs, the console), what the move does: no two alike, none blank.
    const does = POOL_TRANSITIONS.map((t) => t.does.trim());
    expect(does.every((d) => d.length > 0)).toBe(true);
    expect(new Set(does).size).toBe(does.length);
    expect(checkDeployment({ minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 })).toEqual([]);
    expect(checkDeployment({ minReplicas: 2, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 })).toHaveLength(1);
  });

  it('spawns and stops exactly the children its context lists, within bounds (random observations)', () => {
    const observation = fc.record({
      depth: fc.integer({ min: 0, max: 40 }),
      idleMask: fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
      idleAge: fc.integer({ min: 0, max: 500 }),
    });
    fc.assert(
      fc.property(deploymentArb, fc.array(observation, { maxLength: 25 }), (deployment, observations) => {
        const live = new Set<string>();
        const logic = fromCallback<{ type: string }, { workerId: string }>(({ input }) => {
          live.add(input.workerId);
          return () => live.delete(input.workerId);
        });
        const actor = createActor(createPoolMachine(logic), { input: { role: 'r', deployment } }).start();
        let now = 10_000;
        for (const o of observations) {
          now += 100;
          const ids = actor.getSnapshot().context.workers;
          actor.send({
            type: 'OBSERVE',
            now,
            depth: o.depth,
            workers: ids.map((id, i) => ({ id, idleSince: o.idleMask[i % 10] ? now - o.idleAge : null })),
          });
          const ctx = actor.getSnapshot().context;
          expect([...live].sort()).toEqual([...ctx.workers].sort());
          expect(ctx.workers.length).toBeLessThanOrEqual(deployment.maxReplicas);
          expect(ctx.workers.length).toBeGreaterThanOrEqual(deployment.minReplicas);
          expect(ctx.starts - ctx.stops).toBe(ctx.workers.length);
        }
        actor.send({ type: 'STOP' });
        expect(live.size).toBe(0);
        expect(actor.getSnapshot().status).toBe('done');
      }),
      { numRuns: 100 },
    );
  });
});
