import { afterEach, describe, expect, it } from 'vitest';
import {
  NonRetryableError,
  type Worker,
  complete,
  createWorker,
  derivedKey,
  suspend,
  WorkerError,
} from '../../src/actors/worker/worker.js';
import type { SqliteQueueOptions } from '../../src/bus/sqlite/queue.js';
import { type Harness, hop, openHarness, sleep, takeResults, until } from './helpers.js';

const usage = { inputTokens: 12, outputTokens: 34, costUsd: 0.0021, model: 'test-model' };

describe('worker harness', () => {
  let h: Harness;
  const workers: Worker[] = [];
  function open(options: Partial<SqliteQueueOptions> = {}) {
    h = openHarness(options);
    return h;
  }
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop({ graceMs: 100 });
    await h?.close();
  });

  it('hydrates the run context, calls the handler and publishes its result', async () => {
    const { bus, store } = open();
    await store.updateMemory('run-1', { goal: 'ship it' });
    const seen: unknown[] = [];
    workers.push(
      createWorker({
        role: 'writer',
        bus,
        contextStore: store,
        pollWaitMs: 50,
        handler: ({ context, message, headers }) => {
          seen.push({ outputs: context.outputs.map((o) => o.parts), memory: context.memory, hop: headers.hop });
          const text = message.parts[0]?.kind === 'text' ? message.parts[0].text : '';
          return complete({
            parts: [{ kind: 'text', text: `done: ${text}` }],
            artifacts: [{ artifactId: `a-${headers.hop}`, parts: [{ kind: 'data', data: { hop: headers.hop } }] }],
            usage,
            memory: { [`hop${headers.hop}`]: 'ok' },
          });
        },
      }),
    );
    await bus.publish('writer', hop(1, { hop: 0 }), { idempotencyKey: 'hop-1' });
    const [first] = await takeResults(bus, 1);
    expect(first).toMatchObject({
      kind: 'result',
      role: 'writer',
      outcome: 'completed',
      parts: [{ kind: 'text', text: 'done: do 1' }],
      usage,
      headers: { taskId: 'task-1', hop: 0 },
    });
    expect(first!.artifacts).toHaveLength(1);
    await bus.publish('writer', hop(2, { hop: 1 }), { idempotencyKey: 'hop-2' });
    await takeResults(bus, 1);
    expect(seen).toEqual([
      { outputs: [], memory: { goal: 'ship it' }, hop: 0 },
      { outputs: [[{ kind: 'text', text: 'done: do 1' }]], memory: { goal: 'ship it', hop0: 'ok' }, hop: 1 },
    ]);
    const ctx = await store.hydrate('run-1');
    expect(ctx.outputs.map((o) => [o.hop, o.role, o.usage?.model])).toEqual([
      [0, 'writer', 'test-model'],
      [1, 'writer', 'test-model'],
    ]);
    expect(await bus.stats('writer')).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
  });

  it('never re-runs a hop that completed: a redelivery re-publishes its result', async () => {
    const { bus, store } = open();
    let calls = 0;
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 50,
        handler: () => {
          calls++;
          return { parts: [{ kind: 'text', text: `call ${calls}` }] };
        },
      }),
    );
    await bus.publish('r', hop(1), { idempotencyKey: 'first-publish' });
    const [r1] = await takeResults(bus, 1);
    // The same hop (same headers.idempotencyKey) delivered again, e.g. after a lost ack.
    await bus.publish('r', hop(1), { idempotencyKey: 'second-publish' });
    await until(async () => (await bus.stats('r')).depth === 0 && (await bus.stats('r')).inFlight === 0);
    expect(calls).toBe(1);
    expect(r1!.parts).toEqual([{ kind: 'text', text: 'call 1' }]);
    // The re-published result is a duplicate of the first: the results queue holds nothing new.
    expect(await takeResults(bus, 1, 300)).toEqual([]);
  });

  it('retries a retryable failure with backoff and dead-letters a non-retryable one with a failed result', async () => {
    const { bus, store } = open({
      defaults: {
        retryPolicy: {
          initialInterval: 20,
          backoffCoefficient: 2,
          maximumInterval: 100,
          maximumAttempts: 5,
          nonRetryableErrorTypes: ['PolicyViolation'],
        },
      },
    });
    const attempts = new Map<string, number>();
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: ({ headers, delivery }) => {
          attempts.set(headers.taskId, delivery.deliveries);
          if (headers.taskId === 'task-flaky' && delivery.deliveries < 3) throw new Error('transient');
          if (headers.taskId === 'task-fatal') throw new NonRetryableError('bad input', { type: 'BadInput' });
          if (headers.taskId === 'task-typed') {
            const e = new Error('forbidden');
            e.name = 'PolicyViolation';
            throw e;
          }
          return { parts: [{ kind: 'text', text: 'ok' }] };
        },
      }),
    );
    await bus.publish('r', hop('flaky'), { idempotencyKey: 'a' });
    await bus.publish('r', hop('fatal'), { idempotencyKey: 'b' });
    await bus.publish('r', hop('typed'), { idempotencyKey: 'c' });
    const results = await takeResults(bus, 3);
    const byTask = Object.fromEntries(results.map((r) => [r.headers.taskId, r]));
    expect(byTask['task-flaky']).toMatchObject({ outcome: 'completed' });
    expect(attempts.get('task-flaky')).toBe(3);
    expect(byTask['task-fatal']).toMatchObject({
      outcome: 'failed',
      error: { type: 'BadInput', message: 'bad input' },
      deliveries: 1,
    });
    expect(byTask['task-typed']).toMatchObject({ outcome: 'failed', error: { type: 'PolicyViolation' } });
    const dead = await bus.deadLetters.list('r');
    expect(dead.map((d) => d.lastError.type).sort()).toEqual(['BadInput', 'PolicyViolation']);
  });

  it('applies an effect once across a failed delivery and its retry', async () => {
    const { bus, store } = open({
      defaults: {
        retryPolicy: {
          initialInterval: 10,
          backoffCoefficient: 1,
          maximumInterval: 10,
          maximumAttempts: 3,
          nonRetryableErrorTypes: [],
        },
      },
    });
    h.db.exec('CREATE TABLE charges (hop TEXT, amount INTEGER)');
    let external = 0;
    workers.push(
      createWorker({
        role: 'pay',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: async ({ effects, delivery, headers }) => {
          effects.atomic('charge', (db) =>
            db.prepare('INSERT INTO charges (hop, amount) VALUES (?, 5)').run(headers.idempotencyKey),
          );
          const receipt = await effects.once('notify', () => {
            external++;
            return { receipt: effects.key('notify') };
          });
          if (delivery.deliveries === 1) throw new Error('crash after the effects');
          return { parts: [{ kind: 'data', data: receipt }] };
        },
      }),
    );
    await bus.publish('pay', hop(1), { idempotencyKey: 'p' });
    const [result] = await takeResults(bus, 1);
    expect(result).toMatchObject({
      outcome: 'completed',
      parts: [{ kind: 'data', data: { receipt: 'hop-1/notify' } }],
    });
    expect(h.db.prepare('SELECT count(*) AS n FROM charges').get()).toEqual({ n: 1 });
    expect(external).toBe(1);
  });

  it('heartbeats keep a long hop leased: no second delivery', async () => {
    const { bus, store } = open();
    let calls = 0;
    const opts = {
      role: 'slow',
      bus,
      contextStore: store,
      visibilityTimeoutMs: 300,
      heartbeatIntervalMs: 50,
      pollWaitMs: 20,
      handler: async () => {
        calls++;
        await sleep(900);
        return { parts: [{ kind: 'text' as const, text: 'slow done' }] };
      },
    };
    workers.push(createWorker(opts), createWorker(opts));
    await bus.publish('slow', hop(1), { idempotencyKey: 's' });
    const [r] = await takeResults(bus, 1);
    expect(r!.outcome).toBe('completed');
    expect(calls).toBe(1);
  });

  it('a worker that stalls past its lease never completes the hop a second time', async () => {
    const { bus, store } = open();
    h.db.exec('CREATE TABLE applied (worker TEXT)');
    let calls = 0;
    const make = (name: string, stallMs: number) =>
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        consumer: name,
        visibilityTimeoutMs: 100,
        // No heartbeat within the lease: the stalled worker loses it.
        heartbeatIntervalMs: 10_000,
        pollWaitMs: 20,
        handler: async ({ effects }) => {
          calls++;
          effects.atomic('apply', (db) => db.prepare('INSERT INTO applied (worker) VALUES (?)').run(name));
          await sleep(stallMs);
          return { parts: [{ kind: 'text', text: `by ${name}` }] };
        },
      });
    const zombie = make('zombie', 400);
    workers.push(zombie);
    await bus.publish('r', hop(1), { idempotencyKey: 'z' });
    await until(() => zombie.inFlight === 1);
    workers.push(make('healthy', 0));
    const results = await takeResults(bus, 2, 1500);
    await until(() => zombie.inFlight === 0, 3000, 'the zombie to finish');
    expect(calls).toBe(2);
    expect(results).toHaveLength(1);
    expect(results[0]!.parts).toEqual([{ kind: 'text', text: 'by healthy' }]);
    expect(h.db.prepare('SELECT worker FROM applied').all()).toEqual([{ worker: 'zombie' }]);
    expect((await store.hydrate('run-1')).outputs).toHaveLength(1);
    expect(await bus.stats('r')).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
  });

  it('stop() lets an in-flight hop finish within the grace period', async () => {
    const { bus, store } = open();
    const w = createWorker({
      role: 'r',
      bus,
      contextStore: store,
      pollWaitMs: 20,
      handler: async () => {
        await sleep(150);
        return { parts: [{ kind: 'text', text: 'finished' }] };
      },
    });
    await bus.publish('r', hop(1), { idempotencyKey: 'x' });
    await until(() => w.inFlight === 1);
    await w.stop({ graceMs: 2000 });
    expect(w.inFlight).toBe(0);
    expect(await bus.stats('r')).toMatchObject({ depth: 0, inFlight: 0 });
    expect((await takeResults(bus, 1))[0]!.parts).toEqual([{ kind: 'text', text: 'finished' }]);
  });

  it('stop() releases the lease of a hop that outlives the grace period, for another worker', async () => {
    const { bus, store } = open();
    let firstSignal: AbortSignal | undefined;
    const slow = createWorker({
      role: 'r',
      bus,
      contextStore: store,
      pollWaitMs: 20,
      visibilityTimeoutMs: 60_000,
      handler: async ({ signal }) => {
        firstSignal = signal;
        await new Promise((resolve) => signal.addEventListener('abort', resolve));
        throw new Error('aborted');
      },
    });
    await bus.publish('r', hop(1), { idempotencyKey: 'x' });
    await until(() => slow.inFlight === 1);
    await slow.stop({ graceMs: 50 });
    expect(firstSignal?.aborted).toBe(true);
    expect(await bus.stats('r')).toMatchObject({ depth: 1, inFlight: 0 });
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: ({ delivery }) => ({ parts: [{ kind: 'text', text: `delivery ${delivery.deliveries}` }] }),
      }),
    );
    const [r] = await takeResults(bus, 1);
    expect(r!.parts).toEqual([{ kind: 'text', text: 'delivery 2' }]);
  });

  it('runs up to `concurrency` hops at once', async () => {
    const { bus, store } = open();
    let running = 0;
    let peak = 0;
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        concurrency: 4,
        pollWaitMs: 20,
        handler: async () => {
          running++;
          peak = Math.max(peak, running);
          await sleep(40);
          running--;
          return { parts: [{ kind: 'text', text: 'ok' }] };
        },
      }),
    );
    await bus.publishMany(
      Array.from({ length: 12 }, (_, i) => ({ role: 'r', envelope: hop(i), idempotencyKey: `k${i}` })),
    );
    expect(await takeResults(bus, 12)).toHaveLength(12);
    expect(peak).toBe(4);
  });

  it('dead-letters an invalid handler result without publishing anything', async () => {
    const { bus, store } = open();
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () => ({ parts: [{ kind: 'text', text: 42 }] }) as never,
      }),
    );
    await bus.publish('r', hop(1), { idempotencyKey: 'x' });
    const [r] = await takeResults(bus, 1);
    expect(r).toMatchObject({ outcome: 'failed', error: { type: 'InvalidResult' } });
    expect(await store.completion('hop-1')).toBeUndefined();
  });

  it('refuses invalid options at once', () => {
    const { bus, store } = open();
    const base = { bus, contextStore: store, handler: () => ({}) };
    expect(() => createWorker({ ...base, role: 'has space' })).toThrow(WorkerError);
    expect(() => createWorker({ ...base, role: 'r', concurrency: 0 })).toThrow(/concurrency/);
    expect(() => createWorker({ ...base, role: 'r', visibilityTimeoutMs: -1 })).toThrow(/visibilityTimeoutMs/);
    expect(() => createWorker({ ...base, role: 'r', resultsRole: '' })).toThrow(/resultsRole/);
  });

  it('keeps derived keys within bounds for a hop with a 256-character key', async () => {
    const { bus, store } = open();
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () => ({ parts: [{ kind: 'text', text: 'long key ok' }] }),
      }),
    );
    const key = 'k'.repeat(256);
    await bus.publish('r', hop(1, { idempotencyKey: key }), { idempotencyKey: key });
    const [r] = await takeResults(bus, 1);
    expect(r).toMatchObject({ outcome: 'completed', headers: { idempotencyKey: key } });
    expect(derivedKey(key, 'result').length).toBeLessThanOrEqual(256);
    expect(derivedKey(key, 'result')).toBe(derivedKey(key, 'result'));
    expect(derivedKey('short', 'result')).toBe('short:result');
  });

  it('dead-letters at once a suspension that asks an invalid role, publishing nothing', async () => {
    const { bus, store } = open();
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () =>
          suspend({ ask: { role: 'not a role', message: { parts: [{ kind: 'text', text: 'q' }] } }, state: {} }),
      }),
    );
    await bus.publish('r', hop(1), { idempotencyKey: 'x' });
    const [r] = await takeResults(bus, 1);
    expect(r).toMatchObject({ outcome: 'failed', error: { type: 'InvalidResult' }, deliveries: 1 });
    expect(await store.completion('hop-1')).toBeUndefined();
  });

  it('dead-letters at once a result whose memory or state cannot be stored', async () => {
    const { bus, store } = open();
    let calls = 0;
    workers.push(
      createWorker({
        role: 'r',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () => {
          calls++;
          return { parts: [{ kind: 'text', text: 'x' }], memory: { big: 10n } };
        },
      }),
    );
    await bus.publish('r', hop(1), { idempotencyKey: 'x' });
    const [r] = await takeResults(bus, 1);
    expect(r).toMatchObject({ outcome: 'failed', error: { type: 'InvalidResult' }, deliveries: 1 });
    expect(calls).toBe(1);
    expect((await store.hydrate('run-1')).memory).toEqual({});
  });
});
