import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { createActor, fromCallback } from 'xstate';
import {
  type PoolDeployment,
  type PoolWorkerInput,
  type WorkerObservation,
  checkDeployment,
  createPoolMachine,
  planScale,
} from '../../src/machines/pool-machine.js';

/**
 * A role's pool (docs: `planScale`'s rules; the worker pool runs this
 * machine): how many workers to start, which idle ones to stop, and the
 * supervisor that spawns and stops exactly those.
 */

const deploymentArb: fc.Arbitrary<PoolDeployment> = fc
  .record({
    minReplicas: fc.integer({ min: 0, max: 4 }),
    extra: fc.integer({ min: 0, max: 4 }),
    idleTimeoutMs: fc.integer({ min: 0, max: 1000 }),
    concurrency: fc.integer({ min: 1, max: 4 }),
  })
  .map(({ minReplicas, extra, idleTimeoutMs, concurrency }) => ({
    minReplicas,
    maxReplicas: Math.max(1, minReplicas + extra),
    idleTimeoutMs,
    concurrency,
  }));

const NOW = 1_000_000;
/** Up to 10 workers, each busy (null) or idle for some age, ids in a shuffled order. */
const workersArb: fc.Arbitrary<WorkerObservation[]> = fc
  .array(fc.option(fc.integer({ min: 0, max: 2000 }), { nil: null }), { maxLength: 10 })
  .map((ages) => ages.map((age, i) => ({ id: `w${i}`, idleSince: age === null ? null : NOW - age })))
  .chain((workers) => fc.shuffledSubarray(workers, { minLength: workers.length }));

describe('planScale', () => {
  test.prop([deploymentArb, workersArb, fc.integer({ min: 0, max: 40 })])(
    'starts one worker per concurrency messages beyond what idle workers take, up to maxReplicas, and at least up to minReplicas',
    (deployment, workers, depth) => {
      const idle = workers.filter((w) => w.idleSince !== null).length;
      const room = deployment.maxReplicas - workers.length;
      const forWork = depth > 0 ? Math.max(0, Math.min(Math.ceil(depth / deployment.concurrency) - idle, room)) : 0;
      const plan = planScale(deployment, { now: NOW, depth, workers });
      expect(plan.start).toBe(Math.max(forWork, deployment.minReplicas - workers.length));
    },
  );

  test.prop([deploymentArb, workersArb, fc.integer({ min: 0, max: 40 })])(
    'stops idle workers only, longest idle first: down to maxReplicas always, down to minReplicas past the timeout when no work waits',
    (deployment, workers, depth) => {
      const plan = planScale(deployment, { now: NOW, depth, workers });
      const byAge = workers
        .filter((w) => w.idleSince !== null)
        .sort((a, b) => (a.idleSince as number) - (b.idleSince as number));
      // The workers stopped are the longest idle ones that may go, in that order.
      const stopped = byAge.filter((w) => plan.stop.includes(w.id));
      expect(plan.stop).toEqual(stopped.map((w) => w.id));
      const over = Math.max(0, workers.length - deployment.maxReplicas);
      const overStops = Math.min(over, byAge.length);
      expect(plan.stop.slice(0, overStops)).toEqual(byAge.slice(0, overStops).map((w) => w.id));
      if (depth > 0) {
        expect(plan.stop).toHaveLength(overStops);
        return;
      }
      // No work: after the surplus, every idle worker past its timeout goes while above minReplicas.
      let left = workers.length - overStops;
      const expected = byAge.slice(0, overStops).map((w) => w.id);
      for (const w of byAge.slice(overStops)) {
        if (left <= deployment.minReplicas) break;
        if (NOW - (w.idleSince as number) >= deployment.idleTimeoutMs) {
          expected.push(w.id);
          left--;
        }
      }
      expect(plan.stop).toEqual(expected);
    },
  );

  it('a worker idle exactly the timeout goes; one idle a moment less stays; a busy one always stays', () => {
    const deployment = { minReplicas: 0, maxReplicas: 5, idleTimeoutMs: 100, concurrency: 1 };
    const workers = [
      { id: 'busy', idleSince: null },
      { id: 'young', idleSince: NOW - 99 },
      { id: 'due', idleSince: NOW - 100 },
      { id: 'old', idleSince: NOW - 500 },
    ];
    expect(planScale(deployment, { now: NOW, depth: 0, workers })).toEqual({ start: 0, stop: ['old', 'due'] });
    // Over maxReplicas after a configuration change: the idle ones go first, oldest first, work or not.
    expect(planScale({ ...deployment, maxReplicas: 2 }, { now: NOW, depth: 3, workers })).toEqual({
      start: 0,
      stop: ['old', 'due'],
    });
    expect(planScale({ ...deployment, maxReplicas: 3 }, { now: NOW, depth: 3, workers })).toEqual({
      start: 0,
      stop: ['old'],
    });
    // Work waiting that idle workers can take starts nobody.
    expect(planScale(deployment, { now: NOW, depth: 3, workers })).toEqual({ start: 0, stop: [] });
    expect(planScale({ ...deployment, concurrency: 2 }, { now: NOW, depth: 7, workers })).toEqual({
      start: 1,
      stop: [],
    });
  });
});

