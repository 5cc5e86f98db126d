import type { CoordinatorInput, Decision } from '../../decisions/coordinator-decisions.js';
import {
  ATTR,
  type Context,
  OFF_SPAN,
  ROOT_CONTEXT,
  SPAN,
  type Span,
  SpanKind,
  contextWith,
  endSpanWithError,
  startSpan,
  tracer,
  tracingOn,
} from '../../telemetry/tracing.js';
import { annotateSpan, startSpanWith } from '../../telemetry/with-span.js';
import type { GovernanceDecision, HopContext } from '../../workflow/governance.js';

/** The span names of the decisions' inputs. */
const INPUT_NAMES: Record<CoordinatorInput['kind'], string> = {
  create: 'create',
  result: 'result',
  approve: 'approval',
  deny: 'denial',
  cancel: 'cancel',
  timer: 'timer',
  reconcile: 'reconcile',
  child: 'child',
};

/**
 * The spans of the engine's decisions, told what decide-and-commit does
 * (`begin`, `deciding`, `decided`, `governed`, `failed`, `committed`): the
 * engine's code reads the same with tracing on or off. Whether a batch is
 * traced is settled once at its `begin` (no tracer provider: every call after
 * it returns at once, nothing is made).
 *
 * One `switchboard.decision` span per input, under the context the input
 * continues (its item's by default); a timer's only once it changes
 * something (its span then starts at the decision's start). The spans end
 * after the batch's commit, or fail all together with it. Decisions are
 * serialized: one batch is traced at a time.
 */
export class DecisionSpans {
  /** Each item's trace context (none: every decision span is a root). */
  readonly #traces: { of(itemId: string): Context } | undefined;
  /** Whether the batch now decided is traced. */
  #on = false;
  /** The batch's decided spans and the contexts their steps continue, in the order of its decisions. */
  readonly #spans: Span[] = [];
  readonly #contexts: Context[] = [];
  /** The decision being made now: its span (started on demand for a timer) and what it continues. */
  #deciding: Deciding = notDeciding();

  /** `traces` gives an item's trace context: what its decisions continue by default. */
  constructor(traces: { of(itemId: string): Context } | undefined) {
    this.#traces = traces;
  }

  /** A batch of decisions starts. */
  begin(): void {
    this.#on = tracingOn();
    this.#spans.length = 0;
    this.#contexts.length = 0;
  }

  /** An input is about to be decided: its span starts (a timer's only once it changes something). */
  deciding(input: CoordinatorInput, itemId: string | undefined, trace: Context | undefined): void {
    if (!this.#on) return;
    const parent =
      trace ?? (itemId === undefined || this.#traces === undefined ? ROOT_CONTEXT : this.#traces.of(itemId));
    const span = input.kind === 'timer' ? OFF_SPAN : startSpan(SPAN.decision, parent);
    this.#deciding = { span, parent, startedAt: Date.now() };
  }

  /** The input was decided: its span takes the decision's attributes (it ends after the commit). */
  decided(input: CoordinatorInput, itemId: string | undefined, decision: Decision): void {
    if (!this.#on) return;
    const changed = decision.changes !== null || decision.events.length > 0;
    const parent = this.#deciding.parent;
    const span = this.#decisionSpan(input.kind !== 'timer' || changed);
    this.#deciding = notDeciding();
    annotateSpan(span, () => decisionAttributes(input, itemId, decision));
    this.#spans.push(span);
    this.#contexts.push(contextWith(parent, span));
  }

  /** Governance checked a hop of the decision being made: one span per policy, under the decision's. */
  governed(ctx: HopContext, decision: GovernanceDecision): void {
    if (!this.#on) return;
    const parentSpan = this.#decisionSpan(true);
    if (parentSpan === OFF_SPAN) return;
    annotateSpan(parentSpan, () => ({ [ATTR.governanceDecision]: decision.decision }));
    const parent = contextWith(this.#deciding.parent, parentSpan);
    for (const verdict of decision.verdicts) {
      startSpanWith(SPAN.governance, parent, {
        attributes: () => ({
          [ATTR.policy]: verdict.policy,
          [ATTR.verdict]: verdict.decision,
          [ATTR.itemId]: ctx.itemId,
          [ATTR.stage]: ctx.stage,
          [ATTR.role]: ctx.role,
          [ATTR.hop]: ctx.hop,
          [ATTR.attempt]: ctx.attempt,
        }),
      }).end();
    }
  }

  /** The batch failed (a refusal, a decision that threw, its commit): every span of it ends failed. */
  failed(error: unknown): void {
    if (!this.#on) return;
    const open = this.#deciding.span;
    this.#deciding = notDeciding();
    const spans = this.#spans;
    if (open !== OFF_SPAN && !spans.includes(open)) spans.push(open);
    for (const span of spans.splice(0)) endSpanWithError(span, error);
    this.#contexts.length = 0;
  }

  /** The batch committed: the `index`th decision's span ends; the context its step continues (the root when off). */
  committed(index: number): Context {
    this.#spans[index]?.end();
    return this.#contexts[index] ?? ROOT_CONTEXT;
  }

  /** The decision's span, started now if it was deferred (a timer's) and `needed`. */
  #decisionSpan(needed: boolean): Span {
    const d = this.#deciding;
    if (d.span === OFF_SPAN && needed) {
      d.span = tracer.startSpan(SPAN.decision, { kind: SpanKind.INTERNAL, startTime: d.startedAt }, d.parent);
    }
    return d.span;
  }
}

interface Deciding {
  span: Span;
  parent: Context;
  startedAt: number;
}

function notDeciding(): Deciding {
  return { span: OFF_SPAN, parent: ROOT_CONTEXT, startedAt: 0 };
}

/** A decision span's attributes: the input, the item and where it stands; for a result, its handling. */
function decisionAttributes(input: CoordinatorInput, itemId: string | undefined, decision: Decision) {
  const item = decision.view?.item;
  const result = input.kind === 'result' ? input.result : undefined;
  return {
    [ATTR.decisionInput]: INPUT_NAMES[input.kind],
    [ATTR.itemId]: itemId,
    [ATTR.stage]: item?.stage ?? undefined,
    [ATTR.itemState]: item?.state,
    [ATTR.resultHandling]: result === undefined ? undefined : decision.handling,
    [ATTR.role]: result?.role,
    [ATTR.hop]: result?.headers.hop,
    [ATTR.errorCode]: decision.refusal?.code,
  };
}
