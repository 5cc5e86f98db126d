import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { replyInfo } from '../../bus/reply-routing.js';
import { BusError, type Delivery, type WorkQueue } from '../../bus/work-queue.js';
import { hopLogFields } from '../../log/log-fields.js';
import type { Logger } from '../../log/logger.js';
import {
  type CompletionRecord,
  type ContextStore,
  ContextStoreError,
  type PendingPublish,
} from '../../persistence/context/sqlite-store.js';
import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import { MAX_ID_CHARS, MAX_STACK_CHARS } from '../../protocol/bounds.js';
import type { Part } from '../../protocol/parts.js';
import type { Artifact } from '../../protocol/task.js';
import {
  BusEnvelopeSchema,
  ChildRequestSchema,
  RoleSchema,
  type ResultEnvelope,
  type Usage,
  UsageSchema,
  type WorkError,
  type TraceFields,
  UNKNOWN_CONTINUATION,
  type WorkHeaders,
} from '../../protocol/work-envelope.js';
import { type SwitchboardMetrics, switchboardMetrics } from '../../telemetry/metrics.js';
import { NonRetryableError, WorkerError } from './errors.js';
import type { Effects, HandlerResult, HopResume, Suspension, WorkHandler } from './handler.js';
import { HopSpans } from './hop-spans.js';
import { HopChunks } from './hop-stream.js';
import { type WorkerOptions, type WorkerSettings, workerSettings } from './worker-options.js';

export { NonRetryableError, WORKER_ERROR_CODES, WorkerError, type WorkerErrorCode } from './errors.js';
export {
  type Completion,
  type Effects,
  type HandlerResult,
  type HopInput,
  type HopResume,
  type HopStream,
  type Suspension,
  type ChildSpawn,
  type WorkHandler,
  complete,
  spawn,
  suspend,
} from './handler.js';
export type { WorkerOptions } from './worker-options.js';

/**
 * The worker harness: a stateless consumer of one role's queue. For each
 * delivery it hydrates the work item's context (past hops' outputs and
 * memory) from the Context Engine, calls the handler, and emits the result on
 * the results role; or, when the handler suspends, checkpoints its state under
 * a continuation token, puts the question in its suspension result (the
 * Coordinator governs and publishes it), acks, and holds nothing until the
 * reply is re-dispatched to it.
 *
 * A hop completes once: its completion (output, memory, checkpoint and the
 * messages it publishes) is recorded by idempotency key in one transaction
 * before anything is published, so a redelivered hop that already completed
 * only re-publishes (idempotently) and acks. Effects inside a handler go
 * through `effects`, keyed by the hop, so a re-run hop does not apply them
 * twice.
 */

/** Options of `Worker.stop`: how long in-flight hops may still run. */
export interface StopOptions {
  /** How long in-flight hops may run before their leases are released (default: the visibility timeout). */
  graceMs?: number;
}

/** A running worker of one role: its hops in flight, idle time and settled count; `stop` drains it. */
export interface Worker {
  /** The worker's id: its consumer name on the bus, and in its logs. */
  readonly id: string;
  /** The role it consumes. */
  readonly role: string;
  /** Starts consuming its role's queue. */
  start(): void;
  /** Stops consuming, lets in-flight hops finish within the grace period, then releases what is left. */
  stop(options?: StopOptions): Promise<void>;
  /** Hops running now. */
  readonly inFlight: number;
  /** When the worker last became idle (epoch ms); null while it runs a hop. */
  readonly idleSince: number | null;
  /** Hops settled (completed, suspended, failed or released) so far. */
  readonly settled: number;
  /** Whether it is consuming. */
  readonly running: boolean;
}

function errorInfo(error: unknown): { error: WorkError; retryable: boolean } {
  if (
    error instanceof ContextStoreError &&
    (error.code === 'CONTEXT_NOT_JSON' || error.code === 'CONTEXT_INVALID_ARGUMENT')
  ) {
    // The handler's result (state, memory) cannot be stored: running it again gives the same.
    return { error: { type: 'InvalidResult', message: error.message.slice(0, 4000) }, retryable: false };
  }
  if (error instanceof Error) {
    const e = error as Error & { type?: unknown; retryable?: unknown };
    const type = typeof e.type === 'string' && e.type.length > 0 ? e.type : e.name || 'Error';
    const failure: WorkError = { type: type.slice(0, 128), message: e.message.slice(0, 4000) };
    // The stack travels with the failure, so that `items show` shows where the handler threw.
    if (typeof e.stack === 'string' && e.stack.length > 0) failure.stack = e.stack.slice(0, MAX_STACK_CHARS);
    // What the handler spent before it failed (a model agent's calls) is charged like a completed hop's.
    const usage = UsageSchema.safeParse((error as { usage?: unknown }).usage);
    if (usage.success) failure.usage = usage.data;
    return { error: failure, retryable: e.retryable !== false };
  }
  return { error: { type: 'Error', message: String(error).slice(0, 4000) }, retryable: true };
}

