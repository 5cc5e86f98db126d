import type { SqliteDatabase } from '../../persistence/kernel/database.js';

/**
 * The roles of the SQLite work bus that hold dead letters, and how many each
 * holds. Read-only; `DeadLetterQueue` lists and replays the letters of one
 * role, this says which roles to look at (for `switchboard dlq list` without
 * `--role`). Uses the partial index over dead rows.
 */
export function deadLetterCounts(db: SqliteDatabase): { role: string; count: number }[] {
  return db
    .prepare("SELECT role, COUNT(*) AS count FROM bus_jobs WHERE state = 'dead' GROUP BY role ORDER BY role")
    .all() as { role: string; count: number }[];
}
