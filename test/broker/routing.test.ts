import { afterEach, describe, expect, it } from 'vitest';
import { DurableEventSchema } from '../../src/protocol/events.js';
import { type Agent, type Harness, harness, register, settle, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

async function pair() {
  h = harness();
  const req = await register(h.broker, 'req', 'ctx-a');
  const wrk = await register(h.broker, 'wrk', 'ctx-b');
  return { req, wrk };
}

/** The events an agent received since the last call, after deliveries settle. */
async function drain(agent: Agent) {
  await settle();
  const out = agent.received.splice(0);
  for (const e of out) DurableEventSchema.parse(e);
  return out;
}

describe('addressing', () => {
  it('resolves an agentId first, then a name in the caller context, then a name unique on the host', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const localHelper = await register(h.broker, 'helper', 'ctx-a');
    const farHelper = await register(h.broker, 'helper', 'ctx-b');
    const unique = await register(h.broker, 'solo', 'ctx-c');
    const byName = await h.broker.send({ token: req.token, to: 'helper', message: text('1') });
    expect(byName.task.agentContextId).toBe('ctx-a');
    const byId = await h.broker.send({ token: req.token, to: farHelper.agentId, message: text('2') });
    expect(byId.task.agentContextId).toBe('ctx-b');
    const byUnique = await h.broker.send({ token: req.token, to: 'solo', message: text('3') });
    expect([byUnique.task.agentName, byUnique.task.agentContextId]).toEqual(['solo', 'ctx-c']);
    expect(localHelper.agentId).not.toBe(unique.agentId);
  });

  it('parents address parents only, in any context', async () => {
    h = harness();
    const p1 = await register(h.broker, 'p1', 'ctx-a', 'parent');
    await register(h.broker, 'p2', 'ctx-b', 'parent');
    await register(h.broker, 'sub', 'ctx-a');
    const { task } = await h.broker.send({ token: p1.token, to: 'p2', message: text('hello') });
    expect(task.agentName).toBe('p2');
    await expect(h.broker.send({ token: p1.token, to: 'sub', message: text('x') })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_AGENT',
    });
    expect((await h.broker.listAgents({ token: p1.token })).agents.map((a) => a.name)).toEqual(['p2']);
  });
});

describe('counterpart routing', () => {
  it('creation addresses the worker with the first message; the requester hears nothing', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('go', 'm1') });
    const events = await drain(wrk);
    expect(events).toEqual([
      {
        seq: 1,
        method: 'a2a.task.event',
        params: {
          recipient: wrk.agentId,
          recipientName: 'wrk',
          contextId: 'ctx-a',
          seq: 1,
          event: {
            kind: 'status-update',
            taskId: task.id,
            contextId: 'ctx-a',
            status: { state: 'submitted', timestamp: task.status.timestamp, message: task.history[0] },
            final: false,
          },
        },
      },
    ]);
    expect(await drain(req)).toEqual([]);
  });

  it('a follow-up wakes the other party: worker reply to requester, requester follow-up to worker', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('go') });
    await drain(wrk);
    const reply = await h.broker.send({ token: wrk.token, taskId: task.id, message: text('which?', 'r1') });
    const toReq = await drain(req);
    expect(toReq).toHaveLength(1);
    expect(toReq[0]?.params).toMatchObject({
      recipient: req.agentId,
      recipientName: 'req',
      event: { kind: 'status-update', status: { state: 'submitted', message: { messageId: 'r1', role: 'agent' } } },
    });
    expect(reply.task.status.message).toBeUndefined();
    await h.broker.send({ token: req.token, taskId: task.id, message: text('that one', 'f1') });
    const toWrk = await drain(wrk);
    expect(toWrk.map((e) => e.params)).toMatchObject([
      { event: { status: { message: { messageId: 'f1', role: 'user' } } } },
    ]);
    expect(await drain(req)).toEqual([]);
  });

  it('only a requester follow-up wakes input-required / auth-required to working', async () => {
    const { req, wrk } = await pair();
    for (const paused of ['input-required', 'auth-required'] as const) {
      const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('go') });
      await h.broker.setStatus({ token: wrk.token, id: task.id, state: paused });
      const own = await h.broker.send({ token: wrk.token, taskId: task.id, message: text('still waiting') });
      expect(own.task.status.state).toBe(paused);
      await drain(wrk);
      const woken = await h.broker.send({ token: req.token, taskId: task.id, message: text('here', `w-${paused}`) });
      expect(woken.task.status).toMatchObject({ state: 'working', message: { messageId: `w-${paused}` } });
      const events = await drain(wrk);
      expect(events.map((e) => e.params)).toMatchObject([
        { event: { status: { state: 'working', message: { messageId: `w-${paused}` } }, final: false } },
      ]);
      // The woken task accepts exactly the moves of `working`.
      await expect(h.broker.setStatus({ token: wrk.token, id: task.id, state: 'rejected' })).rejects.toMatchObject({
        code: 'A2A_INVALID_TRANSITION',
        details: { from: 'working', to: 'rejected' },
      });
    }
  });

  it('tasks.status and tasks.artifact wake the requester; final is set on terminal states', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('go') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    await h.broker.addArtifact({
      token: wrk.token,
      id: task.id,
      artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
      append: true,
      lastChunk: true,
    });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text('done') });
    const events = await drain(req);
    expect(events.map((e) => [e.seq, e.method])).toEqual([
      [1, 'a2a.task.event'],
      [2, 'a2a.task.event'],
      [3, 'a2a.task.event'],
    ]);
    expect(events.map((e) => e.params)).toMatchObject([
      { event: { kind: 'status-update', status: { state: 'working' }, final: false } },
      {
        event: {
          kind: 'artifact-update',
          taskId: task.id,
          contextId: 'ctx-a',
          artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
          append: true,
          lastChunk: true,
        },
      },
      { event: { kind: 'status-update', status: { state: 'completed', message: { from: 'wrk' } }, final: true } },
    ]);
    expect(await drain(wrk)).toHaveLength(1);
  });

  it('tasks.cancel wakes the counterpart of the caller', async () => {
    const { req, wrk } = await pair();
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    await drain(wrk);
    await h.broker.cancel({ token: req.token, id: t1.id });
    expect((await drain(wrk)).map((e) => e.params)).toMatchObject([
      { event: { taskId: t1.id, status: { state: 'canceled' }, final: true } },
    ]);
    expect(await drain(req)).toEqual([]);
    await h.broker.cancel({ token: wrk.token, id: t2.id });
    expect((await drain(req)).map((e) => e.params)).toMatchObject([
      { event: { taskId: t2.id, status: { state: 'canceled' }, final: true } },
    ]);
    expect(await drain(wrk)).toEqual([]);
  });

  it('tasks.resubscribe addresses the caller itself, with final on a terminal task', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'failed' });
    await drain(req);
    await drain(wrk);
    await h.broker.resubscribe({ token: wrk.token, id: task.id });
    expect((await drain(wrk)).map((e) => e.params)).toMatchObject([
      { recipient: wrk.agentId, event: { status: { state: 'failed' }, final: true } },
    ]);
    expect(await drain(req)).toEqual([]);
  });
});

