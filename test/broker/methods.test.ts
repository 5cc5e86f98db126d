import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_EVENTS_LIMIT, PROTOCOL_VERSION, SCHEMA_VERSION } from '../../src/protocol/bounds.js';
import { AgentCardSchema } from '../../src/protocol/agent.js';
import { METHODS } from '../../src/protocol/methods.js';
import { type Harness, dumpDatabase, harness, register, settle, text } from './helpers.js';

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

describe('a2a.agents.register', () => {
  it('mints an agentId, a 256-bit token and a card with defaults', async () => {
    h = harness();
    const r = await h.broker.register({ name: 'alpha', contextId: 'c1' });
    expect(METHODS['a2a.agents.register'].result.parse(r)).toEqual(r);
    expect(Buffer.from(r.token, 'base64url')).toHaveLength(32);
    expect(r.card).toEqual({
      agentId: r.agentId,
      name: 'alpha',
      contextId: 'c1',
      kind: 'subagent',
      description: '',
      skills: [],
    });
  });

  it('keeps kind, description and skills on the card', async () => {
    h = harness();
    const skills = [{ id: 's1', name: 'summarise', tags: ['text'] }];
    const r = await h.broker.register({
      name: 'p',
      contextId: 'c1',
      kind: 'parent',
      description: 'the parent',
      skills,
    });
    expect(AgentCardSchema.parse(r.card)).toEqual({
      agentId: r.agentId,
      name: 'p',
      contextId: 'c1',
      kind: 'parent',
      description: 'the parent',
      skills,
    });
  });

  it('gives each registration its own agentId and token', async () => {
    h = harness();
    const a = await h.broker.register({ name: 'a', contextId: 'c1' });
    const b = await h.broker.register({ name: 'a', contextId: 'c2' });
    expect(a.agentId).not.toBe(b.agentId);
    expect(a.token).not.toBe(b.token);
  });

  it('allows the same name again in the same context after deregistration', async () => {
    h = harness();
    const a = await h.broker.register({ name: 'a', contextId: 'c1' });
    await h.broker.deregister({ token: a.token });
    const b = await h.broker.register({ name: 'a', contextId: 'c1' });
    expect(b.agentId).not.toBe(a.agentId);
  });
});

describe('a2a.agents.deregister', () => {
  it('answers deregistered and invalidates the token', async () => {
    const { req } = await pair();
    expect(await h.broker.deregister({ token: req.token })).toEqual({ deregistered: true });
    await expect(h.broker.listAgents({ token: req.token })).rejects.toMatchObject({ code: 'A2A_UNKNOWN_TOKEN' });
  });

  it('completes the events stream of the registration', async () => {
    const { req } = await pair();
    let completed = false;
    h.broker.events(req.agentId).subscribe({ complete: () => (completed = true) });
    await h.broker.deregister({ token: req.token });
    await settle();
    expect(completed).toBe(true);
  });
});

describe('a2a.agents.list', () => {
  it('lists addressable peers of the same kind in every context, not the caller', async () => {
    const { req, wrk } = await pair();
    await register(h.broker, 'boss', 'ctx-a', 'parent');
    const { agents } = await h.broker.listAgents({ token: req.token });
    expect(agents.map((a) => a.agentId)).toEqual([wrk.agentId]);
  });
});

describe('a2a.message.send', () => {
  it('creates a submitted task addressed to the worker, with a stamped first message', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('do it', 'm1') });
    expect(METHODS['a2a.message.send'].result.parse({ task })).toEqual({ task });
    expect(task).toMatchObject({
      kind: 'task',
      contextId: 'ctx-a',
      agentName: 'wrk',
      agentContextId: 'ctx-b',
      requesterName: 'req',
      status: { state: 'submitted' },
      artifacts: [],
    });
    expect(task.history).toEqual([
      {
        kind: 'message',
        messageId: 'm1',
        role: 'user',
        from: 'req',
        taskId: task.id,
        contextId: 'ctx-a',
        timestamp: expect.any(String),
        parts: [{ kind: 'text', text: 'do it' }],
      },
    ]);
    expect(wrk.agentId).toBeTruthy();
  });

  it('stamps a messageId when none is given and keeps metadata', async () => {
    const { req } = await pair();
    const { task } = await h.broker.send({
      token: req.token,
      to: 'wrk',
      message: { parts: [{ kind: 'data', data: { a: 1 } }], metadata: { trace: 'x' } },
    });
    expect(task.history[0]?.messageId).toEqual(expect.any(String));
    expect(task.history[0]?.metadata).toEqual({ trace: 'x' });
  });

  it('appends a follow-up to an existing task, from either party, with the right role', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    await h.broker.send({ token: wrk.token, taskId: task.id, message: text('a question back') });
    const { task: after } = await h.broker.send({ token: req.token, taskId: task.id, message: text('more') });
    expect(after.history.map((m) => [m.role, m.from])).toEqual([
      ['user', 'req'],
      ['agent', 'wrk'],
      ['user', 'req'],
    ]);
    expect(after.status.state).toBe('submitted');
  });

  it('treats a messageId already in the history as a retry: same task, no second event', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    await h.broker.send({ token: req.token, taskId: task.id, message: text('f', 'f1') });
    const before = dumpDatabase(h.path);
    const again = await h.broker.send({ token: req.token, taskId: task.id, message: text('changed', 'f1') });
    expect(again.task.history).toHaveLength(2);
    expect(dumpDatabase(h.path)).toEqual(before);
    await settle();
    expect(wrk.received).toHaveLength(2);
  });

  it('returns the created task for a creation retried with the same messageId', async () => {
    const { req, wrk } = await pair();
    const first = await h.broker.send({ token: req.token, to: 'wrk', message: text('q', 'c1') });
    const before = dumpDatabase(h.path);
    const again = await h.broker.send({ token: req.token, to: 'wrk', message: text('q', 'c1') });
    expect(again.task).toEqual(first.task);
    expect(dumpDatabase(h.path)).toEqual(before);
    await settle();
    expect(wrk.received).toHaveLength(1);
  });
});

