import {
  type Context,
  OFF_SPAN,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  contextWith,
  endSpanWithError,
  markSpanFailed,
  startSpan,
} from './tracing.js';

/**
 * The one way the algorithms are traced: a span wraps a piece of work, its
 * attributes are one object, a failure marks it and it ends, whatever the
 * work returns. The code inside reads the same with tracing on or off: with
 * no tracer provider registered nothing is made (the span is `OFF_SPAN`, the
 * context is the parent, no attribute object is built when the attributes
 * are given as a function, and the work's promise is handed back untouched).
 *
 * Nothing but this module (and `tracing.ts` beneath it) sets an attribute on
 * a span.
 */

/** A span attribute's value: ids, names, numbers and outcomes (never a body or token); `undefined` is left out. */
export type SpanAttributeValue = string | number | boolean | undefined;

/** A span's attributes as one object, keyed by the names in `ATTR`. */
export type SpanAttributes = Readonly<Record<string, SpanAttributeValue>>;

/** Attributes, or a function that makes them (called only when the span records). */
export type SpanAttributesOf = SpanAttributes | (() => SpanAttributes);

/** How a span is started: its kind (default internal) and its attributes at the start. */
export interface SpanStart {
  kind?: SpanKind;
  attributes?: SpanAttributesOf;
}

/** A span as the traced work sees it: its context (the parent of what follows) and a way to add attributes. */
export interface TracedSpan {
  /** The context holding this span (the parent itself when tracing is off). */
  readonly context: Context;
  /** Whether the span records (tracing on and sampled). */
  readonly recording: boolean;
  /** Adds attributes (the function is called only when the span records). */
  annotate(attributes: SpanAttributesOf): void;
  /** Marks the span failed with an error's type name and code, without ending it. */
  fail(error: unknown): void;
  /** Ends the span (once; later calls do nothing). */
  end(): void;
  /** Ends the span as failed with an error's type name and code. */
  endWithError(error: unknown): void;
}

/** Sets attributes on a recording span; `undefined` values are left out. */
export function annotateSpan(span: Span, attributes: SpanAttributesOf): void {
  if (!span.isRecording()) return;
  const values = typeof attributes === 'function' ? attributes() : attributes;
  for (const key in values) {
    const value = values[key];
    if (value !== undefined) span.setAttribute(key, value);
  }
}

class Traced implements TracedSpan {
  readonly context: Context;
  #ended = false;

  constructor(
    readonly span: Span,
    parent: Context,
  ) {
    this.context = contextWith(parent, span);
  }

  get recording(): boolean {
    return this.span.isRecording();
  }

  annotate(attributes: SpanAttributesOf): void {
    annotateSpan(this.span, attributes);
  }

  fail(error: unknown): void {
    markSpanFailed(this.span, error);
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.span.end();
  }

  endWithError(error: unknown): void {
    if (this.#ended) return;
    this.#ended = true;
    endSpanWithError(this.span, error);
  }
}

/** The one traced span while tracing is off: records nothing, its context is the parent's. */
class Untraced implements TracedSpan {
  readonly recording = false;
  constructor(readonly context: Context) {}
  annotate(): void {}
  fail(): void {}
  end(): void {}
  endWithError(): void {}
}

/** The untraced span under the root context: the one every span of the off path is (nothing is made). */
const UNTRACED_ROOT: TracedSpan = new Untraced(ROOT_CONTEXT);

/**
 * Starts a span under `parent` for work whose end is not one call's (a span
 * ended by another callback): the caller ends it with `end` or `endWithError`.
 */
export function openSpan(name: string, parent: Context, start: SpanStart = {}): TracedSpan {
  const span = startSpan(name, parent, start.kind ?? SpanKind.INTERNAL);
  if (span === OFF_SPAN) return parent === ROOT_CONTEXT ? UNTRACED_ROOT : new Untraced(parent);
  const traced = new Traced(span, parent);
  if (start.attributes !== undefined) traced.annotate(start.attributes);
  return traced;
}

/**
 * Starts a span under `parent` with its attributes and hands back the span
 * itself, for a caller that keeps it as a `Span` (`OFF_SPAN` while tracing is
 * off: nothing is made, the attribute function is not called).
 */
export function startSpanWith(name: string, parent: Context, start: SpanStart = {}): Span {
  const span = startSpan(name, parent, start.kind ?? SpanKind.INTERNAL);
  if (start.attributes !== undefined) annotateSpan(span, start.attributes);
  return span;
}

/**
 * Whether a traced span is one of the off path's (no span behind it): work
 * under it needs no settling, its promise is handed back as it is.
 */
function untraced(span: TracedSpan): boolean {
  return span instanceof Untraced;
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/**
 * Runs `work` inside a span under `parent`: the span starts with the given
 * attributes, is marked failed if `work` throws or its promise rejects (the
 * error goes on), and ends when `work` returns or its promise settles.
 */
export function withSpan<T>(name: string, parent: Context, start: SpanStart, work: (span: TracedSpan) => T): T {
  const span = openSpan(name, parent, start);
  if (untraced(span)) return work(span);
  let result: T;
  try {
    result = work(span);
  } catch (error) {
    span.endWithError(error);
    throw error;
  }
  if (isPromiseLike(result)) {
    return (result as PromiseLike<unknown>).then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.endWithError(error);
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}