/**
 * The idempotency key of a message a hop publishes: `<hop key>:<suffix>`, or,
 * when that would pass the 256-character bound of keys, the SHA-256 of the
 * hop key in its place. Deterministic, so a re-published message is a duplicate.
 */
export function derivedKey(hopKey: string, suffix: string): string {
  const plain = `${hopKey}:${suffix}`;
  if (plain.length <= MAX_ID_CHARS) return plain;
  return `sha256-${createHash('sha256').update(hopKey).digest('hex')}:${suffix}`.slice(0, MAX_ID_CHARS);
}

/**
 * What a suspension asks for, on its result: the question (`ask`) or the
 * children (`spawn`), exactly one of them (anything else is the handler's
 * error: the hop fails with `InvalidSuspension`).
 */
function suspensionFields(result: Suspension, token: string): Pick<ResultEnvelope, 'ask' | 'spawn'> {
  if ((result.ask === undefined) === (result.spawn === undefined)) {
    throw new NonRetryableError('a suspension has exactly one of ask (a question) and spawn (child work items)', {
      type: 'InvalidSuspension',
    });
  }
  if (result.ask !== undefined) {
    return { ask: { role: result.ask.role, continuationToken: token, message: result.ask.message } };
  }
  const children = result.spawn!.map((c) => ({
    workflow: c.workflow,
    input: typeof c.input === 'string' ? [{ kind: 'text' as const, text: c.input }] : c.input,
    ...(c.budget === undefined ? {} : { budget: c.budget }),
  }));
  const checked = z.array(ChildRequestSchema).min(1).max(64).safeParse(children);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    throw new NonRetryableError(
      `spawn: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'} (each child is { workflow: "id@version", input, budget? }, 1 to 64 of them)`,
      { type: 'InvalidSuspension' },
    );
  }
  return { spawn: { continuationToken: token, children: checked.data } };
}

function isSuspension(result: HandlerResult): result is Suspension {
  return (result as { kind?: unknown }).kind === 'suspend';
}

class InFlightHop {
  readonly controller = new AbortController();
  released = false;
  /** The hop's spans (begun when its processing starts). */
  spans: HopSpans = HopSpans.OFF;
  constructor(readonly delivery: Delivery) {}
}

class HarnessWorker implements Worker {
  readonly id: string;
  readonly role: string;
  private readonly bus: WorkQueue;
  private readonly store: ContextStore;
  private readonly handler: WorkHandler;
  private readonly concurrency: number;
  private readonly visibilityTimeoutMs: number;
  private readonly heartbeatIntervalMs: number;
  private readonly resultsRole: string;
  private readonly metrics: SwitchboardMetrics = switchboardMetrics();
  private readonly pollWaitMs: number;
  private readonly log: Logger;
  private readonly hops = new Set<InFlightHop>();
  private readonly tasks = new Set<Promise<void>>();
  private loop: Promise<void> | undefined;
  private stopController = new AbortController();
  private stopping = false;
  private idleAt: number | null = Date.now();
  private settledCount = 0;
  private slotFreed: (() => void) | undefined;

  constructor(settings: WorkerSettings) {
    this.role = settings.role;
    this.bus = settings.bus;
    this.store = settings.contextStore;
    this.handler = settings.handler;
    this.concurrency = settings.concurrency;
    this.visibilityTimeoutMs = settings.visibilityTimeoutMs;
    this.heartbeatIntervalMs = settings.heartbeatIntervalMs;
    this.resultsRole = settings.resultsRole;
    this.pollWaitMs = settings.pollWaitMs;
    this.id = settings.consumer;
    this.log = settings.logger.child({ worker: this.id, role: this.role });
  }

  get inFlight(): number {
    return this.hops.size;
  }
  get idleSince(): number | null {
    return this.idleAt;
  }
  get settled(): number {
    return this.settledCount;
  }
  get running(): boolean {
    return this.loop !== undefined && !this.stopping;
  }

