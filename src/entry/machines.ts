/**
 * `a2a-switchboard/machines`: the XState machines and their transition tables
 * as data.
 *
 * @packageDocumentation
 */

// Tasks and agents (the broker).
export * from '../machines/task-transitions.js';
export * from '../machines/task-machine.js';
export * from '../machines/agent-machine.js';
// Deliveries and pools (the work bus).
export * from '../machines/delivery-machine.js';
export {
  checkDeployment,
  POOL_TRANSITIONS,
  createPoolMachine,
} from '../machines/pool-machine.js';
export type {
  PoolDeployment,
  PoolDeploymentProblem,
  WorkerObservation,
  PoolObservation,
  ScalePlan,
  PoolState,
  PoolEvent,
  PoolTransition,
  PoolContext,
  PoolInput,
  PoolWorkerInput,
  PoolMachine,
} from '../machines/pool-machine.js';
// Workflow runs (the Coordinator).
export * from '../machines/workflow-run-transitions.js';
export * from '../machines/workflow-run-machine.js';
