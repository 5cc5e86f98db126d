import type crypto from 'node:crypto';
import type { AuditEntryInput, AuditHead, AuditRow } from '../../protocol/audit.js';
import type {
  AuditAppended,
  AuditCheckpoint,
  AuditListOptions,
  AuditVerification,
  AuditVerifyOptions,
} from './chain.js';

/**
 * The audit chain as the Coordinator, the CLI and a user see it, on either
 * backend: the embedded SQLite chain and the PostgreSQL one implement it
 * alike, asynchronously (the SQLite one answers at once). Appending inside a
 * store's commit is each backend's own seam (`AuditSink`); this is the chain
 * outside a commit: its head, its rows, its signed checkpoints and its walk.
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
