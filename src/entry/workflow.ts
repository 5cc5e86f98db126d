/**
 * `a2a-switchboard/workflow`: the pure workflow logic: definitions, governance,
 * the cost ledger, the item and hop records, items' outputs, and the
 * hash-chained audit log.
 *
 * @packageDocumentation
 */

export * from '../workflow/definition.js';
export * from '../workflow/governance.js';
export * from '../workflow/cost-ledger.js';
export * from '../workflow/records.js';
export * from '../workflow/item-output.js';
export {
  AUDIT_DOMAIN_TAG,
  AUDIT_GENESIS_HASH,
  AUDIT_ERROR_CODES,
  AuditError,
  AuditLog,
  SqliteAuditLog,
  auditRowHash,
  canonicalAuditRow,
} from '../persistence/audit/sqlite-chain.js';
export type {
  AuditErrorCode,
  AuditBreak,
  AuditCheckpoint,
  AuditCheckpointReport,
  AuditVerifyOptions,
  AuditVerification,
  AuditHashedRow,
  AuditLogOptions,
  AuditListOptions,
  AuditAppended,
} from '../persistence/audit/sqlite-chain.js';
// The audit chain as the Coordinator (`coordinator.audit`) and a user see it,
// on either backend (`SqliteAuditLog.chain`, `PostgresAuditLog`).
export type { AuditChain } from '../persistence/audit/audit-chain.js';
export type { SqliteAuditChain } from '../persistence/audit/sqlite-chain.js';
