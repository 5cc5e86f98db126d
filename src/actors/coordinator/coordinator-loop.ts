import type { Dispatcher, ResultDelivery } from '../../bus/dispatcher.js';
import type { Logger } from '../../log/logger.js';
import type { CoordinatorTables } from '../../persistence/coordinator/coordinator-store.js';
import type { ArtifactChunk } from '../../protocol/artifact-chunk.js';
import { RESULTS_ROLE, type ResultEnvelope } from '../../protocol/work-envelope.js';
import { resultRetry } from '../../decisions/result-retry.js';
import type { SwitchboardMetrics } from '../../telemetry/metrics.js';
import { ATTR, SPAN, SpanKind, contextOf, tracingOn } from '../../telemetry/tracing.js';
import { type TracedSpan, openSpan } from '../../telemetry/with-span.js';
import type { CoordinatorEngine, Step } from './engine.js';

/** What the loop is given: the parts it drives and what a committed step leads to (`after`). */
export interface CoordinatorLoopOptions {
  dispatcher: Dispatcher;
  engine: CoordinatorEngine;
  tables: CoordinatorTables;
  metrics: SwitchboardMetrics;
  log: Logger;
  /** What a committed step leads to: statuses out, publishes made, the broker moved. Resolves once published. */
  after: (step: Step) => Promise<void>;
  closed: () => boolean;
  consumer: string;
  resultsVisibilityTimeoutMs: number;
  timerIntervalMs: number;
  /** Told each artifact chunk a hop sent beside its results, before the results that came after it. */
  chunk: (chunk: ArtifactChunk) => void;
  /** The bus's generation (`WorkQueue.generation`): looked at as the timer runs, at most once a second. */
  generation: () => Promise<string | null>;
}

/** How often the bus's generation is read at most. */
const GENERATION_CHECK_MS = 1_000;

/**
 * The Coordinator's leadership work: the results loop (results taken from
 * the bus, applied in shared commits, acked once what they led to is
 * published) and the timer (hops past their timeout, items past their
 * deadline). Acks and nacks in flight are tracked so that closing waits
 * for them.
 */
export class CoordinatorLoop {
  readonly #o: CoordinatorLoopOptions;
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;
  readonly #acks = new Set<Promise<unknown>>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  /** The bus's generation when last read (undefined until the first read; null: a bus that keeps its state). */
  #generation: string | null | undefined;
  #generationReadAt = 0;

  constructor(options: CoordinatorLoopOptions) {
    this.#o = options;
  }

