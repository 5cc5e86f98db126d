import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { DurableEvent } from '../../src/protocol/events.js';
import { connect } from '../../src/transport/client.js';
import { defaultSocketPath } from '../../src/transport/host-paths.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { SocketServe, hostDir, text } from './helpers.js';
import { RuntimeProcess, alive, eventually, ownerPid } from './runtime.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A database and a private runtime directory (sockets, logs) for one test. */
function host() {
  const h = hostDir();
  const run = join(h.dir, 'run');
  mkdirSync(run, { mode: 0o700 });
  const env = { ...process.env, XDG_RUNTIME_DIR: run };
  cleanups.push(() => {
    // A background broker left by a failed test is stopped here.
    const pid = ownerPid(h.db);
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    h.cleanup();
  });
  return { ...h, env };
}

function runtime(options: Record<string, unknown>, env: NodeJS.ProcessEnv): RuntimeProcess {
  const r = new RuntimeProcess(options, env);
  cleanups.push(() => {
    if (r.child.exitCode === null && r.child.signalCode === null) r.kill();
  });
  return r;
}

type Registered = { agentId: string; token: string };

function taskIdOf(events: DurableEvent[]): string | undefined {
  for (const e of events) {
    const params = e.params as { event?: { taskId?: string }; taskId?: string };
    if (params.event?.taskId) return params.event.taskId;
  }
  return undefined;
}

/** `from` delegates one task to `to`, which adds an artifact and completes it; `from` sees it all, push included. */
async function delegate(
  from: RuntimeProcess,
  fromAgent: Registered,
  to: RuntimeProcess,
  toAgent: Registered,
  toName: string,
) {
  const sent = await from.call<{ task: { id: string } }>('send', {
    token: fromAgent.token,
    to: toName,
    message: text('please summarize'),
  });
  const taskId = sent.task.id;
  await from.call('setPushConfig', {
    token: fromAgent.token,
    id: taskId,
    config: { url: 'https://example.invalid/hook', token: 'p' },
  });
  const incoming = await to.call<DurableEvent[]>('wait', { token: toAgent.token, taskId, timeoutSeconds: 10 });
  expect(taskIdOf(incoming)).toBe(taskId);
  await to.call('setStatus', { token: toAgent.token, id: taskId, state: 'working' });
  await to.call('addArtifact', { token: toAgent.token, id: taskId, artifact: { name: 'summary', ...text('short') } });
  await to.call('setStatus', { token: toAgent.token, id: taskId, state: 'completed' });
  const seen: DurableEvent[] = [];
  await eventually(async () => {
    seen.push(...(await from.call<DurableEvent[]>('wait', { token: fromAgent.token, taskId, timeoutSeconds: 2 })));
    return seen.some((e) => e.method === 'a2a.push');
  }, 20_000);
  const kinds = seen.map((e) =>
    e.method === 'a2a.push' ? 'push' : (e.params as { event: { kind: string } }).event.kind,
  );
  expect(kinds).toContain('artifact-update');
  expect(kinds).toContain('push');
  const task = await from.call<{ task: { status: { state: string }; artifacts: { name?: string }[] } }>('getTask', {
    token: fromAgent.token,
    id: taskId,
  });
  expect(task.task.status.state).toBe('completed');
  expect(task.task.artifacts.map((a) => a.name)).toEqual(['summary']);
}

/** The error a connect() is refused with (fails the test if it connects). */
async function refusal(attempt: Promise<{ close(): Promise<void> }>): Promise<Error & { code: string }> {
  try {
    const client = await attempt;
    await client.close();
  } catch (error) {
    return error as Error & { code: string };
  }
  throw new Error('connected, but should have been refused');
}

