import type { AuditEntryInput } from '../../protocol/audit.js';
import type { ItemPageFilter, ItemTotals } from './item-reads.js';
import type {
  CommitBatch,
  Committed,
  HopRecord,
  ItemRecord,
  ItemState,
  OutboxRow,
  RunRecord,
  TreeUsage,
  UsageGroup,
  UsageGrouping,
  UsageRow,
} from '../../workflow/records.js';

/**
 * What the Coordinator needs of a store: commit a batch of decided changes
 * atomically, and load what its decisions start from. Both are asynchronous,
 * so a store over the network (PostgreSQL) fits as well as the embedded SQLite
 * one (`SqliteCoordinatorStore`). The Coordinator decides in memory, commits,
 * and only then publishes the outbox and answers: nothing leaves before its
 * commit. Any store must pass the contract suite in
 * `test/persistence/coordinator-store-contract.ts`.
 */
export interface CoordinatorStore {
  /**
   * Applies every change of the batch, in order, and deletes the published
   * outbox rows it names, in ONE transaction: all of it or nothing (a failed
   * commit rejects and leaves the tables as they were). Resolves once durable,
   * with the ids of the outbox rows each `changes` entry added.
   */
  commit(batch: CommitBatch): Promise<Committed>;
  /** Every item not yet ended, with its hops (in order) and its run's snapshot. */
  loadLive(): Promise<StoredItem[]>;
  /** One item with its hops and run, ended or not. */
  loadItem(itemId: string): Promise<StoredItem | undefined>;
  /** Outbox rows not yet deleted (after a crash: what may be unpublished), in order. */
  loadOutbox(): Promise<OutboxRow[]>;
  /**
   * The live subtree usage of each item (its own hops' and every
   * descendant's, as `ItemChanges.rollup` added it); an item charged nothing
   * is absent. A child's decisions are governed against its ancestors'.
   */
  loadTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>>;
  /** A kept workflow definition (as kept by the first item on it). */
  loadDefinition(ref: { id: string; version: number }): Promise<unknown>;
  /**
   * Keeps the definitions a Coordinator serves (each once per id and
   * version), so that commands reading the database know its workflows
   * before an item runs on them.
   */
  keepDefinitions(definitions: readonly { ref: { id: string; version: number }; body: unknown }[]): Promise<void>;
  /**
   * For a store whose commits are fenced (several Coordinators on one
   * database): resolves when a commit made now would pass the fence, rejects
   * as the fence does when it would not. The Coordinator asks it before
   * acting on a decision that commits nothing (a result acked as a duplicate,
   * late or unknown), so a replaced leader cannot ack what it no longer owns.
   */
  checkFence?(): Promise<void>;
}

/** An item as a store loads it. */
export interface StoredItem {
  item: ItemRecord;
  hops: HopRecord[];
  run: RunRecord | undefined;
}

/** Where a store appends the audit entries of a commit, inside its transaction. */
export interface AuditSink {
  append(entries: readonly AuditEntryInput[]): void;
  /** Signs the head (called in the transaction of a batch in which an item ended), when a key is configured. */
  checkpoint?(): void;
}

/**
 * What the Coordinator, its mirror, its forgetter and the CLI's reads need
 * of the tables besides commits, asynchronous so that both stores implement
 * it (`SqliteCoordinatorStore` answers at once, `PostgresCoordinatorStore`
 * over the network). The `record*` writes are marks outside a commit (the
 * broker mirror's task ids, the Context Engine's forgetting): each is one
 * statement, idempotent.
 */
export interface CoordinatorTables {
  readItem(id: string): Promise<ItemRecord | undefined>;
  /** Work items, oldest first (optionally only those in one state; at most `limit`, default 10000). */
  readItems(options?: { state?: ItemState; limit?: number }): Promise<ItemRecord[]>;
  countItems(options?: { state?: ItemState }): Promise<number> | number;
  /** One page of work items, newest first, filtered by state and workflow (the SQL of `item-reads.ts`). */
  readItemPage(filter: ItemPageFilter): Promise<ItemRecord[]>;
  /** The workflow ids items run on, sorted. */
  readWorkflowIds(): Promise<string[]>;
  /** The roles the kept definitions' stages name and the roles hops went to, sorted. */
  readRoles(): Promise<string[]>;
  /** How many items are in each state, and what all of them cost. */
  readItemTotals(): Promise<ItemTotals>;
  /** Work items not yet completed, failed or canceled. */
  readLiveItems(): Promise<ItemRecord[]>;
  /** A work item's hops in order. */
  readHops(itemId: string): Promise<HopRecord[]>;
  /** The hops of many work items (one read): each item's hops in order; an item without hops is absent. */
  readHopsOfItems(itemIds: readonly string[]): Promise<Map<string, HopRecord[]>>;
  /** Cost and effort grouped by agent, model or task, largest cost first. */
  readUsageBy(grouping: UsageGrouping, options?: { itemId?: string }): Promise<UsageGroup[]>;
  /** The live subtree usage of each item (as `CoordinatorStore.loadTreeUsage`); an item charged nothing is absent. */
  readTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>>;
  /** Every accrual row of one item (or all), in order. */
  readUsageRows(options?: { itemId?: string }): Promise<UsageRow[]>;
  readContextForgottenAt(itemId: string): Promise<number | null>;
  /** Items whose broker mirror has not caught up with their final state. */
  readUnmirroredItems(): Promise<ItemRecord[]>;
  /** Up to `limit` items ended at or before `endedBy` whose run's context is not yet forgotten, oldest first. */
  readEndedUnforgotten(endedBy: number, limit: number): Promise<string[]>;
  recordItemTask(itemId: string, taskId: string): Promise<void>;
  recordHopTask(hopId: string, taskId: string): Promise<void>;
  recordMirrored(itemId: string): Promise<void>;
  /** Makes an ended item due to be forgotten again (a hop of it ran again). */
  recordForgetAgain(itemId: string): Promise<void>;
  recordContextForgotten(itemIds: readonly string[], at: number): Promise<void>;
}
