import { WorkflowError } from '../protocol/workflow-error.js';
import type { z } from 'zod';
import { type RunUsage, type WorkflowRef, WorkflowRunEventSchema } from '../protocol/workflow.js';

/**
 * Governance: before every hop, the Coordinator runs an ordered cascade of
 * policies over the hop. Each policy is a plain, synchronous function of the
 * hop's context returning allow, deny (with a reason) or require-approval
 * (with a reason and, optionally, who may approve). Pure: no clock, no I/O,
 * so that a decision can be recorded in the audit and reproduced.
 */

/** What a policy sees of the hop about to be dispatched. */
export interface HopContext {
  /** The work item (top-level task). */
  itemId: string;
  /** The workflow the item runs on (id and version). */
  workflow: WorkflowRef;
  /** The stage the hop is for. */
  stage: string;
  /** The role the hop goes to. */
  role: string;
  /** The hop's number in its run (1-based). */
  hop: number;
  /** The hop's attempt (1 the first time; retries count up). */
  attempt: number;
  /** What the work item has cost so far (before this hop). */
  usage: RunUsage;
  /** Hops the item's children (and theirs) have taken so far: they count against the item's `maxHops` (default 0). */
  childHops?: number;
  /** Who approved this hop, if anyone (its gate, or an earlier require-approval). */
  approvedBy: string | null;
  /** Anything else the Coordinator passes to user policies (the requester, labels). */
  attributes?: Readonly<Record<string, string | number | boolean>>;
}

/** What a governance policy decides for a hop: allow, deny with a reason, or require an approval. */
export type PolicyVerdict =
  | { decision: 'allow' }
  | { decision: 'deny'; reason: string }
  | { decision: 'require-approval'; reason: string; approvers?: string[] };

/** A policy: a plain function. It must not throw; if it does, the cascade denies (fails closed). */
export type Policy = (ctx: Readonly<HopContext>) => PolicyVerdict;

/** A policy with the name its verdicts are recorded under. */
export interface NamedPolicy {
  /** The policy's name, as audited and traced. */
  name: string;
  /** The policy: a verdict on each hop. */
  check: Policy;
}

/** A governance policy as the Coordinator takes it: a plain function, or one with the name its verdicts are recorded under. */
export type PolicyEntry = Policy | NamedPolicy;

/** One policy's verdict as recorded in the audit. */
export interface PolicyRecord {
  policy: string;
  decision: PolicyVerdict['decision'];
  reason?: string;
  approvers?: string[];
  /** For a require-approval already met by `HopContext.approvedBy`. */
  satisfiedBy?: string;
}

/** The name the cascade itself records verdicts under (conflicting approval requirements). */
export const CASCADE_POLICY_NAME = '$cascade';

export type GovernanceDecision =
  | { decision: 'allow'; verdicts: PolicyRecord[] }
  | { decision: 'deny'; policy: string; reason: string; verdicts: PolicyRecord[] }
  | {
      decision: 'require-approval';
      reason: string;
      /** Who may approve so that every requirement is met; `null`: any named approver. */
      approvers: string[] | null;
      /** The policies that asked. */
      policies: string[];
      verdicts: PolicyRecord[];
    };

/** Bad arguments to a built-in policy: `GOVERNANCE_INVALID_POLICY`. */
function invalidPolicy(message: string): WorkflowError {
  return new WorkflowError('GOVERNANCE_INVALID_POLICY', message);
}

/** The approvers a run's wait for approval takes: its APPROVAL_REQUIRED event's list, where their bounds are set. */
const RUN_APPROVERS = (
  WorkflowRunEventSchema.options.find((o) => o.shape.type.value === 'APPROVAL_REQUIRED')!.shape as {
    approvers: z.ZodOptional<z.ZodArray<z.ZodString>>;
  }
).approvers.unwrap();

function policyName(entry: PolicyEntry, index: number): string {
  if (typeof entry === 'function') return entry.name || `policy-${index + 1}`;
  return entry.name;
}

/** Why a returned value is not a verdict, or null if it is one. */
function verdictProblem(value: unknown): string | null {
  if (value === null || typeof value !== 'object') return 'it returned no verdict';
  const v = value as Record<string, unknown>;
  if (v.decision === 'allow') return null;
  if (v.decision !== 'deny' && v.decision !== 'require-approval') {
    return `unknown decision ${JSON.stringify(v.decision)}`;
  }
  if (typeof v.reason !== 'string' || v.reason.length === 0) return `a ${v.decision} verdict needs a reason`;
  if (v.decision === 'require-approval' && v.approvers !== undefined) {
    const a = v.approvers;
    if (!Array.isArray(a) || a.length === 0 || !a.every((x) => typeof x === 'string' && x.length > 0)) {
      return 'approvers must be a non-empty list of names';
    }
    const fits = RUN_APPROVERS.safeParse(a);
    if (!fits.success) {
      return `approvers must be names a run's approval can wait for: ${fits.error.issues[0]?.message ?? 'refused'}`;
    }
  }
  return null;
}

