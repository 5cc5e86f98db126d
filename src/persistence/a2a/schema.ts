import { SCHEMA_VERSION } from '../../protocol/bounds.js';
import type { SqliteDatabase } from '../kernel/database.js';
import type { Migration, MigrationSet } from '../kernel/migrations.js';

/** The component name of the broker's rows in `schema_version`. */
export const A2A_COMPONENT = 'a2a';

/**
 * Version 12 (`migrate_v11_to_v12`): the A2A broker's tables. A
 * database at any version below 12 has none of them; this step creates them
 * all. Versions 1..11 predate the broker and carry no a2a schema, so a
 * database at 0..11 is brought to 12 by this one step, in one transaction.
 *
 * - `a2a_agents`: every registration ever made (a party `(context_id, name)`
 *   may have many); `ended_at` is set on deregistration and on restart.
 *   Tokens are never stored.
 * - `a2a_tasks`: one row per task, with its current status (JSON of the wire
 *   `TaskStatus`) and the creating message id (to recognise a retried
 *   creation). `history_count` is the number of rows in `a2a_messages`.
 * - `a2a_messages`: the history, keyed `(task_id, message_id)`.
 * - `a2a_artifacts`: keyed `(task_id, artifact_id)`, in insertion order.
 * - `a2a_push_configs`: at most one per task (last write wins).
 * - `a2a_events`: the durable log of notifications per party, `seq` from 1
 *   (unique per party; a rowid table, since `params` can be large).
 * - `a2a_task_actors`: the persisted snapshot of every live (non-terminal)
 *   task actor with the machine version it was taken from; deleted when the
 *   task reaches a terminal state.
 */
