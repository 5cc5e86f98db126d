import type { JsonObject } from '../../protocol/audit.js';
import type { ItemBudgetHeader, RetryPolicy, WorkMessage } from '../../protocol/work-envelope.js';
import type { z } from 'zod';
import { type WorkflowDefinition, type WorkflowRunEvent, WorkflowRunEventSchema } from '../../protocol/workflow.js';
import { stageRetryPolicy } from '../../workflow/definition.js';
import { type GovernanceDecision, type HopContext, hopBudgetSpent } from '../../workflow/governance.js';
import { type HopRecord, type TreeUsage, dispatchedHop } from '../../workflow/records.js';
import { SWITCHBOARD_METADATA_KEY, type StartBody, hopKey } from './types.js';
import { addTreeUsage, spentAncestor, spentSubtree, treeRollup, withCharge } from './tree-rollup.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * Starting a hop: the governance cascade before it (and before a suspended
 * hop's query), its dispatch or its resume, and the publishes that start it
 * (a stage hop's, a query's: the same body each time it is published).
 */

/** Resolved retry policies per definition object and stage (resolving parses): a cache of a pure function. */
const retryPolicies = new WeakMap<WorkflowDefinition, Map<string, RetryPolicy>>();

/** A stage's retry policy, resolved once per definition object. */
export function retryPolicyOf(def: WorkflowDefinition, stage: string): RetryPolicy {
  let byStage = retryPolicies.get(def);
  if (byStage === undefined) {
    byStage = new Map();
    retryPolicies.set(def, byStage);
  }
  let policy = byStage.get(stage);
  if (policy === undefined) {
    policy = stageRetryPolicy(def, stage);
    byStage.set(stage, policy);
  }
  return policy;
}

/**
 * Runs the governance cascade over a hop (or over the query a suspended hop
 * asks): audited (`governance`, with every policy's verdict) and kept in the
 * decision (`governed`) for the caller to trace.
 */
export function govern(
  work: Work,
  hop: { stage: string; role: string; hop: number; attempt: number; approvedBy: string | null; query: boolean },
): GovernanceDecision & { exceeded?: BudgetDenial } {
  const ctx: HopContext = {
    itemId: work.item.id,
    workflow: work.item.workflow,
    stage: hop.stage,
    role: hop.role,
    hop: hop.hop,
    attempt: hop.attempt,
    usage: work.item.usage,
    childHops: work.ctx?.childHops ?? 0,
    approvedBy: hop.approvedBy,
    ...(work.item.attributes === null ? {} : { attributes: work.item.attributes }),
  };
  let decision: GovernanceDecision = work.env.governance.decide(work.item.budget, ctx);
  let exceeded: BudgetDenial | null = null;
  if (decision.decision === 'deny') {
    // A hop the item's budget denies for its spent `maxHops` fails the item BUDGET_EXCEEDED.
    const spent = decision.policy === 'budget' ? hopBudgetSpent(work.item.budget, ctx) : null;
    if (spent !== null) {
      exceeded = {
        detail: `budget exceeded: ${spent.spent} of ${spent.maxHops} hops`,
        audit: { limit: 'maxHops', maxHops: spent.maxHops, spent: spent.spent },
      };
    }
  } else {
    // Every ancestor's budget, against its subtree's live usage: a tree spent at its root stops every hop under it.
    // What this decision charged so far (the result that brought it) counts already.
    const charged = treeRollup(work.item.id, work.ancestors, work.usage, work.hopsTaken);
    const over = spentAncestor(charged === null ? work.ancestors : work.ancestors.map((a) => withCharge(a, charged)));
    // The item's own budget against its own subtree's live usage: its children still running count already.
    const mine = over === null ? spentSubtree(work.item.budget, ownTree(work, charged)) : null;
    if (mine !== null) {
      const tree = ownTree(work, charged)!;
      ({ decision, exceeded } = treeDenial(decision, `${work.item.id} with its children: ${mine}`, {
        limit: 'subtree',
        itemId: work.item.id,
        ...work.item.budget,
        spent: spentOf(tree),
      }));
    }
    if (over !== null) {
      const { ancestor, reason } = over;
      ({ decision, exceeded } = treeDenial(decision, reason, {
        limit: 'ancestor',
        itemId: ancestor.id,
        ...ancestor.budget,
        spent: spentOf(ancestor.tree),
      }));
    }
  }
  work.governed.push({ ctx, decision });
  work.audit.push({
    kind: 'governance',
    itemId: work.item.id,
    hop: hop.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      stage: hop.stage,
      role: hop.role,
      attempt: hop.attempt,
      query: hop.query,
      decision: decision.decision,
      reason: decision.decision === 'allow' ? undefined : decision.reason,
      approvedBy: hop.approvedBy,
      verdicts: decision.verdicts,
      // The limit a BUDGET_EXCEEDED denial ran into, and what was spent against it.
      ...(exceeded === null ? {} : { budget: exceeded.audit }),
    }),
  });
  return exceeded === null ? decision : { ...decision, exceeded };
}

