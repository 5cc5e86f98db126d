import type { TraceFields } from '../../protocol/work-envelope.js';
import { ATTR, type Context, ROOT_CONTEXT, SPAN, type Span, contextOf, tracingOn } from '../../telemetry/tracing.js';
import { startSpanWith } from '../../telemetry/with-span.js';

/**
 * Each work item's trace: its root span is started at `createWorkItem`, and
 * the trace fields of that span (`traceparent`, `tracestate`) are kept in
 * the item's row, so every later span of the item (decisions, publishes,
 * the broker mirror's calls) continues the same trace, after a restart too.
 * Live items' contexts are held in memory; an item that ends leaves it.
 * With tracing off nothing is kept: every item's context is the root context.
 */

export interface ItemTraceStore {
  setItemTrace(itemId: string, fields: TraceFields): void;
  itemTrace(itemId: string): TraceFields | undefined;
}

/**
 * Trace fields held in memory only, for a store with no synchronous row to
 * keep them in (the Coordinator on PostgreSQL): an item's spans continue one
 * trace while this process runs; after a restart they start a new one.
 */
export function heldItemTraces(): ItemTraceStore {
  const fields = new Map<string, TraceFields>();
  return {
    setItemTrace(itemId, value) {
      if (fields.size >= MAX_HELD) fields.clear();
      fields.set(itemId, value);
    },
    itemTrace: (itemId) => fields.get(itemId),
  };
}

/** How many contexts are held before the cache starts again (they are read back from the rows). */
const MAX_HELD = 10_000;

export class ItemTraces {
  readonly #store: ItemTraceStore;
  readonly #held = new Map<string, Context>();

  constructor(store: ItemTraceStore) {
    this.#store = store;
  }

  /**
   * Starts an item's span (ended by the caller once the item is created): the
   * root of a new trace, or for a child item a span under its parent's
   * context, so a tree of work is one trace whose spans follow the tree.
   */
  begin(
    itemId: string,
    workflow: { id: string; version: number },
    parent?: { ctx: Context; itemId: string; branch: string },
  ): Span {
    return startSpanWith(SPAN.item, parent?.ctx ?? ROOT_CONTEXT, {
      attributes: () => ({
        [ATTR.itemId]: itemId,
        [ATTR.workflowId]: workflow.id,
        [ATTR.workflowVersion]: workflow.version,
        ...(parent === undefined ? {} : { [ATTR.parentItemId]: parent.itemId, [ATTR.branch]: parent.branch }),
      }),
    });
  }

  /** Holds the item's context (its root span's) and keeps its trace fields in the item's row. */
  keep(itemId: string, ctx: Context, fields: TraceFields | undefined): void {
    if (!tracingOn()) return;
    if (fields !== undefined) this.#store.setItemTrace(itemId, fields);
    this.#hold(itemId, fields === undefined ? ROOT_CONTEXT : ctx);
  }

  /** The item's context: held, or read back from its row (after a restart). */
  of(itemId: string): Context {
    if (!tracingOn()) return ROOT_CONTEXT;
    const held = this.#held.get(itemId);
    if (held !== undefined) return held;
    let ctx = ROOT_CONTEXT;
    try {
      ctx = contextOf(this.#store.itemTrace(itemId));
    } catch {
      // An unreadable row (a closed database on the way out): the spans start a new trace.
    }
    this.#hold(itemId, ctx);
    return ctx;
  }

  /** The item ended: its context is no longer held (a late result reads it back). */
  ended(itemId: string): void {
    if (this.#held.size > 0) this.#held.delete(itemId);
  }

  #hold(itemId: string, ctx: Context): void {
    if (this.#held.size >= MAX_HELD) this.#held.clear();
    this.#held.set(itemId, ctx);
  }
}