describe('a2a.tasks.get', () => {
  it('returns the task to either party, with the last N history entries', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.send({ token: req.token, taskId: task.id, message: text('2') });
    await h.broker.send({ token: req.token, taskId: task.id, message: text('3') });
    const full = await h.broker.getTask({ token: wrk.token, id: task.id });
    expect(full.task.history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['1', '2', '3']);
    const last2 = await h.broker.getTask({ token: req.token, id: task.id, historyLength: 2 });
    expect(last2.task.history.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['2', '3']);
    const none = await h.broker.getTask({ token: req.token, id: task.id, historyLength: 0 });
    expect(none.task.history).toEqual([]);
  });
});

describe('historyLength on a2a.message.send and a2a.tasks.status', () => {
  it('bounds the history of the answer, and changes nothing of what is stored', async () => {
    const { req, wrk } = await pair();
    const texts = (task: { history: { parts: unknown[] }[] }) =>
      task.history.map((m) => (m.parts[0] as { text: string }).text);
    const created = await h.broker.send({ token: req.token, to: 'wrk', message: text('1'), historyLength: 0 });
    expect(created.task.history).toEqual([]);
    const id = created.task.id;
    const second = await h.broker.send({ token: req.token, taskId: id, message: text('2'), historyLength: 1 });
    expect(texts(second.task)).toEqual(['2']);
    const status = await h.broker.setStatus({
      token: wrk.token,
      id,
      state: 'working',
      message: text('3'),
      historyLength: 2,
    });
    expect(texts(status.task)).toEqual(['2', '3']);
    const full = await h.broker.getTask({ token: req.token, id });
    expect(texts(full.task)).toEqual(['1', '2', '3']);
  });
});

describe('a2a.tasks.list', () => {
  it('lists the tasks the caller is a party to, by role and by state', async () => {
    const { req, wrk } = await pair();
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: wrk.token, to: 'req', message: text('2') })).task;
    await h.broker.setStatus({ token: wrk.token, id: t1.id, state: 'completed' });
    const all = await h.broker.listTasks({ token: req.token });
    expect(all.tasks.map((t) => t.id)).toEqual([t1.id, t2.id]);
    expect((await h.broker.listTasks({ token: req.token, role: 'requester' })).tasks.map((t) => t.id)).toEqual([t1.id]);
    expect((await h.broker.listTasks({ token: req.token, role: 'worker' })).tasks.map((t) => t.id)).toEqual([t2.id]);
    expect((await h.broker.listTasks({ token: req.token, states: ['completed'] })).tasks.map((t) => t.id)).toEqual([
      t1.id,
    ]);
    const stranger = await register(h.broker, 'other', 'ctx-z');
    expect((await h.broker.listTasks({ token: stranger.token })).tasks).toEqual([]);
  });
});

describe('a2a.tasks.status', () => {
  it('moves the task, appends the message to the history and sets status.message', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    const working = await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    expect(working.task.status.state).toBe('working');
    expect(working.task.status.message).toBeUndefined();
    const paused = await h.broker.setStatus({
      token: wrk.token,
      id: task.id,
      state: 'input-required',
      message: text('which one?', 's1'),
    });
    expect(paused.task.status.state).toBe('input-required');
    expect(paused.task.status.message).toMatchObject({ messageId: 's1', role: 'agent', from: 'wrk' });
    expect(paused.task.history.map((m) => m.messageId)).toContain('s1');
  });

  it('lets working report progress (working -> working)', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    const again = await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working', message: text('50%') });
    expect(again.task.status.state).toBe('working');
  });
});

