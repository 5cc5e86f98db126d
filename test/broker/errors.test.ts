import { afterEach, describe, expect, it } from 'vitest';
import {
  A2A_MAX_FILE_BYTES,
  A2A_MAX_SENDS_PER_RUN,
  A2A_MAX_TASK_HISTORY,
  A2A_MAX_TASKS_PER_CONTEXT,
  A2A_MAX_TEXT_CHARS,
} from '../../src/protocol/bounds.js';
import { A2A_ERROR, toJsonRpcError } from '../../src/transport/jsonrpc-errors.js';
import type { TaskState } from '../../src/protocol/task.js';
import { type Agent, type Harness, expectRefusedUnchanged, harness, register, text } from './helpers.js';

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

async function taskIn(req: Agent, wrk: Agent, state: TaskState): Promise<string> {
  const { task } = await h.broker.send({ token: req.token, to: wrk.agentId, message: text('q') });
  if (state === 'canceled') await h.broker.cancel({ token: req.token, id: task.id });
  else if (state !== 'submitted') await h.broker.setStatus({ token: wrk.token, id: task.id, state });
  return task.id;
}

describe('JSON-RPC -32602', () => {
  it('a duplicate live name in one context', async () => {
    const { req } = await pair();
    await expectRefusedUnchanged(h, () => h.broker.register({ name: req.name, contextId: req.contextId }), {
      code: 'INVALID_PARAMS',
      jsonRpc: -32602,
    });
  });

  it('a missing token', async () => {
    await pair();
    await expectRefusedUnchanged(h, () => h.broker.dispatch('a2a.agents.list', {}), {
      code: 'INVALID_PARAMS',
      jsonRpc: -32602,
    });
  });

  it('to together with taskId', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'submitted');
    await expectRefusedUnchanged(
      h,
      () => h.broker.dispatch('a2a.message.send', { token: req.token, to: 'wrk', taskId: id, message: text('x') }),
      { code: 'INVALID_PARAMS', jsonRpc: -32602 },
    );
  });

  it('a message without parts, an unknown state', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'submitted');
    await expectRefusedUnchanged(
      h,
      () => h.broker.dispatch('a2a.message.send', { token: req.token, to: 'wrk', message: { parts: [] } }),
      { code: 'INVALID_PARAMS', jsonRpc: -32602 },
    );
    await expectRefusedUnchanged(
      h,
      () => h.broker.dispatch('a2a.tasks.status', { token: wrk.token, id, state: 'done' }),
      { code: 'INVALID_PARAMS', jsonRpc: -32602 },
    );
  });
});

describe('A2A_UNKNOWN_TOKEN', () => {
  it('for a made-up token, on every method that takes one', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'submitted');
    const token = Buffer.alloc(32, 7).toString('base64url');
    const calls: [string, Record<string, unknown>][] = [
      ['a2a.agents.deregister', { token }],
      ['a2a.agents.list', { token }],
      ['a2a.message.send', { token, to: 'wrk', message: text('x') }],
      ['a2a.tasks.get', { token, id }],
      ['a2a.tasks.list', { token }],
      ['a2a.tasks.status', { token, id, state: 'working' }],
      ['a2a.tasks.artifact', { token, id, artifact: { parts: [{ kind: 'text', text: 'a' }] } }],
      ['a2a.tasks.cancel', { token, id }],
      ['a2a.tasks.resubscribe', { token, id }],
      ['a2a.tasks.pushNotificationConfig.set', { token, id, config: {} }],
      ['a2a.tasks.pushNotificationConfig.get', { token, id }],
      ['a2a.events.since', { token, after: 0 }],
    ];
    for (const [method, params] of calls) {
      const e = await expectRefusedUnchanged(h, () => h.broker.dispatch(method, params), {
        code: 'A2A_UNKNOWN_TOKEN',
      });
      expect(toJsonRpcError(e)).toMatchObject({ code: A2A_ERROR, data: { errorCode: 'A2A_UNKNOWN_TOKEN' } });
    }
  });

  it('for a token after deregistration', async () => {
    const { req } = await pair();
    await h.broker.deregister({ token: req.token });
    await expectRefusedUnchanged(h, () => h.broker.deregister({ token: req.token }), {
      code: 'A2A_UNKNOWN_TOKEN',
    });
  });
});

