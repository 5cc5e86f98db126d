import type crypto from 'node:crypto';
import type { AuditEntryInput, AuditHead, AuditRow } from '../../protocol/audit.js';
import type { AuditAppended, AuditListOptions } from './audit-rows.js';
import type { AuditVerification, AuditVerifyOptions } from './chain-walk.js';
import type { AuditCheckpoint } from './checkpoints.js';

/**
 * The audit chain as the Coordinator, the CLI and a user see it, on either
 * backend: the embedded SQLite chain and the PostgreSQL one implement it
 * alike, asynchronously. Appending inside a store's commit is each backend's
 * own seam (`AuditSink`); this is the chain outside a commit: its head, its
 * rows, its signed checkpoints and its walk.
 *
 * - PostgreSQL: `PostgresAuditLog` implements it itself (every call is a
 *   round trip anyway); its commit seam is `appendInTransaction(tx, ...)`.
 * - SQLite: `SqliteAuditLog` stays synchronous, because the Coordinator's
 *   SQLite store appends inside its own synchronous transaction
 *   (`appendManyInTransaction`), where nothing can be awaited (a
 *   better-sqlite3 transaction is one synchronous call). Its `chain` property (a
 *   `SqliteAuditChain`) is the same audit as an `AuditChain`: each method
 *   runs the synchronous one and answers with a settled promise, so
 *   `new SqliteAuditLog(db).chain` is the `AuditChain` of a SQLite database.
 */
export interface AuditChain {
  /** Appends entries in one transaction of their own; resolves with each row's place in the chain. */
  appendMany(entries: readonly AuditEntryInput[]): Promise<AuditAppended[]>;
  /** The chain's head (seq 0 and the genesis hash for an empty chain). */
  head(): Promise<AuditHead>;
  /** Rows in order, filtered by item, after a seq, at most `limit`. */
  list(options?: AuditListOptions): Promise<AuditRow[]>;
  /** The signed checkpoints, oldest first. */
  checkpoints(): Promise<AuditCheckpoint[]>;
  /** Signs the head with the key (none when the head is already signed by it): resolves with the new checkpoint or null. */
  checkpoint(privateKey: crypto.KeyObject): Promise<AuditCheckpoint | null>;
  /** Walks the chain from the genesis row: every hash, link and checkpoint. */
  verifyChain(options?: AuditVerifyOptions): Promise<AuditVerification>;
}
