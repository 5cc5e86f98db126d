import type { WorkQueue } from '../../bus/work-queue.js';
import { type Logger, silentLogger } from '../../log/logger.js';
import { type PoolDeployment, checkDeployment } from '../../machines/pool-machine.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import type { ActorInspector } from '../inspection.js';
import { WorkerError } from './errors.js';
import type { WorkHandler } from './handler.js';

/** Options of `createPool`: the role, its handler, the bus and Context Engine, the deployment and its workers' timings. */
export interface PoolOptions {
  /** The role the pool's workers consume. */
  role: string;
  /** The handler each worker runs on a hop. */
  handler: WorkHandler;
  /** The work bus the role's hops come from. */
  bus: WorkQueue;
  /** The Context Engine the workers read and record in. */
  contextStore: ContextStore;
  /** How many workers, when they stop, and how many hops each runs at once. */
  deployment: PoolDeployment;
  /**
   * How often the supervisor looks at the queue and its workers.
   * @defaultValue 50 ms
   */
  observeIntervalMs?: number;
  /**
   * Each worker's lease per delivery.
   * @defaultValue the worker's (30 000 ms)
   */
  visibilityTimeoutMs?: number;
  /**
   * Each worker's lease renewal interval.
   * @defaultValue the worker's (a third of the visibility timeout)
   */
  heartbeatIntervalMs?: number;
  /**
   * How long a worker's consume waits before it loops.
   * @defaultValue 200 ms
   */
  pollWaitMs?: number;
  /**
   * Where results go unless a hop names another.
   * @defaultValue the worker's (`$results`)
   */
  resultsRole?: string;
  /**
   * Grace given to a stopping worker's in-flight hops.
   * @defaultValue the worker's visibility timeout
   */
  stopGraceMs?: number;
  /**
   * Where the pool's and its workers' lines go.
   * @defaultValue a silent logger
   */
  logger?: Logger;
  /**
   * An inspector (`--inspect`) for the supervisor actor (a root actor).
   * @defaultValue none
   */
  inspect?: ActorInspector;
  /**
   * The bus consumer name of a worker the pool starts, from its id in the pool
   * (`<role>#<n>`). Processes sharing a bus give their
   * workers names no other process uses (`switchboard worker` adds its pid).
   * @defaultValue the worker's id in the pool
   */
  consumerName?: (workerId: string) => string;
}

/** A pool's options checked, with the pool's own defaults filled in (the workers' are left to `createWorker`). */
export interface PoolSettings extends Omit<PoolOptions, 'observeIntervalMs' | 'pollWaitMs' | 'consumerName'> {
  readonly deployment: PoolDeployment;
  readonly observeIntervalMs: number;
  readonly pollWaitMs: number;
  /** Where the pool's own lines go: the logger, or a silent one. */
  readonly log: Logger;
  readonly consumerName: (workerId: string) => string;
}

/** A deployment that makes no pool: `WorkerError` `POOL_INVALID_DEPLOYMENT`, `details.problems`. */
function invalidDeployment(problems: { field: string; message: string }[]): WorkerError {
  return new WorkerError(
    'POOL_INVALID_DEPLOYMENT',
    `invalid pool deployment: ${problems.map((p) => p.message).join('; ')}`,
    { details: { problems } },
  );
}

/** A deployment checked (a copy of it), or `POOL_INVALID_DEPLOYMENT`. */
export function checkedDeployment(deployment: PoolDeployment): PoolDeployment {
  const problems = checkDeployment(deployment);
  if (problems.length > 0) throw invalidDeployment(problems);
  return { ...deployment };
}

/** Checks a pool's options (its deployment) and fills in the pool's defaults. */
export function poolSettings(options: PoolOptions): PoolSettings {
  return {
    ...options,
    deployment: checkedDeployment(options.deployment),
    observeIntervalMs: options.observeIntervalMs ?? 50,
    pollWaitMs: options.pollWaitMs ?? 200,
    log: options.logger ?? silentLogger(),
    consumerName: options.consumerName ?? ((workerId) => workerId),
  };
}
