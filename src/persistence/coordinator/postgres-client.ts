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
export interface PgFence {
  /** The check inside a commit transaction, run first on its connection: throws to refuse the commit. */
  (tx: PgQuery): Promise<void>;
  /**
   * The same check inside a commit of one statement (no transaction around it, one round
   * trip): the lease row the statement must find, locked for share until it commits
   * (`expected` throws when this process does not lead now: nothing is sent), and the
   * error of a statement that found another (`found`: the lease's epoch, when known).
   */
  readonly statement?: {
    expected(): { epoch: number; holder: string };
    refused(epoch: number, found: number | undefined): Error;
  };
}
