/**
 * `a2a.message.send` with `blocking: true`: answered once its task settles
 * (it ends, or needs its requester), with the task as that status committed
 * it; at once when the send finds it settled; with the task as it is when
 * the caller's signal aborts; refused when the broker closes first.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { DurableEvent } from '../../src/protocol/events.js';
import type { Task } from '../../src/protocol/task.js';
import { type Harness, harness, refusal, register, settle, text } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** The task id of a task event an agent received. */
function taskIdOf(event: DurableEvent | undefined): string {
  if (event?.method !== 'a2a.task.event') throw new Error(`not a task event: ${JSON.stringify(event)}`);
  return event.params.event.taskId;
}

/** The promise's value once it has settled, or 'pending' after the broker had two turns to answer it. */
async function stateOf<T>(promise: Promise<T>): Promise<T | 'pending'> {
  let value: T | 'pending' = 'pending';
  void promise.then(
    (v) => {
      value = v;
    },
    () => {},
  );
  await settle();
  return value;
}

describe('a blocking send', () => {
  it('is answered once the worker completes the task, with the history its historyLength asks for', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const sent = h.broker.send({ token: req.token, to: 'wrk', message: text('do it'), blocking: true });
    expect(await stateOf(sent)).toBe('pending');
    await settle();
    const taskId = taskIdOf(wrk.received[0]);
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'working' });
    expect(await stateOf(sent)).toBe('pending');
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'completed', message: text('done') });
    const { task } = await sent;
    expect(task.id).toBe(taskId);
    expect(task.status.state).toBe('completed');
    expect(task.history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['do it', 'done']);
    expect(task).toEqual((await h.broker.getTask({ token: req.token, id: taskId })).task);

    const short = h.broker.send({
      token: req.token,
      to: 'wrk',
      message: text('again'),
      blocking: true,
      historyLength: 1,
    });
    await settle();
    const second = taskIdOf(wrk.received.at(-1));
    await h.broker.setStatus({ token: wrk.token, id: second, state: 'completed', message: text('done too') });
    expect((await short).task.history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['done too']);
  });

  it('is answered when the task needs its requester, and a blocking follow-up when it then ends', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const sent = h.broker.send({ token: req.token, to: 'wrk', message: text('book it'), blocking: true });
    await settle();
    const taskId = taskIdOf(wrk.received[0]);
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'input-required', message: text('which day?') });
    expect((await sent).task.status.state).toBe('input-required');

    const followUp = h.broker.send({ token: req.token, taskId, message: text('monday'), blocking: true });
    expect(await stateOf(followUp)).toBe('pending');
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'completed' });
    const { task } = await followUp;
    expect(task.status.state).toBe('completed');
    expect(task.history).toHaveLength(3);
  });

  it('is answered when its worker deregisters (the task fails) or the requester cancels it on another call', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const first = h.broker.send({ token: req.token, to: 'wrk', message: text('one'), blocking: true });
    const second = h.broker.send({ token: req.token, to: 'wrk', message: text('two'), blocking: true });
    await settle();
    const secondId = taskIdOf(wrk.received[1]);
    await h.broker.cancel({ token: req.token, id: secondId });
    expect((await second).task.status.state).toBe('canceled');
    expect(await stateOf(first)).toBe('pending');
    await h.broker.deregister({ token: wrk.token });
    expect((await first).task.status.state).toBe('failed');
  });

  it('is answered at once when it finds its task settled: a retried creation of a task that ended', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('x', 'm-1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed' });
    const retried = await h.broker.send({ token: req.token, to: 'wrk', message: text('x', 'm-1'), blocking: true });
    expect(retried.task.id).toBe(task.id);
    expect(retried.task.status.state).toBe('completed');
  });

  it('refused, is refused as a send that does not block, and creates nothing', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const error = await refusal(h.broker.send({ token: req.token, to: 'nobody', message: text('x'), blocking: true }));
    expect(error.code).toBe('A2A_UNKNOWN_AGENT');
    expect(h.broker.liveTaskCount()).toBe(0);
  });

  it('whose signal aborts is answered with the task as it is then; one whose signal aborted already, at once', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const abort = new AbortController();
    const sent = h.broker.send(
      { token: req.token, to: 'wrk', message: text('slow'), blocking: true },
      { signal: abort.signal },
    );
    await settle();
    const taskId = taskIdOf(wrk.received[0]);
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'working' });
    expect(await stateOf(sent)).toBe('pending');
    abort.abort();
    const { task } = await sent;
    expect(task.status.state).toBe('working');
    await h.broker.setStatus({ token: wrk.token, id: taskId, state: 'completed' });

    // A signal aborted already: answered as a send that does not block.
    const late = await h.broker.send(
      { token: req.token, to: 'wrk', message: text('late'), blocking: true },
      { signal: abort.signal },
    );
    expect(late.task.status.state).toBe('submitted');
  });

  it('whose caller registered again meanwhile (its token spent) is still answered with its task when its signal aborts', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const abort = new AbortController();
    const sent = h.broker.send(
      { token: req.token, to: 'wrk', message: text('x'), blocking: true },
      { signal: abort.signal },
    );
    expect(await stateOf(sent)).toBe('pending');
    await h.broker.deregister({ token: req.token, keepTasks: true });
    await h.broker.register({ name: 'req', contextId: 'ctx-a' });
    abort.abort();
    expect((await sent).task.status.state).toBe('submitted');
  });

  it('still waiting when the broker closes is refused with what to do', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const sent = h.broker.send({ token: req.token, to: 'wrk', message: text('x'), blocking: true });
    expect(await stateOf(sent)).toBe('pending');
    const closing = h.broker.close();
    const error = await refusal(sent);
    expect(error.message).toMatch(/closed before the task of this blocking send settled.*a2a\.tasks\.get/);
    await closing;
    // The task stands: it is there, submitted, once the broker opens again.
    const broker = h.open();
    const again = await broker.register({ name: 'req', contextId: 'ctx-a' });
    const { tasks } = await broker.listTasks({ token: again.token });
    expect(tasks.map((t: Task) => t.status.state)).toEqual(['submitted']);
  });
});
