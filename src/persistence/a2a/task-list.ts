import type { TaskState } from '../../protocol/task.js';
import type { SqliteDatabase } from '../kernel/database.js';

/**
 * Every A2A task of a database, whoever its parties are (the broker's own
 * reads are per party): for operator tools such as `switchboard tasks list`.
 * Read-only; the rows are then read through `A2AStore.taskHead`.
 */

export interface TaskListOptions {
  state?: TaskState;
  /** At most this many, oldest first. */
  limit: number;
}

/** Task ids in creation order. */
export function listTaskIds(db: SqliteDatabase, options: TaskListOptions): string[] {
  const rows = (
    options.state === undefined
      ? db.prepare('SELECT task_id FROM a2a_tasks ORDER BY rowid LIMIT ?').all(options.limit)
      : db
          .prepare('SELECT task_id FROM a2a_tasks WHERE state = ? ORDER BY rowid LIMIT ?')
          .all(options.state, options.limit)
  ) as { task_id: string }[];
  return rows.map((r) => r.task_id);
}

export function countTasks(db: SqliteDatabase, options: { state?: TaskState } = {}): number {
  const row = (
    options.state === undefined
      ? db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks').get()
      : db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE state = ?').get(options.state)
  ) as { n: number };
  return row.n;
}
