import { chmodSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { TransportError } from '../../src/transport/transport-error.js';
import { RawConnection, SocketServe, hostDir, rawSocket, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function serving(): Promise<{ db: string; socket: string; dir: string; serve: SocketServe }> {
  const h = hostDir();
  const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
  cleanups.push(async () => {
    await serve.stop();
    h.cleanup();
  });
  await serve.listening(h.socket);
  return { ...h, serve };
}

async function client(socket: string): Promise<SwitchboardClient> {
  const c = await connect({ socket });
  cleanups.push(() => c.close());
  return c;
}

describe('serve --listen unix:PATH', () => {
  it('serves many connections at once on one broker: they discover and delegate to each other', async () => {
    const { socket } = await serving();
    const clients = await Promise.all(Array.from({ length: 6 }, () => client(socket)));
    const agents = await Promise.all(clients.map((c, i) => c.register({ contextId: 'team', name: `agent-${i}` })));
    const listed = await clients[0]?.listAgents({ token: agents[0]?.token ?? '' });
    expect(listed?.agents.map((a) => a.name).sort()).toEqual(['agent-1', 'agent-2', 'agent-3', 'agent-4', 'agent-5']);
    // Each client delegates to the next one; each worker completes what it got.
    const tasks = await Promise.all(
      clients.map((c, i) =>
        c.send({ token: agents[i]?.token ?? '', to: `agent-${(i + 1) % 6}`, message: text(`from ${i}`) }),
      ),
    );
    await Promise.all(
      clients.map(async (c, i) => {
        const token = agents[i]?.token ?? '';
        const events = await c.wait({ token, timeoutSeconds: 10 });
        const event = events[0]?.params as { event: { taskId: string } };
        await c.setStatus({ token, id: event.event.taskId, state: 'completed' });
      }),
    );
    for (const [i, c] of clients.entries()) {
      const task = tasks[i]?.task;
      const done = await c.getTask({ token: agents[i]?.token ?? '', id: task?.id ?? '' });
      expect(done.task.status.state).toBe('completed');
    }
  });

  it('makes the socket mode 0600 and requires a token on every call', async () => {
    const { socket } = await serving();
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    const raw = new RawConnection(await rawSocket(socket));
    cleanups.push(() => void raw.socket.destroy());
    const id = raw.send('a2a.tasks.list', { token: 'not-a-token' });
    const answer = await raw.waitFor((l) => l.id === id);
    expect((answer.error as { data: { errorCode: string } }).data.errorCode).toBe('A2A_UNKNOWN_TOKEN');
  });

  it('refuses a socket in a directory others can write, and a path a live process serves (exit 1, saying why)', async () => {
    const h = hostDir();
    cleanups.push(h.cleanup);
    const open = join(h.dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const refused = new SocketServe(h.db, ['--listen', `unix:${join(open, 's.sock')}`]);
    expect((await refused.exited).code).toBe(1);
    expect(refused.stderr).toContain('SOCKET_UNSAFE');
    expect(refused.stderr).toContain('writable by others');

    const taken = join(h.dir, 'taken.sock');
    const other = createServer().listen(taken);
    cleanups.push(() => new Promise<void>((resolve) => other.close(() => resolve())));
    await new Promise((resolve) => other.once('listening', resolve));
    const inUse = new SocketServe(join(h.dir, 'other.db'), ['--listen', `unix:${taken}`]);
    expect((await inUse.exited).code).toBe(1);
    expect(inUse.stderr).toContain('SOCKET_IN_USE');
  });

  it('connect({ socket }) to nothing is NO_BROKER, saying how to start one', async () => {
    const h = hostDir();
    cleanups.push(h.cleanup);
    const error = await connect({ socket: h.socket }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe('NO_BROKER');
    expect((error as TransportError).message).toContain('switchboard serve --listen');
  });

  it('ends the agents of a closed connection (tokens dead, tasks kept) and gives them back on registering again', async () => {
    const { socket } = await serving();
    const requester = await client(socket);
    const r = await requester.register({ contextId: 'c', name: 'req' });
    const workerClient = await connect({ socket });
    const w = await workerClient.register({ contextId: 'c', name: 'worker' });
    const { task } = await requester.send({ token: r.token, to: 'worker', message: text('do it') });
    await workerClient.close();
    // The worker's name is free at once; its task is as it was.
    await expect(requester.listAgents({ token: r.token })).rejects.toMatchObject({ code: 'A2A_NO_PEERS' });
    expect((await requester.getTask({ token: r.token, id: task.id })).task.status.state).toBe('submitted');
    const again = await client(socket);
    await expect(again.listTasks({ token: w.token })).rejects.toMatchObject({ code: 'A2A_UNKNOWN_TOKEN' });
    const w2 = await again.register({ contextId: 'c', name: 'worker' });
    const mine = await again.listTasks({ token: w2.token, role: 'worker' });
    expect(mine.tasks.map((t) => t.id)).toEqual([task.id]);
    // The task's creation event waited in the log and is replayed on registering again.
    const events = await again.wait({ token: w2.token, timeoutSeconds: 5 });
    expect(events.map((e) => (e.params as { event: { taskId: string } }).event.taskId)).toContain(task.id);
    await again.setStatus({ token: w2.token, id: task.id, state: 'completed' });
    expect((await requester.getTask({ token: r.token, id: task.id })).task.status.state).toBe('completed');
  });

  it('keeps serving the others while one connection sends garbage', async () => {
    const { socket } = await serving();
    const garbage = new RawConnection(await rawSocket(socket));
    cleanups.push(() => void garbage.socket.destroy());
    const a = await client(socket);
    const b = await client(socket);
    const ra = await a.register({ contextId: 'c', name: 'a' });
    const rb = await b.register({ contextId: 'c', name: 'b' });
    const junk = [
      'not json',
      '{"jsonrpc":"2.0"',
      '[]',
      '{"jsonrpc":"2.0","id":1,"method":"a2a.message.send","params":{"token":42}}',
      '{"jsonrpc":"1.0","id":2,"method":"x"}',
      '\u0000\u0001\u0002',
      '{"jsonrpc":"2.0","id":3,"method":"nope","params":[]}',
    ];
    let garbageLines = 0;
    const flood = (async () => {
      for (let i = 0; i < 300; i++) {
        const bytes =
          i % 3 === 0 ? Buffer.from(Array.from({ length: 64 }, () => Math.floor(Math.random() * 256))) : undefined;
        garbage.socket.write(bytes ?? `${junk[i % junk.length]}\n`);
        if (bytes) garbage.socket.write('\n');
        garbageLines++;
        if (i % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (let i = 0; i < 30; i++) {
      const { task } = await a.send({ token: ra.token, to: 'b', message: text(`job ${i}`) });
      await b.setStatus({ token: rb.token, id: task.id, state: 'completed' });
    }
    await flood;
    // The garbage connection is answered too (errors), and is still served.
    const ok = await garbage
      .call('app.handshake', { protocolVersion: 1, client: { name: 'junk', version: '0' } })
      .catch(() => undefined);
    expect(garbage.lines.length).toBeGreaterThan(0);
    expect(garbage.lines.every((l) => l.jsonrpc === '2.0')).toBe(true);
    expect(garbageLines).toBe(300);
    expect(ok === undefined || typeof ok === 'object').toBe(true);
    const tasks = await a.listTasks({ token: ra.token, role: 'requester' });
    expect(tasks.tasks.filter((t) => t.status.state === 'completed')).toHaveLength(30);
  });

  it('a connection that never reads slows nobody else and loses none of its events (they wait in the log)', async () => {
    const { socket } = await serving();
    const slow = new RawConnection(await rawSocket(socket));
    cleanups.push(() => void slow.socket.destroy());
    const slowAgent = (await slow.call('a2a.agents.register', { contextId: 'c', name: 'slow' })) as {
      token: string;
      agentId: string;
    };
    const busy = await client(socket);
    const worker = await busy.register({ contextId: 'c', name: 'worker' });
    const created = (await slow.call('a2a.message.send', {
      token: slowAgent.token,
      to: 'worker',
      message: text('x'),
    })) as {
      task: { id: string };
    };
    slow.pause();
    // Over 2 MB of events for the stalled reader: more than its socket's and session's buffers hold.
    const total = 6000;
    for (let i = 0; i < total; i += 100) {
      await Promise.all(
        Array.from({ length: 100 }, () =>
          busy.setStatus({ token: worker.token, id: created.task.id, state: 'working' }),
        ),
      );
    }
    // Meanwhile two other connections go on as if nothing happened.
    const a = await client(socket);
    const b = await client(socket);
    const ra = await a.register({ contextId: 'd', name: 'a' });
    const rb = await b.register({ contextId: 'd', name: 'b' });
    for (let i = 0; i < 20; i++) {
      const { task } = await a.send({ token: ra.token, to: 'b', message: text(`job ${i}`) });
      const got = await b.wait({ token: rb.token, taskId: task.id, timeoutSeconds: 10 });
      expect(got.length).toBeGreaterThan(0);
      await b.setStatus({ token: rb.token, id: task.id, state: 'completed' });
      const done = await a.wait({ token: ra.token, taskId: task.id, timeoutSeconds: 10 });
      expect(done.length).toBeGreaterThan(0);
    }
    // The reader comes back: every event arrives, once, in seq order.
    slow.resume();
    await slow.waitFor((l) => (l.params as { seq?: number } | undefined)?.seq === total, 60_000);
    const seqs = slow.lines
      .filter(
        (l) => l.method === 'a2a.task.event' && (l.params as { recipient: string }).recipient === slowAgent.agentId,
      )
      .map((l) => (l.params as { seq: number }).seq);
    expect(seqs).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  }, 120_000);
});
