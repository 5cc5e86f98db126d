import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { createLogger } from '../../src/log/logger.js';
import { LIVE_TASK_STATES, WORKER_STATUS_TABLE } from '../../src/machines/task-transitions.js';
import { A2A_MIGRATION_SET } from '../../src/persistence/a2a/schema.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import type { TaskState } from '../../src/protocol/task.js';
import { type Harness, dumpDatabase, harness, register, settle, tempDir, text } from './helpers.js';

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

function withoutAgents(dump: Record<string, unknown[]>) {
  const { a2a_agents: _a, ...rest } = dump;
  return rest;
}

describe('schema and migrations', () => {
  it('creates schema version 16 on a new file', async () => {
    h = harness();
    expect(h.broker.opened.schema).toEqual({ from: 0, to: 16 });
    await h.broker.close();
    const db = new Database(h.path, { readonly: true });
    expect(schemaVersion(db, 'a2a')).toBe(16);
    const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
      (r) => r.name,
    );
    db.close();
    for (const t of ['a2a_agents', 'a2a_tasks', 'a2a_messages', 'a2a_artifacts', 'a2a_push_configs', 'a2a_events']) {
      expect(tables).toContain(t);
    }
    h.open();
    expect(h.broker.opened.schema).toEqual({ from: 16, to: 16 });
  });

  for (const version of [1, 11]) {
    it(`migrates a database at version ${version} forward to 16 in one transaction`, async () => {
      const t = tempDir();
      const path = join(t.dir, 'old.db');
      const db = openDatabase(path);
      migrate(db, { component: 'a2a', current: version, migrations: [] });
      db.exec('CREATE TABLE other_component (x INTEGER)');
      db.close();
      const broker = createBroker({ path });
      expect(broker.opened.schema).toEqual({ from: version, to: 16 });
      const a = await broker.register({ name: 'a', contextId: 'c' });
      expect(a.agentId).toBeTruthy();
      await broker.close();
      t.cleanup();
    });
  }

  it('refuses a database newer than 16 and leaves it untouched', () => {
    const t = tempDir();
    const path = join(t.dir, 'new.db');
    const db = openDatabase(path);
    migrate(db, { component: 'a2a', current: 17, migrations: [] });
    db.close();
    const before = readFileSync(path);
    expect(() => createBroker({ path })).toThrow(SchemaVersionError);
    const check = new Database(path, { readonly: true });
    expect(schemaVersion(check, 'a2a')).toBe(17);
    expect(check.prepare("SELECT COUNT(*) AS n FROM sqlite_master WHERE name LIKE 'a2a_%'").get()).toEqual({ n: 0 });
    check.close();
    expect(readFileSync(path).length).toBe(before.length);
    t.cleanup();
  });

  it('exports the migration set as component a2a, current 16', () => {
    expect(A2A_MIGRATION_SET.component).toBe('a2a');
    expect(A2A_MIGRATION_SET.current).toBe(16);
  });
});