function frozenContext(ctx: HopContext): Readonly<HopContext> {
  return Object.freeze({
    ...ctx,
    workflow: Object.freeze({ ...ctx.workflow }),
    usage: Object.freeze({ ...ctx.usage }),
    ...(ctx.attributes ? { attributes: Object.freeze({ ...ctx.attributes }) } : {}),
  });
}

/**
 * Runs the cascade in order. The first deny wins (later policies are not
 * asked). Require-approval verdicts are collected: a verdict whose approvers
 * include `ctx.approvedBy` (or that names none, when someone approved) is met;
 * if any is not met, the decision is require-approval from the approvers
 * common to every requirement (a deny when no one is common to them all).
 * A policy that throws or returns something other than a verdict denies.
 * Every policy's verdict is returned for the audit.
 */
export function runGovernance(policies: readonly PolicyEntry[], ctx: HopContext): GovernanceDecision {
  const view = frozenContext(ctx);
  const verdicts: PolicyRecord[] = [];
  const requirements: { policy: string; reason: string; approvers: string[] | null; met: boolean }[] = [];
  for (const [index, entry] of policies.entries()) {
    const name = policyName(entry, index);
    const check = typeof entry === 'function' ? entry : entry.check;
    let verdict: PolicyVerdict;
    try {
      const returned: unknown = check(view);
      const problem = verdictProblem(returned);
      verdict =
        problem === null ? (returned as PolicyVerdict) : { decision: 'deny', reason: `policy ${name}: ${problem}` };
    } catch (error) {
      verdict = { decision: 'deny', reason: `policy ${name} failed: ${(error as Error)?.message ?? String(error)}` };
    }
    if (verdict.decision === 'allow') {
      verdicts.push({ policy: name, decision: 'allow' });
      continue;
    }
    if (verdict.decision === 'deny') {
      verdicts.push({ policy: name, decision: 'deny', reason: verdict.reason });
      return { decision: 'deny', policy: name, reason: verdict.reason, verdicts };
    }
    const approvers = verdict.approvers ? [...new Set(verdict.approvers)] : null;
    const met = ctx.approvedBy !== null && (approvers === null || approvers.includes(ctx.approvedBy));
    verdicts.push({
      policy: name,
      decision: 'require-approval',
      reason: verdict.reason,
      ...(approvers ? { approvers } : {}),
      ...(met ? { satisfiedBy: ctx.approvedBy! } : {}),
    });
    requirements.push({ policy: name, reason: verdict.reason, approvers, met });
  }
  if (requirements.every((r) => r.met)) return { decision: 'allow', verdicts };

  // One approval must meet every requirement, including those met so far,
  // or approvals could take turns undoing each other.
  let common: string[] | null = null;
  for (const r of requirements) {
    if (r.approvers === null) continue;
    common = common === null ? [...r.approvers] : common.filter((a) => r.approvers!.includes(a));
  }
  const asking = requirements.filter((r) => !r.met);
  if (common !== null && common.length === 0) {
    const reason = `no approver can meet every approval requirement (${requirements.map((r) => r.policy).join(', ')})`;
    verdicts.push({ policy: CASCADE_POLICY_NAME, decision: 'deny', reason });
    return { decision: 'deny', policy: CASCADE_POLICY_NAME, reason, verdicts };
  }
  return {
    decision: 'require-approval',
    reason: asking.map((r) => `${r.policy}: ${r.reason}`).join('; '),
    approvers: common,
    policies: asking.map((r) => r.policy),
    verdicts,
  };
}

/** What `budgetPolicy` lets a work item spend: tokens, dollars, hops, or any of them together. */
export interface Budget {
  /** Input plus output tokens the work item may spend. */
  maxTokens?: number;
  /** The most the item may cost, in US dollars. */
  maxCostUsd?: number;
  /** Hops the work item may take, its children's (`HopContext.childHops`) counted in. */
  maxHops?: number;
}

