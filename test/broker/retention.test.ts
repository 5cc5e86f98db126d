import { statSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { createSequentialIdSource } from '../../src/persistence/kernel/ids.js';
import { BrokerError } from '../../src/protocol/broker-error.js';
import { type Agent, register, settle, tempDir, text } from './helpers.js';

/** A clock the test moves by hand. */
function manualClock(start = Date.UTC(2026, 0, 1)) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms), set: (ms: number) => (t = ms) };
}

const TEXT_200 = 'x'.repeat(200);

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function count(path: string, sql: string, ...args: unknown[]): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(sql).get(...args) as { n: number }).n;
  } finally {
    db.close();
  }
}

/** Runs `n` tasks (at most 100: the bounds per context and registration) to completion: send, working, completed with a 200-character answer. */
async function runTasks(broker: Broker, req: Agent, wrk: Agent, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let done = 0; done < n; done += 500) {
    const batch = Math.min(500, n - done);
    const sent = await Promise.all(
      Array.from({ length: batch }, () => broker.send({ token: req.token, to: wrk.agentId, message: text(TEXT_200) })),
    );
    await Promise.all(sent.map(({ task }) => broker.setStatus({ token: wrk.token, id: task.id, state: 'working' })));
    await Promise.all(
      sent.map(({ task }) =>
        broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text(TEXT_200) }),
      ),
    );
    ids.push(...sent.map(({ task }) => task.id));
  }
  return ids;
}

