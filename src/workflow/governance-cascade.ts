import {
  type GovernanceDecision,
  type HopContext,
  type PolicyEntry,
  budgetPolicy,
  maxHopsPolicy,
  roleAllowListPolicy,
  runGovernance,
} from './governance.js';
import type { ItemBudget } from './records.js';

/**
 * The governance cascade the Coordinator runs before every hop (and every
 * query a suspended hop asks), as a value: the built-ins first (the work
 * item's budget, the role allow-list, the maximum hop count), then the
 * user's policies, in order. The cascade itself is `runGovernance` (first
 * deny wins; fails closed). Built once from the Coordinator's options and
 * handed to the decisions; nothing here is traced or logged (whoever drives
 * the decisions traces the checks they report).
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

/** A Coordinator's governance: the cascade for one hop, and the budget policy of an item. Pure functions. */
export interface GovernanceCascade {
  /** The cascade for one hop of an item with this budget. */
  readonly decide: (budget: ItemBudget | null, ctx: HopContext) => GovernanceDecision;
  /** Checks a budget now (a bad one is refused when the item is created, not at its first hop). */
  readonly budgetEntry: (budget: ItemBudget) => PolicyEntry;
}

/** The cascade of a Coordinator that knows these roles, under these options. Throws on a bad built-in's argument. */
export function governanceCascade(options: GovernanceOptions & { knownRoles: Iterable<string> }): GovernanceCascade {
  const fixed: readonly PolicyEntry[] = [
    roleAllowListPolicy(options.allowedRoles ?? options.knownRoles),
    maxHopsPolicy(options.maxHops ?? DEFAULT_MAX_HOPS),
  ];
  const user: readonly PolicyEntry[] = [...(options.policies ?? [])];
  /** Budget policies by their JSON: items with the same budget share one (a cache of a pure function). */
  const budgets = new Map<string, PolicyEntry>();
  const budgetEntry = (budget: ItemBudget): PolicyEntry => {
    const key = JSON.stringify([budget.maxTokens ?? null, budget.maxCostUsd ?? null, budget.maxHops ?? null]);
    let entry = budgets.get(key);
    if (entry === undefined) {
      entry = budgetPolicy(budget);
      budgets.set(key, entry);
    }
    return entry;
  };
  return Object.freeze({
    budgetEntry,
    decide: (budget: ItemBudget | null, ctx: HopContext): GovernanceDecision =>
      runGovernance(budget === null ? [...fixed, ...user] : [budgetEntry(budget), ...fixed, ...user], ctx),
  });
}
