import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, harness, register, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('reads', () => {
  it('a read while nothing is queued is answered from committed state without a commit', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('x') });
    const before = h.broker.stats();
    const got = await h.broker.getTask({ token: req.token, id: task.id });
    const listed = await h.broker.listTasks({ token: req.token });
    const events = await h.broker.eventsSince({ token: req.token, after: 0 });
    expect(got.task).toEqual(task);
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
    expect(events.events).toEqual([]);
    expect(h.broker.stats()).toEqual(before);
  });

  it('a read made behind a queued write waits for it and sees it', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('x') });
    const moved = h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    const read = h.broker.getTask({ token: req.token, id: task.id });
    const created = h.broker.send({ token: req.token, to: 'wrk', message: text('y') });
    const listed = h.broker.listTasks({ token: req.token });
    expect((await read).task.status.state).toBe('working');
    expect((await listed).tasks.map((t) => t.id)).toEqual([task.id, (await created).task.id]);
    await moved;
  });

  it('close() answers a read made just before it, then closes', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('x') });
    const read = h.broker.getTask({ token: req.token, id: task.id });
    const listed = h.broker.listTasks({ token: req.token });
    await h.broker.close();
    expect((await read).task.id).toBe(task.id);
    expect((await listed).tasks).toHaveLength(1);
    h.open();
  });

  it('a refused read is refused whether or not it went through the queue', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await expect(h.broker.getTask({ token: req.token, id: 'nope' })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_TASK',
    });
    const pending = h.broker.send({ token: req.token, to: 'ghost', message: text('x') });
    await expect(h.broker.getTask({ token: 'bad', id: 'nope' })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_TOKEN',
    });
    await expect(pending).rejects.toMatchObject({ code: 'A2A_UNKNOWN_AGENT' });
  });
});
