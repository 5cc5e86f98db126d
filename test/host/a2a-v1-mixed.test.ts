import { afterEach, describe, expect, it } from 'vitest';
import { V1StreamResponseSchema, V1TaskSchema } from '../../src/protocol/a2a-v1/schemas.js';
import { TaskEventNotificationSchema } from '../../src/protocol/events.js';
import { RawConnection, SocketServe, hostDir, rawSocket, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function connection(socket: string): Promise<RawConnection> {
  const raw = await rawSocket(socket);
  cleanups.push(() => {
    raw.destroy();
  });
  return new RawConnection(raw);
}

function eventOf(line: Record<string, unknown>): unknown {
  return (line.params as { event: unknown }).event;
}

describe('versions 10 and 11 on one broker', () => {
  it('a v1.0 requester and a v0.3 worker work on one task, each in its own shapes', async () => {
    const h = hostDir();
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(async () => {
      await serve.stop();
      h.cleanup();
    });
    await serve.listening(h.socket);

    const v11 = await connection(h.socket);
    const v10 = await connection(h.socket);
    expect(await v11.call('app.handshake', { protocolVersion: 11 })).toMatchObject({ protocolVersion: 11 });
    expect(await v10.call('app.handshake', { protocolVersion: 10 })).toMatchObject({ protocolVersion: 10 });
    const worker = (await v10.call('a2a.agents.register', { name: 'worker', contextId: 'c' })) as {
      agentId: string;
      token: string;
    };
    const requester = (await v11.call('a2a.agents.register', { name: 'requester', contextId: 'c' })) as {
      agentId: string;
      token: string;
    };

    const sent = (await v11.call('SendMessage', {
      capability: requester.token,
      to: 'worker',
      message: { messageId: 'm1', role: 'ROLE_USER', parts: [{ data: 'not an object' }] },
    })) as { task: unknown };
    const taskId = V1TaskSchema.parse(sent.task).id;

    // The worker, on version 10, sees the v0.3 task: the value wrapped, its v1.0 form noted.
    const heard = await v10.waitFor((l) => l.method === 'a2a.task.event');
    const event = TaskEventNotificationSchema.parse(heard.params).event;
    expect(event.kind).toBe('status-update');
    const task = (await v10.call('a2a.tasks.get', { token: worker.token, id: taskId })) as {
      task: { history: { parts: unknown[] }[] };
    };
    expect(task.task.history[0]?.parts).toEqual([
      { kind: 'data', data: { value: 'not an object' }, metadata: { 'a2a.v1': { wrapped: true, absent: true } } },
    ]);

    await v10.call('a2a.tasks.status', {
      token: worker.token,
      id: taskId,
      state: 'completed',
      message: text('done'),
    });
    // The requester, on version 11, hears it in v1.0 shape, and its part as it sent it.
    const done = await v11.waitFor(
      (l) => l.method === 'a2a.task.event' && JSON.stringify(l.params).includes('TASK_STATE_COMPLETED'),
    );
    expect(V1StreamResponseSchema.parse(eventOf(done))).toMatchObject({
      statusUpdate: { taskId, status: { state: 'TASK_STATE_COMPLETED', message: { parts: [{ text: 'done' }] } } },
    });
    const got = V1TaskSchema.parse(await v11.call('GetTask', { capability: requester.token, id: taskId }));
    expect(got.history?.[0]?.parts).toEqual([{ data: 'not an object' }]);
  }, 60_000);
});
