import type { WorkflowRunEvent } from '../../protocol/workflow.js';
import { drive } from './drive.js';
import type { CoordinatorInput, Decision, DecisionEnv, ItemView } from './types.js';
import { Work, json, liveWork, refusedEvent } from './work.js';

/** An approval or a denial of the hop the item waits at (a gate, or governance's require-approval). */
export function approval(
  view: ItemView | undefined,
  input: Extract<CoordinatorInput, { kind: 'approve' | 'deny' }>,
  env: DecisionEnv,
): Decision {
  const work = liveWork(view, env);
  if (!(work instanceof Work)) return work;
  const itemId = work.item.id;
  if (input.kind === 'approve') {
    if (!work.send({ type: 'APPROVED', by: input.approver })) return refusedEvent(view, work, 'APPROVED');
    work.audit.push({
      kind: 'approval',
      itemId,
      hop: work.item.approval?.hop ?? work.item.hop,
      actor: input.approver,
      data: json({ decision: 'approved', by: input.approver, stage: work.item.approval?.stage }),
    });
    work.event('approved', work.item.hop, `approved by ${input.approver}`);
    work.item = { ...work.item, approval: null };
  } else {
    const reason = input.reason;
    const event: WorkflowRunEvent = {
      type: 'DENIED',
      by: input.approver,
      ...(reason === undefined || reason === '' ? {} : { reason }),
    };
    if (!work.send(event)) return refusedEvent(view, work, 'DENIED');
    work.audit.push({
      kind: 'approval',
      itemId,
      hop: work.item.approval?.hop ?? work.item.hop,
      actor: input.approver,
      data: json({ decision: 'denied', by: input.approver, reason, stage: work.item.approval?.stage }),
    });
    work.event('approval-denied', work.item.hop, `denied by ${input.approver}${reason ? `: ${reason}` : ''}`);
    work.item = { ...work.item, approval: null };
  }
  drive(work);
  return work.finish('applied', false);
}