describe('restart', () => {
  it('loses nothing: tasks, messages, artifacts, push configs and events are all there', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const t1 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('1') })).task;
    const t2 = (await h.broker.send({ token: req.token, to: 'wrk', message: text('2') })).task;
    await h.broker.setStatus({ token: wrk.token, id: t1.id, state: 'input-required', message: text('?') });
    await h.broker.addArtifact({
      token: wrk.token,
      id: t1.id,
      artifact: { artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] },
    });
    await h.broker.setPushConfig({ token: req.token, id: t2.id, config: { token: 'p' } });
    await h.broker.setStatus({ token: wrk.token, id: t2.id, state: 'completed' });
    const before = dumpDatabase(h.path);
    const t1Before = (await h.broker.getTask({ token: req.token, id: t1.id })).task;
    const b = await h.reopen();
    expect(b.opened).toMatchObject({ restoredTasks: 1, rebuiltTasks: 0, endedRegistrations: 2 });
    expect(b.liveTaskCount()).toBe(1);
    expect(withoutAgents(dumpDatabase(h.path))).toEqual(withoutAgents(before));
    const req2 = await register(b, 'req', 'ctx-a');
    expect((await b.getTask({ token: req2.token, id: t1.id })).task).toEqual(t1Before);
    expect((await b.eventsSince({ token: req2.token, after: 0 })).events.map((e) => e.method)).toEqual([
      'a2a.task.event',
      'a2a.task.event',
      'a2a.task.event',
      'a2a.push',
    ]);
  });

  it('refuses the old tokens and lets each party regain its tasks under a new agentId and token', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    const b = await h.reopen();
    expect(b.liveAgentCount()).toBe(0);
    await expect(b.getTask({ token: req.token, id: task.id })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_TOKEN',
    });
    const req2 = await register(b, 'req', 'ctx-a');
    expect(req2.agentId).not.toBe(req.agentId);
    expect(req2.token).not.toBe(req.token);
    expect((await b.listTasks({ token: req2.token })).tasks.map((t) => t.id)).toEqual([task.id]);
    // The worker is not live: it cannot be addressed until it registers again.
    await expect(b.send({ token: req2.token, to: 'wrk', message: text('x') })).rejects.toMatchObject({
      code: 'A2A_UNKNOWN_AGENT',
    });
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await b.setStatus({ token: wrk2.token, id: task.id, state: 'completed' });
    await settle();
    expect(req2.received.map((e) => e.params)).toMatchObject([{ recipient: req2.agentId, event: { final: true } }]);
  });

  it('does not fail or cancel tasks on restart', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    const b = await h.reopen();
    const req2 = await register(b, 'req', 'ctx-a');
    expect((await b.getTask({ token: req2.token, id: task.id })).task.status.state).toBe('working');
  });

  for (const state of LIVE_TASK_STATES) {
    it(`restores a ${state} task actor that accepts exactly the moves of ${state}`, async () => {
      for (const [to, allowed] of Object.entries(WORKER_STATUS_TABLE[state]) as [TaskState, boolean][]) {
        const local = harness();
        const req = await register(local.broker, 'req', 'ctx-a');
        const wrk = await register(local.broker, 'wrk', 'ctx-b');
        const { task } = await local.broker.send({ token: req.token, to: 'wrk', message: text('1') });
        if (state !== 'submitted') await local.broker.setStatus({ token: wrk.token, id: task.id, state });
        const b = await local.reopen();
        expect(b.opened.restoredTasks).toBe(1);
        const wrk2 = await register(b, 'wrk', 'ctx-b');
        const outcome = await b.setStatus({ token: wrk2.token, id: task.id, state: to }).then(
          (r) => r.task.status.state,
          (e: { code: string }) => e.code,
        );
        expect(outcome, `${state} -> ${to}`).toBe(allowed ? to : 'A2A_INVALID_TRANSITION');
        await local.close();
      }
    });
  }

  it('rebuilds a task actor whose snapshot is from another machine version, from the task row', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'auth-required' });
    await h.broker.close();
    const db = new Database(h.path);
    db.prepare('UPDATE a2a_task_actors SET machine_version = 0').run();
    db.close();
    const b = h.open();
    expect(b.opened).toMatchObject({ restoredTasks: 0, rebuiltTasks: 1 });
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await expect(b.setStatus({ token: wrk2.token, id: task.id, state: 'auth-required' })).rejects.toMatchObject({
      details: { from: 'auth-required', to: 'auth-required' },
    });
    expect((await b.setStatus({ token: wrk2.token, id: task.id, state: 'working' })).task.status.state).toBe('working');
  });

  it('rebuilds a task actor whose snapshot row is corrupt instead of refusing to open', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'input-required' });
    await h.broker.close();
    const db = new Database(h.path);
    db.prepare("UPDATE a2a_task_actors SET snapshot = '{not json'").run();
    db.close();
    const b = h.open();
    expect(b.opened).toMatchObject({ restoredTasks: 0, rebuiltTasks: 1 });
    const req2 = await register(b, 'req', 'ctx-a');
    const woken = await b.send({ token: req2.token, taskId: task.id, message: text('answer') });
    expect(woken.task.status.state).toBe('working');
  });

  it('pushes on the terminal status of a task whose push config was set before a restart', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    await h.broker.setPushConfig({ token: req.token, id: task.id, config: { token: 'hook' } });
    const b = await h.reopen();
    const req2 = await register(b, 'req', 'ctx-a');
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await b.setStatus({ token: wrk2.token, id: task.id, state: 'completed' });
    const { events } = await b.eventsSince({ token: req2.token, after: 0, limit: 100 });
    expect(events.map((e) => e.method)).toEqual(['a2a.task.event', 'a2a.push']);
    expect(events[1]?.params).toMatchObject({ taskId: task.id, token: 'hook', status: { state: 'completed' } });
  });

  it('restores a submitted task without a snapshot row and writes none on open', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    const b = await h.reopen();
    expect(b.opened).toMatchObject({ restoredTasks: 1, rebuiltTasks: 0 });
    expect(dumpDatabase(h.path).a2a_task_actors).toHaveLength(0);
    const wrk2 = await register(b, 'wrk', 'ctx-b');
    await b.setStatus({ token: wrk2.token, id: task.id, state: 'working' });
    expect(dumpDatabase(h.path).a2a_task_actors).toMatchObject([{ task_id: task.id }]);
  });

  it("keeps a snapshot row from a task's first move on, and none once it is terminal", async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('1') });
    // Submitted: the machine's initial snapshot, not written.
    expect(dumpDatabase(h.path).a2a_task_actors).toHaveLength(0);
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'working' });
    expect(dumpDatabase(h.path).a2a_task_actors).toMatchObject([{ task_id: task.id }]);
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed' });
    expect(dumpDatabase(h.path).a2a_task_actors).toHaveLength(0);
    const { task: rejected } = await h.broker.send({ token: req.token, to: 'wrk', message: text('2') });
    await h.broker.setStatus({ token: wrk.token, id: rejected.id, state: 'rejected' });
    expect(dumpDatabase(h.path).a2a_task_actors).toHaveLength(0);
  });
});

