/**
 * The Coordinator's decisions (`decide`), one module per kind of input under
 * `coordinator/`: this module is the path the rest of the code imports them
 * from.
 */

export { decide } from './coordinator/decide.js';
export { hopTimeout, timerDue } from './coordinator/timer.js';
export { TREE_BUDGET_POLICY, retryPolicyOf } from './coordinator/hop-start.js';
export { ZERO_TREE_USAGE, spentAncestor, treeRollup, withCharge } from './coordinator/tree-rollup.js';
export {
  SWITCHBOARD_METADATA_KEY,
  hopKey,
  type CoordinatorInput,
  type Decision,
  type DecisionEnv,
  type DecisionRefusal,
  type GovernanceCheck,
  type ItemView,
  type ResultHandling,
  type PurgeDeadLetterBody,
  type StartBody,
} from './coordinator/types.js';
export {
  BRANCH_ATTRIBUTE,
  PARENT_ATTRIBUTE,
  POSITION_ATTRIBUTE,
  type CancelChildBody,
  type SettleBody,
  type SpawnBody,
  childItemId,
} from './coordinator/child-rows.js';
