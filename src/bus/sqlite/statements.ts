import type { SqliteDatabase, SqliteStatement } from '../../persistence/kernel/database.js';

/**
 * The SQLite work queue's statements on `bus_jobs` (see `schema.ts`), each
 * prepared once per queue, and the rows they read.
 */

/** A message's row as the candidate and dead-letter reads return it. */
export interface JobRow {
  seq: number;
  role: string;
  idempotency_key: string;
  task_key: string | null;
  envelope: string | null;
  deliveries: number;
  published_at: number;
  last_error: string | null;
  retry_policy: string | null;
  available_at: number;
  finished_at: number | null;
}

/** A leased row as the expiry and settle reads return it. */
export interface LeaseRow {
  seq: number;
  deliveries: number;
  retry_policy: string | null;
  last_error: string | null;
}

/** At most this many rows per prune: twice the acks between prunes, so pruning keeps up. */
export const PRUNE_BATCH = 1000;

/** The queue's statements, by what they do. */
export type QueueStatements = Record<
  | 'insert'
  | 'byKey'
  | 'expired'
  | 'expireAll'
  | 'expireReady'
  | 'expireDead'
  | 'candidates'
  | 'lease'
  | 'ack'
  | 'heartbeat'
  | 'retry'
  | 'dead'
  | 'leaseOf'
  | 'envelopeOf'
  | 'release'
  | 'listDead'
  | 'replayAll'
  | 'replayOne'
  | 'purgeAll'
  | 'purgeOne'
  | 'statReady'
  | 'statDelayed'
  | 'statLeased'
  | 'statExpired'
  | 'statDead'
  | 'prune',
  SqliteStatement
>;

function prepare(db: SqliteDatabase, sql: string): SqliteStatement {
  return db.prepare(sql);
}

