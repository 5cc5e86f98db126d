import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES } from '../../src/protocol/bounds.js';
import { JsonRpcNotificationSchema, JsonRpcResponseSchema } from '../../src/protocol/jsonrpc.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { type Line, RawServe, isObject, tempDir, text } from './helpers.js';

const run = promisify(execFile);

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function serve(db?: string, args: string[] = []): RawServe {
  let path = db;
  if (path === undefined) {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    path = tmp.db;
  }
  const server = new RawServe(path, args);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
  });
  return server;
}

async function register(server: RawServe, name: string, contextId: string, kind?: string) {
  const result = await server.call('a2a.agents.register', kind ? { name, contextId, kind } : { name, contextId });
  return result as { agentId: string; token: string };
}

function eventsFor(server: RawServe, agentId: string): Line[] {
  return server.notifications().filter((n) => (n.params as { recipient: string }).recipient === agentId);
}

describe('switchboard serve', () => {
  it('answers the handshake and writes only JSON-RPC lines to stdout, logs to stderr (never a token)', async () => {
    const server = serve(undefined, ['--log-level', 'trace']);
    const result = await server.call('app.handshake', { protocolVersion: 10, client: { name: 't', version: '1' } });
    expect(result).toMatchObject({ protocolVersion: 10, schemaVersion: 16, server: { name: 'switchboard' } });
    expect(result.capabilities).toContain('a2a');
    const worker = await register(server, 'w', 'c1');
    const requester = await register(server, 'r', 'c1');
    const sent = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: text('secret payload'),
    })) as { task: { id: string } };
    await server.call('a2a.tasks.status', {
      token: worker.token,
      id: sent.task.id,
      state: 'completed',
      message: text('secret reply'),
    });
    await server.request('a2a.tasks.get', { token: 'not-a-real-token', id: 'x' });
    server.write('not json\n');
    await server.waitFor((l) => isObject(l) && isObject(l.error) && l.error.code === -32700);
    expect(await server.end()).toEqual({ code: 0, signal: null });
    for (const line of server.rawStdout) {
      const parsed = JSON.parse(line) as unknown;
      const wellFormed =
        JsonRpcResponseSchema.safeParse(parsed).success || JsonRpcNotificationSchema.safeParse(parsed).success;
      expect(wellFormed, line).toBe(true);
    }
    const logs = server.stderr.trim().split('\n');
    for (const log of logs) expect(() => JSON.parse(log)).not.toThrow();
    for (const secret of [worker.token, requester.token, 'not-a-real-token', 'secret payload', 'secret reply']) {
      expect(server.stderr).not.toContain(secret);
    }
    // One line per call with the task it touched, the state it left, and sizes only.
    const calls = logs.map((line) => JSON.parse(line) as Record<string, unknown>).filter((l) => l.method !== undefined);
    expect(calls.find((l) => l.method === 'a2a.agents.register' && l.msg === 'call answered')).toMatchObject({
      agentId: expect.any(String),
      contextId: 'c1',
    });
    expect(calls.find((l) => l.method === 'a2a.message.send')).toMatchObject({
      msg: 'call answered',
      taskId: sent.task.id,
      state: 'submitted',
      partCount: 1,
      payloadChars: JSON.stringify(text('secret payload')).length,
      ms: expect.any(Number),
    });
    expect(calls.find((l) => l.method === 'a2a.tasks.status')).toMatchObject({
      taskId: sent.task.id,
      state: 'completed',
    });
    expect(calls.find((l) => l.method === 'a2a.tasks.get')).toMatchObject({
      msg: 'call refused',
      taskId: 'x',
      code: 'A2A_UNKNOWN_TOKEN',
    });
  });

  it('routes a delegation round trip to the counterpart of each caller', async () => {
    const server = serve();
    const worker = await register(server, 'worker', 'ctx-w');
    const requester = await register(server, 'requester', 'ctx-r');
    const { task } = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'worker',
      message: text('summarise'),
    })) as { task: { id: string; status: { state: string } } };
    expect(task.status.state).toBe('submitted');

    const created = (await server.waitFor(
      (l) =>
        isObject(l) &&
        l.method === 'a2a.task.event' &&
        (l.params as { recipient: string }).recipient === worker.agentId,
    )) as Line;
    expect(created.params).toMatchObject({
      recipient: worker.agentId,
      recipientName: 'worker',
      contextId: 'ctx-r',
      seq: 1,
      event: { kind: 'status-update', taskId: task.id, status: { state: 'submitted' }, final: false },
    });

    await server.call('a2a.tasks.status', { token: worker.token, id: task.id, state: 'working' });
    await server.call('a2a.tasks.status', {
      token: worker.token,
      id: task.id,
      state: 'completed',
      message: text('done'),
    });
    await server.waitFor(
      (l) =>
        isObject(l) &&
        l.method === 'a2a.task.event' &&
        (l.params as { event: { final: boolean } }).event.final === true,
    );
    const toRequester = eventsFor(server, requester.agentId);
    expect(toRequester.map((n) => (n.params as { seq: number }).seq)).toEqual([1, 2]);
    expect(toRequester.map((n) => (n.params as { event: { status: { state: string } } }).event.status.state)).toEqual([
      'working',
      'completed',
    ]);
    const last = toRequester[1]?.params as { event: { status: { message: { from: string; role: string } } } };
    expect(last.event.status.message).toMatchObject({ from: 'worker', role: 'agent' });
    // The worker caused those moves: it was not woken by them.
    expect(eventsFor(server, worker.agentId)).toHaveLength(1);

    // The requester's follow-up wakes the worker, not the requester.
    const other = await server.call('a2a.message.send', {
      token: requester.token,
      to: 'worker',
      message: text('more'),
    });
    const otherId = (other.task as { id: string }).id;
    await server.call('a2a.tasks.status', { token: worker.token, id: otherId, state: 'input-required' });
    await server.call('a2a.message.send', { token: requester.token, taskId: otherId, message: text('answer') });
    await server.waitFor(() => eventsFor(server, worker.agentId).length === 3);
    const followUp = eventsFor(server, worker.agentId)[2]?.params as {
      event: { status: { state: string; message: { role: string } } };
    };
    expect(followUp.event.status.state).toBe('working');
    expect(followUp.event.status.message.role).toBe('user');
  });

  it('re-emits the current status to the caller on resubscribe, and sends a push to the counterpart', async () => {
    const server = serve();
    const worker = await register(server, 'w', 'c');
    const requester = await register(server, 'r', 'c');
    const { task } = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: text('x'),
    })) as {
      task: { id: string };
    };
    await server.call('a2a.tasks.resubscribe', { token: requester.token, id: task.id });
    await server.waitFor(() => eventsFor(server, requester.agentId).length === 1);
    expect(eventsFor(server, requester.agentId)[0]?.params).toMatchObject({
      seq: 1,
      event: { taskId: task.id, status: { state: 'submitted' } },
    });

    await server.call('a2a.tasks.pushNotificationConfig.set', {
      token: requester.token,
      id: task.id,
      config: { token: 'hook' },
    });
    expect(await server.call('a2a.tasks.pushNotificationConfig.get', { token: worker.token, id: task.id })).toEqual({
      config: { token: 'hook' },
    });
    await server.call('a2a.tasks.status', { token: worker.token, id: task.id, state: 'completed' });
    const push = (await server.waitFor((l) => isObject(l) && l.method === 'a2a.push')) as Line;
    expect(push.params).toMatchObject({
      recipient: requester.agentId,
      contextId: 'c',
      taskId: task.id,
      token: 'hook',
      status: { state: 'completed' },
    });
  });

  it('survives a restart on the same database: agents register again and regain their tasks', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const first = serve(tmp.db);
    const worker = await register(first, 'worker', 'session-1');
    const requester = await register(first, 'requester', 'session-1');
    const sent = await first.call('a2a.message.send', { token: requester.token, to: 'worker', message: text('job') });
    const taskId = (sent.task as { id: string }).id;
    expect(await first.end()).toEqual({ code: 0, signal: null });

    const second = serve(tmp.db);
    const stale = await second.request('a2a.tasks.get', { token: requester.token, id: taskId });
    expect(stale.error).toMatchObject({ code: 1400, data: { errorCode: 'A2A_UNKNOWN_TOKEN' } });
    const worker2 = await register(second, 'worker', 'session-1');
    const requester2 = await register(second, 'requester', 'session-1');
    expect(worker2.agentId).not.toBe(worker.agentId);
    const listed = (await second.call('a2a.tasks.list', { token: worker2.token, role: 'worker' })) as {
      tasks: { id: string }[];
    };
    expect(listed.tasks.map((t) => t.id)).toEqual([taskId]);
    await second.call('a2a.tasks.status', {
      token: worker2.token,
      id: taskId,
      state: 'completed',
      message: text('ok'),
    });
    await second.waitFor(() => eventsFor(second, requester2.agentId).length === 1);
    // The worker's seq continues across the restart: its first event (the creation) was 1.
    const since = (await second.call('a2a.events.since', { token: worker2.token, after: 0 })) as {
      events: { seq: number }[];
    };
    expect(since.events.map((e) => e.seq)).toEqual([1]);
    expect(worker.token).not.toBe(worker2.token);
  });

  it('discards a line over 32 MiB with -32600 and keeps serving', async () => {
    const server = serve();
    const filler = 'a'.repeat(1024 * 1024);
    server.write('{"jsonrpc":"2.0","id":1,"method":"app.handshake","params":{"pad":"');
    for (let i = 0; i < 32; i++) server.write(filler);
    server.write('"}}\n');
    const answer = (await server.waitFor((l) => isObject(l) && isObject(l.error), 30_000)) as Line;
    expect(answer).toMatchObject({ id: null, error: { code: -32600 } });
    expect(MAX_LINE_BYTES).toBe(32 * 1024 * 1024);
    const ok = await server.call('app.handshake', { protocolVersion: 10 });
    expect(ok.protocolVersion).toBe(10);
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`stops cleanly on ${signal}: calls read are answered, the database is closed`, async () => {
      const tmp = tempDir();
      cleanups.push(tmp.cleanup);
      const server = serve(tmp.db);
      const worker = await register(server, 'w', 'c');
      const requester = await register(server, 'r', 'c');
      const count = 100;
      let batch = '';
      for (let i = 0; i < count; i++) {
        batch += `${JSON.stringify({ jsonrpc: '2.0', id: 1000 + i, method: 'a2a.message.send', params: { token: requester.token, to: 'w', message: text(`m${i}`) } })}\n`;
      }
      server.write(batch);
      await server.waitFor((l) => isObject(l) && l.id === 1000);
      server.child.kill(signal);
      expect(await server.exited).toEqual({ code: 0, signal: null });
      expect(server.stderr).toContain('"msg":"stopped"');
      const answered = server.lines.filter((l) => isObject(l) && typeof l.id === 'number' && l.id >= 1000) as Line[];
      expect(answered.length).toBeGreaterThan(0);
      // Every call read was answered before exit, and every answer is a committed task.
      const again = serve(tmp.db);
      const w2 = await register(again, 'w', 'c');
      const tasks = (await again.call('a2a.tasks.list', { token: w2.token })) as { tasks: unknown[] };
      const accepted = answered.filter((l) => 'result' in l).length;
      expect(tasks.tasks.length).toBe(accepted);
      expect(worker.token).not.toBe(w2.token);
    });
  }

  it('serves with --durability full and --log-level silent (nothing on stderr)', async () => {
    const server = serve(undefined, ['--durability', 'full', '--log-level', 'silent']);
    const agent = await register(server, 'a', 'c');
    expect(agent.token.length).toBeGreaterThan(20);
    expect(await server.end()).toEqual({ code: 0, signal: null });
    expect(server.stderr).toBe('');
  });

  it('keeps everything in memory with --db :memory: (no file written, nothing survives the process)', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const start = () => {
      const server = new RawServe(':memory:', ['--log-level', 'warn'], tmp.dir);
      cleanups.push(async () => {
        if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
      });
      return server;
    };
    const first = start();
    const worker = await register(first, 'w', 'c1');
    const requester = await register(first, 'r', 'c1');
    const sent = (await first.call('a2a.message.send', { token: requester.token, to: 'w', message: text('x') })) as {
      task: { id: string };
    };
    await first.call('a2a.tasks.status', { token: worker.token, id: sent.task.id, state: 'completed' });
    const got = (await first.call('a2a.tasks.get', { token: requester.token, id: sent.task.id })) as {
      task: { status: { state: string } };
    };
    expect(got.task.status.state).toBe('completed');
    expect(await first.end()).toEqual({ code: 0, signal: null });
    expect(first.stderr).toContain('the database is in memory: nothing survives this process');
    // SQLite's name for a database in memory, not a file of that name in the working directory.
    expect(readdirSync(tmp.dir)).toEqual([]);

    const second = start();
    const again = await register(second, 'r', 'c1');
    expect(await second.call('a2a.tasks.list', { token: again.token })).toEqual({ tasks: [] });
    expect(await second.end()).toEqual({ code: 0, signal: null });
    expect(readdirSync(tmp.dir)).toEqual([]);
  });

  it('documents every flag in --help and refuses unknown flags with exit code 2', async () => {
    const { stdout } = await run(process.execPath, [SWITCHBOARD_BIN, 'serve', '--help']);
    for (const flag of ['--db', '--durability', '--log-level', 'normal', 'full', './switchboard.db']) {
      expect(stdout).toContain(flag);
    }
    const failed = await run(process.execPath, [SWITCHBOARD_BIN, 'serve', '--bogus']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(2);
    const badMode = await run(process.execPath, [SWITCHBOARD_BIN, 'serve', '--durability', 'maybe']).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(badMode?.code).toBe(2);
    expect(badMode?.stderr).toContain('--durability must be one of normal, full');
  });
});
