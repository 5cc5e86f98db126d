import type { Dispatcher, StartHop } from '../../bus/dispatcher.js';
import type { PurgeDeadLetterBody } from '../../decisions/coordinator-decisions.js';
import type { Logger } from '../../log/logger.js';
import type { ResultEnvelope } from '../../protocol/work-envelope.js';
import { withSpan } from '../../telemetry/with-span.js';
import { ATTR, type Context, ROOT_CONTEXT, SPAN, SpanKind, traceFieldsOf } from '../../telemetry/tracing.js';
import type { OutboxRow } from '../../workflow/records.js';
import type { CoordinatorEngine, Step } from './engine.js';
import type { ItemTraces } from './item-traces.js';

/** A publish span's attributes: what is published, for which item, hop and attempt. */
function publishAttributes(row: OutboxRow) {
  if (row.kind === 'start') {
    const hop = row.body as StartHop;
    return {
      [ATTR.publishKind]: 'start',
      [ATTR.itemId]: hop.runId,
      [ATTR.role]: hop.role,
      [ATTR.taskId]: hop.taskId,
      [ATTR.hop]: hop.hop,
      [ATTR.attempt]: hop.attempt ?? 1,
    };
  }
  const result = row.body as ResultEnvelope;
  return {
    [ATTR.publishKind]: 'reply',
    [ATTR.itemId]: result.headers.runId,
    [ATTR.taskId]: result.headers.taskId,
    [ATTR.hop]: result.headers.hop,
    [ATTR.role]: result.headers.askedBy?.role,
  };
}

/**
 * Publishes the outbox: the rows a commit added (a hop to start, a reply to
 * a worker waiting on a question), each under a publish span, after the
 * commit; and purges the dead letters of failures the runs handled. A failed publish stays unsent and is retried soon; publishes
 * carry deterministic idempotency keys, so publishing a row again is
 * harmless. What was published is told to the engine (its rows pruned).
 */
export class OutboxPublisher {
  /** Outbox rows not yet published (a failed publish is retried), with the context their publish continues. */
  readonly #unsent = new Map<number, OutboxRow>();
  /** With tracing on: the context each unsent row's publish span continues (its decision's). */
  readonly #unsentTrace = new Map<number, Context>();
  #sending: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  readonly #dispatcher: Dispatcher;
  readonly #engine: CoordinatorEngine;
  readonly #traces: ItemTraces;
  readonly #log: Logger;
  readonly #closed: () => boolean;
  readonly #local: ((row: OutboxRow) => Promise<void>) | undefined;

  constructor(options: {
    dispatcher: Dispatcher;
    engine: CoordinatorEngine;
    traces: ItemTraces;
    log: Logger;
    closed: () => boolean;
    /** Carries out the rows that are the Coordinator's own work (child items), not publishes on the bus. */
    local?: { handles(row: OutboxRow): boolean; carryOut(row: OutboxRow): Promise<void> };
  }) {
    this.#dispatcher = options.dispatcher;
    this.#engine = options.engine;
    this.#traces = options.traces;
    this.#log = options.log;
    this.#closed = options.closed;
    const local = options.local;
    this.#local =
      local === undefined ? undefined : async (row) => (local.handles(row) ? local.carryOut(row) : undefined);
    this.#isLocal = local === undefined ? () => false : (row) => local.handles(row);
  }

  readonly #isLocal: (row: OutboxRow) => boolean;

  /** Publishes the outbox rows a committed step added; resolves once they are published (or left for a retry). */
  publishStep(step: Step): Promise<void> {
    if (step.outbox.length === 0) return Promise.resolve();
    for (const row of step.outbox) {
      this.#unsent.set(row.id, row);
      const trace = step.rowTraces?.get(row.id) ?? step.trace;
      if (trace !== ROOT_CONTEXT) this.#unsentTrace.set(row.id, trace);
    }
    return this.send();
  }

  /** Publishes rows found unpublished (on start: the outbox a crash may have left). */
  publishRows(rows: readonly OutboxRow[]): Promise<void> {
    for (const row of rows) this.#unsent.set(row.id, row);
    return this.send();
  }

  /** Publishes one outbox row under a publish span; the trace fields of the span travel in the envelope. */
  async #publish(row: OutboxRow): Promise<number> {
    if (this.#isLocal(row)) {
      await this.#local!(row);
      return row.id;
    }
    if (row.kind === 'purge-dead-letter') {
      const { role, id } = row.body as PurgeDeadLetterBody;
      await this.#dispatcher.purgeDeadLetter(role, id);
      return row.id;
    }
    const parent = this.#unsentTrace.get(row.id) ?? this.#traces.of(row.itemId);
    await withSpan(
      SPAN.publish,
      parent,
      { kind: SpanKind.PRODUCER, attributes: () => publishAttributes(row) },
      async (span) => {
        const trace = traceFieldsOf(span.context);
        if (row.kind === 'start') {
          const hop = row.body as StartHop;
          const started = await this.#dispatcher.start(trace === undefined ? hop : { ...hop, trace });
          span.annotate({ [ATTR.duplicate]: started.duplicate });
        } else {
          const signaled = await this.#dispatcher.signal(row.body as ResultEnvelope, trace);
          span.annotate({ [ATTR.duplicate]: signaled.duplicate });
        }
      },
    );
    return row.id;
  }

  /** Publishes every unsent outbox row; a failure leaves them for a retry soon. */
  send(): Promise<void> {
    if (this.#sending !== undefined) return this.#sending.then(() => (this.#unsent.size > 0 ? this.send() : undefined));
    const rows = [...this.#unsent.values()];
    if (rows.length === 0) return Promise.resolve();
    const sending = (async () => {
      const done: number[] = [];
      const results = await Promise.allSettled(rows.map((row) => this.#publish(row)));
      for (const [i, r] of results.entries()) {
        if (r.status === 'fulfilled') {
          done.push(r.value);
          this.#unsent.delete(rows[i]!.id);
          if (this.#unsentTrace.size > 0) this.#unsentTrace.delete(rows[i]!.id);
        } else {
          this.#log.warn({ err: r.reason, outbox: rows[i]!.id }, 'publish failed: will retry');
        }
      }
      this.#engine.published(done);
      if (this.#unsent.size > 0 && !this.#closed() && this.#retryTimer === undefined) {
        this.#retryTimer = setTimeout(() => {
          this.#retryTimer = undefined;
          void this.send();
        }, 500);
      }
    })().finally(() => {
      this.#sending = undefined;
    });
    this.#sending = sending;
    return sending;
  }

  /** Stops retrying and waits for the publishes under way. */
  async close(): Promise<void> {
    clearTimeout(this.#retryTimer);
    await this.#sending;
  }
}