/** Prepares every statement of the queue on `db` (its schema migrated). */
export function prepareQueueStatements(db: SqliteDatabase): QueueStatements {
  const cols =
    'seq, role, idempotency_key, task_key, envelope, deliveries, published_at, last_error, retry_policy, available_at, finished_at';
  return {
    insert: prepare(
      db,
      `INSERT INTO bus_jobs (role, idempotency_key, task_key, envelope, state, available_at, published_at, retry_policy)
       VALUES (?, ?, ?, ?, 'ready', ?, ?, ?) ON CONFLICT (role, idempotency_key) DO NOTHING`,
    ),
    byKey: prepare(db, 'SELECT seq FROM bus_jobs WHERE role = ? AND idempotency_key = ?'),
    expired: prepare(
      db,
      `SELECT seq, deliveries, retry_policy, last_error FROM bus_jobs
       WHERE role = ? AND state = 'leased' AND leased_until <= ? LIMIT 1000`,
    ),
    expireAll: prepare(
      db,
      `UPDATE bus_jobs SET leased_until = ? WHERE role = ? AND state = 'leased' AND leased_until > ?`,
    ),
    expireReady: prepare(
      db,
      `UPDATE bus_jobs SET state = 'ready', available_at = leased_until, lease_id = NULL, lease_owner = NULL,
         leased_until = NULL, last_error = ? WHERE seq = ?`,
    ),
    expireDead: prepare(
      db,
      `UPDATE bus_jobs SET state = 'dead', finished_at = ?, lease_id = NULL, lease_owner = NULL,
         leased_until = NULL, last_error = ? WHERE seq = ?`,
    ),
    candidates: prepare(
      db,
      `SELECT ${cols} FROM bus_jobs AS c
       WHERE c.role = ? AND c.state = 'ready' AND c.available_at <= ?
         AND (c.task_key IS NULL OR NOT EXISTS (
           SELECT 1 FROM bus_jobs AS l WHERE l.task_key = c.task_key AND l.state = 'leased' AND l.leased_until > ?))
       ORDER BY c.available_at, c.seq LIMIT ?`,
    ),
    lease: prepare(
      db,
      `UPDATE bus_jobs SET state = 'leased', lease_id = ?, lease_owner = ?, leased_until = ?, visibility_ms = ?,
         deliveries = deliveries + 1 WHERE seq = ?`,
    ),
    ack: prepare(
      db,
      `UPDATE bus_jobs SET state = 'done', envelope = NULL, lease_id = NULL, lease_owner = NULL, leased_until = NULL,
         finished_at = ? WHERE seq = ? AND lease_id = ? AND state = 'leased'`,
    ),
    heartbeat: prepare(db, `UPDATE bus_jobs SET leased_until = ? WHERE seq = ? AND lease_id = ? AND state = 'leased'`),
    retry: prepare(
      db,
      `UPDATE bus_jobs SET state = 'ready', available_at = ?, lease_id = NULL, lease_owner = NULL, leased_until = NULL,
         last_error = ? WHERE seq = ?`,
    ),
    dead: prepare(
      db,
      `UPDATE bus_jobs SET state = 'dead', finished_at = ?, lease_id = NULL, lease_owner = NULL, leased_until = NULL,
         last_error = ? WHERE seq = ?`,
    ),
    envelopeOf: prepare(db, 'SELECT envelope FROM bus_jobs WHERE seq = ?'),
    leaseOf: prepare(
      db,
      `SELECT seq, deliveries, retry_policy, last_error FROM bus_jobs WHERE seq = ? AND lease_id = ? AND state = 'leased'`,
    ),
    release: prepare(
      db,
      `UPDATE bus_jobs SET state = 'ready', available_at = ?, lease_id = NULL, lease_owner = NULL, leased_until = NULL
       WHERE seq = ? AND lease_id = ? AND state = 'leased'`,
    ),
    listDead: prepare(
      db,
      `SELECT ${cols} FROM bus_jobs WHERE role = ? AND state = 'dead' ORDER BY finished_at, seq LIMIT ? OFFSET ?`,
    ),
    replayAll: prepare(
      db,
      `UPDATE bus_jobs SET state = 'ready', available_at = ?, deliveries = 0, finished_at = NULL
       WHERE role = ? AND state = 'dead'`,
    ),
    replayOne: prepare(
      db,
      `UPDATE bus_jobs SET state = 'ready', available_at = ?, deliveries = 0, finished_at = NULL
       WHERE role = ? AND state = 'dead' AND seq = ?`,
    ),
    purgeAll: prepare(db, `DELETE FROM bus_jobs WHERE role = ? AND state = 'dead'`),
    purgeOne: prepare(db, `DELETE FROM bus_jobs WHERE role = ? AND state = 'dead' AND seq = ?`),
    statReady: prepare(
      db,
      `SELECT count(*) AS n, min(available_at) AS oldest FROM bus_jobs
       WHERE role = ? AND state = 'ready' AND available_at <= ?`,
    ),
    statDelayed: prepare(
      db,
      `SELECT count(*) AS n FROM bus_jobs WHERE role = ? AND state = 'ready' AND available_at > ?`,
    ),
    statLeased: prepare(
      db,
      `SELECT count(*) AS n FROM bus_jobs WHERE role = ? AND state = 'leased' AND leased_until > ?`,
    ),
    statExpired: prepare(
      db,
      `SELECT count(*) AS n, min(leased_until) AS oldest FROM bus_jobs
       WHERE role = ? AND state = 'leased' AND leased_until <= ?`,
    ),
    statDead: prepare(db, `SELECT count(*) AS n FROM bus_jobs WHERE role = ? AND state = 'dead'`),
    prune: prepare(
      db,
      `DELETE FROM bus_jobs WHERE seq IN (
         SELECT seq FROM bus_jobs WHERE state = 'done' AND finished_at < ? ORDER BY finished_at LIMIT ${PRUNE_BATCH})`,
    ),
  };
}
