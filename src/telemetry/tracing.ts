import {
  type Context,
  INVALID_SPAN_CONTEXT,
  ProxyTracerProvider,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapSetter,
  context,
  isSpanContextValid,
  propagation,
  trace,
} from '@opentelemetry/api';
import { VERSION } from '../version.js';

/**
 * switchboard's traces, through `@opentelemetry/api` only: with no SDK
 * registered every call here is the API's no-op. The tracer is taken once
 * (the API's proxy hands spans to a provider registered later), spans are
 * always given their parent context explicitly (no context manager is
 * needed), and attributes are set only on a span that records
 * (`span.isRecording()`), so the off path builds no attribute object.
 *
 * Never recorded: capability tokens, message or part bodies, inputs,
 * outputs, error messages (only their type names and codes). docs/telemetry.md
 * lists every span and attribute.
 */

/** The instrumentation scope of every span and metric. */
export const INSTRUMENTATION_SCOPE = 'a2a-switchboard';

/** The tracer of every switchboard span (the API's proxy: it follows a provider registered later). */
export const tracer = trace.getTracer(INSTRUMENTATION_SCOPE, VERSION);

/** Every span name switchboard records. */
export const SPAN = {
  /** A work item's root span, at `createWorkItem`. */
  item: 'switchboard.item.create',
  /** One Coordinator decision (one input of `decide`). */
  decision: 'switchboard.decision',
  /** One policy of the governance cascade over a hop. */
  governance: 'switchboard.governance.check',
  /** The Coordinator publishing a hop (or a query's reply) from its outbox, after the commit. */
  publish: 'switchboard.hop.publish',
  /** A worker taking a hop's delivery and settling it (ack or nack). */
  consume: 'switchboard.hop.consume',
  /** A worker's handler running a hop. */
  handle: 'switchboard.hop.handle',
  /** A worker recording and publishing a hop's result. */
  result: 'switchboard.hop.result',
  /** The Coordinator applying a hop's result. */
  apply: 'switchboard.hop.apply',
  /** One broker call (a JSON-RPC method), in process or from a connection. */
  brokerCall: 'switchboard.broker.call',
} as const;

/** Every span attribute switchboard records (values are ids, names, numbers and outcomes: never a body or token). */
export const ATTR = {
  itemId: 'switchboard.item.id',
  parentItemId: 'switchboard.item.parent',
  branch: 'switchboard.item.branch',
  workflowId: 'switchboard.workflow.id',
  workflowVersion: 'switchboard.workflow.version',
  itemState: 'switchboard.item.state',
  decisionInput: 'switchboard.decision.input',
  resultHandling: 'switchboard.result.handling',
  stage: 'switchboard.stage',
  role: 'switchboard.role',
  taskId: 'switchboard.task.id',
  hop: 'switchboard.hop',
  attempt: 'switchboard.hop.attempt',
  outcome: 'switchboard.hop.outcome',
  publishKind: 'switchboard.publish.kind',
  duplicate: 'switchboard.publish.duplicate',
  deliveries: 'switchboard.delivery.count',
  errorType: 'switchboard.error.type',
  errorCode: 'switchboard.error.code',
  policy: 'switchboard.policy.name',
  verdict: 'switchboard.policy.verdict',
  governanceDecision: 'switchboard.governance.decision',
  rpcSystem: 'rpc.system',
  rpcMethod: 'rpc.method',
  callOutcome: 'switchboard.call.outcome',
} as const;

export { ROOT_CONTEXT, SpanKind, SpanStatusCode };
export type { Context, Span };

/**
 * The trace fields carried with a message: what the registered propagator
 * writes (W3C `traceparent` and `tracestate` by default). A plain record of
 * strings, as the bus headers and A2A metadata keep it.
 */
export type TraceFields = Record<string, string>;

const setter: TextMapSetter<TraceFields> = {
  set(carrier, key, value) {
    carrier[key] = value;
  },
};