describe('A2A_UNKNOWN_AGENT', () => {
  it('for a name nobody has', async () => {
    const { req } = await pair();
    const e = await expectRefusedUnchanged(
      h,
      () => h.broker.send({ token: req.token, to: 'nobody', message: text('x') }),
      { code: 'A2A_UNKNOWN_AGENT', details: { to: 'nobody', reason: 'none' } },
    );
    expect(e.message).toContain('a2a.agents.list');
  });

  it('for an agent of the other kind, by id and by name', async () => {
    const { req } = await pair();
    const boss = await register(h.broker, 'boss', 'ctx-a', 'parent');
    for (const to of [boss.agentId, 'boss']) {
      const e = await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to, message: text('x') }), {
        code: 'A2A_UNKNOWN_AGENT',
        details: { to, reason: 'other-kind', kind: 'parent' },
      });
      expect(e.message).toContain('other kind');
      // Still invisible for addressing: asked by name, its id is not given away.
      if (to === 'boss') expect(`${e.message} ${JSON.stringify(e.details)}`).not.toContain(boss.agentId);
    }
  });

  it('for a name that is neither in the caller context nor unique on the host', async () => {
    const { req } = await pair();
    const x = await register(h.broker, 'dup', 'ctx-x');
    const y = await register(h.broker, 'dup', 'ctx-y');
    const e = await expectRefusedUnchanged(
      h,
      () => h.broker.send({ token: req.token, to: 'dup', message: text('x') }),
      { code: 'A2A_UNKNOWN_AGENT', details: { to: 'dup', reason: 'ambiguous', agentIds: [x.agentId, y.agentId] } },
    );
    expect(e.message).toContain(x.agentId);
    expect(e.message).toContain(y.agentId);
  });

  it('for the caller itself, and for a deregistered agent', async () => {
    const { req, wrk } = await pair();
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to: req.agentId, message: text('x') }), {
      code: 'A2A_UNKNOWN_AGENT',
      details: { reason: 'self' },
    });
    await h.broker.deregister({ token: wrk.token });
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to: wrk.agentId, message: text('x') }), {
      code: 'A2A_UNKNOWN_AGENT',
    });
  });
});

describe('A2A_UNKNOWN_TASK', () => {
  it('for a task id that does not exist, on every task method', async () => {
    const { req } = await pair();
    const id = 'no-such-task';
    const calls: [string, Record<string, unknown>][] = [
      ['a2a.message.send', { token: req.token, taskId: id, message: text('x') }],
      ['a2a.tasks.get', { token: req.token, id }],
      ['a2a.tasks.status', { token: req.token, id, state: 'working' }],
      ['a2a.tasks.artifact', { token: req.token, id, artifact: { parts: [{ kind: 'text', text: 'a' }] } }],
      ['a2a.tasks.cancel', { token: req.token, id }],
      ['a2a.tasks.resubscribe', { token: req.token, id }],
      ['a2a.tasks.pushNotificationConfig.set', { token: req.token, id, config: {} }],
      ['a2a.tasks.pushNotificationConfig.get', { token: req.token, id }],
    ];
    for (const [method, params] of calls) {
      await expectRefusedUnchanged(h, () => h.broker.dispatch(method, params), { code: 'A2A_UNKNOWN_TASK' });
    }
  });
});

describe('A2A_CROSS_CONTEXT_DENIED', () => {
  it('for every non-party, in the same context or another, on every task method', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'working');
    for (const stranger of [await register(h.broker, 'peer', 'ctx-a'), await register(h.broker, 'far', 'ctx-z')]) {
      const token = stranger.token;
      const calls: [string, Record<string, unknown>][] = [
        ['a2a.message.send', { token, taskId: id, message: text('x') }],
        ['a2a.tasks.get', { token, id }],
        ['a2a.tasks.status', { token, id, state: 'completed' }],
        ['a2a.tasks.artifact', { token, id, artifact: { parts: [{ kind: 'text', text: 'a' }] } }],
        ['a2a.tasks.cancel', { token, id }],
        ['a2a.tasks.resubscribe', { token, id }],
        ['a2a.tasks.pushNotificationConfig.set', { token, id, config: {} }],
        ['a2a.tasks.pushNotificationConfig.get', { token, id }],
      ];
      for (const [method, params] of calls) {
        await expectRefusedUnchanged(h, () => h.broker.dispatch(method, params), {
          code: 'A2A_CROSS_CONTEXT_DENIED',
        });
      }
    }
  });

  it('even when the stranger retries a messageId of that task', async () => {
    const { req, wrk } = await pair();
    const { task } = await h.broker.send({ token: req.token, to: wrk.agentId, message: text('q', 'm1') });
    const stranger = await register(h.broker, 'far', 'ctx-z');
    await expectRefusedUnchanged(
      h,
      () => h.broker.send({ token: stranger.token, taskId: task.id, message: text('q', 'm1') }),
      { code: 'A2A_CROSS_CONTEXT_DENIED' },
    );
  });
});

