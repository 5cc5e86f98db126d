import { afterEach, describe, expect, it } from 'vitest';
import { type Worker, NonRetryableError, complete, createWorker, suspend } from '../../src/actors/worker/worker.js';
import { createDispatcher, questionHop } from '../../src/bus/dispatcher.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { type Harness, openHarness } from './helpers.js';

describe('the Temporal-shaped dispatcher', () => {
  let h: Harness;
  const workers: Worker[] = [];
  afterEach(async () => {
    for (const w of workers.splice(0)) await w.stop({ graceMs: 100 });
    await h?.close();
  });

  it('starts hops once, relays replies to suspended hops with signal, and exposes results and queues', async () => {
    h = openHarness();
    const { bus, store } = h;
    const dispatcher = createDispatcher({ bus });
    workers.push(
      createWorker({
        role: 'lead',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: ({ resume }) =>
          resume === undefined
            ? suspend({
                ask: { role: 'expert', message: { parts: [{ kind: 'text', text: '2+2?' }] } },
                state: { asked: true },
              })
            : complete({
                parts: [{ kind: 'text', text: `expert says ${(resume.reply.parts[0] as { text: string }).text}` }],
              }),
      }),
      createWorker({
        role: 'expert',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () => complete({ parts: [{ kind: 'text', text: '4' }] }),
      }),
      createWorker({
        role: 'broken',
        bus,
        contextStore: store,
        pollWaitMs: 20,
        handler: () => {
          throw new NonRetryableError('cannot', { type: 'Refused' });
        },
      }),
    );
    const hop = {
      role: 'lead',
      taskId: 't-1',
      runId: 'run-9',
      hop: 0,
      message: { parts: [{ kind: 'text' as const, text: 'go' }] },
    };
    const first = await dispatcher.start(hop);
    expect(first).toMatchObject({ idempotencyKey: 'run-9/0/1', duplicate: false });
    expect(await dispatcher.start(hop)).toEqual({ ...first, duplicate: true });
    await dispatcher.start({ ...hop, role: 'broken', taskId: 't-2', hop: 1 });

    const controller = new AbortController();
    const seen: ResultEnvelope[] = [];
    let signals = 0;
    for await (const r of dispatcher.results({ consumer: 'coordinator', waitMs: 100, signal: controller.signal })) {
      seen.push(r.result);
      // The test is the Coordinator: it publishes the question a suspension asks.
      const question = questionHop(r.result);
      if (question !== undefined) await dispatcher.start(question);
      if ((await dispatcher.signal(r.result)).resumed) signals++;
      expect(await r.ack()).toBe(true);
      const done = seen.filter((s) => s.outcome !== 'suspended').length;
      if (done >= 3) controller.abort();
    }
    const outcomes = seen.map((s) => `${s.role}:${s.outcome}`).sort();
    expect(outcomes).toEqual(['broken:failed', 'expert:completed', 'lead:completed', 'lead:suspended']);
    expect(signals).toBe(1);
    const lead = seen.find((s) => s.role === 'lead' && s.outcome === 'completed')!;
    expect(lead.parts).toEqual([{ kind: 'text', text: 'expert says 4' }]);
    expect(lead.headers).toMatchObject({ taskId: 't-1', runId: 'run-9', idempotencyKey: 'run-9/0/1' });
    const broken = await dispatcher.query('broken');
    expect(broken).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 1 });
    const [letter] = broken.deadLetterSample;
    expect(letter!.lastError).toMatchObject({ type: 'Refused', message: 'cannot' });
    // The thrown error's stack goes with the failure (where the handler threw).
    expect(letter!.lastError.stack).toMatch(/^NonRetryableError: cannot\n\s+at /);
    // The failed result names its dead letter; purging it (a failure the workflow handled) is once.
    const failed = seen.find((s) => s.role === 'broken' && s.outcome === 'failed')!;
    expect(failed.deadLetter).toBe(letter!.id);
    expect(await dispatcher.purgeDeadLetter('broken', letter!.id)).toBe(true);
    expect(await dispatcher.purgeDeadLetter('broken', letter!.id)).toBe(false);
    expect((await dispatcher.query('broken')).deadLetters).toBe(0);
  });
});