describe('tokens', () => {
  it('never reach SQLite or the logs', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = createLogger({ level: 'trace', destination });
    h = harness({ logger });
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await register(h.broker, `a${i}`, 'ctx');
      tokens.push(a.token);
      if (i > 0) await h.broker.send({ token: a.token, to: 'a0', message: text('secret body') });
    }
    await h.broker.deregister({ token: tokens[1] as string });
    await h.reopen();
    const dir = join(h.path, '..');
    const bytes = readdirSync(dir).map((f) => readFileSync(join(dir, f)).toString('latin1'));
    const hexes = tokens.map((t) => Buffer.from(t, 'base64url').toString('hex'));
    for (const token of tokens) {
      for (const b of bytes) expect(b.includes(token)).toBe(false);
      expect(lines.join('').includes(token)).toBe(false);
    }
    for (const hex of hexes) for (const b of bytes) expect(b.includes(hex)).toBe(false);
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.join('').includes('secret body')).toBe(false);
  });
});

describe('schema 14: retention', () => {
  it('a file of schema 13 opens, keeps every row, and gets incremental auto-vacuum', async () => {
    const t = tempDir();
    const path = join(t.dir, 'v13.db');
    // The file as version 13 wrote it: its migrations only, no auto-vacuum, rows in every table.
    const db = openDatabase(path);
    migrate(db, {
      component: 'a2a',
      current: 13,
      migrations: A2A_MIGRATION_SET.migrations.filter((m) => m.version <= 13),
    });
    const at = '2026-01-01T00:00:00.000Z';
    db.exec(`INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
             VALUES ('ag1', 'c', 'req', 'subagent', '', '[]', 1, '${at}'), ('ag2', 'c', 'wrk', 'subagent', '', '[]', 0, '${at}')`);
    const insertTask = db.prepare(
      `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
         creation_message_id, history_count, created_at, updated_at) VALUES (?, 'c', 'req', 'c', 'wrk', ?, ?, ?, 1, ?, ?)`,
    );
    const insertMessage = db.prepare(
      `INSERT INTO a2a_messages (task_id, message_id, position, role, from_name, body) VALUES (?, ?, 1, 'user', 'req', ?)`,
    );
    const insertEvent = db.prepare(
      `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task_id, params, created_at)
       VALUES ('c', 'wrk', ?, 'a2a.task.event', ?, ?, ?)`,
    );
    for (let i = 1; i <= 300; i++) {
      const id = `t${i}`;
      const state = i % 3 === 0 ? 'working' : 'completed';
      const message = {
        kind: 'message',
        messageId: `m${i}`,
        role: 'user',
        from: 'req',
        taskId: id,
        contextId: 'c',
        timestamp: at,
        parts: [{ kind: 'text', text: 'y'.repeat(200) }],
        // The first names a parent task (as a Coordinator hop's does): the migration fills its column.
        ...(i === 1 ? { metadata: { switchboard: { parentTaskId: 't3' } } } : {}),
      };
      insertTask.run(id, state, JSON.stringify({ state, timestamp: at }), `m${i}`, at, at);
      insertMessage.run(id, `m${i}`, JSON.stringify(message));
      insertEvent.run(
        i,
        id,
        JSON.stringify({
          recipient: 'ag2',
          recipientName: 'wrk',
          contextId: 'c',
          seq: i,
          event: {
            kind: 'status-update',
            taskId: id,
            contextId: 'c',
            status: i % 2 === 0 ? { state, timestamp: at, message } : { state, timestamp: at },
            final: false,
          },
        }),
        at,
      );
      if (state === 'working') {
        db.prepare('INSERT INTO a2a_task_actors (task_id, machine_version, snapshot) VALUES (?, 1, ?)').run(id, '{}');
      }
    }
    expect(db.pragma('auto_vacuum', { simple: true })).toBe(0);
    db.close();
    const before = dumpDatabase13(path);

    const broker = createBroker({ path });
    expect(broker.opened.schema).toEqual({ from: 13, to: 16 });
    // A row of schema 13 holds the status's message whole: it is read as it is.
    const wrk = await broker.register({ name: 'wrk', contextId: 'c' });
    const { events } = await broker.eventsSince({ token: wrk.token, after: 0, limit: 1000 });
    expect(events).toHaveLength(300);
    expect(events[0]?.params).toEqual(
      JSON.parse(before.a2a_events?.[0] ? (before.a2a_events[0] as { params: string }).params : '{}'),
    );
    const withMessage = events.find(
      (e) =>
        e.method === 'a2a.task.event' &&
        e.params.event.kind === 'status-update' &&
        e.params.event.status.message !== undefined,
    );
    expect(withMessage).toBeDefined();
    await broker.close();
    const after = dumpDatabase13(path);
    // Schema 14's column of a message's parent task, filled from the bodies of schema 13.
    const parents = (after.a2a_messages as { message_id: string; parent_task_id: string | null }[])
      .filter((m) => m.parent_task_id !== null)
      .map((m) => [m.message_id, m.parent_task_id]);
    expect(parents).toEqual([['m1', 't3']]);
    after.a2a_messages = (after.a2a_messages as { parent_task_id?: unknown }[]).map(
      ({ parent_task_id: _parent, ...row }) => row,
    );
    // Every row of every table is there (the agents were ended by the restart; the actors rebuilt).
    for (const table of ['a2a_tasks', 'a2a_messages', 'a2a_events', 'a2a_artifacts', 'a2a_push_configs']) {
      expect(after[table], table).toEqual(before[table]);
    }
    // The two of schema 13, and the worker registered again to read its log.
    expect(after.a2a_agents?.length).toBe(3);
    expect(after.a2a_task_actors?.length).toBe(100);
    const check = new Database(path, { readonly: true });
    expect(check.pragma('auto_vacuum', { simple: true })).toBe(2);
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(schemaVersion(check, 'a2a')).toBe(16);
    check.close();
    t.cleanup();
  });
});

