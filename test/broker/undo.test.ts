/**
 * A call that fails half-way (here: SQLite refuses a write, through a trigger
 * installed from a second connection) must leave nothing behind: no row and
 * no in-memory change (task actors, registry, tokens, send counters).
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type Harness, dumpDatabase, harness, register, settle, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

function failEventWrites(path: string): () => void {
  const db = new Database(path);
  db.exec(`CREATE TRIGGER fail_events BEFORE INSERT ON a2a_events BEGIN SELECT RAISE(ABORT, 'injected'); END`);
  return () => {
    db.exec('DROP TRIGGER fail_events');
    db.close();
  };
}

describe('a call failing half-way', () => {
  it('a creation: no task, no actor, no counted send; -32603', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const heal = failEventWrites(h.path);
    const before = dumpDatabase(h.path);
    const e = await h.broker.send({ token: req.token, to: 'wrk', message: text('x') }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(dumpDatabase(h.path)).toEqual(before);
    expect(h.broker.liveTaskCount()).toBe(0);
    heal();
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('y') });
    expect(task.status.state).toBe('submitted');
    await settle();
    expect(wrk.received.map((ev) => ev.seq)).toEqual([1]);
    expect(dumpDatabase(h.path).a2a_agents).toContainEqual(
      expect.objectContaining({ agent_id: req.agentId, sends: 1 }),
    );
  });

  it('a deregistration with open tasks: the tasks, the registration and its token all stay', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: wrk.token, to: 'req', message: text('2') })).task;
    const heal = failEventWrites(h.path);
    const before = dumpDatabase(h.path);
    const e = await h.broker.deregister({ token: wrk.token }).catch((x: unknown) => x);
    expect(e).toMatchObject({ code: 'INTERNAL_ERROR' });
    expect(dumpDatabase(h.path)).toEqual(before);
    expect(h.broker.liveTaskCount()).toBe(2);
    expect(h.broker.liveAgentCount()).toBe(2);
    heal();
    // The worker is still registered, its token works, the tasks still move.
    expect((await h.broker.listAgents({ token: wrk.token })).agents.map((a) => a.name)).toEqual(['req']);
    expect((await h.broker.listAgents({ token: req.token })).agents.map((a) => a.name)).toEqual(['wrk']);
    await h.broker.setStatus({ token: wrk.token, id: t1.id, state: 'working' });
    await h.broker.setStatus({ token: req.token, id: t2.id, state: 'input-required' });
    await h.broker.deregister({ token: wrk.token });
    expect((await h.broker.getTask({ token: req.token, id: t1.id })).task.status.state).toBe('failed');
    expect((await h.broker.getTask({ token: req.token, id: t2.id })).task.status.state).toBe('canceled');
  });

  it('a status move: the task actor keeps its state', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'input-required' });
    const heal = failEventWrites(h.path);
    await expect(h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed' })).rejects.toMatchObject({
      code: 'INTERNAL_ERROR',
    });
    heal();
    expect(h.broker.liveTaskCount()).toBe(1);
    // Still input-required: input-required -> input-required is refused, the wake-up works.
    await expect(h.broker.setStatus({ token: wrk.token, id: task.id, state: 'input-required' })).rejects.toMatchObject({
      code: 'A2A_INVALID_TRANSITION',
      details: { from: 'input-required' },
    });
    const woken = await h.broker.send({ token: req.token, taskId: task.id, message: text('answer') });
    expect(woken.task.status.state).toBe('working');
  });

  it('inside a batch, only the failing call is undone', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const heal = failEventWrites(h.path);
    const results = await Promise.allSettled([
      h.broker.register({ name: 'newcomer', contextId: 'ctx-c' }),
      h.broker.send({ token: req.token, to: 'wrk', message: text('x') }),
      h.broker.register({ name: 'another', contextId: 'ctx-c' }),
    ]);
    heal();
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(h.broker.liveAgentCount()).toBe(4);
    expect(h.broker.liveTaskCount()).toBe(0);
    expect(dumpDatabase(h.path).a2a_tasks).toEqual([]);
  });
});