function checkBudget(budget: Budget): void {
  if (budget.maxTokens === undefined && budget.maxCostUsd === undefined && budget.maxHops === undefined) {
    throw invalidPolicy('a budget sets maxTokens, maxCostUsd, maxHops or any of them together');
  }
  if (budget.maxHops !== undefined && !(Number.isInteger(budget.maxHops) && budget.maxHops >= 1)) {
    throw invalidPolicy(`maxHops must be a whole number of hops >= 1, not ${budget.maxHops}`);
  }
  if (budget.maxTokens !== undefined && !(Number.isInteger(budget.maxTokens) && budget.maxTokens >= 0)) {
    throw invalidPolicy(`maxTokens must be a whole number of tokens, not ${budget.maxTokens}`);
  }
  if (budget.maxCostUsd !== undefined && !(Number.isFinite(budget.maxCostUsd) && budget.maxCostUsd >= 0)) {
    throw invalidPolicy(`maxCostUsd must be a finite amount of dollars, not ${budget.maxCostUsd}`);
  }
}

/**
 * How the usage (and `hops`, the hops taken so far, children's counted in)
 * stands against a budget: `exceeded` (strictly over: the item fails,
 * BUDGET_EXCEEDED), `spent` (at or over: no further hop is allowed), or null
 * when there is budget left. Hops are only counted when `hops` is given.
 */
export function budgetStatus(
  budget: Budget,
  usage: RunUsage,
  hops?: number,
): { state: 'spent' | 'exceeded'; reason: string } | null {
  const tokens = usage.inputTokens + usage.outputTokens;
  const countHops = budget.maxHops !== undefined && hops !== undefined;
  const overTokens = budget.maxTokens !== undefined && tokens > budget.maxTokens;
  const overCost = budget.maxCostUsd !== undefined && usage.costUsd > budget.maxCostUsd;
  const overHops = countHops && hops! > budget.maxHops!;
  const atTokens = budget.maxTokens !== undefined && tokens >= budget.maxTokens;
  const atCost = budget.maxCostUsd !== undefined && usage.costUsd >= budget.maxCostUsd;
  const atHops = countHops && hops! >= budget.maxHops!;
  const parts: string[] = [];
  if (atTokens) parts.push(`${tokens} of ${budget.maxTokens} tokens`);
  if (atCost) parts.push(`${usage.costUsd} of ${budget.maxCostUsd} USD`);
  if (atHops) parts.push(`${hops} of ${budget.maxHops} hops`);
  if (overTokens || overCost || overHops) return { state: 'exceeded', reason: `budget exceeded: ${parts.join(', ')}` };
  if (atTokens || atCost || atHops) return { state: 'spent', reason: `budget spent: ${parts.join(', ')}` };
  return null;
}

/**
 * Denies a hop once the work item has spent its budget in tokens, dollars or
 * hops (the hops before this one: its own, `ctx.hop - 1`, and its children's).
 */
export function budgetPolicy(budget: Budget): NamedPolicy {
  checkBudget(budget);
  const limits = { ...budget };
  return {
    name: 'budget',
    check: (ctx) => {
      const status = budgetStatus(limits, ctx.usage, ctx.hop - 1 + (ctx.childHops ?? 0));
      return status === null ? { decision: 'allow' } : { decision: 'deny', reason: status.reason };
    },
  };
}

/**
 * Whether a hop is denied because the item's `maxHops` (its children's hops
 * counted in) is spent: the limit and the hops taken before this one, or
 * null when the budget sets no `maxHops` or has hops left. A hop so denied
 * fails the item `BUDGET_EXCEEDED`, as a cost or token overrun does.
 */
export function hopBudgetSpent(
  budget: Budget | null,
  ctx: Pick<HopContext, 'hop' | 'childHops'>,
): { maxHops: number; spent: number } | null {
  if (budget === null || budget.maxHops === undefined) return null;
  const spent = ctx.hop - 1 + (ctx.childHops ?? 0);
  return spent >= budget.maxHops ? { maxHops: budget.maxHops, spent } : null;
}

/** Denies a hop to any role not listed. */
export function roleAllowListPolicy(roles: Iterable<string>): NamedPolicy {
  const allowed = new Set(roles);
  if (allowed.size === 0) throw invalidPolicy('a role allow-list names at least one role');
  const listed = [...allowed].sort().join(', ');
  return {
    name: 'role-allow-list',
    check: (ctx) =>
      allowed.has(ctx.role)
        ? { decision: 'allow' }
        : { decision: 'deny', reason: `role ${ctx.role} is not allowed (allowed: ${listed})` },
  };
}

/** Denies any hop past the `max`-th of a work item (a backstop against runaway loops). */
export function maxHopsPolicy(max: number): NamedPolicy {
  if (!(Number.isInteger(max) && max >= 1)) throw invalidPolicy(`max hops must be a whole number >= 1, not ${max}`);
  return {
    name: 'max-hops',
    check: (ctx) =>
      ctx.hop <= max
        ? { decision: 'allow' }
        : { decision: 'deny', reason: `hop ${ctx.hop} is over the limit of ${max} hops` },
  };
}
