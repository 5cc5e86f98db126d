import { openDatabase, type SqliteDatabase } from '../persistence/kernel/database.js';
import { migrate } from '../persistence/kernel/migrations.js';

/**
 * What the bridge keeps on disk, in a SQLite file of its own beside the
 * broker's database (`PATH.remote-tasks.db`): for each local task it carries,
 * the remote agent, the remote task's id and context once the remote has
 * named them, and whether the task has ended; for each remote's local agent,
 * the seq of the last broker event it has acted on. After a restart the
 * bridge picks up every task that has not ended (it resubscribes to the
 * remote task) and replays only the broker events after that seq.
 */

/** One local task carried to a remote agent. */
export interface RemoteTaskRow {
  localTaskId: string;
  /** The local agent's name (the remote's, in the remotes file). */
  agent: string;
  remoteTaskId: string | undefined;
  remoteContextId: string | undefined;
  ended: boolean;
}

const MIGRATIONS = {
  component: 'remote-bridge',
  current: 1,
  migrations: [
    {
      version: 1,
      name: 'remote tasks and event seqs',
      up(db: SqliteDatabase) {
        db.exec(`CREATE TABLE remote_tasks (
          local_task_id TEXT PRIMARY KEY,
          agent TEXT NOT NULL,
          remote_task_id TEXT,
          remote_context_id TEXT,
          ended INTEGER NOT NULL DEFAULT 0,
          created_at INTEGER NOT NULL,
          updated_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX remote_tasks_open ON remote_tasks (agent) WHERE ended = 0;
        CREATE TABLE bridge_seqs (
          agent TEXT PRIMARY KEY,
          seq INTEGER NOT NULL
        ) STRICT;`);
      },
    },
  ],
};

interface Row {
  local_task_id: string;
  agent: string;
  remote_task_id: string | null;
  remote_context_id: string | null;
  ended: number;
}

function rowOf(row: Row): RemoteTaskRow {
  return {
    localTaskId: row.local_task_id,
    agent: row.agent,
    remoteTaskId: row.remote_task_id ?? undefined,
    remoteContextId: row.remote_context_id ?? undefined,
    ended: row.ended === 1,
  };
}

/** The task store of a broker's database file: beside it. */
export function defaultRemoteTasksFile(db: string): string {
  return `${db}.remote-tasks.db`;
}

/** The bridge's durable mapping of local tasks to remote ones (one SQLite file). */
export class RemoteTaskStore {
  private readonly db: SqliteDatabase;

  constructor(path: string) {
    this.db = openDatabase(path);
    migrate(this.db, MIGRATIONS);
  }

  get(localTaskId: string): RemoteTaskRow | undefined {
    const row = this.db.prepare('SELECT * FROM remote_tasks WHERE local_task_id = ?').get(localTaskId) as
      | Row
      | undefined;
    return row === undefined ? undefined : rowOf(row);
  }

  /** The tasks of a local agent that have not ended. */
  open(agent: string): RemoteTaskRow[] {
    return (
      this.db
        .prepare('SELECT * FROM remote_tasks WHERE agent = ? AND ended = 0 ORDER BY created_at')
        .all(agent) as Row[]
    ).map(rowOf);
  }

  /** Records a local task the bridge carries (nothing when it is recorded already). */
  begin(localTaskId: string, agent: string, now = Date.now()): void {
    this.db
      .prepare(
        `INSERT INTO remote_tasks (local_task_id, agent, created_at, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(local_task_id) DO NOTHING`,
      )
      .run(localTaskId, agent, now, now);
  }

  /** Records the remote task's id and context, once the remote has named them. */
  named(localTaskId: string, remoteTaskId: string, remoteContextId: string, now = Date.now()): void {
    this.db
      .prepare(
        'UPDATE remote_tasks SET remote_task_id = ?, remote_context_id = ?, updated_at = ? WHERE local_task_id = ?',
      )
      .run(remoteTaskId, remoteContextId, now, localTaskId);
  }

  /** Records that the local task has ended: nothing more is carried for it. */
  end(localTaskId: string, now = Date.now()): void {
    this.db.prepare('UPDATE remote_tasks SET ended = 1, updated_at = ? WHERE local_task_id = ?').run(now, localTaskId);
  }

  /** The seq of the last broker event a local agent acted on (0: none). */
  seq(agent: string): number {
    const row = this.db.prepare('SELECT seq FROM bridge_seqs WHERE agent = ?').get(agent) as
      | { seq: number }
      | undefined;
    return row?.seq ?? 0;
  }

  setSeq(agent: string, seq: number): void {
    this.db
      .prepare(
        'INSERT INTO bridge_seqs (agent, seq) VALUES (?, ?) ON CONFLICT(agent) DO UPDATE SET seq = MAX(seq, excluded.seq)',
      )
      .run(agent, seq);
  }

  close(): void {
    this.db.close();
  }
}
