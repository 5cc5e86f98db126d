import { type WorkflowRunEvent, addRunUsage } from '../../protocol/workflow.js';
import { settleBranch } from '../../machines/workflow-run-join.js';
import { settledOf } from '../../machines/workflow-run-routing.js';
import { type RunDirective, isFinalRunState } from '../../machines/workflow-run-context.js';
import type { SettleBody } from './child-rows.js';
import { resumeWithChildren } from './child-suspension.js';
import { drive } from './drive.js';
import { auditRoute } from './route-audit.js';
import type { CoordinatorInput, Decision, DecisionEnv, ItemView } from './types.js';
import { noteOverrun } from './usage.js';
import { COORDINATOR_ACTOR, Work, json, unchanged } from './work.js';

/**
 * Children's ends reach their parent: the run settles each branch in order
 * (a late one, for a branch no longer waited for, changes nothing), as one
 * decision. What the settles start (a map's next waiting elements) is
 * written once, after the last one: one `spawn` for them all, where a
 * decision per end writes one each. An end that takes the run out of its
 * join (deciding it, or ending the run) is settled after what the earlier
 * ones started is written, so the outcome is the one a decision per end
 * gives: the same children made, the same ones canceled.
 */
export function childSettled(
  view: ItemView | undefined,
  input: Extract<CoordinatorInput, { kind: 'child' }>,
  env: DecisionEnv,
): Decision {
  if (view === undefined || view.run === null || view.item.finishedAt !== null) return unchanged(view, 'late');
  const work = new Work(view, env);
  // Whether an end was taken: the run's directive (what the ends started, or where the run goes next)
  // is then carried out once, after the last one.
  let taken = false;
  const ends = input.siblings === undefined ? [input.settle] : [input.settle, ...input.siblings];
  for (const s of ends) {
    // An end past the run's own end changes nothing, as a decision of its own would find the item ended.
    if (isFinalRunState(work.run!.value)) break;
    const event = settleEvent(s);
    let outcome = settleOne(work, s, event, taken);
    if (outcome === 'write-first') {
      drive(work);
      outcome = settleOne(work, s, event, false);
    }
    if (outcome === 'taken') taken = true;
  }
  if (!taken) return unchanged(view, 'duplicate');
  drive(work);
  return work.finish('applied', false);
}

/** The run event of a child's end. */
function settleEvent(s: SettleBody): WorkflowRunEvent {
  return {
    type: 'CHILD_SETTLED',
    hop: s.hop,
    branch: s.branch,
    outcome: s.outcome,
    ...(s.output === null ? {} : { output: s.output }),
    ...(s.error === null ? {} : { error: s.error }),
    usage: s.usage,
    ...(s.hops === undefined ? {} : { hops: s.hops }),
  };
}

/**
 * One child's end settled in its parent's run: its usage, audit entry and
 * event (`taken`). The work is left as it was when the run refused the end
 * (`refused`: a duplicate or late one), and when the run's directive is
 * still to be carried out for ends taken before (`owed`: children they
 * started, say) and this end would take the run out of its join
 * (`write-first`: the directive is carried out, then the end settled).
 */
function settleOne(
  work: Work,
  s: SettleBody,
  event: WorkflowRunEvent,
  owed: boolean,
): 'taken' | 'refused' | 'write-first' {
  const prior = work.run!;
  const before = prior.value;
  const routed = auditRoute(work, event);
  const joinBefore = prior.context.join ?? null;
  const waiting = prior.context.directive;
  const rows = work.outbox.length;
  const accepted = work.send(event);
  const after = work.run!;
  // Out of its join: decided, or the run ended (either way the join is gone).
  const left = (after.context.join ?? null)?.hop !== joinBefore?.hop;
  if (!accepted || (owed && left)) {
    work.run = prior;
    work.runEvents.pop();
    if (!accepted) work.refused.pop();
    // The rows its send wrote (children it abandoned): not written.
    work.outbox.length = rows;
    return accepted ? 'write-first' : 'refused';
  }
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
  return 'taken';
}
