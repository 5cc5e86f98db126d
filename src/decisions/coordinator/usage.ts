import type { AuditEntryInput } from '../../protocol/audit.js';
import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import type { HopRecord } from '../../workflow/records.js';
import type { Decision } from './types.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * What a hop's usage writes down, whatever the input that brought it: its
 * cost row, an overrun of the item's budget, a result after the item ended.
 */

/** A result after the item ended: its cost is written down, nothing else changes. */
export function late(work: Work, hop: HopRecord): Decision {
  work.event('late-result', hop.hop, `a result after the item ended (${work.item.state}): cost accrued`, {
    stage: hop.stage,
    role: hop.role,
  });
  return work.finish('late', false);
}

/** The audit row of what a hop (or query) cost. */
export function costRow(hop: HopRecord, added: HopRecord['usage'], model: string): AuditEntryInput {
  return {
    kind: 'cost',
    itemId: hop.itemId,
    hop: hop.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      hopId: hop.id,
      agent: hop.role,
      model,
      inputTokens: added.inputTokens,
      outputTokens: added.outputTokens,
      costUsd: added.costUsd,
      elapsedMs: added.elapsedMs,
    }),
  };
}

/**
 * Sends the run an event that carries a hop's usage. The run decides
 * whether that usage takes the item over its budget (and then fails it,
 * `BUDGET_EXCEEDED`); this writes down that it did.
 */
export function sendUsage(work: Work, event: WorkflowRunEvent): void {
  const before = work.run?.value;
  work.send(event);
  noteOverrun(work, before);
}

/** Writes down that the last event the run took (from state `before`) failed it over its budget. */
export function noteOverrun(work: Work, before: string | undefined): void {
  const run = work.run;
  if (run === null || before === run.value || run.context.failure?.code !== 'BUDGET_EXCEEDED') return;
  work.event('budget-exceeded', work.item.hop, run.context.failure.reason);
}