describe('schema 15: fewer bytes per task', () => {
  it('a file of schema 14 opens, keeps every row, reads its events and histories, and cursors stay valid', async () => {
    const t = tempDir();
    const path = join(t.dir, 'v14.db');
    // The file as version 14 wrote it: its rows in the shapes of 14 (references, compact events as objects).
    const db = openDatabase(path);
    migrate(db, {
      component: 'a2a',
      current: 14,
      migrations: A2A_MIGRATION_SET.migrations.filter((m) => m.version <= 14),
    });
    const at = '2026-01-01T00:00:00.000Z';
    db.exec(`INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
             VALUES ('ag1', 'c', 'req', 'subagent', '', '[]', 1, '${at}'), ('ag2', 'c', 'wrk', 'subagent', '', '[]', 0, '${at}')`);
    const insertTask = db.prepare(
      `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
         creation_message_id, history_count, created_at, updated_at) VALUES (?, 'c', 'req', 'c', 'wrk', 'completed', ?, ?, 2, ?, ?)`,
    );
    const insertMessage = db.prepare(
      `INSERT INTO a2a_messages (task_id, message_id, position, role, from_name, body, parent_task_id)
       VALUES (?, ?, ?, ?, ?, ?, NULL)`,
    );
    const insertEvent = db.prepare(
      `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task_id, params, created_at)
       VALUES ('c', 'wrk', ?, 'a2a.task.event', ?, ?, ?)`,
    );
    const body = (t: string) => JSON.stringify({ contextId: 'c', timestamp: at, parts: [{ kind: 'text', text: t }] });
    for (let i = 1; i <= 200; i++) {
      const id = `t${i}`;
      insertTask.run(
        id,
        JSON.stringify({ state: 'completed', timestamp: at, message: { $m: `a${i}` } }),
        `q${i}`,
        at,
        at,
      );
      insertMessage.run(id, `q${i}`, 1, 'user', 'req', body(`ask ${i}`));
      insertMessage.run(id, `a${i}`, 2, 'agent', 'wrk', body(`answer ${i}`));
      insertEvent.run(
        i,
        id,
        JSON.stringify({
          recipient: 'ag2',
          contextId: 'c',
          event: {
            kind: 'status-update',
            contextId: 'c',
            status: { state: 'completed', timestamp: at, message: { $m: `a${i}` } },
            final: true,
          },
        }),
        at,
      );
    }
    db.close();
    const before = dumpDatabase13(path);

    const broker = createBroker({ path });
    expect(broker.opened.schema).toEqual({ from: 14, to: 16 });
    const wrk = await broker.register({ name: 'wrk', contextId: 'c' });
    const answer = (i: number) => ({
      kind: 'message',
      messageId: `a${i}`,
      role: 'agent',
      from: 'wrk',
      taskId: `t${i}`,
      contextId: 'c',
      timestamp: at,
      parts: [{ kind: 'text', text: `answer ${i}` }],
    });
    const all = await broker.eventsSince({ token: wrk.token, after: 0, limit: 1000 });
    expect(all.events.map((e) => e.seq)).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    expect(all.events[41]?.params).toEqual({
      recipient: 'ag2',
      recipientName: 'wrk',
      contextId: 'c',
      seq: 42,
      event: {
        kind: 'status-update',
        taskId: 't42',
        contextId: 'c',
        status: { state: 'completed', timestamp: at, message: answer(42) },
        final: true,
      },
    });
    // A cursor taken before the migration reads on from where it was, without a gap.
    const later = await broker.eventsSince({ token: wrk.token, after: 150, limit: 1000 });
    expect(later.events.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i + 151));
    const task = await broker.getTask({ token: wrk.token, id: 't7' });
    expect(task.task.history.map((m) => m.messageId)).toEqual(['q7', 'a7']);
    expect(task.task.status.message).toEqual(answer(7));
    await broker.close();
    const after = dumpDatabase13(path);
    for (const table of ['a2a_tasks', 'a2a_messages', 'a2a_events']) {
      expect(after[table], table).toEqual(before[table]);
    }
    const check = new Database(path, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    const indexes = check
      .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'a2a_messages' ORDER BY name")
      .all();
    expect(indexes).toEqual([{ name: 'a2a_messages_parent' }]);
    expect(schemaVersion(check, 'a2a')).toBe(16);
    check.close();
    t.cleanup();
  });
});

