import { randomUUID } from 'node:crypto';
import type { WorkQueue } from '../../bus/work-queue.js';
import { type Logger, silentLogger } from '../../log/logger.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import { RESULTS_ROLE, RoleSchema } from '../../protocol/work-envelope.js';
import { WorkerError } from './errors.js';
import type { WorkHandler } from './handler.js';

/** Options of `createWorker`: the role, its handler, the bus and Context Engine, concurrency and lease timings. */
export interface WorkerOptions {
  /** The role whose queue the worker consumes. */
  role: string;
  /** The handler it runs on each hop. */
  handler: WorkHandler;
  /** The work bus the role's hops come from. */
  bus: WorkQueue;
  /** The Context Engine it reads a run's context from and records completions in. */
  contextStore: ContextStore;
  /**
   * Hops run at once: an integer >= 1.
   * @defaultValue 1
   */
  concurrency?: number;
  /**
   * Lease per delivery, renewed by heartbeats while the handler runs: an integer >= 1.
   * @defaultValue 30 000 ms
   */
  visibilityTimeoutMs?: number;
  /**
   * How often a running hop's lease is renewed: > 0.
   * @defaultValue a third of the visibility timeout, at least 10 ms
   */
  heartbeatIntervalMs?: number;
  /**
   * The consumer name on the bus.
   * @defaultValue `<role>-<random>` (8 hex characters)
   */
  consumer?: string;
  /**
   * Where results go unless a hop names another.
   * @defaultValue `$results`
   */
  resultsRole?: string;
  /**
   * How long one consume waits for work before looping: >= 0.
   * @defaultValue 1000 ms
   */
  pollWaitMs?: number;
  /**
   * Where the worker's lines go.
   * @defaultValue a silent logger
   */
  logger?: Logger;
  /**
   * Starts consuming at once.
   * @defaultValue true
   */
  autoStart?: boolean;
}

/** A worker's options checked, with every default filled in: what the running worker reads. */
export interface WorkerSettings {
  readonly role: string;
  readonly handler: WorkHandler;
  readonly bus: WorkQueue;
  readonly contextStore: ContextStore;
  readonly concurrency: number;
  readonly visibilityTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  readonly consumer: string;
  readonly resultsRole: string;
  readonly pollWaitMs: number;
  readonly logger: Logger;
  readonly autoStart: boolean;
}

/**
 * Checks a worker's options and fills in their defaults. A refused option
 * throws `WorkerError` `WORKER_INVALID_OPTIONS`, the first one found in the
 * order of `WorkerOptions`.
 */
export function workerSettings(options: WorkerOptions): WorkerSettings {
  const invalid = (message: string) => new WorkerError('WORKER_INVALID_OPTIONS', message);
  if (!RoleSchema.safeParse(options.role).success) throw invalid(`invalid role: ${String(options.role)}`);
  if (typeof options.handler !== 'function') throw invalid('handler must be a function');
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw invalid('concurrency must be an integer >= 1');
  const visibilityTimeoutMs = options.visibilityTimeoutMs ?? 30_000;
  if (!Number.isInteger(visibilityTimeoutMs) || visibilityTimeoutMs < 1) {
    throw invalid('visibilityTimeoutMs must be an integer >= 1');
  }
  const heartbeatIntervalMs = options.heartbeatIntervalMs ?? Math.max(10, Math.floor(visibilityTimeoutMs / 3));
  if (!(heartbeatIntervalMs > 0)) throw invalid('heartbeatIntervalMs must be > 0');
  const resultsRole = options.resultsRole ?? RESULTS_ROLE;
  if (!RoleSchema.safeParse(resultsRole).success) throw invalid(`invalid resultsRole: ${resultsRole}`);
  const pollWaitMs = options.pollWaitMs ?? 1000;
  if (!(pollWaitMs >= 0)) throw invalid('pollWaitMs must be >= 0');
  return {
    role: options.role,
    handler: options.handler,
    bus: options.bus,
    contextStore: options.contextStore,
    concurrency,
    visibilityTimeoutMs,
    heartbeatIntervalMs,
    consumer: options.consumer ?? `${options.role}-${randomUUID().slice(0, 8)}`,
    resultsRole,
    pollWaitMs,
    logger: options.logger ?? silentLogger(),
    autoStart: options.autoStart !== false,
  };
}
