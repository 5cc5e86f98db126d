import { Duplex, PassThrough } from 'node:stream';
import { createBroker } from '../../src/actors/broker/broker.js';
import { BrokerSession } from '../../src/transport/broker-session.js';
import { afterEach, describe, expect, it } from 'vitest';
import { BrokerError } from '../../src/protocol/broker-error.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { JsonRpcServer } from '../../src/transport/jsonrpc-server.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { TransportError } from '../../src/transport/transport-error.js';
import { eventTaskId as eventTask } from '../../src/transport/agent-inbox.js';
import { RawServe, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function spawnClient(db?: string): Promise<{ client: SwitchboardClient; db: string }> {
  let path = db;
  if (path === undefined) {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    path = tmp.db;
  }
  const client = await connect({ spawn: { db: path, stderr: 'pipe' } });
  cleanups.push(() => client.close());
  return { client, db: path };
}

/** A host that answers the handshake with what the test says: the only way to meet an old host. */
function fakeHost(handshake: unknown) {
  const toHost = new PassThrough();
  const fromHost = new PassThrough();
  const server = new JsonRpcServer({ input: toHost, output: fromHost, dispatch: () => handshake });
  cleanups.push(() => {
    toHost.end();
    return server.closed;
  });
  return { readable: fromHost, writable: toHost };
}

describe('connect()', () => {
  it('performs the handshake with a spawned switchboard serve', async () => {
    const { client } = await spawnClient();
    expect(client.host).toMatchObject({ protocolVersion: 10, schemaVersion: 16 });
    expect(client.host.capabilities).toContain('a2a');
    expect(client.serveProcess?.pid).toBeGreaterThan(0);
  });

  it('connectInProcess() gives the same client over a broker embedded in this process', async () => {
    const tmp = tempDir();
    const broker = createBroker({ path: tmp.db });
    cleanups.push(async () => {
      await broker.close();
      tmp.cleanup();
    });
    const { client, session } = await connectInProcess(broker);
    const worker = await client.register({ name: 'w', contextId: 'c' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    expect(session.relayCount).toBe(2);
    const { task } = await client.send({ token: requester.token, to: 'w', message: text('hi') });
    await client.setStatus({ token: worker.token, id: task.id, state: 'completed' });
    const [done] = await client.wait({ token: requester.token, taskId: task.id, timeoutSeconds: 5 });
    expect(
      done?.method === 'a2a.task.event' && done.params.event.kind === 'status-update' && done.params.event.final,
    ).toBe(true);
    await client.close();
    await session.closed;
    expect(broker.closed).toBe(false);
  });

  it('the same refusal is the same BrokerError from createBroker, connectInProcess and a spawned serve', async () => {
    type Calls = Pick<SwitchboardClient, 'register' | 'listAgents' | 'getTask' | 'send' | 'setStatus' | 'call'>;
    /** Each refusal of one scenario, as class, code, message and details. */
    async function refusals(api: Calls): Promise<unknown[]> {
      const seen = (e: unknown) =>
        e instanceof BrokerError ? { class: 'BrokerError', code: e.code, message: e.message, details: e.details } : e;
      const lone = await api.register({ name: 'lone', contextId: 'solo' });
      const out: unknown[] = [await api.listAgents({ token: lone.token }).then(() => 'accepted', seen)];
      const w = await api.register({ name: 'w', contextId: 'c' });
      const r = await api.register({ name: 'r', contextId: 'c' });
      const { task } = await api.send({ token: r.token, to: 'w', message: text('q') });
      await api.setStatus({ token: w.token, id: task.id, state: 'completed' });
      const calls: (() => Promise<unknown>)[] = [
        () => api.getTask({ token: 'no-such-token', id: task.id }),
        () => api.getTask({ token: r.token, id: 'no-such-task' }),
        () => api.getTask({ token: lone.token, id: task.id }),
        () => api.send({ token: r.token, to: 'nobody', message: text('q') }),
        () => api.setStatus({ token: w.token, id: task.id, state: 'working' }),
        () => api.call('a2a.tasks.get', { token: r.token } as never),
        () => api.call('a2a.nope' as never, {} as never),
      ];
      for (const call of calls) out.push(await call().then(() => 'accepted', seen));
      return out;
    }
    const dirs = [tempDir(), tempDir()];
    const direct = createBroker({ path: dirs[0]!.db });
    const embedded = createBroker({ path: dirs[1]!.db });
    cleanups.push(async () => {
      await direct.close();
      await embedded.close();
      for (const d of dirs) d.cleanup();
    });
    const directCalls: Calls = {
      register: (p) => direct.register(p),
      listAgents: (p) => direct.listAgents(p),
      getTask: (p) => direct.getTask(p),
      send: (p) => direct.send(p),
      setStatus: (p) => direct.setStatus(p),
      call: ((method: string, params: unknown) => direct.dispatch(method, params)) as Calls['call'],
    };
    const { client: inProcess } = await connectInProcess(embedded);
    cleanups.push(() => inProcess.close());
    const { client: stdio } = await spawnClient();
    const expected = await refusals(directCalls);
    expect(expected.map((e) => (e as { code?: unknown }).code)).toEqual([
      'A2A_NO_PEERS',
      'A2A_UNKNOWN_TOKEN',
      'A2A_UNKNOWN_TASK',
      'A2A_CROSS_CONTEXT_DENIED',
      'A2A_UNKNOWN_AGENT',
      'A2A_TASK_TERMINAL',
      'INVALID_PARAMS',
      'METHOD_NOT_FOUND',
    ]);
    // Task ids differ between brokers: compare with each broker's own ids masked.
    const mask = (list: unknown[]) =>
      JSON.parse(JSON.stringify(list).replace(/"[0-9a-f]{8}-[0-9a-f-]{27}"/g, '"<id>"'));
    expect(mask(await refusals(inProcess))).toEqual(mask(expected));
    expect(mask(await refusals(stdio))).toEqual(mask(expected));
  });

  it('talks to an embedded broker over any duplex stream', async () => {
    const tmp = tempDir();
    const broker = createBroker({ path: tmp.db });
    const toBroker = new PassThrough();
    const fromBroker = new PassThrough();
    const session = new BrokerSession({ broker, input: toBroker, output: fromBroker });
    cleanups.push(async () => {
      await session.close();
      await broker.close();
      tmp.cleanup();
    });
    const client = await connect({ streams: Duplex.from({ readable: fromBroker, writable: toBroker }) });
    expect(client.serveProcess).toBeUndefined();
    const worker = await client.register({ name: 'w', contextId: 'c' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const { task } = await client.send({ token: requester.token, to: 'w', message: text('hi') });
    const [created] = await client.wait({ token: worker.token, timeoutSeconds: 5 });
    expect(created?.method === 'a2a.task.event' && created.params.event.taskId).toBe(task.id);
    await client.close();
  });

  it('refuses a host below protocol version 10', async () => {
    const streams = fakeHost({
      protocolVersion: 9,
      schemaVersion: 11,
      capabilities: ['a2a'],
      server: { name: 'old', version: '1' },
    });
    const error = await connect({ streams }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe('INCOMPATIBLE_HOST');
    expect((error as Error).message).toContain('protocol version 9');
  });

  it('refuses a host without the a2a capability', async () => {
    const streams = fakeHost({
      protocolVersion: 10,
      schemaVersion: 14,
      capabilities: ['plans'],
      server: { name: 'x', version: '1' },
    });
    const error = await connect({ streams }).catch((e: unknown) => e);
    expect((error as TransportError).code).toBe('INCOMPATIBLE_HOST');
    expect((error as Error).message).toContain('"a2a"');
  });

  it('reports a broker that cannot start as SPAWN_FAILED with its stderr', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const error = await connect({ spawn: { db: tmp.dir, stderr: 'pipe' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TransportError);
    expect((error as TransportError).code).toBe('SPAWN_FAILED');
  });
});

describe('the client', () => {
  it('calls every method by wire name or friendly name, and turns errors into BrokerError', async () => {
    const { client } = await spawnClient();
    const worker = await client.register({ name: 'worker', contextId: 'c', description: 'does things' });
    const requester = await client.call('a2a.agents.register', { name: 'requester', contextId: 'c' });
    const { agents } = await client.listAgents({ token: requester.token });
    expect(agents.map((a) => a.name)).toEqual(['worker']);
    const { task } = await client.send({ token: requester.token, to: 'worker', message: text('hello') });
    const got = await client.call('a2a.tasks.get', { token: worker.token, id: task.id });
    expect(got.task.history[0]).toMatchObject({ from: 'requester', role: 'user' });

    const error = await client.getTask({ token: requester.token, id: 'no-such-task' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BrokerError);
    expect((error as BrokerError).code).toBe('A2A_UNKNOWN_TASK');
    const invalid = await client.call('a2a.tasks.get', { token: requester.token } as never).catch((e: unknown) => e);
    expect((invalid as BrokerError).code).toBe('INVALID_PARAMS');
    expect((invalid as BrokerError).details?.issues).toBeInstanceOf(Array);
  });

  it('wait() resolves with the events addressed to the agent, filtered by task, or [] at the timeout', async () => {
    const { client } = await spawnClient();
    const worker = await client.register({ name: 'worker', contextId: 'c' });
    const requester = await client.register({ name: 'requester', contextId: 'c' });
    const pending = client.wait({ token: worker.token, timeoutSeconds: 10 });
    const { task: a } = await client.send({ token: requester.token, to: 'worker', message: text('a') });
    const created = await pending;
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ method: 'a2a.task.event', params: { seq: 1, event: { taskId: a.id } } });

    const { task: b } = await client.send({ token: requester.token, to: 'worker', message: text('b') });
    await client.setStatus({ token: worker.token, id: a.id, state: 'working' });
    await client.setStatus({ token: worker.token, id: b.id, state: 'completed', message: text('b done') });
    await client.setStatus({ token: worker.token, id: a.id, state: 'completed', message: text('a done') });
    const onlyB = await client.wait({ token: requester.token, taskId: b.id, timeoutSeconds: 10 });
    expect(onlyB.map((e) => e.method === 'a2a.task.event' && e.params.event.taskId)).toEqual([b.id]);
    const rest = await client.wait({ token: requester.token, timeoutSeconds: 10 });
    const states = rest.map((e) =>
      e.method === 'a2a.task.event' && e.params.event.kind === 'status-update' ? e.params.event.status.state : '',
    );
    expect(states).toEqual(['working', 'completed']);
    // The worker's inbox holds b's creation, still unread.
    expect((await client.wait({ token: worker.token, timeoutSeconds: 0 })).map((e) => e.seq)).toEqual([2]);

    const started = Date.now();
    expect(await client.wait({ token: requester.token, timeoutSeconds: 0.2 })).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
  });

  it('refuses a wait above the 120-second ceiling and a token it does not know', async () => {
    const { client } = await spawnClient();
    const agent = await client.register({ name: 'a', contextId: 'c' });
    const tooLong = await client.wait({ token: agent.token, timeoutSeconds: 121 }).catch((e: unknown) => e);
    expect((tooLong as BrokerError).code).toBe('INVALID_PARAMS');
    expect((tooLong as Error).message).toContain('A2A_MAX_STREAM_WAIT_SECONDS');
    const unknown = await client.wait({ token: 'nope', timeoutSeconds: 1 }).catch((e: unknown) => e);
    expect((unknown as BrokerError).code).toBe('A2A_UNKNOWN_TOKEN');
  });

  it('resolves a pending wait with [] when the agent deregisters', async () => {
    const { client } = await spawnClient();
    const agent = await client.register({ name: 'a', contextId: 'c' });
    const pending = client.wait({ token: agent.token, timeoutSeconds: 60 });
    await client.deregister({ token: agent.token });
    expect(await pending).toEqual([]);
    const after = await client.getTask({ token: agent.token, id: 'x' }).catch((e: unknown) => e);
    expect((after as BrokerError).code).toBe('A2A_UNKNOWN_TOKEN');
  });

  it('after a broker restart, reconnect() registers again, keeps the old tokens working and replays what was missed', async () => {
    const { client, db } = await spawnClient();
    const worker = await client.register({ name: 'worker', contextId: 'session' });
    const requester = await client.register({ name: 'requester', contextId: 'session' });
    const { task } = await client.send({ token: requester.token, to: 'worker', message: text('job') });
    expect(await client.wait({ token: worker.token, timeoutSeconds: 10 })).toHaveLength(1);
    await client.setStatus({ token: worker.token, id: task.id, state: 'working' });
    expect(await client.wait({ token: requester.token, timeoutSeconds: 10 })).toHaveLength(1);

    // The broker dies; while the client is away another process finishes the task.
    const disconnected = new Promise<TransportError>((resolve) => client.onDisconnect(resolve));
    client.serveProcess?.kill('SIGKILL');
    expect((await disconnected).code).toBe('CONNECTION_CLOSED');
    const other = new RawServe(db);
    const w = (await other.call('a2a.agents.register', { name: 'worker', contextId: 'session' })) as { token: string };
    await other.call('a2a.tasks.status', { token: w.token, id: task.id, state: 'completed', message: text('result') });
    expect((await other.end()).code).toBe(0);

    const waiting = client.wait({ token: requester.token, taskId: task.id, timeoutSeconds: 20 });
    await client.reconnect();
    const missed = await waiting;
    expect(missed).toHaveLength(1);
    expect(missed[0]).toMatchObject({
      seq: 2,
      params: { event: { taskId: task.id, status: { state: 'completed' }, final: true } },
    });
    // The first tokens still work: the client maps them to the new registration.
    const { task: again } = await client.getTask({ token: requester.token, id: task.id });
    expect(again.status.state).toBe('completed');
    expect(client.agentId(requester.token)).not.toBe(requester.agentId);
    // Nothing is delivered twice.
    expect(await client.wait({ token: requester.token, timeoutSeconds: 0.3 })).toEqual([]);
  });

  it('delivers events waiting in the log when a party registers again in a new client', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const first = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
    await first.register({ name: 'worker', contextId: 's' });
    const requester = await first.register({ name: 'requester', contextId: 's' });
    await first.send({ token: requester.token, to: 'worker', message: text('one') });
    await first.close();

    const { client } = await spawnClient(tmp.db);
    const worker = await client.register({ name: 'worker', contextId: 's' });
    const events = await client.wait({ token: worker.token, timeoutSeconds: 0 });
    expect(events.map((e) => e.seq)).toEqual([1]);
    expect(client.lastSeq(worker.token)).toBe(1);
  });

  it('a party registering again in a new client is not handed the tasks that ended meanwhile (unless it asks with after)', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const first = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
    const oldWorker = await first.register({ name: 'worker', contextId: 's' });
    const requester = await first.register({ name: 'requester', contextId: 's' });
    const done = await first.send({ token: requester.token, to: 'worker', message: text('done already') });
    const open = await first.send({ token: requester.token, to: 'worker', message: text('still open') });
    const canceled = await first.send({ token: requester.token, to: 'worker', message: text('called off') });
    await first.setStatus({ token: oldWorker.token, id: done.task.id, state: 'completed' });
    await first.cancel({ token: requester.token, id: canceled.task.id });
    await first.close();

    const { client } = await spawnClient(tmp.db);
    const worker = await client.register({ name: 'worker', contextId: 's' });
    const events = await client.wait({ token: worker.token, timeoutSeconds: 0 });
    // The open task's submission, and the cancel (final) of the called-off one; nothing of the completed one.
    expect(
      events.map((e) => [
        eventTask(e),
        e.method === 'a2a.task.event' && e.params.event.kind === 'status-update' && e.params.event.final,
      ]),
    ).toEqual([
      [open.task.id, false],
      [canceled.task.id, true],
    ]);
    // Every event was logged before this registration: its recipient is the earlier registration's id.
    expect(events.every((e) => e.params.recipient === oldWorker.agentId && e.params.recipient !== worker.agentId)).toBe(
      true,
    );
    // The ones passed over count as received: the inbox is at the end of the log.
    expect(client.lastSeq(worker.token)).toBe(4);
    await client.deregister({ token: worker.token });

    // A runtime that says where to start gets every event after it, exactly.
    const again = await client.register({ name: 'worker', contextId: 's' }, { after: 0 });
    const all = await client.wait({ token: again.token, timeoutSeconds: 0 });
    expect(all.map(eventTask)).toContain(done.task.id);
  });

  it('close() lets the broker answer every call already sent, then waits for it to exit', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const client = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
    await client.register({ name: 'w', contextId: 'c' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const sends = Array.from({ length: 40 }, (_, i) =>
      client.send({ token: requester.token, to: 'w', message: text(`job ${i}`) }),
    );
    await client.close();
    const tasks = await Promise.all(sends);
    expect(new Set(tasks.map((t) => t.task.id)).size).toBe(40);
    expect(await client.serveProcess?.whenExited()).toEqual({ code: 0, signal: null });
  });

  it('rejects calls in flight with CONNECTION_CLOSED when the broker dies', async () => {
    const { client } = await spawnClient();
    const agent = await client.register({ name: 'a', contextId: 'c' });
    const calls = Array.from({ length: 50 }, () => client.listTasks({ token: agent.token }));
    client.serveProcess?.kill('SIGKILL');
    const outcomes = await Promise.allSettled(calls);
    for (const outcome of outcomes) {
      if (outcome.status === 'rejected') expect((outcome.reason as TransportError).code).toBe('CONNECTION_CLOSED');
    }
    const late = await client.listTasks({ token: agent.token }).catch((e: unknown) => e);
    expect((late as TransportError).code).toBe('CONNECTION_CLOSED');
  });
});
