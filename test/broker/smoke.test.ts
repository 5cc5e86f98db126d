import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, harness, register, settle, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('a round trip', () => {
  it('creates, completes and wakes the requester', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('hi') });
    expect(task.status.state).toBe('submitted');
    await settle();
    expect(wrk.received).toHaveLength(1);
    const done = await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text('ok') });
    expect(done.task.status.state).toBe('completed');
    expect(done.task.history).toHaveLength(2);
    await settle();
    expect(req.received.map((e) => e.seq)).toEqual([1]);
    expect(h.broker.liveTaskCount()).toBe(0);
  });
});