describe('schema 16: integer task keys', () => {
  it('a file of schema 15 opens, keeps every row, reads its events and histories, and cursors go on without a gap', async () => {
    const t = tempDir();
    const path = join(t.dir, 'v15.db');
    // The file as version 15 wrote it: text task keys, compact status events as arrays of strings.
    const db = openDatabase(path);
    migrate(db, {
      component: 'a2a',
      current: 15,
      migrations: A2A_MIGRATION_SET.migrations.filter((m) => m.version <= 15),
    });
    const at = '2026-01-01T00:00:00.000Z';
    db.exec(`INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
             VALUES ('ag1', 'c', 'req', 'subagent', '', '[]', 1, '${at}'), ('ag2', 'w', 'wrk', 'subagent', '', '[]', 0, '${at}')`);
    const insertTask = db.prepare(
      `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
         creation_message_id, history_count, created_at, updated_at) VALUES (?, 'c', 'req', 'w', 'wrk', 'completed', '{"message":{"$p":2}}', ?, 2, ?, ?)`,
    );
    const insertMessage = db.prepare(
      `INSERT INTO a2a_messages (task_id, message_id, position, role, from_name, body, parent_task_id)
       VALUES (?, ?, ?, ?, ?, ?, NULL)`,
    );
    const insertEvent = db.prepare(
      `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task_id, params, created_at)
       VALUES ('c', 'req', ?, 'a2a.task.event', ?, ?, ?)`,
    );
    const body = (text: string) => JSON.stringify({ timestamp: at, parts: [{ kind: 'text', text }] });
    // Message ids as the broker makes them (canonical UUIDs): held as 16 bytes from schema 16.
    const uuid = (kind: number, i: number) => `0190a000-0000-7000-8000-${String(kind * 1000 + i).padStart(12, '0')}`;
    for (let i = 1; i <= 100; i++) {
      const id = `t${i}`;
      insertTask.run(id, uuid(1, i), at, at);
      insertMessage.run(id, uuid(1, i), 1, 'user', 'req', body(`ask ${i}`));
      insertMessage.run(id, uuid(2, i), 2, 'agent', 'wrk', body(`answer ${i}`));
      insertEvent.run(i, id, JSON.stringify(['ag1', 'c', 'completed', at, 1, 2]), at);
    }
    db.prepare(
      `INSERT INTO a2a_artifacts (task_id, artifact_id, position, body, updated_at) VALUES ('t5', 'a', 1, '{"artifactId":"a","parts":[]}', ?)`,
    ).run(at);
    db.close();
    const before = dumpDatabase13(path);

    const broker = createBroker({ path });
    expect(broker.opened.schema).toEqual({ from: 15, to: 16 });
    const req = await broker.register({ name: 'req', contextId: 'c' });
    const answer = (i: number) => ({
      kind: 'message',
      messageId: uuid(2, i),
      role: 'agent',
      from: 'wrk',
      taskId: `t${i}`,
      contextId: 'c',
      timestamp: at,
      parts: [{ kind: 'text', text: `answer ${i}` }],
    });
    const all = await broker.eventsSince({ token: req.token, after: 0, limit: 1000 });
    expect(all.events.map((e) => e.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(all.events[41]?.params).toEqual({
      recipient: 'ag1',
      recipientName: 'req',
      contextId: 'c',
      seq: 42,
      event: {
        kind: 'status-update',
        taskId: 't42',
        contextId: 'c',
        status: { state: 'completed', timestamp: at, message: answer(42) },
        final: true,
      },
    });
    const task = await broker.getTask({ token: req.token, id: 't7' });
    expect(task.task.history.map((m) => m.messageId)).toEqual([uuid(1, 7), uuid(2, 7)]);
    expect(task.task.status.message).toEqual(answer(7));
    // A cursor taken before the migration reads on; the log goes on from 101 with no gap.
    const wrk = await broker.register({ name: 'wrk', contextId: 'w' });
    const sent = await broker.send({ token: req.token, to: wrk.agentId, message: text('after') });
    await broker.setStatus({ token: wrk.token, id: sent.task.id, state: 'completed', message: text('done') });
    const later = await broker.eventsSince({ token: req.token, after: 90, limit: 1000 });
    expect(later.events.map((e) => e.seq)).toEqual(Array.from({ length: 11 }, (_, i) => i + 91));
    expect((await broker.getTask({ token: req.token, id: sent.task.id })).task.history).toHaveLength(2);
    await broker.close();
    const after = dumpDatabase13(path);
    // Every row of schema 15 is there, with the same values (the ids read back from their bytes).
    const old = (table: string) =>
      (after[table] ?? []).filter((r) => /^t[0-9]+$/.test((r as { task_id: string }).task_id));
    for (const table of ['a2a_tasks', 'a2a_messages', 'a2a_events', 'a2a_artifacts']) {
      expect(old(table), table).toEqual(before[table]);
    }
    const check = new Database(path, { readonly: true });
    expect(check.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(check.pragma('foreign_key_check')).toEqual([]);
    expect(check.prepare('SELECT typeof(message_id) AS t FROM a2a_messages LIMIT 1').get()).toEqual({ t: 'blob' });
    expect(schemaVersion(check, 'a2a')).toBe(16);
    check.close();
    t.cleanup();
  });
});

/** The rows of the tables version 13 had. */
function dumpDatabase13(path: string): Record<string, unknown[]> {
  const db = new Database(path, { readonly: true });
  try {
    const keyed = db.prepare("SELECT 1 FROM pragma_table_info('a2a_tasks') WHERE name = 'task'").get() !== undefined;
    const out: Record<string, unknown[]> = {};
    for (const table of [
      'a2a_agents',
      'a2a_tasks',
      'a2a_messages',
      'a2a_artifacts',
      'a2a_push_configs',
      'a2a_events',
      'a2a_task_actors',
    ]) {
      const source = keyed ? (LOGICAL_13[table] ?? table) : table;
      out[table] = db.prepare(`SELECT * FROM ${source} ORDER BY 1, 2, 3`).all();
    }
    return out;
  } finally {
    db.close();
  }
}

/**
 * Since schema 16, messages and events hold their task's integer key, an
 * event its method as 0 or 1 and its time in milliseconds: read back in the
 * columns of schema 13 to 15 (the same values), to compare with a dump
 * taken before the migration.
 */
const ID_TEXT = (column: string) =>
  `CASE WHEN typeof(${column}) = 'blob' THEN lower(substr(hex(${column}), 1, 8) || '-' || substr(hex(${column}), 9, 4) || '-'
    || substr(hex(${column}), 13, 4) || '-' || substr(hex(${column}), 17, 4) || '-' || substr(hex(${column}), 21)) ELSE ${column} END`;
const LOGICAL_13: Record<string, string> = {
  a2a_tasks: `(SELECT task_id, context_id, requester_name, agent_context_id, agent_name, state,
    CASE WHEN status GLOB '[0-9]*' THEN '{"message":{"$p":' || status || '}}' ELSE status END AS status,
    ${ID_TEXT('creation_message_id')} AS creation_message_id, history_count, created_at, updated_at, metadata FROM a2a_tasks)`,
  a2a_messages: `(SELECT t.task_id, ${ID_TEXT('m.message_id')} AS message_id, m.position, m.role, m.from_name, m.body, m.parent_task_id
    FROM a2a_messages m JOIN a2a_tasks t ON t.task = m.task)`,
  a2a_events: `(SELECT e.party_context_id, e.party_name, e.seq,
    CASE e.method WHEN 1 THEN 'a2a.push' ELSE 'a2a.task.event' END AS method, t.task_id, e.params,
    strftime('%Y-%m-%dT%H:%M:%fZ', e.created_at / 1000.0, 'unixepoch') AS created_at
    FROM a2a_events e JOIN a2a_tasks t ON t.task = e.task)`,
};
