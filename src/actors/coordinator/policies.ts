import {
  type GovernanceCascade,
  type GovernanceOptions,
  governanceCascade,
} from '../../workflow/governance-cascade.js';

/**
 * The governance cascade the Coordinator runs before every hop (and every
 * query a suspended hop asks): `governanceCascade` of the workflow room,
 * built from the Coordinator's options. The decisions are handed it as a
 * value (`DecisionEnv.governance`) and report each check they made; the
 * engine traces those checks.
 */

export { DEFAULT_MAX_HOPS, type GovernanceOptions } from '../../workflow/governance-cascade.js';

/** Builds the Coordinator's cascade (`governanceCascade`); an instance is that cascade's pure functions. */
export class CoordinatorGovernance implements GovernanceCascade {
  readonly decide: GovernanceCascade['decide'];
  readonly budgetEntry: GovernanceCascade['budgetEntry'];

  constructor(options: GovernanceOptions & { knownRoles: Iterable<string> }) {
    const cascade = governanceCascade(options);
    this.decide = cascade.decide;
    this.budgetEntry = cascade.budgetEntry;
  }
}
