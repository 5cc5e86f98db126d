import {
  type GovernanceDecision,
  type HopContext,
  type PolicyEntry,
  budgetPolicy,
  maxHopsPolicy,
  roleAllowListPolicy,
  runGovernance,
} from '../../workflow/governance.js';
import type { ItemBudget } from '../../workflow/records.js';

/**
 * The governance cascade the Coordinator runs before every hop (and every
 * query a suspended hop asks): the built-ins first (the work item's budget,
 * the role allow-list, the maximum hop count), then the user's policies, in
 * order. The cascade itself is `runGovernance` (first deny wins; fails
 * closed).
 */

export const DEFAULT_MAX_HOPS = 50;

export interface GovernanceOptions {
  /** Roles a hop may go to (default: every role of the known definitions). */
  allowedRoles?: Iterable<string>;
  /** Hops a work item may take (default 50). */
  maxHops?: number;
  /** User policies, after the built-ins. */
  policies?: readonly PolicyEntry[];
}

export class CoordinatorGovernance {
  readonly #fixed: PolicyEntry[];
  readonly #user: readonly PolicyEntry[];
  /** Budget policies by their JSON: items with the same budget share one. */
  readonly #budgets = new Map<string, PolicyEntry>();

  constructor(options: GovernanceOptions & { knownRoles: Iterable<string> }) {
    this.#fixed = [
      roleAllowListPolicy(options.allowedRoles ?? options.knownRoles),
      maxHopsPolicy(options.maxHops ?? DEFAULT_MAX_HOPS),
    ];
    this.#user = [...(options.policies ?? [])];
  }

  /** Checks a budget now (a bad one is refused when the item is created, not at its first hop). */
  budgetEntry(budget: ItemBudget): PolicyEntry {
    const key = JSON.stringify([budget.maxTokens ?? null, budget.maxCostUsd ?? null]);
    let entry = this.#budgets.get(key);
    if (entry === undefined) {
      entry = budgetPolicy(budget);
      this.#budgets.set(key, entry);
    }
    return entry;
  }

  /** The cascade for one hop of an item with this budget. */
  decide(budget: ItemBudget | null, ctx: HopContext): GovernanceDecision {
    const policies =
      budget === null ? [...this.#fixed, ...this.#user] : [this.budgetEntry(budget), ...this.#fixed, ...this.#user];
    return runGovernance(policies, ctx);
  }
}
