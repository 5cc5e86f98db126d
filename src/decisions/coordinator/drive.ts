import { isFinalRunState } from '../../machines/workflow-run-transitions.js';
import type { ItemState } from '../../workflow/records.js';
import { spawn } from './child-spawn.js';
import { deniedEvent, dispatch, dispatched, govern, resume } from './hop-start.js';
import { end } from './item-end.js';
import { COORDINATOR_ACTOR, type Work, json } from './work.js';

/**
 * Follows the run's directive until it waits (a hop out, an approval, a reply, children) or ends. A
 * run not started yet is left as it is: `create` sends its START first, and a run always takes it.
 */
export function drive(work: Work): void {
  for (let guard = 0; guard < 32; guard++) {
    // Every decision that drives has the item's run: an ended item's view has none, and is refused before.
    const run = work.run!;
    const ctx = run.context;
    const state = run.value as ItemState;
    const d = ctx.directive;
    if (d.kind === 'dispatch') {
      if (dispatched(work, d.hop, d.attempt, d.resume)) return;
      const decision = govern(work, {
        stage: d.stage,
        role: d.role,
        hop: d.hop,
        attempt: d.attempt,
        approvedBy: d.approvedBy,
        query: false,
      });
      if (decision.decision === 'deny') {
        work.send(deniedEvent(d.hop, decision.reason, decision));
        work.event('denied', d.hop, `${decision.policy}: ${decision.reason}`, { stage: d.stage, role: d.role });
        if (decision.exceeded !== undefined) {
          work.event('budget-exceeded', d.hop, decision.exceeded.detail, { stage: d.stage, role: d.role });
        }
        continue;
      }
      if (decision.decision === 'require-approval') {
        work.send({
          type: 'APPROVAL_REQUIRED',
          hop: d.hop,
          reason: decision.reason.slice(0, 2000),
          ...(decision.approvers === null ? {} : { approvers: decision.approvers }),
        });
        continue;
      }
      if (d.resume !== null) resume(work, d.resume);
      else dispatch(work, d.stage, d.role, d.hop, d.attempt, d.delayMs);
      return;
    }
    if (d.kind === 'await-approval') {
      if (work.item.approval === null) {
        work.item = {
          ...work.item,
          approval: { stage: d.stage, hop: d.hop, source: d.source, approvers: d.approvers, reason: d.reason },
        };
        work.audit.push({
          kind: 'approval-requested',
          itemId: work.item.id,
          hop: d.hop,
          actor: COORDINATOR_ACTOR,
          data: json({ stage: d.stage, source: d.source, approvers: d.approvers, reason: d.reason }),
        });
        work.event(
          'approval-requested',
          d.hop,
          `waits for ${d.approvers === null ? 'an approver' : d.approvers.join(' or ')}: ${d.reason}`,
          { stage: d.stage, role: ctx.definition.stages[d.stage]?.role ?? null },
        );
      }
      return;
    }
    if (d.kind === 'spawn') {
      const im = d.immediate;
      if (im === null) {
        spawn(work, d);
        return;
      }
      // Nothing to start: the stage's outcome at once (an empty map, or a map over something not a list).
      if (im.outcome === 'succeeded') {
        work.send({ type: 'HOP_SUCCEEDED', hop: d.hop, attempt: ctx.attempt, output: im.output });
      } else {
        work.event('hop-failed', d.hop, `failed: ${im.errorType}: ${im.message.slice(0, 200)}`);
        work.send({
          type: 'HOP_FAILED',
          hop: d.hop,
          attempt: ctx.attempt,
          errorType: im.errorType,
          message: im.message.slice(0, 2000),
          final: 'non-retryable',
        });
      }
      continue;
    }
    // Anything else waits (a hop's reply, its children) or has ended (a final run's directive is 'none').
    if (isFinalRunState(state)) end(work, state);
    return;
  }
  throw new Error(`the run of ${work.item.id} did not settle`);
}