describe('push on terminal', () => {
  it('goes to the counterpart of the caller, after the event, with the config token and the status', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setPushConfig({ token: req.token, id: task.id, config: { token: 'hook-1' } });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    expect((await drain(req)).map((e) => e.method)).toEqual(['a2a.task.event']);
    const done = await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed' });
    const events = await drain(req);
    expect(events.map((e) => e.method)).toEqual(['a2a.task.event', 'a2a.push']);
    expect(events[1]).toEqual({
      seq: 3,
      method: 'a2a.push',
      params: {
        recipient: req.agentId,
        contextId: 'ctx-a',
        taskId: task.id,
        token: 'hook-1',
        status: done.task.status,
        seq: 3,
      },
    });
  });

  it('on cancel by the requester goes to the worker; no config, no push', async () => {
    const { req, wrk } = await pair();
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    await h.broker.setPushConfig({ token: wrk.token, id: t1.id, config: {} });
    await drain(wrk);
    await h.broker.cancel({ token: req.token, id: t1.id });
    const events = await drain(wrk);
    expect(events.map((e) => e.method)).toEqual(['a2a.task.event', 'a2a.push']);
    expect(events[1]?.params).not.toHaveProperty('token');
    await h.broker.cancel({ token: req.token, id: t2.id });
    expect((await drain(wrk)).map((e) => e.method)).toEqual(['a2a.task.event']);
  });
});

