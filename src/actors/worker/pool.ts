import { BehaviorSubject, type Observable, distinctUntilChanged } from 'rxjs';
import { type Actor, createActor, fromCallback } from 'xstate';
import type { WorkQueue } from '../../bus/work-queue.js';
import { type Logger, silentLogger } from '../../log/logger.js';
import {
  type PoolDeployment,
  type PoolMachine,
  type PoolWorkerInput,
  checkDeployment,
  createPoolMachine,
} from '../../machines/pool-machine.js';
import type { ContextStore } from '../../persistence/context/sqlite-store.js';
import type { ActorInspector } from '../inspection.js';
import { type WorkHandler, type Worker, WorkerError, createWorker } from './worker.js';

/**
 * A role's pool: a supervisor actor (the pool machine) that watches the
 * role's queue and starts worker actors when it has work, and stops them
 * after `idleTimeoutMs` of idleness down to `minReplicas`. `minReplicas: 0`
 * is scale-to-zero; any other value keeps a warm pool. The code path is the
 * same either way, and `configure` flips it at run time.
 */
export interface PoolOptions {
  role: string;
  handler: WorkHandler;
  bus: WorkQueue;
  contextStore: ContextStore;
  deployment: PoolDeployment;
  /** How often the supervisor looks at the queue and its workers (default 50 ms). */
  observeIntervalMs?: number;
  visibilityTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** How long a worker's consume waits before it loops (default 200 ms). */
  pollWaitMs?: number;
  resultsRole?: string;
  /** Grace given to a stopping worker's in-flight hops (default: its visibility timeout). */
  stopGraceMs?: number;
  logger?: Logger;
  /** An inspector (`--inspect`) for the supervisor actor (a root actor); none by default. */
  inspect?: ActorInspector;
  /**
   * The bus consumer name of a worker the pool starts, from its id in the pool
   * (`<role>#<n>`; the default name). Processes sharing a bus give their
   * workers names no other process uses (`switchboard worker` adds its pid).
   */
  consumerName?: (workerId: string) => string;
}

/** A running pool of one role: its replica count and deployment, which `configure` changes at run time. */
export interface Pool {
  readonly role: string;
  /** Workers running now. */
  readonly replicas: number;
  /** The replica count, each time it changes (starts with the current count). */
  readonly replicas$: Observable<number>;
  /** Workers started / stopped since the pool started. */
  readonly starts: number;
  readonly stops: number;
  /** Hops settled (completed, suspended, failed or released) by the pool's workers, stopped ones included. */
  readonly settled: number;
  readonly deployment: PoolDeployment;
  /** The supervisor actor (for inspection). */
  readonly actor: Actor<PoolMachine>;
  /** Replaces the deployment: warm <-> scale-to-zero is this call, nothing else. */
  configure(deployment: PoolDeployment): void;
  /** Stops the supervisor and every worker (each finishes or releases its hops). */
  stop(): Promise<void>;
}

/** A deployment that makes no pool: `WorkerError` `POOL_INVALID_DEPLOYMENT`, `details.problems`. */
function invalidDeployment(problems: { field: string; message: string }[]): WorkerError {
  return new WorkerError(
    'POOL_INVALID_DEPLOYMENT',
    `invalid pool deployment: ${problems.map((p) => p.message).join('; ')}`,
    { details: { problems } },
  );
}

function checked(deployment: PoolDeployment): PoolDeployment {
  const problems = checkDeployment(deployment);
  if (problems.length > 0) throw invalidDeployment(problems);
  return { ...deployment };
}

/** Starts the pool of one role: a supervisor that scales its workers between the deployment's bounds. */
export function createPool(options: PoolOptions): Pool {
  const deployment = checked(options.deployment);
  // Every line of the pool carries the role, as its workers' lines do; `pool` marks the supervisor's own.
  const log = (options.logger ?? silentLogger()).child({ role: options.role, pool: options.role });
  const workers = new Map<string, Worker>();
  const stopping = new Set<Promise<void>>();
  /** Workers told to stop whose hops may still settle; then their count moves to `settledByStopped`. */
  const draining = new Set<Worker>();
  let settledByStopped = 0;
  const workerLogic = fromCallback<{ type: string }, PoolWorkerInput>(({ input }) => {
    const consumer = options.consumerName?.(input.workerId) ?? input.workerId;
    const worker = createWorker({
      role: input.role,
      handler: options.handler,
      bus: options.bus,
      contextStore: options.contextStore,
      concurrency: input.concurrency,
      consumer,
      pollWaitMs: options.pollWaitMs ?? 200,
      ...(options.visibilityTimeoutMs === undefined ? {} : { visibilityTimeoutMs: options.visibilityTimeoutMs }),
      ...(options.heartbeatIntervalMs === undefined ? {} : { heartbeatIntervalMs: options.heartbeatIntervalMs }),
      ...(options.resultsRole === undefined ? {} : { resultsRole: options.resultsRole }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
    workers.set(input.workerId, worker);
    log.debug({ worker: consumer }, 'worker started');
    return () => {
      workers.delete(input.workerId);
      draining.add(worker);
      const done = worker
        .stop(options.stopGraceMs === undefined ? {} : { graceMs: options.stopGraceMs })
        .finally(() => {
          draining.delete(worker);
          settledByStopped += worker.settled;
        });
      stopping.add(done);
      void done.finally(() => stopping.delete(done));
      log.debug({ worker: consumer }, 'worker stopped');
    };
  });
  const machine = createPoolMachine(workerLogic);
  const actor = createActor(machine, { input: { role: options.role, deployment }, inspect: options.inspect });
  const replicas = new BehaviorSubject(0);
  actor.subscribe((snapshot) => {
    const n = snapshot.context.workers.length;
    if (n !== replicas.value) replicas.next(n);
  });
  actor.start();

  let observing = false;
  let stopped = false;
  const observe = async () => {
    if (observing || stopped) return;
    observing = true;
    try {
      const stats = await options.bus.stats(options.role);
      if (stopped) return;
      actor.send({
        type: 'OBSERVE',
        now: Date.now(),
        depth: stats.depth,
        workers: [...workers].map(([id, w]) => ({ id, idleSince: w.idleSince })),
      });
    } catch (error) {
      log.warn({ err: error }, 'could not observe the queue');
    } finally {
      observing = false;
    }
  };
  const timer = setInterval(() => void observe(), options.observeIntervalMs ?? 50);
  void observe();

  return {
    role: options.role,
    get replicas() {
      return actor.getSnapshot().context.workers.length;
    },
    replicas$: replicas.pipe(distinctUntilChanged()),
    get starts() {
      return actor.getSnapshot().context.starts;
    },
    get stops() {
      return actor.getSnapshot().context.stops;
    },
    get settled() {
      let n = settledByStopped;
      for (const worker of workers.values()) n += worker.settled;
      for (const worker of draining) n += worker.settled;
      return n;
    },
    get deployment() {
      return { ...actor.getSnapshot().context.deployment };
    },
    actor,
    configure(next: PoolDeployment) {
      actor.send({ type: 'CONFIGURE', deployment: checked(next) });
      void observe();
    },
    async stop() {
      if (stopped) {
        await Promise.all([...stopping]);
        return;
      }
      stopped = true;
      clearInterval(timer);
      actor.send({ type: 'STOP' });
      actor.stop();
      await Promise.all([...stopping]);
      replicas.complete();
    },
  };
}
