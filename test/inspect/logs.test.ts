import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createPool } from '../../src/actors/worker/pool.js';
import { complete, createWorker } from '../../src/actors/worker/worker.js';
import type { WorkQueue } from '../../src/bus/work-queue.js';
import { callLogFields, hopLogFields } from '../../src/log/log-fields.js';
import { createLogger } from '../../src/log/logger.js';
import { type Harness, hop, openHarness, takeResults, until } from '../worker/helpers.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function memoryLog(): { lines: () => Record<string, unknown>[]; raw: () => string; stream: Writable } {
  let text = '';
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += chunk.toString();
      done();
    },
  });
  return {
    stream,
    raw: () => text,
    lines: () =>
      text
        .trim()
        .split('\n')
        .filter((l) => l !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

describe('log fields', () => {
  it('a broker call: task id, state and payload size, never the token or the body', () => {
    const fields = callLogFields(
      'a2a.tasks.status',
      { token: 'secret-token', id: 't1', state: 'completed', message: { parts: [{ kind: 'text', text: 'body' }] } },
      { task: { id: 't1', contextId: 'c', status: { state: 'completed' } } },
    );
    expect(fields).toEqual({
      method: 'a2a.tasks.status',
      taskId: 't1',
      contextId: 'c',
      state: 'completed',
      partCount: 1,
      payloadChars: JSON.stringify({ parts: [{ kind: 'text', text: 'body' }] }).length,
    });
    expect(JSON.stringify(fields)).not.toContain('secret-token');
    expect(JSON.stringify(fields)).not.toContain('body"');
    expect(callLogFields('a2a.agents.register', { name: 'w', contextId: 'c' }, { agentId: 'a1', token: 'x' })).toEqual({
      method: 'a2a.agents.register',
      contextId: 'c',
      agentId: 'a1',
    });
    expect(callLogFields('a2a.tasks.get', null)).toEqual({ method: 'a2a.tasks.get' });
  });

  it('a hop: delivery, task id, work item, hop and attempt', () => {
    expect(hopLogFields({ id: '7', envelope: hop(1, { runId: 'item-9', hop: 3, attempt: 2 }) })).toEqual({
      delivery: '7',
      taskId: 'task-1',
      itemId: 'item-9',
      hop: 3,
      attempt: 2,
    });
  });

  it("a worker's lines carry role, taskId, itemId and hop, and no payload text", async () => {
    harness = openHarness();
    const log = memoryLog();
    const logger = createLogger({ level: 'trace', destination: log.stream });
    const worker = createWorker({
      role: 'coder',
      bus: harness.bus,
      contextStore: harness.store,
      logger,
      pollWaitMs: 20,
      handler: ({ message }) => {
        if (message.parts.some((p) => p.kind === 'text' && p.text.includes('fail'))) {
          throw new Error('refused');
        }
        return complete({ parts: [{ kind: 'text', text: 'the-secret-result-body' }] });
      },
    });
    await harness.bus.publish('coder', hop(1, { runId: 'item-1', hop: 2 }, 'the-secret-work-body'), {
      idempotencyKey: 'k1',
    });
    await harness.bus.publish('coder', hop(2, { runId: 'item-2', hop: 0 }, 'please fail'), {
      idempotencyKey: 'k2',
      retryPolicy: { maximumAttempts: 1 },
    });
    await takeResults(harness.bus, 2);
    await worker.stop();

    const lines = log.lines();
    const received = lines.find((l) => l.msg === 'hop received' && l.taskId === 'task-1');
    expect(received).toMatchObject({
      role: 'coder',
      taskId: 'task-1',
      itemId: 'item-1',
      hop: 2,
      delivery: expect.any(String),
    });
    expect(lines.find((l) => l.msg === 'hop done' && l.taskId === 'task-1')).toMatchObject({
      itemId: 'item-1',
      hop: 2,
    });
    const failed = lines.find((l) => l.msg === 'hop failed');
    expect(failed).toMatchObject({ role: 'coder', taskId: 'task-2', itemId: 'item-2', hop: 0, errorType: 'Error' });
    for (const secret of ['the-secret-work-body', 'the-secret-result-body', 'please fail']) {
      expect(log.raw()).not.toContain(secret);
    }
  });

  it("a pool's lines carry its role, as its workers' lines do (and pool, worker where they apply)", async () => {
    harness = openHarness();
    const log = memoryLog();
    const logger = createLogger({ level: 'trace', destination: log.stream });
    // The queue's stats fail once: the supervisor's warning is a line about the role's pool too.
    let failStats = true;
    const real = harness.bus;
    const bus = new Proxy(real, {
      get(target, key) {
        if (key === 'stats' && failStats) {
          failStats = false;
          return () => Promise.reject(new Error('stats unavailable'));
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? value.bind(target) : value;
      },
    }) as WorkQueue;
    const pool = createPool({
      role: 'coder',
      bus,
      contextStore: harness.store,
      deployment: { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 30, concurrency: 1 },
      handler: () => complete({ parts: [{ kind: 'text', text: 'the-secret-result-body' }] }),
      observeIntervalMs: 20,
      pollWaitMs: 20,
      consumerName: (id) => `${id}-p1`,
      logger,
    });
    try {
      await harness.bus.publish('coder', hop(1, { runId: 'item-1', hop: 1 }, 'the-secret-work-body'), {
        idempotencyKey: 'k1',
      });
      await takeResults(harness.bus, 1);
      // Scale to zero: the idle worker is stopped.
      await until(() => pool.stops === 1, 5000);
    } finally {
      await pool.stop();
    }

    const lines = log.lines();
    const messages = lines.map((l) => l.msg);
    for (const msg of ['could not observe the queue', 'worker started', 'hop received', 'hop done', 'worker stopped']) {
      expect(messages).toContain(msg);
    }
    // Every line here concerns the role's pool or its worker: each names the role.
    expect(lines.filter((l) => l.role !== 'coder')).toEqual([]);
    expect(lines.find((l) => l.msg === 'could not observe the queue')).toMatchObject({ role: 'coder', pool: 'coder' });
    for (const msg of ['worker started', 'worker stopped']) {
      expect(lines.find((l) => l.msg === msg)).toMatchObject({ role: 'coder', pool: 'coder', worker: 'coder#1-p1' });
    }
    expect(lines.find((l) => l.msg === 'hop done')).toMatchObject({
      role: 'coder',
      worker: 'coder#1-p1',
      itemId: 'item-1',
      hop: 1,
    });
    expect(log.raw()).not.toContain('the-secret-work-body');
    expect(log.raw()).not.toContain('the-secret-result-body');
  });
});