describe('a2a.tasks.artifact', () => {
  it('adds, replaces and appends artifacts', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    const a = await h.broker.addArtifact({
      token: wrk.token,
      id: task.id,
      artifact: { artifactId: 'a1', name: 'out', parts: [{ kind: 'text', text: 'one' }] },
    });
    expect(a.task.artifacts).toEqual([{ artifactId: 'a1', name: 'out', parts: [{ kind: 'text', text: 'one' }] }]);
    const b = await h.broker.addArtifact({
      token: wrk.token,
      id: task.id,
      artifact: { artifactId: 'a1', parts: [{ kind: 'text', text: 'two' }] },
      append: true,
      lastChunk: true,
    });
    expect(b.task.artifacts[0]?.parts).toEqual([
      { kind: 'text', text: 'one' },
      { kind: 'text', text: 'two' },
    ]);
    const c = await h.broker.addArtifact({
      token: wrk.token,
      id: task.id,
      artifact: { artifactId: 'a1', parts: [{ kind: 'text', text: 'fresh' }] },
    });
    expect(c.task.artifacts).toEqual([{ artifactId: 'a1', parts: [{ kind: 'text', text: 'fresh' }] }]);
    const d = await h.broker.addArtifact({
      token: wrk.token,
      id: task.id,
      artifact: { parts: [{ kind: 'data', data: {} }] },
    });
    expect(d.task.artifacts).toHaveLength(2);
    expect(d.task.artifacts[1]?.artifactId).toEqual(expect.any(String));
  });
});

describe('a2a.tasks.cancel', () => {
  it('cancels from either party', async () => {
    const { req, wrk } = await pair();
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    expect((await h.broker.cancel({ token: req.token, id: t1.id })).task.status.state).toBe('canceled');
    expect((await h.broker.cancel({ token: wrk.token, id: t2.id })).task.status.state).toBe('canceled');
    expect(h.broker.liveTaskCount()).toBe(0);
  });
});

describe('a2a.tasks.resubscribe', () => {
  it('returns the task and re-emits its current status to the caller', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    const r = await h.broker.resubscribe({ token: req.token, id: task.id });
    expect(r.task.id).toBe(task.id);
    await settle();
    expect(req.received).toHaveLength(1);
    expect(req.received[0]).toMatchObject({
      seq: 1,
      method: 'a2a.task.event',
      params: {
        recipient: req.agentId,
        event: { kind: 'status-update', status: { state: 'submitted' }, final: false },
      },
    });
    expect(wrk.received).toHaveLength(1);
  });
});

describe('a2a.tasks.pushNotificationConfig', () => {
  it('is null until set, then last write wins, set by either party', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    expect(await h.broker.getPushConfig({ token: req.token, id: task.id })).toEqual({ config: null });
    expect(await h.broker.setPushConfig({ token: req.token, id: task.id, config: { token: 'p1' } })).toEqual({
      config: { token: 'p1' },
    });
    await h.broker.setPushConfig({ token: wrk.token, id: task.id, config: {} });
    expect(await h.broker.getPushConfig({ token: req.token, id: task.id })).toEqual({ config: {} });
  });
});

describe('a2a.events.since', () => {
  it('returns the caller durable events after a seq, in order, limit 100 by default', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('q') });
    for (let i = 0; i < DEFAULT_EVENTS_LIMIT + 5; i++) {
      await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    }
    const page = await h.broker.eventsSince({ token: req.token, after: 0 });
    expect(page.events.map((e) => e.seq)).toEqual(Array.from({ length: DEFAULT_EVENTS_LIMIT }, (_, i) => i + 1));
    const rest = await h.broker.eventsSince({ token: req.token, after: 100, limit: 3 });
    expect(rest.events.map((e) => e.seq)).toEqual([101, 102, 103]);
    await settle();
    expect(page.events).toEqual(req.received.slice(0, DEFAULT_EVENTS_LIMIT));
    expect(METHODS['a2a.events.since'].result.parse(page)).toEqual(page);
  });
});

describe('dispatch', () => {
  it('validates untrusted params and routes to the method', async () => {
    const { req } = await pair();
    const r = (await h.broker.dispatch('a2a.agents.list', { token: req.token, extra: 'ignored' })) as {
      agents: unknown[];
    };
    expect(r.agents).toHaveLength(1);
    await expect(h.broker.dispatch('a2a.nope', {})).rejects.toMatchObject({ code: 'METHOD_NOT_FOUND' });
    await expect(h.broker.dispatch('a2a.agents.list', { token: 5 })).rejects.toMatchObject({ code: 'INVALID_PARAMS' });
    await expect(h.broker.dispatch('app.handshake', { protocolVersion: 10 })).resolves.toMatchObject({
      protocolVersion: PROTOCOL_VERSION,
      schemaVersion: SCHEMA_VERSION,
      capabilities: expect.arrayContaining(['a2a']),
    });
  });
});

describe('close', () => {
  it('is idempotent and refuses later calls', async () => {
    const { req } = await pair();
    await h.broker.close();
    await h.broker.close();
    expect(h.broker.closed).toBe(true);
    await expect(h.broker.listAgents({ token: req.token })).rejects.toMatchObject({ code: 'INTERNAL_ERROR' });
  });
});
