/**
 * The PostgreSQL seam of the Coordinator's store: the smallest query shape the store and
 * the leader lease share. A transaction handed to a fence, or to the store's own commit, is a
 * `PgQuery`; nothing outside this folder needs to know which client library answers it.
 */

import type { PgQuery } from '../kernel/postgres.js';

/** One query on a connection or inside a transaction: text with `$1`-style parameters (declared in the kernel, shared by the audit chain). */
export type { PgQuery } from '../kernel/postgres.js';

/**
 * Run first inside every commit transaction of the PostgreSQL store (the leader lease's
 * `assertEpoch`): it throws to refuse the commit, and the transaction rolls back.
 */
export type PgFence = (tx: PgQuery) => Promise<void>;