describe('A2A_INVALID_TRANSITION', () => {
  const illegal: [TaskState, TaskState][] = [
    ['working', 'rejected'],
    ['input-required', 'input-required'],
    ['input-required', 'rejected'],
    ['auth-required', 'auth-required'],
    ['auth-required', 'rejected'],
    ['submitted', 'submitted'],
    ['submitted', 'canceled'],
    ['working', 'submitted'],
    ['working', 'canceled'],
  ];
  for (const [from, to] of illegal) {
    it(`a worker moving ${from} -> ${to}`, async () => {
      const { req, wrk } = await pair();
      const id = await taskIn(req, wrk, from);
      const e = await expectRefusedUnchanged(h, () => h.broker.setStatus({ token: wrk.token, id, state: to }), {
        code: 'A2A_INVALID_TRANSITION',
        details: { from, to },
      });
      expect(toJsonRpcError(e).data).toMatchObject({ errorCode: 'A2A_INVALID_TRANSITION', from, to });
    });
  }

  it('the requester calling tasks.status or tasks.artifact (worker-only)', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'working');
    await expectRefusedUnchanged(h, () => h.broker.setStatus({ token: req.token, id, state: 'completed' }), {
      code: 'A2A_INVALID_TRANSITION',
      details: { from: 'working', to: 'completed', reason: 'worker-only' },
    });
    await expectRefusedUnchanged(
      h,
      () => h.broker.addArtifact({ token: req.token, id, artifact: { parts: [{ kind: 'text', text: 'a' }] } }),
      { code: 'A2A_INVALID_TRANSITION', details: { reason: 'worker-only' } },
    );
  });
});

describe('A2A_TASK_TERMINAL', () => {
  for (const terminal of ['completed', 'canceled', 'failed', 'rejected'] as const) {
    it(`every move and message on a ${terminal} task`, async () => {
      const { req, wrk } = await pair();
      const id = await taskIn(req, wrk, terminal);
      const calls: (() => Promise<unknown>)[] = [
        () => h.broker.setStatus({ token: wrk.token, id, state: 'working' }),
        () => h.broker.setStatus({ token: wrk.token, id, state: 'completed', message: text('again') }),
        () => h.broker.cancel({ token: req.token, id }),
        () => h.broker.cancel({ token: wrk.token, id }),
        () => h.broker.send({ token: req.token, taskId: id, message: text('late') }),
        () => h.broker.send({ token: wrk.token, taskId: id, message: text('late') }),
        () => h.broker.addArtifact({ token: wrk.token, id, artifact: { parts: [{ kind: 'text', text: 'a' }] } }),
      ];
      for (const call of calls) {
        await expectRefusedUnchanged(h, call, { code: 'A2A_TASK_TERMINAL', details: { from: terminal } });
      }
    });
  }
});

