import type { CoordinatorStore } from '../../persistence/coordinator/store.js';
import type { HopRecord, ItemRecord } from '../../workflow/records.js';

/**
 * The live work items and their hops, held in memory in front of the
 * Coordinator's tables: every write goes to SQLite (inside the caller's
 * transaction) and to memory; reads of live items never touch SQLite. An
 * item leaves memory when it ends (its late results read the tables). When
 * a transaction rolls back, the items it touched are dropped from memory and
 * read again from the tables, which are the truth.
 */
export class LiveRecords {
  readonly #store: CoordinatorStore;
  readonly #items = new Map<string, ItemRecord>();
  readonly #hops = new Map<string, HopRecord>();
  readonly #byKey = new Map<string, string>();
  readonly #byContinuation = new Map<string, string>();
  readonly #hopsOf = new Map<string, string[]>();

  constructor(store: CoordinatorStore) {
    this.#store = store;
  }

  /** Reads a live item and its hops from the tables into memory. */
  load(itemId: string): ItemRecord | undefined {
    this.#drop(itemId);
    const item = this.#store.getItem(itemId);
    if (item === undefined || item.finishedAt !== null) return item;
    this.#items.set(itemId, item);
    for (const hop of this.#store.listHops(itemId)) this.#remember(hop);
    return item;
  }

  item(itemId: string): ItemRecord | undefined {
    return this.#items.get(itemId) ?? this.#store.getItem(itemId);
  }

  hop(hopId: string): HopRecord | undefined {
    return this.#hops.get(hopId) ?? this.#store.getHop(hopId);
  }

  /** A hop by its bus idempotency key; for a live item memory has every hop, so a miss is an answer. */
  hopByKey(itemId: string, key: string): HopRecord | undefined {
    if (this.#items.has(itemId)) {
      const id = this.#byKey.get(key);
      return id === undefined ? undefined : this.#hops.get(id);
    }
    return this.#store.hopByKey(key);
  }

  hopByContinuation(token: string): HopRecord | undefined {
    const id = this.#byContinuation.get(token);
    return id === undefined ? this.#store.hopByContinuation(token) : this.#hops.get(id);
  }

  /** A new item: written, and held while it lives. */
  insertItem(item: ItemRecord): void {
    this.#store.insertItem({
      id: item.id,
      taskId: item.taskId,
      workflow: item.workflow,
      state: item.state,
      input: item.input,
      budget: item.budget,
      attributes: item.attributes,
      now: item.createdAt,
    });
    this.#items.set(item.id, item);
  }

  /** Writes an item (and its run's snapshot, when given); an item that ended leaves memory with its hops. */
  putItem(item: ItemRecord, run?: { machineVersion: number; snapshot: unknown }): void {
    this.#store.updateItem(item, run);
    if (item.finishedAt === null) this.#items.set(item.id, item);
    else this.#drop(item.id);
  }

  insertHop(hop: HopRecord): void {
    this.#store.insertHop(hop);
    if (this.#items.has(hop.itemId)) this.#remember(hop);
  }

  updateHop(hop: HopRecord): void {
    this.#store.updateHop(hop);
    if (this.#hops.has(hop.id)) this.#hops.set(hop.id, hop);
  }

  /** After a rollback: what memory holds of these items may be ahead of the tables. */
  forget(itemIds: Iterable<string>): void {
    for (const itemId of itemIds) this.load(itemId);
  }

  #remember(hop: HopRecord): void {
    this.#hops.set(hop.id, hop);
    this.#byKey.set(hop.idempotencyKey, hop.id);
    if (hop.continuation !== null) this.#byContinuation.set(hop.continuation, hop.id);
    const list = this.#hopsOf.get(hop.itemId);
    if (list === undefined) this.#hopsOf.set(hop.itemId, [hop.id]);
    else list.push(hop.id);
  }

  #drop(itemId: string): void {
    this.#items.delete(itemId);
    for (const id of this.#hopsOf.get(itemId) ?? []) {
      const hop = this.#hops.get(id);
      if (hop === undefined) continue;
      this.#hops.delete(id);
      this.#byKey.delete(hop.idempotencyKey);
      if (hop.continuation !== null) this.#byContinuation.delete(hop.continuation);
    }
    this.#hopsOf.delete(itemId);
  }
}