function createBrokerTables(db: SqliteDatabase): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS a2a_agents (
      agent_id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL,
      name TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('subagent', 'parent')),
      description TEXT NOT NULL,
      skills TEXT NOT NULL,
      sends INTEGER NOT NULL DEFAULT 0,
      registered_at TEXT NOT NULL,
      ended_at TEXT,
      end_reason TEXT CHECK (end_reason IS NULL OR end_reason IN ('deregistered', 'restart'))
    ) STRICT;
    CREATE INDEX IF NOT EXISTS a2a_agents_party ON a2a_agents (context_id, name);

    CREATE TABLE IF NOT EXISTS a2a_tasks (
      task_id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL,
      requester_name TEXT NOT NULL,
      agent_context_id TEXT NOT NULL,
      agent_name TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('submitted', 'working', 'input-required', 'auth-required',
        'completed', 'canceled', 'failed', 'rejected')),
      status TEXT NOT NULL,
      creation_message_id TEXT NOT NULL,
      history_count INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      metadata TEXT
    ) STRICT;
    CREATE INDEX IF NOT EXISTS a2a_tasks_requester ON a2a_tasks (context_id, requester_name, creation_message_id);
    CREATE INDEX IF NOT EXISTS a2a_tasks_worker ON a2a_tasks (agent_context_id, agent_name);

    CREATE TABLE IF NOT EXISTS a2a_messages (
      task_id TEXT NOT NULL REFERENCES a2a_tasks (task_id),
      message_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'agent')),
      from_name TEXT NOT NULL,
      body TEXT NOT NULL,
      PRIMARY KEY (task_id, message_id)
    ) STRICT;
    CREATE UNIQUE INDEX IF NOT EXISTS a2a_messages_position ON a2a_messages (task_id, position);

    CREATE TABLE IF NOT EXISTS a2a_artifacts (
      task_id TEXT NOT NULL REFERENCES a2a_tasks (task_id),
      artifact_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      body TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      PRIMARY KEY (task_id, artifact_id)
    ) STRICT;

    CREATE TABLE IF NOT EXISTS a2a_push_configs (
      task_id TEXT PRIMARY KEY REFERENCES a2a_tasks (task_id),
      config TEXT NOT NULL,
      set_by_context_id TEXT NOT NULL,
      set_by_name TEXT NOT NULL,
      updated_at TEXT NOT NULL
    ) STRICT;

    CREATE TABLE IF NOT EXISTS a2a_events (
      party_context_id TEXT NOT NULL,
      party_name TEXT NOT NULL,
      seq INTEGER NOT NULL CHECK (seq >= 1),
      method TEXT NOT NULL CHECK (method IN ('a2a.task.event', 'a2a.push')),
      task_id TEXT NOT NULL,
      params TEXT NOT NULL,
      created_at TEXT NOT NULL
    ) STRICT;
    CREATE UNIQUE INDEX IF NOT EXISTS a2a_events_party_seq ON a2a_events (party_context_id, party_name, seq);

    CREATE TABLE IF NOT EXISTS a2a_task_actors (
      task_id TEXT PRIMARY KEY REFERENCES a2a_tasks (task_id),
      machine_version INTEGER NOT NULL,
      snapshot TEXT NOT NULL
    ) STRICT;
  `);
}

/**
 * Version 13: `a2a_owner`, the one broker that owns the file (at most one
 * row): its pid, host and process start (`process_start`: boot id and start
 * time on Linux, so a reused pid is not taken for the owner), when it took
 * the file, and the socket it listens on (if any). Written when a broker
 * opens the file, deleted when it closes; a row whose process is gone is
 * taken over. And a registration may end `disconnected`: the connection
 * that made it closed (`a2a_agents` is rebuilt with the wider check).
 */
function createOwnerTable(db: SqliteDatabase): void {
  db.exec(`
    CREATE TABLE a2a_agents_v13 (
      agent_id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL,
      name TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('subagent', 'parent')),
      description TEXT NOT NULL,
      skills TEXT NOT NULL,
      sends INTEGER NOT NULL DEFAULT 0,
      registered_at TEXT NOT NULL,
      ended_at TEXT,
      end_reason TEXT CHECK (end_reason IS NULL OR end_reason IN ('deregistered', 'restart', 'disconnected'))
    ) STRICT;
    INSERT INTO a2a_agents_v13 SELECT * FROM a2a_agents;
    DROP TABLE a2a_agents;
    ALTER TABLE a2a_agents_v13 RENAME TO a2a_agents;
    CREATE INDEX a2a_agents_party ON a2a_agents (context_id, name);

    CREATE TABLE IF NOT EXISTS a2a_owner (
      id INTEGER PRIMARY KEY CHECK (id = 1),
      token TEXT NOT NULL,
      pid INTEGER NOT NULL,
      host TEXT NOT NULL,
      process_start TEXT NOT NULL,
      since TEXT NOT NULL,
      socket TEXT
    ) STRICT;
  `);
}

/**
 * Version 14: retention of ended tasks. Every row is kept; what is added
 * finds what a prune removes without scanning:
 *
 * - `a2a_tasks_ended`: the ended tasks by the time they ended (`updated_at`
 *   never moves once a task is terminal), a partial index (live tasks have
 *   no entry).
 * - `a2a_events_task`: a task's events, in whichever party's log.
 * - `a2a_messages.parent_task_id` and its partial index `a2a_messages_parent`:
 *   the parent task a message's metadata names
 *   (`metadata.switchboard.parentTaskId`, the Coordinator's hop tasks), written
 *   with the row (filled here for the rows already there): a task named by a
 *   live task's history is kept. A column, not an index on an expression over
 *   `body`: that would parse every body as JSON on insert, megabytes of memory
 *   for a large message.
 * - `a2a_event_floors`: per party, the seq through which its log was cut
 *   (`floor`): `a2a.events.since` with `after` below it is refused
 *   (`A2A_EVENTS_PRUNED`), and the next seq never goes back below it.
 *
 * The file's incremental auto-vacuum (which needs a `VACUUM`, impossible in
 * a transaction) is set after the migration commits: `ensureIncrementalVacuum`.
 */
function createRetentionTables(db: SqliteDatabase): void {
  db.exec(`
    CREATE INDEX IF NOT EXISTS a2a_tasks_ended ON a2a_tasks (updated_at)
      WHERE state IN ('completed', 'canceled', 'failed', 'rejected');
    CREATE INDEX IF NOT EXISTS a2a_events_task ON a2a_events (task_id);
    ALTER TABLE a2a_messages ADD COLUMN parent_task_id TEXT;
    UPDATE a2a_messages SET parent_task_id = json_extract(body, '$.metadata.switchboard.parentTaskId')
      WHERE instr(body, '"parentTaskId"') > 0
        AND json_type(body, '$.metadata.switchboard.parentTaskId') = 'text';
    CREATE INDEX IF NOT EXISTS a2a_messages_parent ON a2a_messages (parent_task_id)
      WHERE parent_task_id IS NOT NULL;
    CREATE TABLE IF NOT EXISTS a2a_event_floors (
      party_context_id TEXT NOT NULL,
      party_name TEXT NOT NULL,
      floor INTEGER NOT NULL CHECK (floor >= 1),
      PRIMARY KEY (party_context_id, party_name)
    ) STRICT, WITHOUT ROWID;
  `);
}

/**
 * Version 15: fewer bytes per task. `a2a_messages` becomes a WITHOUT ROWID
 * table keyed `(task_id, position)`: the history is read in that order, so
 * the row is its own index, and the two indexes it had (`(task_id,
 * message_id)`, the primary key, and `a2a_messages_position`) go. A message
 * found by its id (`(task_id, message_id)`: a retried send, a stored
 * reference) is looked for among its task's rows. Every row is copied, the
 * same columns in the same order. Rows of other tables keep their shape;
 * what the broker writes from now on is smaller (a status without what its
 * row's columns hold, a status-update event as an array of its values), and
 * rows written before are read as they are.
 */
function keyMessagesByPosition(db: SqliteDatabase): void {
  db.exec(`
    CREATE TABLE a2a_messages_v15 (
      task_id TEXT NOT NULL REFERENCES a2a_tasks (task_id),
      message_id TEXT NOT NULL,
      position INTEGER NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'agent')),
      from_name TEXT NOT NULL,
      body TEXT NOT NULL,
      parent_task_id TEXT,
      PRIMARY KEY (task_id, position)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO a2a_messages_v15 (task_id, message_id, position, role, from_name, body, parent_task_id)
      SELECT task_id, message_id, position, role, from_name, body, parent_task_id FROM a2a_messages;
    DROP TABLE a2a_messages;
    ALTER TABLE a2a_messages_v15 RENAME TO a2a_messages;
    CREATE INDEX a2a_messages_parent ON a2a_messages (parent_task_id) WHERE parent_task_id IS NOT NULL;
  `);
}

/**
 * Version 16: integer task keys. `a2a_tasks` gets `task`, an INTEGER PRIMARY
 * KEY (the rowid it had, so that tasks keep their order), and its `task_id`
 * becomes UNIQUE; `a2a_messages` and `a2a_events` hold that integer (`task`)
 * instead of the 36-character id, in their rows and in their keys and
 * indexes. An event's `method` is 0 (`a2a.task.event`) or 1 (`a2a.push`),
 * its `created_at` milliseconds since the epoch. `a2a_agents` gets `agent`,
 * an INTEGER PRIMARY KEY too (its rowid), that an event names its recipient
 * by. A message id that is a UUID in its canonical form (what the broker
 * makes) is held as its 16 bytes (`a2a_messages.message_id`,
 * `a2a_tasks.creation_message_id`, columns of type ANY), any other as its
 * text. Every row is copied, with
 * the same values in those forms; rows of the other tables are not touched
 * (their `task_id` still names the task by its id). A message or event whose
 * task is not in `a2a_tasks` (the broker never writes one) stops the
 * migration, nothing changed.
 *
 * `a2a_tasks` is rebuilt through a temporary copy, with the foreign keys of
 * the tables that refer to it deferred to the commit: dropping it leaves
 * their rows without a parent until the copy is back under the same name.
 */
/** SQL of `idKey` (store.ts): the 16 bytes of a canonical UUID, any other id as it is. */
function idKeySql(column: string): string {
  const hex = (n: number) => '[0-9a-f]'.repeat(n);
  const uuid = [hex(8), hex(4), hex(4), hex(4), hex(12)].join('-');
  return `CASE WHEN ${column} GLOB '${uuid}' THEN unhex(replace(${column}, '-', '')) ELSE ${column} END`;
}

function keyTasksByInteger(db: SqliteDatabase): void {
  const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
  const orphans = count(
    `SELECT (SELECT COUNT(*) FROM a2a_messages WHERE task_id NOT IN (SELECT task_id FROM a2a_tasks))
      + (SELECT COUNT(*) FROM a2a_events WHERE task_id NOT IN (SELECT task_id FROM a2a_tasks)) AS n`,
  );
  if (orphans > 0) {
    throw new Error(
      `schema 16 migration: ${orphans} messages or events name a task that is not in a2a_tasks; ` +
        'nothing was changed: restore the file from a backup or remove those rows, then open it again',
    );
  }
  db.pragma('defer_foreign_keys = ON');
  db.exec(`
    CREATE TEMP TABLE a2a_tasks_v15 AS SELECT rowid AS task, * FROM a2a_tasks;

    CREATE TEMP TABLE a2a_messages_v15 AS
      SELECT t.task, m.position, m.message_id, m.role, m.from_name, m.body, m.parent_task_id
      FROM a2a_messages m JOIN a2a_tasks_v15 t ON t.task_id = m.task_id;
    DROP TABLE a2a_messages;

    CREATE TABLE a2a_events_v16 (
      party_context_id TEXT NOT NULL,
      party_name TEXT NOT NULL,
      seq INTEGER NOT NULL CHECK (seq >= 1),
      method INTEGER NOT NULL CHECK (method IN (0, 1)),
      task INTEGER NOT NULL,
      params TEXT NOT NULL,
      created_at INTEGER NOT NULL
    ) STRICT;
    INSERT INTO a2a_events_v16 (rowid, party_context_id, party_name, seq, method, task, params, created_at)
      SELECT e.rowid, e.party_context_id, e.party_name, e.seq, CASE e.method WHEN 'a2a.push' THEN 1 ELSE 0 END,
        t.task, e.params, CAST(round((julianday(e.created_at) - 2440587.5) * 86400000.0) AS INTEGER)
      FROM a2a_events e JOIN a2a_tasks_v15 t ON t.task_id = e.task_id;
    DROP TABLE a2a_events;

    DROP TABLE a2a_tasks;
    CREATE TABLE a2a_tasks (
      task INTEGER PRIMARY KEY,
      task_id TEXT NOT NULL UNIQUE,
      context_id TEXT NOT NULL,
      requester_name TEXT NOT NULL,
      agent_context_id TEXT NOT NULL,
      agent_name TEXT NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('submitted', 'working', 'input-required', 'auth-required',
        'completed', 'canceled', 'failed', 'rejected')),
      status TEXT NOT NULL,
      creation_message_id ANY NOT NULL,
      history_count INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      metadata TEXT
    ) STRICT;
    INSERT INTO a2a_tasks (task, task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
        creation_message_id, history_count, created_at, updated_at, metadata)
      SELECT task, task_id, context_id, requester_name, agent_context_id, agent_name, state, status,
        ${idKeySql('creation_message_id')}, history_count, created_at, updated_at, metadata FROM a2a_tasks_v15;
    DROP TABLE a2a_tasks_v15;
    CREATE INDEX a2a_tasks_requester ON a2a_tasks (context_id, requester_name, creation_message_id);
    CREATE INDEX a2a_tasks_worker ON a2a_tasks (agent_context_id, agent_name);
    CREATE INDEX a2a_tasks_ended ON a2a_tasks (updated_at)
      WHERE state IN ('completed', 'canceled', 'failed', 'rejected');

    CREATE TABLE a2a_messages (
      task INTEGER NOT NULL REFERENCES a2a_tasks (task),
      position INTEGER NOT NULL,
      message_id ANY NOT NULL,
      role TEXT NOT NULL CHECK (role IN ('user', 'agent')),
      from_name TEXT NOT NULL,
      body TEXT NOT NULL,
      parent_task_id TEXT,
      PRIMARY KEY (task, position)
    ) STRICT, WITHOUT ROWID;
    INSERT INTO a2a_messages (task, position, message_id, role, from_name, body, parent_task_id)
      SELECT task, position, ${idKeySql('message_id')}, role, from_name, body, parent_task_id FROM a2a_messages_v15 ORDER BY task, position;
    DROP TABLE a2a_messages_v15;
    CREATE INDEX a2a_messages_parent ON a2a_messages (parent_task_id) WHERE parent_task_id IS NOT NULL;
    ALTER TABLE a2a_events_v16 RENAME TO a2a_events;

    CREATE TABLE a2a_agents_v16 (
      agent INTEGER PRIMARY KEY,
      agent_id TEXT NOT NULL UNIQUE,
      context_id TEXT NOT NULL,
      name TEXT NOT NULL,
      kind TEXT NOT NULL CHECK (kind IN ('subagent', 'parent')),
      description TEXT NOT NULL,
      skills TEXT NOT NULL,
      sends INTEGER NOT NULL DEFAULT 0,
      registered_at TEXT NOT NULL,
      ended_at TEXT,
      end_reason TEXT CHECK (end_reason IS NULL OR end_reason IN ('deregistered', 'restart', 'disconnected'))
    ) STRICT;
    INSERT INTO a2a_agents_v16 SELECT rowid, * FROM a2a_agents;
    DROP TABLE a2a_agents;
    ALTER TABLE a2a_agents_v16 RENAME TO a2a_agents;
    CREATE INDEX a2a_agents_party ON a2a_agents (context_id, name);
    CREATE UNIQUE INDEX a2a_events_party_seq ON a2a_events (party_context_id, party_name, seq);
    CREATE INDEX a2a_events_task ON a2a_events (task);
  `);
}

export const A2A_MIGRATIONS: readonly Migration[] = Object.freeze([
  { version: 12, name: 'a2a broker tables', up: createBrokerTables },
  { version: 13, name: 'the broker that owns the file', up: createOwnerTable },
  { version: 14, name: 'retention of ended tasks', up: createRetentionTables },
  { version: 15, name: 'fewer bytes per task', up: keyMessagesByPosition },
  { version: 16, name: 'integer task keys', up: keyTasksByInteger },
]);

/** The broker's schema: component `a2a`, current version 16. */
export const A2A_MIGRATION_SET: MigrationSet = Object.freeze({
  component: A2A_COMPONENT,
  current: SCHEMA_VERSION,
  migrations: A2A_MIGRATIONS,
});

/** Every table of the broker, in dependency order (for dumps and checks). */
export const A2A_TABLES = [
  'a2a_agents',
  'a2a_tasks',
  'a2a_messages',
  'a2a_artifacts',
  'a2a_push_configs',
  'a2a_events',
  'a2a_task_actors',
  'a2a_event_floors',
  'a2a_owner',
] as const;
