import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DurableEvent, TaskAgentUpdateEvent } from '../../src/protocol/events.js';
import { SocketServe, hostDir, text } from './helpers.js';
import { RuntimeProcess, alive, ownerPid } from './runtime.js';

// A requester tells a dead worker from a slow one: when the connection of
// the agent serving its task closes (here: the worker's runtime SIGKILLed),
// the requester gets an `agent-update` event `left` on the task, and `back`
// when the agent registers again. Real broker (`switchboard serve --listen
// unix:`), real runtimes (`connect({ socket })`) in their own processes.

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function host() {
  const h = hostDir();
  const run = join(h.dir, 'run');
  mkdirSync(run, { mode: 0o700 });
  const env = { ...process.env, XDG_RUNTIME_DIR: run };
  cleanups.push(() => {
    const pid = ownerPid(h.db);
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    h.cleanup();
  });
  return { ...h, env };
}

function runtime(socket: string, env: NodeJS.ProcessEnv): RuntimeProcess {
  const r = new RuntimeProcess({ socket }, env);
  cleanups.push(() => {
    if (r.child.exitCode === null && r.child.signalCode === null) r.kill();
  });
  return r;
}

type Registered = { agentId: string; token: string };

function agentUpdates(events: DurableEvent[]): TaskAgentUpdateEvent[] {
  return events.flatMap((e) =>
    e.method === 'a2a.task.event' && e.params.event.kind === 'agent-update' ? [e.params.event] : [],
  );
}

/** Waits on the requester's inbox until an agent-update arrives (each wait at most `timeoutSeconds`), up to `boundMs`. */
async function nextAgentUpdate(
  requester: RuntimeProcess,
  token: string,
  taskId: string,
  boundMs: number,
): Promise<{ update: TaskAgentUpdateEvent; events: DurableEvent[] }> {
  const deadline = Date.now() + boundMs;
  const seen: DurableEvent[] = [];
  while (Date.now() < deadline) {
    const events = await requester.call<DurableEvent[]>('wait', { token, taskId, timeoutSeconds: 1 });
    seen.push(...events);
    const [update] = agentUpdates(events);
    if (update !== undefined) return { update, events: seen };
  }
  throw new Error(`no agent-update within ${boundMs} ms; got ${JSON.stringify(seen)}`);
}

describe('the agent serving a task leaves and comes back', () => {
  it('a worker runtime SIGKILLed: its requester gets agent-update left on the open task, then back when it registers again', async () => {
    const h = host();
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => serve.stop());
    await serve.listening(h.socket);
    const requester = await runtime(h.socket, h.env).ready();
    const worker = await runtime(h.socket, h.env).ready();
    const r = await requester.call<Registered>('register', { contextId: 'c', name: 'req' });
    const w = await worker.call<Registered>('register', { contextId: 'c', name: 'worker' });
    const sent = await requester.call<{ task: { id: string } }>('send', {
      token: r.token,
      to: 'worker',
      message: text('go'),
    });
    // A second task, already ended: nobody is told about it.
    const done = await requester.call<{ task: { id: string } }>('send', {
      token: r.token,
      to: 'worker',
      message: text('quick'),
    });
    await worker.call('setStatus', { token: w.token, id: done.task.id, state: 'completed' });
    await worker.call('setStatus', { token: w.token, id: sent.task.id, state: 'working' });
    // What came before the kill is taken now: the next agent-update is the kill's.
    await requester.call('wait', { token: r.token, timeoutSeconds: 0 });

    worker.kill();
    await worker.exited;
    const killedAt = Date.now();
    // Bounded in seconds (the machine is shared); the figure is printed: well under a second when quiet.
    const left = await nextAgentUpdate(requester, r.token, sent.task.id, 10_000);
    process.stderr.write(`agent-update left ${Date.now() - killedAt} ms after the SIGKILL\n`);
    expect(left.update).toEqual({
      kind: 'agent-update',
      taskId: sent.task.id,
      contextId: 'c',
      agentName: 'worker',
      agentContextId: 'c',
      presence: 'left',
    });
    // The task is not failed: it waits for the worker.
    const waiting = await requester.call<{ task: { status: { state: string } } }>('getTask', {
      token: r.token,
      id: sent.task.id,
      historyLength: 0,
    });
    expect(waiting.task.status.state).toBe('working');
    // One event, on the open task only.
    expect(agentUpdates(await requester.call<DurableEvent[]>('wait', { token: r.token, timeoutSeconds: 0 }))).toEqual(
      [],
    );

    const again = await runtime(h.socket, h.env).ready();
    await again.call<Registered>('register', { contextId: 'c', name: 'worker' });
    const back = await nextAgentUpdate(requester, r.token, sent.task.id, 10_000);
    expect(back.update).toMatchObject({ taskId: sent.task.id, agentName: 'worker', presence: 'back' });
    // Both are in the requester's durable log, in order.
    const log = await requester.call<{ events: DurableEvent[] }>('eventsSince', { token: r.token, after: 0 });
    expect(agentUpdates(log.events).map((e) => e.presence)).toEqual(['left', 'back']);
  }, 60_000);

  it('a requester that leaves and a worker that deregisters tell nobody anything but what the protocol already says', async () => {
    const h = host();
    const serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    cleanups.push(() => serve.stop());
    await serve.listening(h.socket);
    const requester = await runtime(h.socket, h.env).ready();
    const worker = await runtime(h.socket, h.env).ready();
    const r = await requester.call<Registered>('register', { contextId: 'c', name: 'req' });
    const w = await worker.call<Registered>('register', { contextId: 'c', name: 'worker' });
    const sent = await requester.call<{ task: { id: string } }>('send', {
      token: r.token,
      to: 'worker',
      message: text('go'),
    });
    await worker.call('wait', { token: w.token, timeoutSeconds: 0 });
    // The worker leaving on purpose fails the task: a final status-update, no agent-update.
    await worker.call('deregister', { token: w.token });
    const events = await requester.call<DurableEvent[]>('wait', {
      token: r.token,
      taskId: sent.task.id,
      timeoutSeconds: 10,
    });
    expect(events.map((e) => (e.method === 'a2a.task.event' ? e.params.event.kind : e.method))).toEqual([
      'status-update',
    ]);
    // A requester's connection closing tells its workers nothing.
    const second = await worker.call<Registered>('register', { contextId: 'c', name: 'worker' });
    await requester.call('send', { token: r.token, to: 'worker', message: text('again') });
    await worker.call('wait', { token: second.token, timeoutSeconds: 10 });
    requester.kill();
    await requester.exited;
    const after = await worker.call<DurableEvent[]>('wait', { token: second.token, timeoutSeconds: 2 });
    expect(after).toEqual([]);
  }, 60_000);
});
