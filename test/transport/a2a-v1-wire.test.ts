import { afterEach, describe, expect, it } from 'vitest';
import {
  V1AgentCardSchema,
  V1ListTasksResponseSchema,
  V1StreamResponseSchema,
  V1TaskSchema,
} from '../../src/protocol/a2a-v1/schemas.js';
import { TaskEventNotificationSchema } from '../../src/protocol/events.js';
import { type Line, RawServe, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function serve(): RawServe {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const server = new RawServe(tmp.db);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
  });
  return server;
}

type Agent = { agentId: string; token: string; card: unknown };

function eventsOf(server: RawServe, agentId: string): Line[] {
  return server
    .notifications('a2a.task.event')
    .filter((n) => (n.params as { recipient: string }).recipient === agentId);
}

describe('protocol version 11 on the real wire', () => {
  it('speaks A2A v1.0 shapes and method names to a client that handshakes with 11', async () => {
    const server = serve();
    const hello = await server.call('app.handshake', { protocolVersion: 11 });
    expect(hello).toMatchObject({ protocolVersion: 11 });
    expect(hello.capabilities).toEqual(expect.arrayContaining(['a2a', 'a2a.v1']));

    const worker = (await server.call('a2a.agents.register', { name: 'w', contextId: 'c1' })) as Agent;
    const requester = (await server.call('a2a.agents.register', { name: 'r', contextId: 'c1' })) as Agent;
    const card = V1AgentCardSchema.parse(worker.card);
    expect(card.capabilities.extensions?.[0]?.params).toEqual({
      agentId: worker.agentId,
      contextId: 'c1',
      kind: 'subagent',
    });
    const peers = (await server.call('a2a.agents.list', { capability: requester.token })) as { agents: unknown[] };
    expect(peers.agents.map((a) => V1AgentCardSchema.parse(a).name)).toEqual(['w']);

    // The version 10 name is refused with the name to call instead; nothing is sent.
    const old = await server.request('a2a.message.send', { token: requester.token, to: 'w', message: text('x') });
    expect(old.error).toMatchObject({ code: -32601, message: expect.stringContaining('SendMessage') });

    const sent = (await server.call('SendMessage', {
      capability: requester.token,
      to: 'w',
      message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi', mediaType: 'text/markdown' }] },
    })) as { task: unknown };
    const task = V1TaskSchema.parse(sent.task);
    expect(task.status.state).toBe('TASK_STATE_SUBMITTED');
    expect(task.history?.[0]?.parts).toEqual([{ text: 'hi', mediaType: 'text/markdown' }]);
    expect(task.history?.[0]?.role).toBe('ROLE_USER');

    // The worker hears of it in v1.0 shape.
    await server.waitFor(() => eventsOf(server, worker.agentId).length > 0, 20_000);
    const heard = eventsOf(server, worker.agentId)[0]?.params as { event: unknown; seq: number };
    expect(V1StreamResponseSchema.parse(heard.event)).toHaveProperty(
      'statusUpdate.status.state',
      'TASK_STATE_SUBMITTED',
    );

    const pushed = await server.call('CreateTaskPushNotificationConfig', {
      capability: requester.token,
      taskId: task.id,
      token: 'push-secret',
    });
    expect(pushed).toEqual({ id: 'default', taskId: task.id, token: 'push-secret' });
    expect(
      await server.call('GetTaskPushNotificationConfig', { capability: requester.token, taskId: task.id }),
    ).toEqual(pushed);
    expect(
      await server.call('ListTaskPushNotificationConfigs', { capability: requester.token, taskId: task.id }),
    ).toEqual({ configs: [pushed], nextPageToken: '' });
    const deleted = await server.request('DeleteTaskPushNotificationConfig', {
      capability: requester.token,
      taskId: task.id,
      id: 'default',
    });
    expect(deleted.error).toMatchObject({
      code: -32601,
      message: expect.stringContaining('CreateTaskPushNotificationConfig'),
    });

    const done = (await server.call('a2a.tasks.status', {
      capability: worker.token,
      id: task.id,
      state: 'TASK_STATE_COMPLETED',
      message: { messageId: 'm2', role: 'ROLE_AGENT', parts: [{ data: [1, 2, 3] }] },
    })) as { task: unknown };
    expect(V1TaskSchema.parse(done.task).status.state).toBe('TASK_STATE_COMPLETED');

    // The requester's event: the data part comes back as the array the worker sent.
    await server.waitFor(
      () => eventsOf(server, requester.agentId).some((n) => JSON.stringify(n.params).includes('TASK_STATE_COMPLETED')),
      20_000,
    );
    const completed = eventsOf(server, requester.agentId).find((n) =>
      JSON.stringify(n.params).includes('TASK_STATE_COMPLETED'),
    );
    const response = V1StreamResponseSchema.parse((completed?.params as { event: unknown } | undefined)?.event);
    expect(response).toMatchObject({ statusUpdate: { status: { message: { parts: [{ data: [1, 2, 3] }] } } } });
    // Nothing of v0.3 on this connection.
    expect(() => TaskEventNotificationSchema.parse(completed?.params)).toThrow();

    const got = V1TaskSchema.parse(
      await server.call('GetTask', { capability: requester.token, id: task.id, historyLength: 1 }),
    );
    expect(got.history).toHaveLength(1);

    const second = (await server.call('SendMessage', {
      capability: requester.token,
      to: 'w',
      message: { messageId: 'm3', role: 'ROLE_USER', parts: [{ text: 'again' }] },
    })) as { task: { id: string } };
    const first = V1ListTasksResponseSchema.parse(
      await server.call('ListTasks', { capability: requester.token, pageSize: 1 }),
    );
    expect(first).toMatchObject({ pageSize: 1, totalSize: 2 });
    expect(first.nextPageToken).not.toBe('');
    const rest = V1ListTasksResponseSchema.parse(
      await server.call('ListTasks', { capability: requester.token, pageSize: 1, pageToken: first.nextPageToken }),
    );
    expect(rest.nextPageToken).toBe('');
    expect([...first.tasks, ...rest.tasks].map((t) => t.id).sort()).toEqual([task.id, second.task.id].sort());
    const working = V1ListTasksResponseSchema.parse(
      await server.call('ListTasks', { capability: requester.token, status: 'TASK_STATE_COMPLETED' }),
    );
    expect(working.tasks.map((t) => t.id)).toEqual([task.id]);

    const canceled = V1TaskSchema.parse(
      await server.call('CancelTask', { capability: requester.token, id: second.task.id }),
    );
    expect(canceled.status.state).toBe('TASK_STATE_CANCELED');
    const resubscribed = (await server.call('SubscribeToTask', { capability: requester.token, id: task.id })) as {
      task: unknown;
    };
    expect(V1TaskSchema.parse(resubscribed.task).id).toBe(task.id);

    const log = (await server.call('a2a.events.since', { capability: requester.token, after: 0 })) as {
      events: { method: string; params: { event?: unknown } }[];
    };
    expect(log.events.length).toBeGreaterThan(0);
    for (const entry of log.events) {
      if (entry.method === 'a2a.task.event') expect(V1StreamResponseSchema.parse(entry.params.event)).toBeDefined();
    }

    // Refusals are the broker's own errors, and change nothing.
    const unknown = await server.request('GetTask', { capability: 'not-a-token', id: task.id });
    expect(unknown.error).toMatchObject({ code: 1400, data: { errorCode: 'A2A_UNKNOWN_TOKEN' } });
    const badParams = await server.request('SendMessage', {
      capability: requester.token,
      to: 'w',
      message: { parts: [] },
    });
    expect(badParams.error).toMatchObject({ code: -32602 });
    expect(server.stderr).not.toContain('push-secret');
  }, 120_000);

  it('keeps the v0.3 shapes, unchanged, for a client that handshakes with 10', async () => {
    const server = serve();
    expect(await server.call('app.handshake', { protocolVersion: 10 })).toMatchObject({ protocolVersion: 10 });
    const worker = (await server.call('a2a.agents.register', { name: 'w', contextId: 'c1' })) as Agent;
    const requester = (await server.call('a2a.agents.register', { name: 'r', contextId: 'c1' })) as Agent;
    expect(worker.card).toMatchObject({ agentId: worker.agentId, kind: 'subagent', contextId: 'c1' });
    const v1Name = await server.request('SendMessage', { capability: requester.token, to: 'w', message: {} });
    expect(v1Name.error).toMatchObject({ code: -32601 });
    const sent = (await server.call('a2a.message.send', { token: requester.token, to: 'w', message: text('hi') })) as {
      task: { kind: string; status: { state: string } };
    };
    expect(sent.task).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    await server.waitFor(() => eventsOf(server, worker.agentId).length > 0, 20_000);
    expect(TaskEventNotificationSchema.parse(eventsOf(server, worker.agentId)[0]?.params).event.kind).toBe(
      'status-update',
    );
  }, 60_000);
});
