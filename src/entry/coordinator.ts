/**
 * `a2a-switchboard/coordinator`: the Coordinator beyond `createCoordinator`:
 * its intake over the bus, its tables' reader and its names.
 *
 * @packageDocumentation
 */

// Submitting items and approvals to a Coordinator in another process.
export {
  APPROVALS_ROLE,
  CoordinatorIntake,
  ITEMS_ROLE,
  REQUEST_ATTRIBUTE,
  ItemRequestSchema,
  ApprovalRequestSchema,
  submitApproval,
  submitItems,
} from '../actors/coordinator/intake.js';
export type { ApprovalRequest, IntakeOptions, ItemRequest } from '../actors/coordinator/intake.js';
// The leader lease of Coordinators sharing a PostgreSQL database, and its fence.
// (Its error, `CoordinatorLeaseError`, is exported from the package root with the others.)
export {
  COORDINATOR_LEASE_ERROR_CODES,
  PostgresLease,
  readLeaseStatus,
} from '../persistence/coordinator/postgres-lease.js';
export type {
  LeaseHolderStatus,
  LeaseMemberStatus,
  LeaseRole,
  LeaseRoleChange,
  LeaseStatus,
  PostgresLeaseOptions,
} from '../persistence/coordinator/postgres-lease.js';
export type { LeaseTiming } from '../decisions/lease-decision.js';
// Reading the Coordinator's tables.
export { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
// On PostgreSQL: the store, its audit chain, the pool they share, the fence seam of a leader lease.
export {
  COORDINATOR_PG_SCHEMA,
  PostgresCoordinatorStore,
  type PgAuditSink,
  type PostgresCoordinatorStoreOptions,
} from '../persistence/coordinator/postgres-store.js';
export type { PgFence, PgQuery } from '../persistence/coordinator/postgres-client.js';
export { AUDIT_PG_MIGRATIONS, PostgresAuditLog } from '../persistence/audit/postgres-chain.js';
export type { AuditChain } from '../persistence/audit/audit-chain.js';
// A chain's signed head as one line to keep elsewhere (`audit digest`), and its check (`AuditVerifyOptions.digest`).
export {
  type AuditDigest,
  auditDigest,
  digestSignatureHolds,
  formatAuditDigest,
  parseAuditDigest,
} from '../persistence/audit/digest.js';
export type {
  AuditAppended,
  AuditCheckpoint,
  AuditListOptions,
  AuditVerification,
  AuditVerifyOptions,
} from '../persistence/audit/sqlite-chain.js';
export {
  type PgConnection,
  type PgPool,
  type PgPoolOptions,
  PostgresError,
  isPostgresUrl,
  openPgPool,
  redactPostgresSecrets,
  safePostgresUrl,
} from '../persistence/kernel/postgres.js';
// What any Coordinator store implements (the contract suite holds it to this).
export type {
  AuditSink,
  CoordinatorStore,
  CoordinatorTables,
  StoredItem,
} from '../persistence/coordinator/coordinator-store.js';
export type { ItemPageFilter, ItemTotals } from '../persistence/coordinator/item-reads.js';
export type {
  CommitBatch,
  Committed,
  ItemChanges,
  RunRecord,
  TreeRollup,
  TreeUsage,
} from '../workflow/records.js';
export { COORDINATOR_ERROR_CODES, statusOf } from '../actors/coordinator/types.js';
export { DEFAULT_MAX_HOPS } from '../actors/coordinator/policies.js';
// The names the Coordinator gives its agents, hops and metadata.
export { COORDINATOR_AGENT_NAME, EDGE_AGENT_NAME, SWITCHBOARD_METADATA_KEY } from '../actors/coordinator/human-edge.js';
export { ROLE_AGENTS_CONTEXT } from '../actors/coordinator/mirror.js';
export { hopKey } from '../actors/coordinator/engine.js';