/** The item's own subtree usage, live, with what this decision charged so far (undefined: not read). */
function ownTree(work: Work, charged: TreeUsage | null): TreeUsage | undefined {
  if (work.tree === undefined) return undefined;
  return charged === null ? work.tree : addTreeUsage(work.tree, charged);
}

/** The policy name a hop denied by an ancestor's spent budget (or its own, by its subtree's) is audited under. */
export const TREE_BUDGET_POLICY = 'tree-budget';

/** A governance denial that fails the item `BUDGET_EXCEEDED`: one line for its event, and the limit and spend for its audit row. */
export interface BudgetDenial {
  detail: string;
  audit: JsonObject;
}

/** The longest policy name a GOVERNANCE_DENIED event takes (its schema's bound). */
const DENIED_POLICY_CHARS =
  (
    WorkflowRunEventSchema.options.find((o) => o.shape.type.value === 'GOVERNANCE_DENIED')!.shape as {
      policy: z.ZodOptional<z.ZodString>;
    }
  ).policy.unwrap().maxLength ?? undefined;

/** The run event of a hop (or query) governance denied: `BUDGET_EXCEEDED` when a budget (its `maxHops`, an ancestor's) is spent. */
export function deniedEvent(
  hop: number,
  reason: string,
  decision: { policy?: string; exceeded?: BudgetDenial },
): Extract<WorkflowRunEvent, { type: 'GOVERNANCE_DENIED' }> {
  return {
    type: 'GOVERNANCE_DENIED',
    hop,
    reason: reason.slice(0, 2000),
    // A policy's name is the user's: the run's event keeps what its schema takes of it (the audit keeps it whole).
    ...(decision.policy === undefined ? {} : { policy: decision.policy.slice(0, DENIED_POLICY_CHARS) }),
    ...(decision.exceeded === undefined ? {} : { code: 'BUDGET_EXCEEDED' as const }),
  };
}

/** Whether the directive's hop is already out (after a restart, a directive may be acted on already). */
export function dispatched(work: Work, hop: number, attempt: number, resume: string | null): boolean {
  if (resume === null) return work.hopByKey(hopKey(work.item.id, hop, attempt)) !== undefined;
  const query = work.hopByContinuation(resume);
  // A hop resumed by its children has no query: the decision that wrote their reply put it out again.
  if (query === undefined) return true;
  // A query is written with the hop that asked it, a hop of the same item.
  return work.hops.get(query.askedBy!)!.state === 'dispatched';
}

export function dispatch(work: Work, stage: string, role: string, hop: number, attempt: number, delayMs: number): void {
  const now = work.env.now;
  const item = work.item;
  const record = dispatchedHop({
    id: work.env.nextId(),
    itemId: item.id,
    seq: item.hops + 1,
    hop,
    attempt,
    kind: 'stage',
    stage,
    role,
    idempotencyKey: hopKey(item.id, hop, attempt),
    continuation: null,
    askedBy: null,
    dispatchedAt: now,
    activeSince: now + delayMs,
  });
  work.insertHop(record);
  if (attempt === 1) work.hopsTaken += 1;
  work.item = { ...item, hops: item.hops + 1 };
  work.outbox.push({ kind: 'start', body: startBody(work, record, delayMs) });
  work.audit.push({
    kind: attempt > 1 ? 'retry' : 'dispatch',
    itemId: item.id,
    hop,
    actor: COORDINATOR_ACTOR,
    data: json({ hopId: record.id, stage, role, attempt, idempotencyKey: record.idempotencyKey, delayMs }),
  });
  work.event('dispatched', hop, attempt > 1 ? `dispatched (attempt ${attempt})` : 'dispatched', { stage, role });
}