const getter: TextMapGetter<TraceFields> = {
  keys: (carrier) => Object.keys(carrier),
  get: (carrier, key) => carrier[key],
};

/** The API's own no-op provider (what a proxy with no SDK behind it delegates to). */
const NOOP_PROVIDER = new ProxyTracerProvider().getDelegate().constructor;

/**
 * Whether a tracer provider is registered: the global one is the API's proxy
 * with a delegate other than its no-op (or another API copy's provider).
 * Two reads and a call: no allocation.
 */
export function tracingOn(): boolean {
  const provider = trace.getTracerProvider();
  return !(provider instanceof ProxyTracerProvider) || provider.getDelegate().constructor !== NOOP_PROVIDER;
}

/** The span every start returns while tracing is off: one object, never recording, with no valid context. */
export const OFF_SPAN: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);

/** A context holding `span` as the parent of what follows (`parent` itself for the off span). */
export function contextWith(parent: Context, span: Span): Context {
  return span === OFF_SPAN ? parent : trace.setSpan(parent, span);
}

/**
 * The trace fields of `ctx` through the registered propagator, or
 * `undefined` when `ctx` holds no valid span (tracing off: nothing is made).
 */
export function traceFieldsOf(ctx: Context): TraceFields | undefined {
  if (ctx === ROOT_CONTEXT) return undefined;
  const span = trace.getSpan(ctx);
  if (span === undefined || !isSpanContextValid(span.spanContext())) return undefined;
  const fields: TraceFields = {};
  propagation.inject(ctx, fields, setter);
  return Object.keys(fields).length === 0 ? undefined : fields;
}

/** The context the trace fields carry (the root context when there are none). */
export function contextOf(fields: TraceFields | undefined | null): Context {
  if (fields === undefined || fields === null || !tracingOn()) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, fields, getter);
}

/** The span options of each kind, made once (starting a span allocates no options object). */
const KIND_OPTIONS = {
  [SpanKind.INTERNAL]: { kind: SpanKind.INTERNAL },
  [SpanKind.SERVER]: { kind: SpanKind.SERVER },
  [SpanKind.CLIENT]: { kind: SpanKind.CLIENT },
  [SpanKind.PRODUCER]: { kind: SpanKind.PRODUCER },
  [SpanKind.CONSUMER]: { kind: SpanKind.CONSUMER },
} as const;

/**
 * Starts a span under `parent` (explicitly: no context manager is read);
 * `OFF_SPAN` while no tracer provider is registered (nothing is made).
 */
export function startSpan(name: string, parent: Context, kind: SpanKind = SpanKind.INTERNAL): Span {
  if (!tracingOn()) return OFF_SPAN;
  return tracer.startSpan(name, KIND_OPTIONS[kind], parent);
}

/**
 * Runs `fn` with `ctx` as the active context (for code that reads it, such
 * as the broker's call spans in process); with tracing off, just runs it.
 */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return ctx === ROOT_CONTEXT ? fn() : context.with(ctx, fn);
}

/** The active context (the root context when tracing is off). */
export function activeContext(): Context {
  return tracingOn() ? context.active() : ROOT_CONTEXT;
}

/** Ends a span as failed with an error's type name and code (never its message: it may quote a body). */
export function endSpanWithError(span: Span, error: unknown): void {
  markSpanFailed(span, error);
  span.end();
}

/** Marks a span failed with an error's type name and code (never its message), without ending it. */
export function markSpanFailed(span: Span, error: unknown): void {
  if (span.isRecording()) {
    const e = error as { name?: unknown; code?: unknown } | null;
    const type = typeof e?.name === 'string' ? e.name : typeof error;
    span.setAttribute(ATTR.errorType, type);
    if (typeof e?.code === 'string' || typeof e?.code === 'number') span.setAttribute(ATTR.errorCode, e.code);
    span.setStatus({ code: SpanStatusCode.ERROR, message: type });
  }
}