describe('the broker own moves on deregistration', () => {
  it('a worker leaving fails its open tasks and wakes each requester (event and push)', async () => {
    const { req, wrk } = await pair();
    const open = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const done = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    await h.broker.setStatus({ token: wrk.token, id: done.id, state: 'completed' });
    await h.broker.setPushConfig({ token: req.token, id: open.id, config: { token: 'pt' } });
    await drain(req);
    await h.broker.deregister({ token: wrk.token });
    const events = await drain(req);
    expect(events.map((e) => [e.method, e.method === 'a2a.push' ? e.params.status : e.params.event])).toMatchObject([
      ['a2a.task.event', { kind: 'status-update', status: { state: 'failed' }, final: true }],
      ['a2a.push', { state: 'failed' }],
    ]);
    expect((await h.broker.getTask({ token: req.token, id: open.id })).task.status.state).toBe('failed');
    expect((await h.broker.getTask({ token: req.token, id: done.id })).task.status.state).toBe('completed');
  });

  it('a requester leaving cancels its open tasks and wakes each worker', async () => {
    const { req, wrk } = await pair();
    const open = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    await h.broker.setStatus({ token: wrk.token, id: open.id, state: 'input-required' });
    await drain(wrk);
    await h.broker.deregister({ token: req.token });
    expect((await drain(wrk)).map((e) => e.params)).toMatchObject([
      { recipient: wrk.agentId, event: { taskId: open.id, status: { state: 'canceled' }, final: true } },
    ]);
    expect((await h.broker.getTask({ token: wrk.token, id: open.id })).task.status.state).toBe('canceled');
    expect(h.broker.liveTaskCount()).toBe(0);
  });

  it('with keepTasks, a requester and a worker leaving keep their open tasks for their next registration', async () => {
    const { req, wrk } = await pair();
    const asked = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const served = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    await drain(wrk);
    await drain(req);
    await h.broker.deregister({ token: req.token, keepTasks: true });
    // The worker hears nothing of it, and its task is still its own to end.
    expect(await drain(wrk)).toEqual([]);
    await h.broker.setStatus({ token: wrk.token, id: asked.id, state: 'completed' });
    await h.broker.deregister({ token: wrk.token, keepTasks: true });
    expect(h.broker.liveTaskCount()).toBe(1);
    // The requester is back under a new token: its task's end waited in the log, its other task is open.
    const req2 = await register(h.broker, 'req', 'ctx-a');
    const log = await h.broker.eventsSince({ token: req2.token, after: 0 });
    expect(log.events.map((e) => e.params)).toContainEqual(
      expect.objectContaining({
        event: expect.objectContaining({ taskId: asked.id, status: expect.objectContaining({ state: 'completed' }) }),
      }),
    );
    expect((await h.broker.getTask({ token: req2.token, id: served.id })).task.status.state).toBe('submitted');
    // The old tokens are dead either way.
    await expect(h.broker.getTask({ token: req.token, id: served.id })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_TOKEN',
    });
    const wrk2 = await register(h.broker, 'wrk', 'ctx-b');
    await h.broker.setStatus({ token: wrk2.token, id: served.id, state: 'completed' });
    expect((await h.broker.getTask({ token: req2.token, id: served.id })).task.status.state).toBe('completed');
  });
});

describe('the durable log', () => {
  it('keeps events for an absent party in the log, with its last agentId as recipient', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setPushConfig({ token: req.token, id: task.id, config: { token: 'pt' } });
    // After a restart nobody is registered; only the worker comes back.
    const b = await h.reopen();
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await b.setStatus({ token: wrk2.token, id: task.id, state: 'completed' });
    const req2 = await register(b, 'req', 'ctx-a');
    const log = await b.eventsSince({ token: req2.token, after: 0 });
    expect(log.events.map((e) => [e.seq, e.method, e.params.recipient])).toEqual([
      [1, 'a2a.task.event', req.agentId],
      [2, 'a2a.push', req.agentId],
    ]);
    await settle();
    expect(req2.received).toEqual([]);
    expect(wrk.received).toHaveLength(1);
  });

  it('a deregistration wakes the remaining party even when it is away', async () => {
    const { req } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    const b = await h.reopen();
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await b.deregister({ token: wrk2.token });
    const req2 = await register(b, 'req', 'ctx-a');
    const log = await b.eventsSince({ token: req2.token, after: 0 });
    expect(log.events.map((e) => e.params)).toMatchObject([
      { event: { taskId: task.id, status: { state: 'failed' } } },
    ]);
  });

  it('seq counts per party, starts at 1 and is never reused across re-registrations and restarts', async () => {
    const { req, wrk } = await pair();
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    await h.broker.setStatus({ token: wrk.token, id: t1.id, state: 'working' });
    await h.broker.deregister({ token: req.token });
    let req2 = await register(h.broker, 'req', 'ctx-a');
    await h.broker.resubscribe({ token: req2.token, id: t1.id });
    const b = await h.reopen();
    req2 = await register(b, 'req', 'ctx-a');
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    const t2 = (await b.send({ token: req2.token, to: 'wrk', message: text('2') })).task;
    await b.setStatus({ token: wrk2.token, id: t2.id, state: 'completed' });
    await settle();
    const log = await b.eventsSince({ token: req2.token, after: 0 });
    expect(log.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(req2.received.map((e) => e.seq)).toEqual([3]);
    const wlog = await b.eventsSince({ token: wrk2.token, after: 0 });
    expect(wlog.events.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(wlog.events.map((e) => e.params.recipient)).toEqual([wrk.agentId, wrk.agentId, wrk2.agentId]);
  });
});

describe('live delivery', () => {
  it('delivers events committed before the first subscription to the first subscriber', async () => {
    const { req } = await pair();
    const late = await h.broker.register({ name: 'late', contextId: 'ctx-c' });
    await h.broker.send({ token: req.token, to: 'late', message: text('early') });
    await settle();
    const got: number[] = [];
    h.broker.events(late.agentId).subscribe((e) => got.push(e.seq));
    expect(got).toEqual([1]);
  });

  it('refuses events() for an agentId that is not live', async () => {
    await pair();
    let error: unknown;
    h.broker.events('nobody').subscribe({ error: (e) => (error = e) });
    expect(error).toMatchObject({ code: 'A2A_UNKNOWN_AGENT' });
  });
});