describe('checkDeployment', () => {
  it('names each field out of bounds, with its bound', () => {
    expect(checkDeployment({ minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 })).toEqual([]);
    expect(checkDeployment({ minReplicas: -1, maxReplicas: 0, idleTimeoutMs: -1, concurrency: 0 })).toEqual([
      { field: 'minReplicas', message: 'minReplicas must be an integer >= 0' },
      { field: 'maxReplicas', message: 'maxReplicas must be an integer >= 1' },
      { field: 'idleTimeoutMs', message: 'idleTimeoutMs must be an integer >= 0' },
      { field: 'concurrency', message: 'concurrency must be an integer >= 1' },
    ]);
    expect(checkDeployment({ minReplicas: 0.5, maxReplicas: 1.5, idleTimeoutMs: Number.NaN, concurrency: 2 })).toEqual([
      { field: 'minReplicas', message: 'minReplicas must be an integer >= 0' },
      { field: 'maxReplicas', message: 'maxReplicas must be an integer >= 1' },
      { field: 'idleTimeoutMs', message: 'idleTimeoutMs must be an integer >= 0' },
    ]);
  });

  it('refuses more minReplicas than maxReplicas, but only once each field is valid', () => {
    expect(checkDeployment({ minReplicas: 2, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 })).toEqual([
      { field: 'minReplicas', message: 'minReplicas must not exceed maxReplicas' },
    ]);
    expect(checkDeployment({ minReplicas: 2, maxReplicas: 2, idleTimeoutMs: 0, concurrency: 1 })).toEqual([]);
    expect(checkDeployment({ minReplicas: 3, maxReplicas: 2, idleTimeoutMs: 0, concurrency: 0 })).toEqual([
      { field: 'concurrency', message: 'concurrency must be an integer >= 1' },
    ]);
  });
});

