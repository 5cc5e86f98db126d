import { type WorkflowRunEvent, addRunUsage } from '../../protocol/workflow.js';
import { drive } from './drive.js';
import { auditRoute } from './route-audit.js';
import type { CoordinatorInput, Decision, DecisionEnv, ItemView } from './types.js';
import { noteOverrun } from './usage.js';
import { COORDINATOR_ACTOR, Work, json, unchanged } from './work.js';

/** A child's end reaches its parent: the run settles the branch (a late one, for a branch no longer waited for, changes nothing). */
export function childSettled(
  view: ItemView | undefined,
  input: Extract<CoordinatorInput, { kind: 'child' }>,
  env: DecisionEnv,
): Decision {
  if (view === undefined || view.run === null || view.item.finishedAt !== null) return unchanged(view, 'late');
  const s = input.settle;
  const work = new Work(view, env);
  const before = work.run!.value;
  const event: WorkflowRunEvent = {
    type: 'CHILD_SETTLED',
    hop: s.hop,
    branch: s.branch,
    outcome: s.outcome,
    ...(s.output === null ? {} : { output: s.output }),
    ...(s.error === null ? {} : { error: s.error }),
    usage: s.usage,
  };
  const routed = auditRoute(work, event);
  const accepted = work.send(event);
  if (!accepted) return unchanged(view, 'duplicate');
  routed();
  work.item = { ...work.item, usage: addRunUsage(work.item.usage, s.usage) };
  noteOverrun(work, before);
  work.audit.push({
    kind: 'child-settled',
    itemId: work.item.id,
    hop: s.hop,
    actor: COORDINATOR_ACTOR,
    data: json({
      childId: s.childId,
      branch: s.branch,
      outcome: s.outcome,
      error: s.error ?? undefined,
      usage: s.usage,
    }),
  });
  work.event('child-settled', s.hop, `child ${s.branch} ${s.outcome}${s.error === null ? '' : `: ${s.error.type}`}`, {
    usage: s.usage,
  });
  drive(work);
  return work.finish('applied', false);
}