describe('A2A_SEND_CAP', () => {
  it('A2A_MAX_TASK_HISTORY: the 257th message of a task', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'working');
    // 1 creation message so far; fill to the bound with both parties (the requester's sends are capped at 200).
    for (let i = 1; i < A2A_MAX_TASK_HISTORY; i++) {
      const token = i % 2 === 0 ? req.token : wrk.token;
      await h.broker.send({ token, taskId: id, message: text(`m${i}`) });
    }
    const { task } = await h.broker.getTask({ token: req.token, id });
    expect(task.history).toHaveLength(A2A_MAX_TASK_HISTORY);
    const data = { limit: 'A2A_MAX_TASK_HISTORY', max: A2A_MAX_TASK_HISTORY };
    await expectRefusedUnchanged(h, () => h.broker.send({ token: wrk.token, taskId: id, message: text('x') }), {
      code: 'A2A_SEND_CAP',
      details: data,
    });
    await expectRefusedUnchanged(
      h,
      () => h.broker.setStatus({ token: wrk.token, id, state: 'completed', message: text('x') }),
      { code: 'A2A_SEND_CAP', details: data },
    );
    // A move without a message still goes through, and a retry is still recognised.
    await h.broker.setStatus({ token: wrk.token, id, state: 'completed' });
    const retry = await h.broker.send({ token: req.token, taskId: id, message: text('q', task.history[0]?.messageId) });
    expect(retry.task.status.state).toBe('completed');
  });

  it('A2A_MAX_TASKS_PER_CONTEXT: the 129th task created in a context, in any state', async () => {
    const { req, wrk } = await pair();
    const helper = await register(h.broker, 'req2', 'ctx-a');
    for (let i = 0; i < A2A_MAX_TASKS_PER_CONTEXT; i++) {
      const from = i % 2 === 0 ? req : helper;
      const { task } = await h.broker.send({ token: from.token, to: 'wrk', message: text(`t${i}`) });
      if (i % 3 === 0) await h.broker.cancel({ token: wrk.token, id: task.id });
    }
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to: 'wrk', message: text('x') }), {
      code: 'A2A_SEND_CAP',
      details: { limit: 'A2A_MAX_TASKS_PER_CONTEXT', max: A2A_MAX_TASKS_PER_CONTEXT },
    });
    // Another context is not affected.
    await h.broker.send({ token: wrk.token, to: 'req', message: text('ok') });
  });

  it('A2A_MAX_SENDS_PER_RUN: the 201st accepted new message of a registration; retries do not count', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'working');
    // taskIn's creation is send 1; 150 follow-ups on that task, then 49 new tasks: 200 in all.
    for (let i = 1; i <= 150; i++) {
      await h.broker.send({ token: req.token, taskId: id, message: text(`f${i}`, `f${i}`) });
    }
    for (let i = 0; i < A2A_MAX_SENDS_PER_RUN - 151; i++) {
      await h.broker.send({ token: req.token, to: 'wrk', message: text(`t${i}`) });
    }
    // A retry is not a new message: still answered.
    await h.broker.send({ token: req.token, taskId: id, message: text('f1', 'f1') });
    const data = { limit: 'A2A_MAX_SENDS_PER_RUN', max: A2A_MAX_SENDS_PER_RUN };
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, taskId: id, message: text('x') }), {
      code: 'A2A_SEND_CAP',
      details: data,
    });
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to: 'wrk', message: text('x') }), {
      code: 'A2A_SEND_CAP',
      details: data,
    });
    // tasks.status messages are not sends; a new registration starts a new run.
    await h.broker.setStatus({ token: wrk.token, id, state: 'working', message: text('progress') });
    await h.broker.deregister({ token: req.token });
    const again = await register(h.broker, 'req', 'ctx-a');
    const wrk2 = await register(h.broker, 'wrk2', 'ctx-b');
    await h.broker.send({ token: again.token, to: wrk2.agentId, message: text('fresh run') });
  });
});

describe('A2A_NO_PEERS', () => {
  it('when nobody of the caller kind is registered but the caller', async () => {
    h = harness();
    const lone = await register(h.broker, 'lone', 'c1');
    await register(h.broker, 'boss', 'c1', 'parent');
    await expectRefusedUnchanged(h, () => h.broker.listAgents({ token: lone.token }), { code: 'A2A_NO_PEERS' });
  });
});

describe('A2A_PAYLOAD_TOO_LARGE', () => {
  it('a text part over A2A_MAX_TEXT_CHARS code points', async () => {
    const { req } = await pair();
    const big = 'x'.repeat(A2A_MAX_TEXT_CHARS + 1);
    await expectRefusedUnchanged(h, () => h.broker.send({ token: req.token, to: 'wrk', message: text(big) }), {
      code: 'A2A_PAYLOAD_TOO_LARGE',
      details: { limit: 'A2A_MAX_TEXT_CHARS', max: A2A_MAX_TEXT_CHARS },
    });
    // Exactly the bound in astral code points (two UTF-16 units each) is accepted.
    await h.broker.send({ token: req.token, to: 'wrk', message: text('😀'.repeat(A2A_MAX_TEXT_CHARS)) });
  });

  it('a file part over A2A_MAX_FILE_BYTES decoded bytes, in a status message and an artifact', async () => {
    const { req, wrk } = await pair();
    const id = await taskIn(req, wrk, 'working');
    const bytes = Buffer.alloc(A2A_MAX_FILE_BYTES + 1).toString('base64');
    const file = { kind: 'file' as const, file: { name: 'big.bin', bytes } };
    const data = { limit: 'A2A_MAX_FILE_BYTES', max: A2A_MAX_FILE_BYTES };
    await expectRefusedUnchanged(
      h,
      () => h.broker.setStatus({ token: wrk.token, id, state: 'completed', message: { parts: [file] } }),
      { code: 'A2A_PAYLOAD_TOO_LARGE', details: data },
    );
    await expectRefusedUnchanged(h, () => h.broker.addArtifact({ token: wrk.token, id, artifact: { parts: [file] } }), {
      code: 'A2A_PAYLOAD_TOO_LARGE',
      details: data,
    });
  });
});