describe('the pool supervisor', () => {
  function pool(deployment: PoolDeployment) {
    const inputs: PoolWorkerInput[] = [];
    const live = new Set<string>();
    const logic = fromCallback<{ type: string }, PoolWorkerInput>(({ input }) => {
      inputs.push(input);
      live.add(input.workerId);
      return () => live.delete(input.workerId);
    });
    const actor = createActor(createPoolMachine(logic), { input: { role: 'coder', deployment } }).start();
    return { actor, inputs, live };
  }

  it('names workers role#n in the order it starts them, and hands each the role and concurrency', () => {
    const { actor, inputs, live } = pool({ minReplicas: 1, maxReplicas: 3, idleTimeoutMs: 0, concurrency: 2 });
    expect(actor.getSnapshot().context).toMatchObject({
      role: 'coder',
      workers: [],
      nextWorker: 1,
      starts: 0,
      stops: 0,
    });
    actor.send({ type: 'OBSERVE', now: 10, depth: 5, workers: [] });
    expect(inputs).toEqual([
      { workerId: 'coder#1', role: 'coder', concurrency: 2 },
      { workerId: 'coder#2', role: 'coder', concurrency: 2 },
      { workerId: 'coder#3', role: 'coder', concurrency: 2 },
    ]);
    expect(actor.getSnapshot().context).toMatchObject({
      workers: ['coder#1', 'coder#2', 'coder#3'],
      nextWorker: 4,
      starts: 3,
      stops: 0,
    });
    // All idle since long enough ago, nothing waiting: down to minReplicas, the longest idle first.
    actor.send({
      type: 'OBSERVE',
      now: 1_000,
      depth: 0,
      workers: [
        { id: 'coder#1', idleSince: 900 },
        { id: 'coder#2', idleSince: 100 },
        { id: 'coder#3', idleSince: 500 },
      ],
    });
    expect(actor.getSnapshot().context).toMatchObject({ workers: ['coder#1'], nextWorker: 4, starts: 3, stops: 2 });
    expect([...live]).toEqual(['coder#1']);
    // A new worker takes the next number: numbers are never reused.
    actor.send({ type: 'OBSERVE', now: 1_001, depth: 4, workers: [{ id: 'coder#1', idleSince: null }] });
    expect(actor.getSnapshot().context.workers).toEqual(['coder#1', 'coder#4', 'coder#5']);
    actor.send({ type: 'STOP' });
    expect(actor.getSnapshot().context).toMatchObject({ workers: [], starts: 5, stops: 5 });
    expect(live.size).toBe(0);
    expect(actor.getSnapshot().value).toBe('stopped');
  });

  it('believes only its own workers: strangers are ignored, and a worker it was not told about counts as busy', () => {
    const { actor, live } = pool({ minReplicas: 0, maxReplicas: 2, idleTimeoutMs: 0, concurrency: 1 });
    actor.send({ type: 'OBSERVE', now: 10, depth: 2, workers: [] });
    expect(actor.getSnapshot().context.workers).toEqual(['coder#1', 'coder#2']);
    // A stranger idle for ages is not stopped (not ours); coder#2 unreported is busy, so it stays.
    actor.send({
      type: 'OBSERVE',
      now: 1_000,
      depth: 0,
      workers: [
        { id: 'stranger', idleSince: 0 },
        { id: 'coder#1', idleSince: 0 },
      ],
    });
    expect(actor.getSnapshot().context).toMatchObject({ workers: ['coder#2'], stops: 1 });
    expect([...live]).toEqual(['coder#2']);
  });

  it('counts a worker it was not told about among its replicas: no start past maxReplicas, stops down to minReplicas', () => {
    const { actor, inputs } = pool({ minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 0, concurrency: 1 });
    actor.send({ type: 'OBSERVE', now: 10, depth: 2, workers: [] });
    expect(actor.getSnapshot().context.workers).toEqual(['coder#1', 'coder#2']);
    // Work waiting, neither worker reported yet: both count (busy), so none is started past maxReplicas.
    actor.send({ type: 'OBSERVE', now: 20, depth: 10, workers: [] });
    expect(inputs.map((i) => i.workerId)).toEqual(['coder#1', 'coder#2']);
    expect(actor.getSnapshot().context.starts).toBe(2);
    // Nothing waiting, coder#1 idle, coder#2 unreported (busy): two replicas, so coder#1 goes, down to minReplicas.
    actor.send({ type: 'OBSERVE', now: 1_000, depth: 0, workers: [{ id: 'coder#1', idleSince: 0 }] });
    expect(actor.getSnapshot().context).toMatchObject({ workers: ['coder#2'], stops: 1 });
  });

  it('follows a new deployment from the next observation on', () => {
    const { actor } = pool({ minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 });
    const warm = { minReplicas: 2, maxReplicas: 4, idleTimeoutMs: 50, concurrency: 3 };
    actor.send({ type: 'CONFIGURE', deployment: warm });
    expect(actor.getSnapshot().context.deployment).toEqual(warm);
    expect(actor.getSnapshot().context.workers).toEqual([]);
    actor.send({ type: 'OBSERVE', now: 10, depth: 0, workers: [] });
    expect(actor.getSnapshot().context).toMatchObject({ workers: ['coder#1', 'coder#2'], starts: 2 });
  });

  it('an observation that changes nothing leaves the context as it was', () => {
    const { actor } = pool({ minReplicas: 1, maxReplicas: 2, idleTimeoutMs: 100, concurrency: 1 });
    actor.send({ type: 'OBSERVE', now: 10, depth: 0, workers: [] });
    const before = actor.getSnapshot().context;
    actor.send({ type: 'OBSERVE', now: 20, depth: 0, workers: [{ id: 'coder#1', idleSince: 15 }] });
    expect(actor.getSnapshot().context).toBe(before);
  });
});
