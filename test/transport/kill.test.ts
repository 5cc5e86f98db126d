import { afterEach, describe, expect, it } from 'vitest';
import { RawServe, type Line, isObject, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

describe('kill -9 of switchboard serve', () => {
  it('loses no answered call: after a restart on the same file every answered task and move is there', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const first = new RawServe(tmp.db);
    cleanups.push(async () => {
      if (first.child.exitCode === null) await first.kill();
    });
    const worker = (await first.call('a2a.agents.register', { name: 'worker', contextId: 'w' })) as { token: string };
    // Several requesters (each context may create 128 tasks).
    const requesters: { token: string; contextId: string }[] = [];
    for (let i = 0; i < 8; i++) {
      const contextId = `r-${i}`;
      const r = (await first.call('a2a.agents.register', { name: 'requester', contextId })) as { token: string };
      requesters.push({ token: r.token, contextId });
    }

    // Traffic: 32 sends in flight; the worker completes each task it is told about, pipelined too.
    let nextId = 10_000;
    const kinds = new Map<number, 'send' | 'complete'>();
    const completing = new Map<number, string>();
    let sends = 0;
    const sendOne = () => {
      const r = requesters[sends % requesters.length] as (typeof requesters)[number];
      sends++;
      const id = nextId++;
      kinds.set(id, 'send');
      first.write(
        `${JSON.stringify({ jsonrpc: '2.0', id, method: 'a2a.message.send', params: { token: r.token, to: 'worker', message: text(`job ${id}`) } })}\n`,
      );
    };
    for (let i = 0; i < 32; i++) sendOne();
    let handled = 0;
    const answered = { sends: new Set<string>(), completions: new Set<string>() };
    const pump = setInterval(() => {
      for (; handled < first.lines.length; handled++) {
        const line = first.lines[handled] as Line;
        if (!isObject(line) || typeof line.id !== 'number' || !('result' in line)) continue;
        const taskId = ((line.result as { task: { id: string } }).task ?? { id: '' }).id;
        if (kinds.get(line.id) === 'send') {
          answered.sends.add(taskId);
          const id = nextId++;
          kinds.set(id, 'complete');
          completing.set(id, taskId);
          first.write(
            `${JSON.stringify({ jsonrpc: '2.0', id, method: 'a2a.tasks.status', params: { token: worker.token, id: taskId, state: 'completed' } })}\n`,
          );
          if (sends < 8 * 120) sendOne();
        } else if (kinds.get(line.id) === 'complete') {
          answered.completions.add(taskId);
        }
      }
    }, 1);
    await first.waitFor(() => answered.completions.size >= 150, 30_000);
    first.child.kill('SIGKILL');
    const exit = await first.exited;
    clearInterval(pump);
    expect(exit.signal).toBe('SIGKILL');
    // Count what was answered from every line that reached us before the kill.
    for (; handled < first.lines.length; handled++) {
      const line = first.lines[handled] as Line;
      if (!isObject(line) || typeof line.id !== 'number' || !('result' in line)) continue;
      const taskId = (line.result as { task: { id: string } }).task.id;
      if (kinds.get(line.id) === 'send') answered.sends.add(taskId);
      else answered.completions.add(taskId);
    }
    expect(answered.sends.size).toBeGreaterThan(150);

    const second = new RawServe(tmp.db);
    cleanups.push(async () => {
      if (second.child.exitCode === null) await second.kill();
    });
    const w = (await second.call('a2a.agents.register', { name: 'worker', contextId: 'w' })) as { token: string };
    const { tasks } = (await second.call('a2a.tasks.list', { token: w.token, role: 'worker' })) as {
      tasks: { id: string; status: { state: string } }[];
    };
    const found = new Map(tasks.map((t) => [t.id, t.status.state]));
    for (const taskId of answered.sends) expect(found.has(taskId), taskId).toBe(true);
    for (const taskId of answered.completions) expect(found.get(taskId), taskId).toBe('completed');
    // Every requester regains its tasks under the same (contextId, name), with its wake-ups in the log.
    for (const r of requesters) {
      const again = (await second.call('a2a.agents.register', { name: 'requester', contextId: r.contextId })) as {
        token: string;
      };
      const mine = (await second.call('a2a.tasks.list', { token: again.token, role: 'requester' })) as {
        tasks: { id: string; status: { state: string } }[];
      };
      const { events } = (await second.call('a2a.events.since', { token: again.token, after: 0, limit: 1000 })) as {
        events: { seq: number; params: { event: { taskId: string } } }[];
      };
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const woken = new Set(events.map((e) => e.params.event.taskId));
      for (const t of mine.tasks) if (t.status.state === 'completed') expect(woken.has(t.id)).toBe(true);
    }
    expect(await second.end()).toEqual({ code: 0, signal: null });
  });
});
