import type { Observable } from 'rxjs';
import type { Dispatcher } from '../../bus/dispatcher.js';
import type { WorkQueue } from '../../bus/work-queue.js';
import type { PoolDeployment } from '../../machines/pool-machine.js';
import type { AuditChain } from '../../persistence/audit/audit-chain.js';
import type { AuditVerification, AuditVerifyOptions } from '../../persistence/audit/sqlite-chain.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import type { CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';
import type { HopRecord, ItemRecord } from '../../workflow/records.js';
import type { Broker } from '../broker/broker.js';
import type { Pool } from '../worker/pool.js';
import type { CreateWorkItem } from './coordinator-items.js';
import type { SettleOptions } from './coordinator-streams.js';
import type { ItemStatus } from './types.js';

/** A running Coordinator: creates work items, streams their statuses, decides their approvals and cancels them. */
export interface Coordinator {
  /** Starts a work item on a workflow: resolves with the item's id once its creation is committed. */
  createWorkItem(request: CreateWorkItem): Promise<string>;
  /** The item's status now, then on every change; completes after its final status. */
  watch(itemId: string): Observable<ItemStatus>;
  /**
   * Every item's status: a subscriber first gets the current status of each
   * live item (event `current`; none when nothing runs), then every change.
   * Completes when the Coordinator closes.
   */
  readonly statuses$: Observable<ItemStatus>;
  /**
   * Resolves with the item's final status, its `output` included (at once
   * for an item that already ended). Rejects with `COORD_UNKNOWN_ITEM` for
   * an unknown id, `COORD_SETTLE_TIMEOUT` after `timeoutMs`, `COORD_CLOSED`
   * when the Coordinator closes first.
   */
  settled(itemId: string, options?: SettleOptions): Promise<ItemStatus>;
  /** Approves an item waiting at an approval gate, as `approver` (who is recorded in the audit). */
  approve(itemId: string, approver: string): Promise<void>;
  /** Denies an item waiting at an approval gate, as `approver`, with an optional reason (at most 2000 characters). */
  deny(itemId: string, approver: string, reason?: string): Promise<void>;
  /** Cancels an item that has not ended, naming who cancels and why (both optional, both audited). */
  cancel(itemId: string, options?: { by?: string; reason?: string }): Promise<void>;
  /** An item as stored, on either store. */
  getItem(itemId: string): Promise<ItemRecord | undefined>;
  /** Items, oldest first, on either store. */
  listItems(): Promise<ItemRecord[]>;
  /** An item's hops in order, on either store. */
  listHops(itemId: string): Promise<HopRecord[]>;
  /** Walks the audit chain (`audit.verifyChain`). */
  verifyAudit(options?: AuditVerifyOptions): Promise<AuditVerification>;
  /** Where the tables and audit live. */
  readonly storage: 'sqlite' | 'postgres';
  /** The Coordinator's tables (asynchronous reads), on either store. */
  readonly tables: CoordinatorTables;
  /** Changes a role's pool deployment (warm ↔ scale-to-zero), nothing else. */
  configureRole(role: string, deployment: PoolDeployment): void;
  /** The pools of the roles run in this process, by role. */
  readonly pools: ReadonlyMap<string, Pool>;
  /**
   * The hash-chained audit, on either store: its head, rows, signed
   * checkpoints and walk (asynchronous). For synchronous reads of an
   * embedded file, open `SqliteCoordinatorStore` and `AuditLog` on it.
   */
  readonly audit: AuditChain;
  /** The work bus the hops and results travel on. */
  readonly bus: WorkQueue;
  /**
   * The broker the mirror keeps the A2A view in; undefined on PostgreSQL
   * without a `broker` given (the view is then derived from the rows:
   * `taskViewsOfItem(await getItem(id), await listHops(id))`).
   */
  readonly broker: Broker | undefined;
  /** The Context Engine the workers read a run's outputs and checkpoints from. */
  readonly contextStore: ContextStore;
  /** The dispatcher that publishes hops to the roles' queues. */
  readonly dispatcher: Dispatcher;
  /** What restoring found on open. */
  readonly restored: { items: string[]; refused: { itemId: string; reason: string }[]; republished: number };
  /** Coordinator CPU time inside its transactions (governance, audit, cost, routing, store). */
  readonly timing: { ns: bigint; count: number };
  /** Resolves when the broker mirror has caught up (at once where there is no broker). */
  mirrored(): Promise<void>;
  /**
   * Forgets now the Context Engine's data of every run that has been over for
   * its retention (what the periodic sweep does); resolves with how many.
   */
  forgetEndedRuns(): Promise<number>;
  /** Stops: the pools finish the hops they hold, the results loop stops, then what the Coordinator opened is closed. A second call does nothing. */
  close(): Promise<void>;
}