  start(): void {
    if (this.loop !== undefined) return;
    this.loop = this.consumeLoop();
  }

  private async consumeLoop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = this.concurrency - this.hops.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.slotFreed = resolve;
        });
        continue;
      }
      let got: Delivery[];
      try {
        got = await this.bus.consume(this.role, {
          consumer: this.id,
          visibilityTimeoutMs: this.visibilityTimeoutMs,
          max: free,
          waitMs: this.pollWaitMs,
          signal: this.stopController.signal,
        });
        failures = 0;
      } catch (error) {
        if (error instanceof BusError && error.code === 'BUS_CLOSED') break;
        failures++;
        this.log.error({ err: error }, 'consume failed');
        await new Promise((resolve) => setTimeout(resolve, Math.min(5000, 50 * 2 ** Math.min(failures, 7))));
        continue;
      }
      if (this.stopping) {
        // Taken while stopping: give them back at once.
        await Promise.all(got.map((d) => this.bus.release(d).catch(() => false)));
        break;
      }
      for (const delivery of got) this.track(delivery);
    }
  }

  private track(delivery: Delivery): void {
    const hop = new InFlightHop(delivery);
    this.hops.add(hop);
    this.idleAt = null;
    const task = this.process(hop)
      .catch((error: unknown) => this.hopLog(delivery).error({ err: error }, 'hop processing failed'))
      .finally(() => {
        this.hops.delete(hop);
        this.tasks.delete(task);
        this.settledCount++;
        if (this.hops.size === 0) this.idleAt = Date.now();
        const wake = this.slotFreed;
        this.slotFreed = undefined;
        wake?.();
      });
    this.tasks.add(task);
  }

  private startHeartbeat(hop: InFlightHop): () => void {
    const timer = setInterval(() => {
      this.bus.heartbeat(hop.delivery).then(
        (until) => {
          if (until === null && !hop.controller.signal.aborted) {
            this.hopLog(hop.delivery).warn('lease lost');
            hop.controller.abort(new WorkerError('WORKER_LEASE_LOST', 'the lease of this delivery was lost'));
          }
        },
        (error: unknown) => this.log.warn({ err: error }, 'heartbeat failed'),
      );
    }, this.heartbeatIntervalMs);
    return () => clearInterval(timer);
  }

  private async publishAll(publishes: readonly PendingPublish[]): Promise<void> {
    if (publishes.length === 0) return;
    await this.bus.publishMany(publishes.map((p) => ({ ...p })));
  }

  private effectsFor(scope: string): Effects {
    const store = this.store;
    return {
      key: (key) => `${scope}/${key}`,
      async once<T>(key: string, fn: () => T | Promise<T>): Promise<T> {
        const done = await store.effect(scope, key);
        if (done !== undefined) return done.value as T;
        const value = await fn();
        await store.recordEffect(scope, key, value);
        return value;
      },
      atomic<T>(key: string, fn: (db: SqliteDatabase) => T): T {
        if (store.applyOnce === undefined) {
          throw new WorkerError('WORKER_NO_ATOMIC_EFFECTS', 'this context store cannot apply effects atomically');
        }
        return store.applyOnce(scope, key, fn).value;
      },
    };
  }

  /** The worker's logger with the hop's task id, work item (`itemId`), hop and attempt. */
  private hopLog(delivery: Delivery): Logger {
    return this.log.child(hopLogFields(delivery));
  }

  private async process(hop: InFlightHop): Promise<void> {
    this.metrics.deliveries.add(1, this.metrics.role(this.role));
    hop.spans = HopSpans.consume(this.role, hop.delivery);
    const stopHeartbeat = this.startHeartbeat(hop);
    try {
      await this.run(hop);
    } catch (error) {
      if (hop.released) return;
      hop.spans.failed(error);
      await this.fail(hop, error);
    } finally {
      stopHeartbeat();
      hop.spans.end();
    }
  }

  private async run(hop: InFlightHop): Promise<void> {
    const { delivery } = hop;
    const envelope = delivery.envelope;
    if (envelope.kind !== 'work') {
      throw new NonRetryableError(`role ${this.role} received a ${envelope.kind} envelope`, { type: 'InvalidWork' });
    }
    const headers = envelope.headers;
    if (this.log.isLevelEnabled('debug'))
      this.hopLog(delivery).debug({ deliveries: delivery.deliveries }, 'hop received');
    // The run's context is read while the completion is looked up (two reads, one round trip's wait). A hop
    // that ends before it needs the context (already completed, or refused) leaves the read unused: its
    // failure is not this hop's.
    const hydrating = this.store.hydrate(headers.runId);
    hydrating.catch(() => undefined);
    const done = await this.store.completion(headers.idempotencyKey);
    if (done !== undefined) {
      this.hopLog(delivery).info('hop already completed: re-publishing its results');
      hop.spans.outcome('replayed');
      await this.publishAll(done.publishes);
      await this.settle(hop);
      return;
    }
    let resume: HopResume | undefined;
    let hopHeaders = headers;
    if (headers.continuationToken !== undefined) {
      const checkpoint = await this.store.checkpoint(headers.continuationToken);
      if (checkpoint === undefined) {
        throw new NonRetryableError(
          `no checkpoint under continuation token ${headers.continuationToken} (the Context Engine lost it or ` +
            'pruned it): the Coordinator starts a hop resumed by an answer over; check the Context Engine keeps its data',
          {
            type: UNKNOWN_CONTINUATION,
          },
        );
      }
      if (checkpoint.role !== this.role) {
        throw new NonRetryableError(`the checkpoint belongs to role ${checkpoint.role}`, { type: 'ContinuationRole' });
      }
      resume = {
        state: checkpoint.state,
        reply: envelope.message,
        from: replyInfo(envelope.message.metadata),
        checkpoint,
      };
      hopHeaders = checkpoint.headers;
    }
    const scope = hopHeaders.idempotencyKey;
    const context = await hydrating;
    const stream = new HopChunks({
      bus: this.bus,
      role: this.role,
      resultsRole: hopHeaders.resultRole ?? this.resultsRole,
      headers: hopHeaders,
      log: this.hopLog(delivery),
    });
    const result = await hop.spans
      .handling(hopHeaders.hop, async () =>
        this.handler({
          role: this.role,
          envelope,
          headers: hopHeaders,
          message: envelope.message,
          context,
          resume,
          effects: this.effectsFor(scope),
          delivery: { id: delivery.id, deliveries: delivery.deliveries },
          signal: hop.controller.signal,
          stream,
        }),
      )
      .finally(() => stream.flush());
    await hop.spans.publishing(async (published) => {
      const record = this.completionRecord(headers, hopHeaders, result, resume, published.fields);
      published.outcome(record.outcome);
      const { completion } = await this.store.complete(record);
      await this.publishAll(completion.publishes);
    });
    await this.settle(hop);
  }

  private async settle(hop: InFlightHop): Promise<void> {
    if (hop.released) return;
    const acked = await this.bus.ack(hop.delivery);
    if (!acked) this.hopLog(hop.delivery).warn('ack refused: the lease was lost; the hop is recorded');
    else if (this.log.isLevelEnabled('debug')) this.hopLog(hop.delivery).debug('hop done');
  }

  private completionRecord(
    delivered: WorkHeaders,
    hopHeaders: WorkHeaders,
    result: HandlerResult,
    resume: HopResume | undefined,
    trace: TraceFields | undefined,
  ): CompletionRecord {
    if (result === null || typeof result !== 'object') {
      throw new NonRetryableError('the handler returned no result', { type: 'InvalidResult' });
    }
    // The result continues the trace of the worker's result span (the work's own is replaced).
    const resultHeaders: WorkHeaders = trace === undefined ? hopHeaders : { ...hopHeaders, trace };
    const resultRole = hopHeaders.resultRole ?? this.resultsRole;
    const base = {
      idempotencyKey: delivered.idempotencyKey,
      runId: delivered.runId,
      taskId: hopHeaders.taskId,
      hop: hopHeaders.hop,
      role: this.role,
    };
    const record: CompletionRecord = { ...base, outcome: 'completed', publishes: [] };
    if (resume !== undefined) record.resumedToken = resume.checkpoint.token;
    if (result.memory !== undefined) record.memory = result.memory;
    if (isSuspension(result)) {
      // The question travels in the suspension: the Coordinator governs it and publishes it
      // from its outbox in the transaction that records the suspension (a worker never publishes a hop).
      const token = randomUUID();
      const suspended: ResultEnvelope = {
        kind: 'result',
        headers: resultHeaders,
        role: this.role,
        outcome: 'suspended',
        parts: [],
        artifacts: [],
        ...suspensionFields(result, token),
      };
      if (result.usage !== undefined) suspended.usage = result.usage;
      record.outcome = 'suspended';
      record.checkpoint = { token, state: result.state === undefined ? null : result.state, headers: hopHeaders };
      record.publishes = [
        { role: resultRole, envelope: suspended, idempotencyKey: derivedKey(delivered.idempotencyKey, 'result') },
      ];
    } else {
      const output = { parts: result.parts ?? [], artifacts: result.artifacts ?? [] } as {
        parts: Part[];
        artifacts: Artifact[];
        usage?: Usage;
      };
      if (result.usage !== undefined) output.usage = result.usage;
      const completed: ResultEnvelope = {
        kind: 'result',
        headers: resultHeaders,
        role: this.role,
        outcome: 'completed',
        parts: output.parts,
        artifacts: output.artifacts,
      };
      if (result.usage !== undefined) completed.usage = result.usage;
      if (result.metadata !== undefined) completed.metadata = result.metadata;
      record.output = output;
      record.publishes = [
        { role: resultRole, envelope: completed, idempotencyKey: derivedKey(delivered.idempotencyKey, 'result') },
      ];
    }
    for (const p of record.publishes) {
      if (!RoleSchema.safeParse(p.role).success) {
        throw new NonRetryableError(`the handler asked an invalid role: ${JSON.stringify(p.role).slice(0, 200)}`, {
          type: 'InvalidResult',
        });
      }
      const parsed = BusEnvelopeSchema.safeParse(p.envelope);
      if (!parsed.success) {
        throw new NonRetryableError(
          `the handler's result is not a valid envelope: ${parsed.error.issues[0]?.message}`,
          {
            type: 'InvalidResult',
          },
        );
      }
    }
    return record;
  }

  private async fail(hop: InFlightHop, error: unknown): Promise<void> {
    const { delivery } = hop;
    if (hop.controller.signal.aborted && hop.controller.signal.reason instanceof WorkerError) {
      if (hop.controller.signal.reason.code === 'WORKER_LEASE_LOST') return;
    }
    const info = errorInfo(error);
    const log = this.hopLog(delivery);
    // The error itself goes to the log (pino's err serializer: type, message, stack, cause). At info: a
    // failure may be one its workflow routes on purpose; the Coordinator warns of one nothing handles.
    log.info({ err: error, errorType: info.error.type, retryable: info.retryable }, 'hop failed');
    let outcome: Awaited<ReturnType<WorkQueue['nack']>>;
    try {
      outcome = await this.bus.nack(delivery, info);
    } catch (nackError) {
      log.error({ err: nackError }, 'nack failed: the lease will expire');
      return;
    }
    // A dead work message's failure result is published by the queue, in the dead-letter move itself
    // (dead-letter-notice.ts): a crash here cannot lose it.
    if (outcome.outcome === 'dead-letter') log.info({ reason: outcome.reason }, 'hop dead-lettered');
  }

  async stop(options: StopOptions = {}): Promise<void> {
    const graceMs = options.graceMs ?? this.visibilityTimeoutMs;
    if (!this.stopping) {
      this.stopping = true;
      this.stopController.abort(new WorkerError('WORKER_STOPPING', 'the worker is stopping'));
      const wake = this.slotFreed;
      this.slotFreed = undefined;
      wake?.();
    }
    await this.loop;
    if (this.tasks.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      const graceOver = new Promise<'grace-over'>((resolve) => {
        timer = setTimeout(() => resolve('grace-over'), graceMs);
      });
      const settled = await Promise.race([Promise.all([...this.tasks]).then(() => 'settled' as const), graceOver]);
      clearTimeout(timer);
      if (settled === 'grace-over') {
        const left = [...this.hops];
        for (const hop of left) {
          hop.released = true;
          hop.controller.abort(new WorkerError('WORKER_STOPPING', 'the worker stopped before the hop finished'));
        }
        await Promise.all(left.map((hop) => this.bus.release(hop.delivery).catch(() => false)));
        this.log.info({ released: left.length }, 'released in-flight leases on stop');
      }
    }
  }
}

/** Creates a worker for one role; it starts consuming at once unless `autoStart: false`. */
export function createWorker(options: WorkerOptions): Worker {
  const settings = workerSettings(options);
  const worker = new HarnessWorker(settings);
  if (settings.autoStart) worker.start();
  return worker;
}