describe('one broker per host, shared by runtime processes', () => {
  it('two runtimes calling connect({ db }) at once end on one background broker, delegate both ways; it outlives them and stops when idle', async () => {
    const h = host();
    const options = { db: h.db, idleSeconds: 2 };
    const [a, b] = await Promise.all([runtime(options, h.env).ready(), runtime(options, h.env).ready()]);
    const broker = ownerPid(h.db);
    expect(broker).toBeDefined();
    const ra = await a.call<Registered>('register', { contextId: 'alpha', name: 'planner' });
    const rb = await b.call<Registered>('register', { contextId: 'beta', name: 'writer' });
    // Discovery spans every live agent on the host, across contexts.
    const listed = await a.call<{ agents: { name: string }[] }>('listAgents', { token: ra.token });
    expect(listed.agents.map((x) => x.name)).toEqual(['writer']);
    await delegate(a, ra, b, rb, 'writer');
    await delegate(b, rb, a, ra, 'planner');
    await Promise.all([a.end(), b.end()]);
    // The broker outlives the runtimes that started it: a third joins the same one.
    const c = await runtime(options, h.env).ready();
    expect(ownerPid(h.db)).toBe(broker);
    const rc = await c.call<Registered>('register', { contextId: 'alpha', name: 'planner' });
    const mine = await c.call<{ tasks: unknown[] }>('listTasks', { token: rc.token });
    expect(mine.tasks).toHaveLength(2);
    await c.end();
    // ...and stops by itself once idle: its socket and ownership are gone.
    await eventually(() => broker !== undefined && !alive(broker), 20_000);
    expect(ownerPid(h.db)).toBeUndefined();
    expect(existsSync(defaultSocketPath(h.db, h.env))).toBe(false);
  }, 90_000);

  it('a runtime SIGKILLed mid-task: its agents are gone within a second, the other side intact, and it regains its task on restart', async () => {
    const h = host();
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => serve.stop());
    await serve.listening(h.socket);
    const requester = await runtime({ socket: h.socket }, h.env).ready();
    const worker = await runtime({ socket: h.socket }, h.env).ready();
    const r = await requester.call<Registered>('register', { contextId: 'c', name: 'req' });
    const w = await worker.call<Registered>('register', { contextId: 'c', name: 'worker' });
    const sent = await requester.call<{ task: { id: string } }>('send', {
      token: r.token,
      to: 'worker',
      message: text('go'),
    });
    await worker.call('wait', { token: w.token, taskId: sent.task.id, timeoutSeconds: 10 });
    await worker.call('setStatus', { token: w.token, id: sent.task.id, state: 'working' });
    worker.kill();
    await worker.exited;
    const killedAt = Date.now();
    await eventually(async () => {
      try {
        await requester.call('listAgents', { token: r.token });
        return false;
      } catch (error) {
        return (error as { code?: string }).code === 'A2A_NO_PEERS';
      }
    }, 10_000);
    // Freed by the connection's close, not by a timeout or a heartbeat: the registration ended `disconnected`.
    // (How long it took is printed, not asserted: the machine is shared; it is well under a second when quiet.)
    process.stderr.write(`names freed ${Date.now() - killedAt} ms after the SIGKILL\n`);
    const file = new Database(h.db, { readonly: true });
    const ended = file.prepare("SELECT end_reason FROM a2a_agents WHERE name = 'worker'").all() as {
      end_reason: string;
    }[];
    file.close();
    expect(ended).toEqual([{ end_reason: 'disconnected' }]);
    // The requester's task and events are intact: it is still working, its events all there.
    const task = await requester.call<{ task: { status: { state: string } } }>('getTask', {
      token: r.token,
      id: sent.task.id,
    });
    expect(task.task.status.state).toBe('working');
    const events = await requester.call<DurableEvent[]>('wait', {
      token: r.token,
      taskId: sent.task.id,
      timeoutSeconds: 5,
    });
    expect(events.length).toBeGreaterThan(0);
    // Restarted, the worker registers again under its name and regains the task.
    const again = await runtime({ socket: h.socket }, h.env).ready();
    const w2 = await again.call<Registered>('register', { contextId: 'c', name: 'worker' });
    const regained = await again.call<{ tasks: { id: string }[] }>('listTasks', { token: w2.token, role: 'worker' });
    expect(regained.tasks.map((t) => t.id)).toEqual([sent.task.id]);
    await again.call('setStatus', { token: w2.token, id: sent.task.id, state: 'completed' });
    const done = await requester.call<{ task: { status: { state: string } } }>('getTask', {
      token: r.token,
      id: sent.task.id,
    });
    expect(done.task.status.state).toBe('completed');
  }, 60_000);

  it('a second broker on the same file is refused while the first lives, and takes over at once after it is killed', async () => {
    const h = host();
    const first = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => first.stop());
    await first.listening(h.socket);
    const second = new SocketServe(h.db, ['--listen', 'unix'], h.env);
    expect((await second.exited).code).toBe(1);
    expect(second.stderr).toContain('BROKER_FILE_OWNED');
    expect(second.stderr).toContain(`pid ${first.child.pid}`);
    expect(second.stderr).toContain(`unix:${h.socket}`);
    // The read-only commands keep working beside the owner.
    const read = spawnSync(process.execPath, [SWITCHBOARD_BIN, 'tasks', 'list', '--db', h.db], { encoding: 'utf8' });
    expect(read.status, read.stderr).toBe(0);
    // connect({ db }) finds the owner's socket through its ownership and joins it.
    const joined = await runtime({ db: h.db }, h.env).ready();
    const reg = await joined.call<Registered>('register', { contextId: 'c', name: 'x' });
    expect(reg.agentId).toBeTruthy();
    await joined.end();
    first.child.kill('SIGKILL');
    await first.exited;
    const third = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => third.stop());
    await third.listening(h.socket);
    expect(ownerPid(h.db)).toBe(third.child.pid);
  }, 60_000);

  it('a failed start says why; an unknown option keeps its message', async () => {
    const h = host();
    await expect(connect({ db: ':memory:' })).rejects.toThrow(/in memory/);
    // The failed broker's log goes to the test's runtime directory, removed with it.
    const saved = process.env.XDG_RUNTIME_DIR;
    process.env.XDG_RUNTIME_DIR = h.env.XDG_RUNTIME_DIR;
    const viaDb = await refusal(connect({ db: '/nonexistent/dir/x.db' })).finally(() => {
      if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
      else process.env.XDG_RUNTIME_DIR = saved;
    });
    expect(viaDb.code).toBe('SPAWN_FAILED');
    expect(viaDb.message).toMatch(/directory does not exist|no such file/i);
    const viaSpawn = await refusal(connect({ spawn: { db: '/nonexistent/dir/x.db', stderr: 'ignore' } }));
    expect(viaSpawn.code).toBe('SPAWN_FAILED');
    expect(viaSpawn.message).not.toContain('exit code null');
    const quiet = await refusal(connect({ spawn: { db: '/nonexistent/dir/x.db', stderr: 'pipe' } }));
    expect(quiet.message).toMatch(/directory does not exist/i);
    const bogus = await refusal(connect({ spawn: { db: h.db, args: ['--bogus'], stderr: 'pipe' } }));
    expect(bogus.message).toContain("Unknown option '--bogus'");
  }, 60_000);
});