  /**
   * Reads the bus's generation the run starts from (what a later read is
   * compared with). On a bus that can lose its state (Redis), what the items
   * have out is published again first: the bus may have lost it while no
   * Coordinator ran (a Redis restarted empty, then the leader killed before
   * it noticed), and a message the bus still holds is a duplicate it ignores.
   */
  async begin(): Promise<void> {
    this.#generation = await this.#o.generation();
    this.#generationReadAt = Date.now();
    if (this.#generation === null) return;
    const steps = await this.#o.engine.reconcile('a Coordinator started: what was out is published again');
    for (const step of steps) this.#track(this.#o.after(step));
  }

  /** Starts the results loop and the timer. */
  start(): void {
    this.#loop = this.#consume();
    this.#timer = setInterval(() => void this.#tick(), this.#o.timerIntervalMs);
    this.#timer.unref();
  }

  /** No more ticks. */
  stopTimer(): void {
    clearInterval(this.#timer);
  }

  /** Stops taking results (no delivery is taken from here on) and waits for the loop and a tick under way. */
  async stopResults(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
    await this.#ticking;
  }

  /** Waits for the acks and nacks in flight. */
  async drained(): Promise<void> {
    await Promise.all([...this.#acks]);
  }

  /** Time passed: what the timer decided is published and told like any other step. */
  #tick(): Promise<void> {
    if (this.#o.closed() || this.#ticking !== undefined) return this.#ticking ?? Promise.resolve();
    this.#ticking = this.#reconcileIfLost()
      .then(() => this.#o.engine.tick())
      .then((steps) => {
        for (const step of steps) this.#track(this.#o.after(step));
      })
      .catch((error: unknown) => this.#o.log.warn({ err: error }, 'the timer failed: it runs again next time'))
      .finally(() => {
        this.#ticking = undefined;
      });
    return this.#ticking;
  }

  /**
   * When the bus lost its state (its generation changed since last read),
   * everything out is published again (`engine.reconcile`). A failed read
   * changes nothing: the next tick reads again.
   */
  async #reconcileIfLost(): Promise<void> {
    if (this.#generation === null || Date.now() - this.#generationReadAt < GENERATION_CHECK_MS) return;
    this.#generationReadAt = Date.now();
    let now: string | null;
    try {
      now = await this.#o.generation();
    } catch (error) {
      this.#o.log.debug({ err: error }, 'could not read the bus generation: it is read again next time');
      return;
    }
    const before = this.#generation;
    this.#generation = now;
    if (before === undefined || before === null || before === now) return;
    const reason = `the bus lost its state (generation ${before} became ${now})`;
    const steps = await this.#o.engine.reconcile(reason);
    const hops = steps.reduce((n, s) => n + s.outbox.length, 0);
    this.#o.log.warn(
      { items: steps.length, hops, from: before, to: now },
      'the bus lost its state: every hop out was published again under its own key',
    );
    for (const step of steps) this.#track(this.#o.after(step));
  }

  /** The results loop: restarted after a bus failure (with a pause) until the Coordinator closes. */
  async #consume(): Promise<void> {
    let failures = 0;
    while (!this.#o.closed()) {
      try {
        // It returns when the Coordinator closes or the bus does.
        await this.#consumeOnce();
        return;
      } catch (error) {
        if (this.#o.closed()) return;
        failures++;
        this.#o.log.error({ err: error }, 'the results loop failed: restarting');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, Math.min(5_000, 100 * 2 ** Math.min(failures, 6)));
          this.#stop.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(timer);
              resolve();
            },
            { once: true },
          );
        });
      }
    }
  }

  async #consumeOnce(): Promise<void> {
    // Results that arrive together (one read of the bus yields several) are applied in one
    // transaction: the turn's results are gathered, then applied once the loop has yielded them all.
    const pending: ResultDelivery[] = [];
    let scheduled = false;
    const flush = () => {
      scheduled = false;
      if (pending.length > 0) this.#track(this.#apply(pending.splice(0)));
    };
    for await (const rd of this.#o.dispatcher.results({
      consumer: this.#o.consumer,
      max: 64,
      waitMs: 500,
      signal: this.#stop.signal,
      visibilityTimeoutMs: this.#o.resultsVisibilityTimeoutMs,
      chunks: (chunk) => this.#o.chunk(chunk),
    })) {
      pending.push(rd);
      if (!scheduled) {
        scheduled = true;
        setImmediate(flush);
      }
    }
    flush();
  }

  /** Applies results (one shared commit); acks each once what it led to is published, nacks what must wait or failed. */
  async #apply(batch: ResultDelivery[]): Promise<void> {
    const { engine, log } = this.#o;
    let applied: Awaited<ReturnType<CoordinatorEngine['applyResults']>>;
    // With tracing off no span or context is made: each result is applied as it came.
    const spans = tracingOn() ? batch.map((rd) => this.#applySpan(rd)) : undefined;
    try {
      applied = await engine.applyResults(
        batch.map((rd, i) => ({
          result: rd.result,
          publishedAt: rd.delivery.publishedAt,
          ...(spans === undefined ? {} : { trace: spans[i]!.context }),
        })),
      );
    } catch (error) {
      applied = batch.map(() => ({ error }));
    }
    for (const [i, outcome] of applied.entries()) {
      const rd = batch[i]!;
      const span = spans?.[i];
      if ('error' in outcome) {
        const { error } = outcome;
        span?.endWithError(error);
        const retry = resultRetry(error, rd.delivery.deliveries);
        const where = { err: error, delivery: rd.delivery.id, deliveries: rd.delivery.deliveries };
        if (retry.cause === 'elsewhere') {
          log.warn(
            where,
            'this Coordinator no longer leads or is closing: the result goes back to the bus for the leader',
          );
        } else if (retry.cause === 'unavailable') {
          log.error(
            { ...where, retryInMs: retry.delayMs },
            'could not apply a result: the store is unavailable; it is retried without using up its attempts',
          );
        } else log.error({ ...where, retryInMs: retry.delayMs }, 'could not apply a result: it will be retried');
        this.#track(
          rd
            .nack({
              error: { type: 'CoordinatorError', message: (error as Error)?.message ?? String(error) },
              retryable: true,
              delayMs: retry.delayMs,
              ...(retry.counted ? {} : { counted: false }),
            })
            .then((nacked) => {
              if (nacked.outcome !== 'dead-letter') return;
              log.error(
                { ...where, itemId: rd.result.headers.runId, hop: rd.result.headers.hop, role: rd.result.role },
                `a result failed to apply on each of its ${rd.delivery.deliveries} deliveries and was dead-lettered ` +
                  `on ${RESULTS_ROLE}: its hop stays out until its timeout; fix the cause logged above, then ` +
                  `\`switchboard dlq replay --db PATH|--bus URL --role ${RESULTS_ROLE} --id ${rd.delivery.id}\` applies it`,
              );
            }),
        );
        continue;
      }
      if (outcome.handling === 'duplicate' || outcome.handling === 'late') this.#ranAgain(rd.result.headers.runId);
      if (outcome.handling === 'applied') this.#measure(rd.result, outcome.step);
      span?.annotate({ [ATTR.resultHandling]: outcome.handling });
      this.#track(
        this.#o.after(outcome.step).then(
          () => {
            span?.end();
            return rd.ack();
          },
          (error: unknown) => {
            span?.endWithError(error);
            throw error;
          },
        ),
      );
    }
  }

  /** The span of applying one result: it continues the trace the result carries (the worker's result span). */
  #applySpan(rd: ResultDelivery): TracedSpan {
    const h = rd.result.headers;
    return openSpan(SPAN.apply, contextOf(h.trace), {
      kind: SpanKind.CONSUMER,
      attributes: () => ({
        [ATTR.itemId]: h.runId,
        [ATTR.taskId]: h.taskId,
        [ATTR.role]: rd.result.role,
        [ATTR.hop]: h.hop,
        [ATTR.attempt]: h.attempt,
        [ATTR.outcome]: rd.result.outcome,
        [ATTR.deliveries]: rd.delivery.deliveries,
      }),
    });
  }

  /** The metrics of a result applied once: its hop's latency, its cost, a dead letter. */
  #measure(result: ResultEnvelope, step: Step): void {
    const { metrics } = this.#o;
    const role = result.role;
    if (result.outcome === 'failed') metrics.deadLetters.add(1, metrics.role(role));
    const usage = result.usage;
    if (usage !== undefined) {
      if (usage.costUsd > 0) metrics.costUsd.add(usage.costUsd, metrics.role(role));
      const tokens = metrics.roleTokens(role);
      if (usage.inputTokens > 0) metrics.tokens.add(usage.inputTokens, tokens.input);
      if (usage.outputTokens > 0) metrics.tokens.add(usage.outputTokens, tokens.output);
    }
    const key = result.headers.idempotencyKey;
    for (const rows of step.rows) {
      for (const hop of rows.hops) {
        if (hop.idempotencyKey !== key) continue;
        const end = hop.finishedAt ?? (result.outcome === 'suspended' ? rows.item.updatedAt : null);
        if (end !== null) {
          metrics.hopDuration.record(
            Math.max(0, end - hop.dispatchedAt) / 1000,
            metrics.roleOutcome(role, result.outcome),
          );
        }
        return;
      }
    }
  }

  /**
   * A result of a hop that ran again (after its item ended, or once more):
   * when the item's run was already forgotten, the hop may have written its
   * output to the Context Engine anew, so the run is forgotten again at the
   * next sweep (its item ended long enough ago).
   */
  #ranAgain(itemId: string): void {
    this.#o.tables
      .recordForgetAgain(itemId)
      .catch((error: unknown) => this.#o.log.warn({ err: error, itemId }, 'could not schedule forgetting a run again'));
  }

  #track(p: Promise<unknown>): void {
    const tracked = p.catch((error: unknown) => this.#o.log.warn({ err: error }, 'ack or nack failed'));
    this.#acks.add(tracked);
    void tracked.finally(() => this.#acks.delete(tracked));
  }
}
