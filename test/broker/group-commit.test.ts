import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, dumpDatabase, harness, register, settle, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('group commit', () => {
  it('commits the calls of one tick together and answers each', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const before = h.broker.stats();
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) => h.broker.send({ token: req.token, to: 'wrk', message: text(`t${i}`) })),
    );
    const after = h.broker.stats();
    expect(after.commits - before.commits).toBe(1);
    expect(after.calls - before.calls).toBe(50);
    expect(new Set(answers.map((a) => a.task.id)).size).toBe(50);
    await settle();
    expect(wrk.received.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(wrk.received.map((e) => (e.params as { event: { taskId: string } }).event.taskId)).toEqual(
      answers.map((a) => a.task.id),
    );
  });

  it('a refused call inside a batch changes nothing while its neighbours commit', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('x') });
    const results = await Promise.allSettled([
      h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working', message: text('ok', 'a') }),
      h.broker.setStatus({ token: wrk.token, id: task.id, state: 'rejected', message: text('no', 'b') }),
      h.broker.send({ token: req.token, taskId: task.id, message: text('more', 'c') }),
      h.broker.send({ token: req.token, to: 'ghost', message: text('nobody', 'd') }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'rejected']);
    const final = (await h.broker.getTask({ token: req.token, id: task.id })).task;
    expect(final.history.map((m) => m.messageId)).toEqual([task.history[0]?.messageId, 'a', 'c']);
    expect(final.status.state).toBe('working');
    const dump = dumpDatabase(h.path);
    expect(dump.a2a_tasks).toHaveLength(1);
    expect(dump.a2a_messages).toHaveLength(3);
  });

  it('reads observe the writes of earlier calls of the same batch, in call order', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const [before, created, after] = await Promise.all([
      h.broker.listTasks({ token: req.token }),
      h.broker.send({ token: req.token, to: 'wrk', message: text('x') }),
      h.broker.listTasks({ token: req.token }),
    ]);
    expect(before.tasks).toEqual([]);
    expect(after.tasks.map((t) => t.id)).toEqual([created.task.id]);
  });

  it('a registration and a send by name in the same tick', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const [late, sent] = await Promise.all([
      h.broker.register({ name: 'late', contextId: 'ctx-a' }),
      h.broker.send({ token: req.token, to: 'late', message: text('hi') }),
    ]);
    expect(sent.task.agentName).toBe('late');
    const got: number[] = [];
    h.broker.events(late.agentId).subscribe((e) => got.push(e.seq));
    await settle();
    expect(got).toEqual([1]);
  });

  it('two creations with the same messageId in one batch make one task', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const [a, b] = await Promise.all([
      h.broker.send({ token: req.token, to: 'wrk', message: text('x', 'same') }),
      h.broker.send({ token: req.token, to: 'wrk', message: text('x', 'same') }),
    ]);
    expect(a.task.id).toBe(b.task.id);
    await settle();
    expect(wrk.received).toHaveLength(1);
  });

  it('close waits for queued calls', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const pending = h.broker.send({ token: req.token, to: 'wrk', message: text('x') });
    await h.broker.close();
    await expect(pending).resolves.toMatchObject({ task: { status: { state: 'submitted' } } });
    expect(dumpDatabase(h.path).a2a_tasks).toHaveLength(1);
  });
});