describe('retention of ended tasks', () => {
  it('removes 5,000 ended tasks whole, keeps the live ones and the referenced, and refuses a pruned cursor', async () => {
    const t = tempDir();
    const path = join(t.dir, 'a2a.db');
    const clock = manualClock();
    let broker = createBroker({ path, clock, ids: createSequentialIdSource('r') });
    cleanups.push(async () => {
      await broker.close();
      t.cleanup();
    });
    const req = await register(broker, 'req', 'ctx');
    const wrk = await register(broker, 'wrk', 'w');
    // A live task from before the prune: its history stays whole.
    const live = (await broker.send({ token: req.token, to: wrk.agentId, message: text('live one') })).task;
    await broker.setStatus({ token: wrk.token, id: live.id, state: 'input-required', message: text('which?') });
    // An ended task that a live task's history names as its parent: kept.
    const parent = (await broker.send({ token: req.token, to: wrk.agentId, message: text('parent') })).task;
    await broker.setStatus({ token: wrk.token, id: parent.id, state: 'completed' });
    // 5,000 ended tasks: the first 100 between these two, the rest between parties of their own.
    const ended = await runTasks(broker, req, wrk, 100);
    for (let group = 1; group < 50; group++) {
      const r = await register(broker, 'req', `ctx-${group}`);
      const w = await register(broker, 'wrk', `w-${group}`);
      ended.push(...(await runTasks(broker, r, w, 100)));
    }
    const child = (
      await broker.send({
        token: req.token,
        to: wrk.agentId,
        message: { parts: [{ kind: 'text', text: 'child' }], metadata: { switchboard: { parentTaskId: parent.id } } },
      })
    ).task;
    await settle();
    const lastSeqBefore = wrk.received.at(-1)?.seq ?? 0;
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks')).toBe(5003);
    const liveBefore = (await broker.getTask({ token: req.token, id: live.id })).task;

    // Everything so far ended more than an hour ago; a task ending now does not.
    clock.advance(2 * 3600_000);
    const recent = (await broker.send({ token: req.token, to: wrk.agentId, message: text('recent') })).task;
    await broker.setStatus({ token: wrk.token, id: recent.id, state: 'completed' });
    const endedBefore = new Date(clock.now() - 3600_000).toISOString();

    const dry = await broker.pruneTasks({ endedBefore, dryRun: true });
    expect(dry.removed).toEqual({
      tasks: 5000,
      messages: 10_000,
      artifacts: 0,
      pushConfigs: 0,
      events: dry.removed.events,
    });
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks')).toBe(5004);

    await broker.close();
    const sizeBefore = statSync(path).size;
    broker = createBroker({ path, clock, ids: createSequentialIdSource('s') });
    const req2 = await register(broker, 'req', 'ctx');
    const wrk2 = await register(broker, 'wrk', 'w');
    const result = await broker.pruneTasks({ endedBefore });
    expect(result.removed).toEqual(dry.removed);
    expect(result.removed.tasks).toBe(5000);
    expect(result.kept).toEqual({ referenced: 1, workItems: 0 });
    expect(result.batches).toBeGreaterThan(10);
    expect(result.freedPages).toBeGreaterThan(0);

    // Rows gone for the ended tasks only, in every table.
    // Messages and events name their task by its integer key (`a2a_tasks.task`), the others by its id.
    const keys = count(path, 'SELECT COALESCE(MAX(task), 0) AS n FROM a2a_tasks');
    expect(keys).toBeGreaterThan(5000);
    for (const table of ['a2a_tasks', 'a2a_messages', 'a2a_events', 'a2a_artifacts', 'a2a_push_configs']) {
      const byKey = table === 'a2a_messages' || table === 'a2a_events';
      const left = count(
        path,
        byKey
          ? `SELECT COUNT(*) AS n FROM ${table} WHERE task NOT IN (SELECT task FROM a2a_tasks)`
          : `SELECT COUNT(*) AS n FROM ${table} WHERE task_id IN (SELECT value FROM json_each(?))`,
        ...(byKey ? [] : [JSON.stringify(ended)]),
      );
      expect(left, table).toBe(0);
    }
    const kept = [live.id, parent.id, child.id, recent.id];
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks')).toBe(4);
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_messages')).toBe(2 + 1 + 1 + 1);
    for (const id of kept) expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks WHERE task_id = ?', id)).toBe(1);
    expect((await broker.getTask({ token: req2.token, id: live.id })).task).toEqual(liveBefore);

    // The worker's log was cut: a cursor below the cut is refused, naming the oldest cursor kept.
    const refused = await broker.eventsSince({ token: wrk2.token, after: 0 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(BrokerError);
    const error = refused as BrokerError;
    expect(error.code).toBe('A2A_EVENTS_PRUNED');
    const oldest = error.details?.oldestCursor as number;
    expect(oldest).toBeGreaterThan(0);
    expect(error.message).toContain(`after >= ${oldest}`);
    // From the oldest cursor on, the log is whole and gap-free.
    const page = (await broker.eventsSince({ token: wrk2.token, after: oldest, limit: 1000 })).events;
    expect(page.map((e) => e.seq)).toEqual(Array.from({ length: page.length }, (_, i) => oldest + 1 + i));
    // The recent task's creation came after `lastSeqBefore`.
    expect(page.at(-1)?.seq).toBe(lastSeqBefore + 1);
    // Seqs are never reused: the next event comes after the last one ever written.
    await broker.resubscribe({ token: wrk2.token, id: recent.id });
    const next = (await broker.eventsSince({ token: wrk2.token, after: lastSeqBefore + 1 })).events;
    expect(next.map((e) => e.seq)).toEqual([lastSeqBefore + 2]);

    await broker.close();
    expect(statSync(path).size).toBeLessThan(sizeBefore / 4);
    const db = new Database(path, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.pragma('auto_vacuum', { simple: true })).toBe(2);
    db.close();
    broker = createBroker({ path, clock, ids: createSequentialIdSource('u') });
  }, 120_000);

  it('prunes on a timer with taskRetentionMs, and a requester of a pruned context may create tasks again', async () => {
    const t = tempDir();
    const path = join(t.dir, 'a2a.db');
    const clock = manualClock();
    const broker = createBroker({ path, clock, ids: createSequentialIdSource('r'), taskRetentionMs: 1000 });
    cleanups.push(async () => {
      await broker.close();
      t.cleanup();
    });
    const req = await register(broker, 'req', 'ctx');
    const wrk = await register(broker, 'wrk', 'w');
    await runTasks(broker, req, wrk, 20);
    clock.advance(5000);
    for (let i = 0; i < 200 && count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks') > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_tasks')).toBe(0);
    expect(count(path, 'SELECT COUNT(*) AS n FROM a2a_events')).toBe(0);
    const again = await broker.send({ token: req.token, to: wrk.agentId, message: text('again') });
    expect(again.task.status.state).toBe('submitted');
  }, 60_000);

  it('refuses a bad taskRetentionMs before touching the file', () => {
    const t = tempDir();
    cleanups.push(t.cleanup);
    const path = join(t.dir, 'a2a.db');
    for (const bad of [0, -1, 1.5, Number.NaN]) {
      expect(() => createBroker({ path, taskRetentionMs: bad })).toThrow(/taskRetentionMs must be a whole number/);
    }
    expect(() => statSync(path)).toThrow();
  });

  it('keeps the tasks of a Coordinator work item that has not ended (coord_items in the same file)', async () => {
    const t = tempDir();
    const path = join(t.dir, 'a2a.db');
    const clock = manualClock();
    const broker = createBroker({ path, clock, ids: createSequentialIdSource('r') });
    cleanups.push(async () => {
      await broker.close();
      t.cleanup();
    });
    const side = new Database(path);
    side.exec(
      'CREATE TABLE coord_items (id TEXT PRIMARY KEY, finished_at INTEGER, mirrored INTEGER NOT NULL DEFAULT 0)',
    );
    side.prepare('INSERT INTO coord_items VALUES (?, ?, ?)').run('item-open', null, 0);
    side.prepare('INSERT INTO coord_items VALUES (?, ?, ?)').run('item-done', 1, 1);
    side.close();
    for (const ctx of ['item-open', 'item-done']) {
      const edge = await register(broker, 'edge', ctx, 'parent');
      const coord = await register(broker, 'coordinator', ctx, 'parent');
      await runTasks(broker, edge, coord, 3);
    }
    clock.advance(10_000);
    const result = await broker.pruneTasks({ endedBefore: new Date(clock.now()).toISOString() });
    expect(result.removed.tasks).toBe(3);
    expect(result.kept).toEqual({ referenced: 0, workItems: 3 });
    expect(count(path, "SELECT COUNT(*) AS n FROM a2a_tasks WHERE context_id = 'item-open'")).toBe(3);
    expect(count(path, "SELECT COUNT(*) AS n FROM a2a_tasks WHERE context_id = 'item-done'")).toBe(0);
  });

  it('refuses params that are not an instant, changing nothing', async () => {
    const t = tempDir();
    const path = join(t.dir, 'a2a.db');
    const broker = createBroker({ path });
    cleanups.push(async () => {
      await broker.close();
      t.cleanup();
    });
    for (const endedBefore of ['yesterday', '2026-01-01', '2026-02-30T00:00:00.000Z']) {
      const error = await broker.dispatch('broker.tasks.prune', { endedBefore }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as BrokerError).code, endedBefore).toBe('INVALID_PARAMS');
    }
  });
});
