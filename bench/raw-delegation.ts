/**
 * The SQLite floor of one delegation: the broker's writes for "a requester
 * creates a task, the worker completes it" (and the reads they depend on), as
 * plain prepared better-sqlite3 statements on the broker's own schema, with
 * none of the broker's work (validation, actors, routing, JSON-RPC).
 * `bench:broker` uses it one transaction per call as its reference;
 * `bench:peer` also runs it with many delegations per transaction, as group
 * commit would, to bound what any broker keeping these rows could reach.
 */
import { join } from 'node:path';
import { A2A_MIGRATION_SET } from '../src/persistence/a2a/schema.js';
import { openDatabase } from '../src/persistence/kernel/database.js';
import { createUuidV7Source } from '../src/persistence/kernel/ids.js';
import { migrate } from '../src/persistence/kernel/migrations.js';

/** A rate (per wall-clock second) and the process CPU time per unit, in µs. */
export interface Rate {
  perSecond: number;
  cpuMicros: number;
}

export interface RawDelegationOptions {
  delegations: number;
  /**
   * Delegations per transaction pair: 1 commits every call alone (a creation,
   * then a completion); N runs N creations in one transaction, then their N
   * completions in the next.
   */
  perTransaction: number;
  /** A requester context holds at most 128 tasks: a new requester every this many delegations. */
  tasksPerRequester?: number;
  /**
   * `inline` (SQLite's default: the commit that crosses 1,000 WAL pages
   * checkpoints) or `none` (no checkpoint during the loop: a floor that
   * leaves checkpointing out altogether).
   */
  checkpoints?: 'inline' | 'none';
}

const message = { parts: [{ kind: 'text' as const, text: 'please do the thing' }] };
const reply = { parts: [{ kind: 'text' as const, text: 'done' }] };

/** Runs `options.delegations` raw delegations on a new file in `dir`; the file is closed after. */
export function rawDelegations(dir: string, name: string, options: RawDelegationOptions): Rate {
  const db = openDatabase(join(dir, `${name}.db`));
  migrate(db, A2A_MIGRATION_SET);
  if (options.checkpoints === 'none') db.pragma('wal_autocheckpoint = 0');
  const tasksPerRequester = options.tasksPerRequester ?? 100;
  const ids = createUuidV7Source();
  const s = {
    insertAgent: db.prepare(
      `INSERT INTO a2a_agents (agent_id, context_id, name, kind, description, skills, sends, registered_at)
       VALUES (?, ?, ?, 'subagent', '', '[]', 0, ?)`,
    ),
    count: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE context_id = ?'),
    insertTask: db.prepare(
      `INSERT INTO a2a_tasks (task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
         creation_message_id, history_count, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
    ),
    insertMessage: db.prepare(
      `INSERT INTO a2a_messages (task, message_id, position, role, from_name, body)
       VALUES ((SELECT task FROM a2a_tasks WHERE task_id = ?), ?, ?, ?, ?, ?)`,
    ),
    putActor: db.prepare('INSERT INTO a2a_task_actors (task_id, machine_version, snapshot) VALUES (?, 1, ?)'),
    sends: db.prepare('UPDATE a2a_agents SET sends = sends + 1 WHERE agent_id = ?'),
    seq: db.prepare(
      'SELECT COALESCE(MAX(seq), 0) AS seq FROM a2a_events WHERE party_context_id = ? AND party_name = ?',
    ),
    event: db.prepare(
      `INSERT INTO a2a_events (party_context_id, party_name, seq, method, task, params, created_at)
       VALUES (?, ?, ?, 0, (SELECT task FROM a2a_tasks WHERE task_id = ?), ?, CAST(round(unixepoch(?, 'subsec') * 1000) AS INTEGER))`,
    ),
    head: db.prepare('SELECT * FROM a2a_tasks WHERE task_id = ?'),
    writeHead: db.prepare(
      'UPDATE a2a_tasks SET state = ?, status = ?, history_count = ?, updated_at = ? WHERE task_id = ?',
    ),
    deleteActor: db.prepare('DELETE FROM a2a_task_actors WHERE task_id = ?'),
    push: db.prepare('SELECT config FROM a2a_push_configs WHERE task_id = ?'),
  };
  const worker = { id: ids.next(), contextId: 'w', name: 'worker' };
  s.insertAgent.run(worker.id, worker.contextId, worker.name, new Date().toISOString());
  interface Pending {
    taskId: string;
    requester: { id: string; contextId: string; name: string };
  }
  const create = ({ taskId, requester }: Pending) => {
    const now = new Date().toISOString();
    const messageId = ids.next();
    s.count.get(requester.contextId);
    s.insertTask.run(
      taskId,
      requester.contextId,
      requester.name,
      worker.contextId,
      worker.name,
      'submitted',
      JSON.stringify({ state: 'submitted', timestamp: now }),
      messageId,
      now,
      now,
    );
    s.insertMessage.run(taskId, messageId, 1, 'user', requester.name, JSON.stringify({ messageId, ...message }));
    s.putActor.run(taskId, '{"status":"active","value":"submitted"}');
    s.sends.run(requester.id);
    const seq = (s.seq.get(worker.contextId, worker.name) as { seq: number }).seq + 1;
    s.event.run(worker.contextId, worker.name, seq, taskId, JSON.stringify({ seq, taskId }), now);
  };
  const complete = ({ taskId, requester }: Pending) => {
    const now = new Date().toISOString();
    const messageId = ids.next();
    s.head.get(taskId);
    s.insertMessage.run(taskId, messageId, 2, 'agent', worker.name, JSON.stringify({ messageId, ...reply }));
    s.writeHead.run('completed', JSON.stringify({ state: 'completed', timestamp: now }), 2, now, taskId);
    s.deleteActor.run(taskId);
    const seq = (s.seq.get(requester.contextId, requester.name) as { seq: number }).seq + 1;
    s.event.run(requester.contextId, requester.name, seq, taskId, JSON.stringify({ seq, taskId }), now);
    s.push.get(taskId);
  };
  const createAll = db.transaction((batch: Pending[]) => {
    for (const p of batch) create(p);
  });
  const completeAll = db.transaction((batch: Pending[]) => {
    for (const p of batch) complete(p);
  });

  let requester = { id: '', contextId: '', name: 'req' };
  let batch: Pending[] = [];
  const cpu = process.cpuUsage();
  const started = performance.now();
  for (let i = 0; i < options.delegations; i++) {
    if (i % tasksPerRequester === 0) {
      requester = { id: ids.next(), contextId: `r-${i}`, name: 'req' };
      s.insertAgent.run(requester.id, requester.contextId, requester.name, new Date().toISOString());
    }
    batch.push({ taskId: ids.next(), requester });
    if (batch.length === options.perTransaction || i === options.delegations - 1) {
      createAll(batch);
      completeAll(batch);
      batch = [];
    }
  }
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  db.close();
  return { perSecond: options.delegations / seconds, cpuMicros: (used.user + used.system) / options.delegations };
}
