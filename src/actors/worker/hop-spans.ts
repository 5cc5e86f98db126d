import type { Delivery } from '../../bus/work-queue.js';
import {
  ATTR,
  SPAN,
  SpanKind,
  type TraceFields,
  contextOf,
  traceFieldsOf,
  tracingOn,
} from '../../telemetry/tracing.js';
import { type TracedSpan, openSpan, withSpan } from '../../telemetry/with-span.js';

/**
 * A hop's spans in a worker, told what happens to the hop (the worker's code
 * reads the same with tracing on or off: with no tracer provider registered
 * every hop shares one `HopSpans` that makes nothing).
 *
 * - `switchboard.hop.consume` (consumer): from the delivery taken to its
 *   settling; it continues the trace its envelope carries (the Coordinator's
 *   publish span) and ends with the hop's outcome.
 * - `switchboard.hop.handle`: the handler's call.
 * - `switchboard.hop.result` (producer): the completion recorded and its
 *   result published; the result envelope carries its trace fields.
 */
export class HopSpans {
  /** Every hop's spans while tracing is off. */
  static readonly OFF = new HopSpans(undefined, '');

  /** The hop's consume span; none while tracing is off. */
  readonly #consume: TracedSpan | undefined;
  readonly #role: string;

  private constructor(consume: TracedSpan | undefined, role: string) {
    this.#consume = consume;
    this.#role = role;
  }

  /** Starts a delivery's consume span (its attributes: the role, the delivery count and the hop's ids). */
  static consume(role: string, delivery: Delivery): HopSpans {
    if (!tracingOn()) return HopSpans.OFF;
    const { envelope } = delivery;
    const headers = envelope.kind === 'work' ? envelope.headers : undefined;
    const consume = openSpan(SPAN.consume, contextOf(headers?.trace), {
      kind: SpanKind.CONSUMER,
      attributes: () => ({
        [ATTR.role]: role,
        [ATTR.deliveries]: delivery.deliveries,
        [ATTR.itemId]: headers?.runId,
        [ATTR.taskId]: headers?.taskId,
        [ATTR.hop]: headers?.hop,
        [ATTR.attempt]: headers?.attempt,
      }),
    });
    return new HopSpans(consume, role);
  }

  /** The hop's outcome (`completed`, `suspended`, `replayed`), on its consume span. */
  outcome(outcome: string): void {
    this.#consume?.annotate(() => ({ [ATTR.outcome]: outcome }));
  }

  /** The hop failed: its consume span says so (outcome `failed`, the error's type and code). */
  failed(error: unknown): void {
    if (this.#consume === undefined) return;
    this.outcome('failed');
    this.#consume.fail(error);
  }

  /** The hop settled (or was let go): its consume span ends. */
  end(): void {
    this.#consume?.end();
  }

  /** Runs the handler's call under the handle span. */
  handling<T>(hop: number, call: () => Promise<T>): Promise<T> {
    const consume = this.#consume;
    if (consume === undefined) return call();
    const role = this.#role;
    return withSpan(SPAN.handle, consume.context, { attributes: () => ({ [ATTR.role]: role, [ATTR.hop]: hop }) }, call);
  }

  /**
   * Runs the recording and publishing of the hop's result under the result
   * span: `work` is given the span's trace fields (what the result carries)
   * and says the result's outcome once it is known.
   */
  publishing<T>(work: (result: ResultSpan) => Promise<T>): Promise<T> {
    const consume = this.#consume;
    if (consume === undefined) return work(UNTRACED_RESULT);
    return withSpan(SPAN.result, consume.context, { kind: SpanKind.PRODUCER }, (span) =>
      work({
        fields: traceFieldsOf(span.context),
        outcome: (outcome) => {
          span.annotate(() => ({ [ATTR.role]: this.#role, [ATTR.outcome]: outcome }));
          this.outcome(outcome);
        },
      }),
    );
  }
}

/** The result span as the work under it sees it. */
export interface ResultSpan {
  /** The trace fields the result carries (none while tracing is off). */
  readonly fields: TraceFields | undefined;
  /** The result's outcome, once its record is made (on the result span and the hop's). */
  outcome(outcome: string): void;
}

const UNTRACED_RESULT: ResultSpan = { fields: undefined, outcome() {} };
