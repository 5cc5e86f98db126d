import type { AgentSpend } from '../protocol/model-agent-checkpoint.js';
import type { ItemBudgetHeader } from '../protocol/work-envelope.js';

/**
 * The steps of a model agent's hop, each run once: a model call is step
 * `model/<n>` (n counts the hop's model calls from 0, across its
 * suspensions), a tool call `tool/<n>/<toolCallId>` (the tools the n-th call
 * asked for). The worker's `effects.once` records each step's result under
 * the hop's idempotency key, so a redelivered hop replays a step that
 * completed instead of running it again.
 */

/** The longest tool call id kept as it is in a step key (the Context Engine takes keys up to 1024 characters). */
const MAX_CALL_ID_CHARS = 200;

/** The key of the hop's `step`-th model call. */
export function modelStepKey(step: number): string {
  return `model/${step}`;
}

/** The key of the tool call `toolCallId` that the hop's `step`-th model call asked for. */
export function toolStepKey(step: number, toolCallId: string): string {
  const id = toolCallId.length <= MAX_CALL_ID_CHARS ? toolCallId : toolCallId.slice(0, MAX_CALL_ID_CHARS);
  return `tool/${step}/${id}`;
}

/** What a hop may spend on its model calls: tokens (input and output), dollars, or both. */
export interface AgentBudget {
  maxTokens?: number;
  maxCostUsd?: number;
}

/**
 * Why no further model call may run, or null when there is budget left: a
 * call is made only while what the hop spent is under every limit, so the hop
 * passes a limit by one call at most.
 */
export function budgetStop(budget: AgentBudget | undefined, spent: AgentSpend): string | null {
  if (budget === undefined) return null;
  const tokens = spent.inputTokens + spent.outputTokens;
  const over: string[] = [];
  if (budget.maxTokens !== undefined && tokens >= budget.maxTokens) {
    over.push(`${tokens} of ${budget.maxTokens} tokens`);
  }
  if (budget.maxCostUsd !== undefined && spent.costUsd >= budget.maxCostUsd) {
    over.push(`${spent.costUsd} of ${budget.maxCostUsd} USD`);
  }
  return over.length === 0 ? null : `budget spent: ${over.join(', ')}`;
}

/**
 * Why no further model call may run on the work item's budget, or null when
 * it has budget left: the item had spent `itemBudget.spent*` when the hop was
 * published, and the hop has spent `spent` since (over its suspensions).
 */
export function itemBudgetStop(itemBudget: ItemBudgetHeader | undefined, spent: AgentSpend): string | null {
  if (itemBudget === undefined) return null;
  const tokens = itemBudget.spentTokens + spent.inputTokens + spent.outputTokens;
  const costUsd = itemBudget.spentCostUsd + spent.costUsd;
  const over: string[] = [];
  if (itemBudget.maxTokens !== undefined && tokens >= itemBudget.maxTokens) {
    over.push(`${tokens} of ${itemBudget.maxTokens} tokens`);
  }
  if (itemBudget.maxCostUsd !== undefined && costUsd >= itemBudget.maxCostUsd) {
    over.push(`${costUsd} of ${itemBudget.maxCostUsd} USD`);
  }
  return over.length === 0 ? null : `the work item's budget is spent: ${over.join(', ')}`;
}
