import { BehaviorSubject, type Observable, distinctUntilChanged } from 'rxjs';
import { type Actor, createActor, fromCallback } from 'xstate';
import {
  type PoolDeployment,
  type PoolMachine,
  type PoolWorkerInput,
  createPoolMachine,
} from '../../machines/pool-machine.js';
import { type PoolOptions, checkedDeployment, poolSettings } from './pool-options.js';
import { type Worker, createWorker } from './worker.js';

export type { PoolOptions } from './pool-options.js';

/** A running pool of one role: its replica count and deployment, which `configure` changes at run time. */
export interface Pool {
  /** The role the pool's workers run. */
  readonly role: string;
  /** Workers running now. */
  readonly replicas: number;
  /** The replica count, each time it changes (starts with the current count). */
  readonly replicas$: Observable<number>;
  /** Workers started / stopped since the pool started. */
  readonly starts: number;
  /** Workers stopped since the pool started. */
  readonly stops: number;
  /** Hops settled (completed, suspended, failed or released) by the pool's workers, stopped ones included. */
  readonly settled: number;
  /** The deployment in force (replicas, idle timeout, concurrency). */
  readonly deployment: PoolDeployment;
  /** The supervisor actor (for inspection). */
  readonly actor: Actor<PoolMachine>;
  /** Replaces the deployment: warm <-> scale-to-zero is this call, nothing else. */
  configure(deployment: PoolDeployment): void;
  /** Stops the supervisor and every worker (each finishes or releases its hops). */
  stop(): Promise<void>;
}

/**
 * Starts the pool of one role: a supervisor actor (the pool machine) that
 * watches the role's queue and starts worker actors when it has work, and
 * stops them after `idleTimeoutMs` of idleness down to `minReplicas`.
 * `minReplicas: 0` is scale-to-zero; any other value keeps a warm pool. The
 * code path is the same either way, and `configure` flips it at run time.
 */
export function createPool(poolOptions: PoolOptions): Pool {
  const options = poolSettings(poolOptions);
  const deployment = options.deployment;
  // Every line of the pool carries the role, as its workers' lines do; `pool` marks the supervisor's own.
  const log = options.log.child({ role: options.role, pool: options.role });
  const workers = new Map<string, Worker>();
  const stopping = new Set<Promise<void>>();
  /** Workers told to stop whose hops may still settle; then their count moves to `settledByStopped`. */
  const draining = new Set<Worker>();
  let settledByStopped = 0;
  const workerLogic = fromCallback<{ type: string }, PoolWorkerInput>(({ input }) => {
    const consumer = options.consumerName(input.workerId);
    const worker = createWorker({
      role: input.role,
      handler: options.handler,
      bus: options.bus,
      contextStore: options.contextStore,
      concurrency: input.concurrency,
      consumer,
      pollWaitMs: options.pollWaitMs,
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
  const timer = setInterval(() => void observe(), options.observeIntervalMs);
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
      actor.send({ type: 'CONFIGURE', deployment: checkedDeployment(next) });
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
