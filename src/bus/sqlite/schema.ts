import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import { type MigrationSet, migrate } from '../../persistence/kernel/migrations.js';

/**
 * The SQLite work bus's tables, a migration component (`bus`) of its own in
 * whatever database file the user passes. One row per message, whatever its
 * role: `state` is `ready` (including delayed: `available_at` in the future),
 * `leased`, `done` (kept, without its body, to refuse a duplicate publish
 * until the retention ends) or `dead` (the role's dead-letter queue).
 * `seq` (AUTOINCREMENT: never reused) is the public message id.
 */
export const BUS_SCHEMA: MigrationSet = {
  component: 'bus',
  current: 1,
  migrations: [
    {
      version: 1,
      name: 'bus jobs',
      up(db: SqliteDatabase) {
        db.exec(`
          CREATE TABLE bus_jobs (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            role TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            task_key TEXT,
            envelope TEXT,
            state TEXT NOT NULL CHECK (state IN ('ready', 'leased', 'done', 'dead')),
            available_at INTEGER NOT NULL,
            published_at INTEGER NOT NULL,
            deliveries INTEGER NOT NULL DEFAULT 0,
            lease_id TEXT,
            lease_owner TEXT,
            leased_until INTEGER,
            visibility_ms INTEGER,
            last_error TEXT,
            retry_policy TEXT,
            finished_at INTEGER
          ) STRICT;
          CREATE UNIQUE INDEX bus_jobs_idempotency ON bus_jobs (role, idempotency_key);
          CREATE INDEX bus_jobs_ready ON bus_jobs (role, available_at, seq) WHERE state = 'ready';
          CREATE INDEX bus_jobs_leased ON bus_jobs (role, leased_until) WHERE state = 'leased';
          CREATE INDEX bus_jobs_task_leased ON bus_jobs (task_key) WHERE state = 'leased' AND task_key IS NOT NULL;
          CREATE INDEX bus_jobs_dead ON bus_jobs (role, finished_at, seq) WHERE state = 'dead';
          CREATE INDEX bus_jobs_done ON bus_jobs (finished_at) WHERE state = 'done';
        `);
      },
    },
  ],
};

export function migrateBus(db: SqliteDatabase): void {
  migrate(db, BUS_SCHEMA);
}
