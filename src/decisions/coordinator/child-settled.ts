import { type WorkflowRunEvent, addRunUsage } from '../../protocol/workflow.js';
import { settleBranch } from '../../machines/workflow-run-join.js';
import { settledOf } from '../../machines/workflow-run-routing.js';
import type { RunDirective } from '../../machines/workflow-run-context.js';
import { resumeWithChildren } from './child-suspension.js';
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
    ...(s.hops === undefined ? {} : { hops: s.hops }),
  };
  const routed = auditRoute(work, event);
  const joinBefore = work.run!.context.join ?? null;
  const waiting = work.run!.context.directive;
  const accepted = work.send(event);
  if (!accepted) return unchanged(view, 'duplicate');
  routed();
  // A suspended run made running by a child's end took its only such row, `resume-children`: the
  // last child of a hop that started them itself. The run waited on that hop's reply, under the
  // join of its children, and the hop resumes with their outcomes.
  if (before === 'suspended' && work.run!.value === 'running') {
    const reply = waiting as Extract<RunDirective, { kind: 'await-reply' }>;
    const asking = [...work.hops.values()].find(
      (h) => h.kind === 'stage' && h.hop === reply.hop && h.state === 'suspended',
    )!;
    const settled = settleBranch(
      joinBefore!,
      s.branch,
      settledOf(event as Extract<WorkflowRunEvent, { type: 'CHILD_SETTLED' }>),
    );
    resumeWithChildren(work, asking, reply.continuation, settled);
  }
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