/**
 * The work item's budget as its hops carry it (`headers.itemBudget`): its
 * limits and what it had spent when the hop was published; none without a
 * budget.
 */
export function itemBudgetHeader(work: Work): ItemBudgetHeader | undefined {
  const { budget, usage } = work.item;
  if (budget === null || (budget.maxTokens === undefined && budget.maxCostUsd === undefined)) return undefined;
  return {
    ...(budget.maxTokens === undefined ? {} : { maxTokens: budget.maxTokens }),
    ...(budget.maxCostUsd === undefined ? {} : { maxCostUsd: budget.maxCostUsd }),
    spentTokens: usage.inputTokens + usage.outputTokens,
    spentCostUsd: usage.costUsd,
  };
}

/** The publish of a stage hop: the same body (and idempotency key) each time it is published. */
export function startBody(work: Work, record: HopRecord, delayMs: number): StartBody {
  const item = work.item;
  const ctx = work.run!.context;
  const { stage, hop, attempt } = record;
  return {
    role: record.role,
    taskId: record.id,
    runId: item.id,
    hop,
    attempt,
    idempotencyKey: record.idempotencyKey,
    taskKey: item.id,
    retryPolicy: retryPolicyOf(ctx.definition, stage),
    message: {
      role: 'user',
      parts: item.input,
      metadata: {
        [SWITCHBOARD_METADATA_KEY]: {
          itemId: item.id,
          hopId: record.id,
          workflow: `${ctx.workflow.id}@${ctx.workflow.version}`,
          stage,
          hop,
          attempt,
        },
      },
    },
    ...(delayMs > 0 ? { delayMs } : {}),
    ...withItemBudget(work),
  };
}

function withItemBudget(work: Work): { itemBudget?: ItemBudgetHeader } {
  const itemBudget = itemBudgetHeader(work);
  return itemBudget === undefined ? {} : { itemBudget };
}

/** The publish of a query: the same body (and idempotency key) each time it is published. */
export function queryBody(work: Work, query: HopRecord, asking: HopRecord, question: WorkMessage): StartBody {
  const continuationToken = query.continuation!;
  return {
    role: query.role,
    taskId: asking.id,
    runId: work.item.id,
    hop: asking.hop,
    attempt: 1,
    idempotencyKey: query.idempotencyKey,
    askedBy: { role: asking.role, continuationToken, taskId: asking.id, hop: asking.hop },
    message: question,
    ...withItemBudget(work),
  };
}

export function resume(work: Work, continuation: string): void {
  // The run resumes a hop with a query's answer only on HOP_RESUMED, sent once that answer is
  // written: the query, the hop that asked it and the reply are there.
  const query = work.hopByContinuation(continuation)!;
  const asking = work.hops.get(query.askedBy!)!;
  const now = work.env.now;
  work.updateHop({ ...asking, state: 'dispatched', activeSince: now });
  work.outbox.push({ kind: 'signal', body: query.reply! });
  work.audit.push({
    kind: 'resume',
    itemId: work.item.id,
    hop: asking.hop,
    actor: COORDINATOR_ACTOR,
    data: json({ hopId: asking.id, answeredBy: query.role, queryId: query.id, continuation }),
  });
  work.event('resumed', asking.hop, `resumed with ${query.role}'s answer`, {
    stage: asking.stage,
    role: asking.role,
  });
}

/** A hop denied by the tree's budget (policy `tree-budget`): the decision, and the item's BUDGET_EXCEEDED. */
function treeDenial(
  decision: GovernanceDecision,
  reason: string,
  audit: BudgetDenial['audit'],
): { decision: GovernanceDecision; exceeded: BudgetDenial } {
  return {
    decision: {
      decision: 'deny',
      policy: TREE_BUDGET_POLICY,
      reason,
      verdicts: [...decision.verdicts, { policy: TREE_BUDGET_POLICY, decision: 'deny', reason }],
    },
    exceeded: { detail: `budget exceeded under ${reason}`, audit },
  };
}

/** What a subtree spent, as a BUDGET_EXCEEDED audit row names it. */
function spentOf(tree: { usage: { inputTokens: number; outputTokens: number; costUsd: number }; hops: number }) {
  return { tokens: tree.usage.inputTokens + tree.usage.outputTokens, costUsd: tree.usage.costUsd, hops: tree.hops };
}
