import { type AnyActorLogic, assign, enqueueActions, setup } from 'xstate';

/**
 * A role's pool of workers: how many run, decided from what the queue holds
 * and how long each worker has been idle. Warm (`minReplicas > 0`) and
 * scale-to-zero (`minReplicas: 0`) are the same machine with another number.
 */
export interface PoolDeployment {
  /** Workers kept running when idle (0 scales to zero). */
  minReplicas: number;
  /** Workers at most, however deep the queue. */
  maxReplicas: number;
  /** A worker idle this long is stopped, down to `minReplicas`. */
  idleTimeoutMs: number;
  /** Hops each worker runs at once. */
  concurrency: number;
}

export type PoolDeploymentProblem = { field: keyof PoolDeployment; message: string };

export function checkDeployment(deployment: PoolDeployment): PoolDeploymentProblem[] {
  const problems: PoolDeploymentProblem[] = [];
  const int = (field: keyof PoolDeployment, min: number) => {
    const v = deployment[field];
    if (!Number.isInteger(v) || v < min) problems.push({ field, message: `${field} must be an integer >= ${min}` });
  };
  int('minReplicas', 0);
  int('maxReplicas', 1);
  int('idleTimeoutMs', 0);
  int('concurrency', 1);
  if (problems.length === 0 && deployment.minReplicas > deployment.maxReplicas) {
    problems.push({ field: 'minReplicas', message: 'minReplicas must not exceed maxReplicas' });
  }
  return problems;
}

export interface WorkerObservation {
  id: string;
  /** Epoch ms since when it has been idle; null while it runs a hop. */
  idleSince: number | null;
}

export interface PoolObservation {
  now: number;
  /** Messages ready now in the role's queue. */
  depth: number;
  workers: readonly WorkerObservation[];
}

export interface ScalePlan {
  /** How many workers to start. */
  start: number;
  /** Which workers to stop (all idle). */
  stop: string[];
}

/**
 * The pool's one decision, pure:
 * - work waiting and not enough idle capacity: start workers, one per
 *   `concurrency` messages beyond what idle workers take, up to `maxReplicas`;
 * - fewer than `minReplicas`: start up to it;
 * - no work waiting: stop the workers idle for `idleTimeoutMs` or longer,
 *   longest idle first, down to `minReplicas`;
 * - more than `maxReplicas` (after a configuration change): stop idle ones.
 * A busy worker is never stopped.
 */
export function planScale(deployment: PoolDeployment, observation: PoolObservation): ScalePlan {
  const replicas = observation.workers.length;
  const idle = observation.workers.filter((w) => w.idleSince !== null);
  let start = 0;
  if (observation.depth > 0) {
    const wanted = Math.ceil(observation.depth / deployment.concurrency) - idle.length;
    start = Math.max(0, Math.min(wanted, deployment.maxReplicas - replicas));
  }
  start = Math.max(start, deployment.minReplicas - replicas);
  const stop: string[] = [];
  const byIdleAge = [...idle].sort((a, b) => (a.idleSince ?? 0) - (b.idleSince ?? 0));
  if (replicas > deployment.maxReplicas) {
    for (const w of byIdleAge) {
      if (replicas - stop.length <= deployment.maxReplicas) break;
      stop.push(w.id);
    }
  }
  if (observation.depth === 0) {
    for (const w of byIdleAge) {
      if (stop.includes(w.id)) continue;
      if (replicas - stop.length <= deployment.minReplicas) break;
      if (observation.now - (w.idleSince ?? observation.now) >= deployment.idleTimeoutMs) stop.push(w.id);
    }
  }
  return { start, stop };
}

export type PoolState = 'running' | 'stopped';
export type PoolEvent =
  | ({ type: 'OBSERVE' } & PoolObservation)
  | { type: 'CONFIGURE'; deployment: PoolDeployment }
  | { type: 'STOP' };

export interface PoolTransition {
  from: PoolState;
  event: PoolEvent['type'];
  to: PoolState;
  does: string;
}

export const POOL_TRANSITIONS: readonly PoolTransition[] = Object.freeze([
  { from: 'running', event: 'OBSERVE', to: 'running', does: 'starts and stops workers by planScale' },
  { from: 'running', event: 'CONFIGURE', to: 'running', does: 'replaces the deployment (warm <-> scale-to-zero)' },
  { from: 'running', event: 'STOP', to: 'stopped', does: 'stops every worker' },
]);

export interface PoolContext {
  role: string;
  deployment: PoolDeployment;
  /** Ids of the running workers (spawned children). */
  workers: string[];
  nextWorker: number;
  /** Workers started and stopped so far. */
  starts: number;
  stops: number;
}

export interface PoolInput {
  role: string;
  deployment: PoolDeployment;
}

/** What a spawned worker actor is given. */
export interface PoolWorkerInput {
  workerId: string;
  role: string;
  concurrency: number;
}

/**
 * The pool supervisor: a machine whose children are the worker actors. The
 * worker actor logic is supplied by the runtime (it does I/O); the machine
 * only decides when to spawn and stop them.
 */
export function createPoolMachine<TWorker extends AnyActorLogic>(workerLogic: TWorker) {
  return setup({
    types: {
      context: {} as PoolContext,
      events: {} as PoolEvent,
      input: {} as PoolInput,
    },
    actors: { worker: workerLogic as AnyActorLogic },
  }).createMachine({
    id: 'pool',
    initial: 'running',
    context: ({ input }) => ({
      role: input.role,
      deployment: input.deployment,
      workers: [],
      nextWorker: 1,
      starts: 0,
      stops: 0,
    }),
    states: {
      running: {
        on: {
          OBSERVE: {
            actions: enqueueActions(({ context, event, enqueue }) => {
              const observed = event as Extract<PoolEvent, { type: 'OBSERVE' }>;
              const live = new Set(context.workers);
              const workers = observed.workers.filter((w) => live.has(w.id));
              for (const id of context.workers) {
                if (!workers.some((w) => w.id === id)) workers.push({ id, idleSince: null });
              }
              const plan = planScale(context.deployment, { now: observed.now, depth: observed.depth, workers });
              let next = context.nextWorker;
              const started: string[] = [];
              for (let i = 0; i < plan.start; i++) {
                const workerId = `${context.role}#${next++}`;
                started.push(workerId);
                const input: PoolWorkerInput = {
                  workerId,
                  role: context.role,
                  concurrency: context.deployment.concurrency,
                };
                enqueue.spawnChild('worker', { id: workerId, input });
              }
              for (const id of plan.stop) enqueue.stopChild(id);
              if (started.length > 0 || plan.stop.length > 0) {
                enqueue.assign({
                  workers: [...context.workers.filter((id) => !plan.stop.includes(id)), ...started],
                  nextWorker: next,
                  starts: context.starts + started.length,
                  stops: context.stops + plan.stop.length,
                });
              }
            }),
          },
          CONFIGURE: {
            actions: assign(({ event }) => ({
              deployment: (event as Extract<PoolEvent, { type: 'CONFIGURE' }>).deployment,
            })),
          },
          STOP: {
            target: 'stopped',
            actions: enqueueActions(({ context, enqueue }) => {
              for (const id of context.workers) enqueue.stopChild(id);
              enqueue.assign({ workers: [], stops: context.stops + context.workers.length });
            }),
          },
        },
      },
      stopped: { type: 'final' },
    },
  });
}

export type PoolMachine = ReturnType<typeof createPoolMachine>;
