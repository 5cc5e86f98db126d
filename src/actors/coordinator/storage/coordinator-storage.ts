import type { Observable } from 'rxjs';
import type { AuditChain } from '../../../persistence/audit/audit-chain.js';
import type { CoordinatorStore, CoordinatorTables } from '../../../persistence/coordinator/coordinator-store.js';
import type { ItemRecord } from '../../../workflow/records.js';
import type { ItemTraceStore } from '../item-traces.js';

/** The live items the engine holds in memory (the Coordinator's engine is one). */
export interface LiveItems {
  liveItems(): ItemRecord[];
  liveItem(itemId: string): ItemRecord | undefined;
}

/**
 * Where a Coordinator keeps its state, as the Coordinator meets it: ONE seam
 * with an implementation per backend (`sqlite-storage.ts`, the embedded file;
 * `postgres-storage.ts`). Everything above it (the engine, the mirror, the
 * forgetter, the streams, the public reads) reads and writes through these
 * members and never asks which backend it runs on: the backend is chosen
 * once, when the options are assembled.
 *
 * It joins a store and its audit chain (siblings in `src/persistence`, which
 * must not know each other), so it lives here, above both.
 */
export interface CoordinatorStorage {
  /** The backend's name, as `Coordinator.storage` reports it (nothing branches on it). */
  readonly name: 'sqlite' | 'postgres';
  /** Commits and loads: what the engine decides from and writes to. */
  readonly store: CoordinatorStore;
  /** The tables' asynchronous reads and marks (the mirror, the forgetter, the public reads, the CLI). */
  readonly tables: CoordinatorTables;
  /** The hash-chained audit, outside a commit (a commit appends its entries through the store). */
  readonly audit: AuditChain;
  /**
   * Where each item's trace fields are kept: the item's row (SQLite, read
   * synchronously, so a restart continues the trace), or this process's
   * memory (PostgreSQL: a restart starts an item's spans a new trace).
   */
  readonly traceStore: ItemTraceStore;
  /**
   * Whether the task ids in the tables name tasks of the broker the mirror
   * keeps (SQLite: the file's own broker). On PostgreSQL the broker is this
   * process's own: the task ids in the tables name another one's tasks.
   */
  readonly storedTasks: boolean;
  /**
   * The live items now, read synchronously (a stream's first statuses and
   * the subscription to the changes are one step, so none is missed): from
   * the SQLite store, or (PostgreSQL) the engine's memory.
   */
  liveNow(live: LiveItems): ItemRecord[];
  /** An item read synchronously where it can be: the SQLite store (any item), or a live item in memory. */
  itemNow(itemId: string, live: LiveItems): ItemRecord | undefined;
  /**
   * An item `itemNow` did not find: what the tables hold of it (an ended
   * item, or undefined for an unknown id). Where `itemNow` read every item
   * already (SQLite) it emits undefined at once, synchronously.
   */
  itemNotNow(itemId: string): Observable<ItemRecord | undefined>;
  /**
   * Called once if another Coordinator takes over what this one keeps (the
   * SQLite file's ownership); PostgreSQL's leadership is the lease's, outside.
   */
  onLost(stop: () => void): void;
  /** Gives up what the backend keeps for this Coordinator (the file's ownership, the pool). */
  close(): Promise<void>;
}
