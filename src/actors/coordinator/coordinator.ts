import { assembleCoordinator } from './coordinator-assembly.js';
import { type CoordinatorOptions, compileCoordinatorOptions } from './coordinator-options.js';
import type { Coordinator } from './coordinator-api.js';

export type { Coordinator } from './coordinator-api.js';
export type { CreateWorkItem } from './coordinator-items.js';
export type { CoordinatorOptions, PostgresStorage, RoleDeployment } from './coordinator-options.js';
export type { SettleOptions } from './coordinator-streams.js';

/**
 * The Coordinator (the design's "small brain"): a deterministic actor that owns
 * every work item's lifecycle. A work item is a top-level A2A task (requester:
 * the human edge; worker: the Coordinator) with one WorkflowRun actor; each
 * hop is a child task to a role's agent, dispatched through the work bus.
 * At every hop it governs (the policy cascade), audits (hash-chained), accrues
 * cost, and routes by the workflow definition; approval gates wait for a
 * named approver; suspended hops wait with no worker running.
 *
 * Crash safety: each result is applied in ONE SQLite transaction (results read
 * together share one commit, one savepoint each) (hop rows,
 * cost, run snapshot, audit rows and the outbox of publishes), and its
 * delivery is acked only after the outbox is published. A redelivered result
 * is recognised and changes nothing; publishes carry deterministic
 * idempotency keys, so re-publishing the outbox after a crash is harmless.
 */

/**
 * Starts a Coordinator on an embedded SQLite file, on the broker, bus and
 * database given, or on PostgreSQL: its options checked and defaulted
 * (`coordinator-options.ts`), its parts opened and wired
 * (`coordinator-assembly.ts`), then started.
 */
export async function createCoordinator(options: CoordinatorOptions): Promise<Coordinator> {
  return assembleCoordinator(compileCoordinatorOptions(options));
}
