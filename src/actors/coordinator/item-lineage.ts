import { parentOf } from '../../workflow/item-tree.js';
import type { ItemBudget, ItemRecord } from '../../workflow/records.js';

/** An item's budget and parent: facts that never change once it exists. */
export interface LineageFacts {
  budget: ItemBudget | null;
  parent: string | null;
}

/** An ancestor of a child (its parent first, the root last), with its budget. */
export interface Ancestor {
  id: string;
  budget: ItemBudget | null;
}

/** How many items' facts are kept (past it, all are read again once forgotten). */
const KEPT = 10_000;

/**
 * Each ancestor's budget and parent, read once: a child's hops are governed
 * against them. From memory (the live items, then what was read before),
 * else from the store.
 */
export class ItemLineage {
  readonly #facts = new Map<string, LineageFacts>();
  readonly #live: (id: string) => ItemRecord | undefined;
  readonly #load: (id: string) => Promise<ItemRecord | undefined>;

  constructor(options: {
    live: (id: string) => ItemRecord | undefined;
    load: (id: string) => Promise<ItemRecord | undefined>;
  }) {
    this.#live = options.live;
    this.#load = options.load;
  }

  /**
   * The ancestors of a child whose parent is `parentId`, as `chain` gives
   * them, when memory holds every one (undefined: the store must be read).
   * Most children's parents are live: no await, so a turn's decisions run
   * without a pause.
   */
  chainNow(parentId: string): Ancestor[] | undefined {
    const chain: Ancestor[] = [];
    const seen = new Set<string>();
    for (let id: string | null = parentId; id !== null && !seen.has(id); ) {
      seen.add(id);
      const facts = this.#now(id);
      if (facts === undefined) return undefined;
      chain.push({ id, budget: facts.budget });
      id = facts.parent;
    }
    return chain;
  }

  /** The ancestors of a child whose parent is `parentId` (parent first), with their budgets; an unknown one ends it. */
  async chain(parentId: string): Promise<Ancestor[]> {
    const chain: Ancestor[] = [];
    const seen = new Set<string>();
    for (let id: string | null = parentId; id !== null && !seen.has(id); ) {
      seen.add(id);
      const facts = await this.#of(id);
      if (facts === undefined) break;
      chain.push({ id, budget: facts.budget });
      id = facts.parent;
    }
    return chain;
  }

  /** An item's facts, from memory or the store (undefined: no such item). */
  async #of(id: string): Promise<LineageFacts | undefined> {
    const known = this.#now(id);
    if (known !== undefined) return known;
    const item = await this.#load(id);
    return item === undefined ? undefined : this.#keep(id, item);
  }

  /** An item's facts if memory holds them (undefined: the store must be read). */
  #now(id: string): LineageFacts | undefined {
    const known = this.#facts.get(id);
    if (known !== undefined) return known;
    const item = this.#live(id);
    return item === undefined ? undefined : this.#keep(id, item);
  }

  #keep(id: string, item: ItemRecord): LineageFacts {
    if (this.#facts.size >= KEPT) this.#facts.clear();
    const facts = { budget: item.budget, parent: parentOf(item) };
    this.#facts.set(id, facts);
    return facts;
  }
}
