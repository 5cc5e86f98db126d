import { ITEM_BUDGET_EXCEEDED } from '../protocol/work-envelope.js';
import {
  type WorkflowRunEvent,
  WorkflowRunEventSchema,
  type WorkflowRunEventType,
  type WorkflowRunState,
} from '../protocol/workflow.js';
import { stageRetryPolicy } from '../workflow/definition.js';
import {
  type LiveRunState,
  type RefusalReason,
  type WorkflowRunContext,
  accrue,
  budgetOverrun,
} from './workflow-run-context.js';
import type { RunEffect } from './workflow-run-effects.js';
import { branchRunning, joinOutcome } from './workflow-run-join.js';
import { type RouteKind, joinSettledBy, routeKind, routeOf } from './workflow-run-routing.js';

/**
 * The WorkflowRun's rules as data and pure functions: which event moves a
 * run from which state to which, under which condition, with which effect
 * on its context. `workflow-run-machine.ts` builds the XState machine from
 * `WORKFLOW_RUN_TRANSITIONS`; nothing here reads a clock or does I/O, so a
 * run replays to the same place from the same events. The context the rules
 * move is `workflow-run-context.ts`, where an outcome leads
 * `workflow-run-routing.ts`, what an effect does `workflow-run-effects.ts`;
 * this module exports them all, as before.
 */

export {
  FINAL_RUN_STATES,
  type FinalRunState,
  type LiveRunState,
  isFinalRunState,
  type RunFailureCode,
  type RunFailure,
  type RunDirective,
  type RefusalReason,
  type RunRefusal,
  type RunDeadline,
  runDeadline,
  type RunRepublish,
  type WorkflowRunContext,
  initialRunContext,
} from './workflow-run-context.js';
export {
  ruleKey,
  type Route,
  type RouteKind,
  routeKind,
  routeStart,
  type HopOutcomeReport,
  finalAfterDeliveries,
  routeOutcome,
  timeoutMessage,
  routeOf,
} from './workflow-run-routing.js';
export { type RunEffect, applyEffect } from './workflow-run-effects.js';

/**
 * A condition a transition row holds under; all are pure functions of the
 * context and the event. `over-budget`: the event is the current hop's
 * (its continuation's, for a resume) and the usage it brings takes the run
 * over its budget.
 */
export type RunCondition =
  | 'always'
  | 'current-hop'
  | 'current-continuation'
  | 'named-approver'
  | 'over-budget'
  /** A `HOP_FAILED` of the current hop whose handler stopped because the item's budget is spent (`ItemBudgetExceeded`). */
  | 'item-budget-stop'
  /** A `TICK` at or after the run's deadline. */
  | 'past-deadline'
  /** A `HOP_TIMED_OUT` of the current hop (or its query) that its stage's retry policy lets be published again. */
  | 'timeout-republish'
  /** A `HOP_TIMED_OUT` of the current hop, or of the query the suspended hop waits on. */
  | 'current-timeout'
  /** A `CHILD_SETTLED` of a running branch of the open join that does not decide it. */
  | 'join-open'
  /** A `CHILDREN_SPAWNED` of the hop whose children the run asked for. */
  | 'current-spawn'
  /** A `CHILD_SETTLED` of a running branch of a suspended hop's children that decides their join. */
  | 'join-decided'
  | `route:${RouteKind}`;

export interface WorkflowRunTransition {
  from: LiveRunState;
  event: WorkflowRunEventType;
  when: RunCondition;
  to: WorkflowRunState;
  effect: RunEffect;
}

const routed = (
  from: LiveRunState,
  event: 'START' | 'HOP_SUCCEEDED' | 'HOP_FAILED' | 'HOP_TIMED_OUT' | 'CHILD_SETTLED',
): WorkflowRunTransition[] => {
  const effect: RunEffect = event === 'START' ? 'enter-start' : 'follow-route';
  const kinds: [RouteKind, WorkflowRunState][] =
    event === 'START'
      ? [
          ['enter-gated', 'awaiting-approval'],
          ['enter', 'running'],
        ]
      : [
          // A timed-out hop fails as exhausted: it is never retried.
          ...(event === 'HOP_FAILED' ? ([['retry', 'running']] as [RouteKind, WorkflowRunState][]) : []),
          ['enter-gated', 'awaiting-approval'],
          ['enter', 'running'],
          ['complete', 'completed'],
          ['fail', 'failed'],
        ];
  return kinds.map(([kind, to]) => ({ from, event, when: `route:${kind}` as const, to, effect }));
};

/** Time passed: past the deadline the run fails; before it, nothing changes. */
const ticks = (from: LiveRunState): WorkflowRunTransition[] => [
  { from, event: 'TICK', when: 'past-deadline', to: 'failed', effect: 'deadline-exceeded' },
  { from, event: 'TICK', when: 'always', to: from, effect: 'none' },
];

/**
 * Every legal move of a WorkflowRun, as data, in the order they are tried.
 * An event with no row whose condition holds is refused: the state and the
 * context stay as they are, except `refusal`, which records why.
 */
export const WORKFLOW_RUN_TRANSITIONS: readonly WorkflowRunTransition[] = Object.freeze([
  ...routed('pending', 'START'),
  { from: 'pending', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  // A hop's usage that takes the run over its budget ends it, before anything else of the event is decided.
  { from: 'running', event: 'HOP_SUCCEEDED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_SUCCEEDED'),
  { from: 'running', event: 'HOP_FAILED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'running', event: 'HOP_FAILED', when: 'item-budget-stop', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_FAILED'),
  // A fan-out stage's children: written by the driver, then settled one by one until the join is decided.
  { from: 'running', event: 'CHILDREN_SPAWNED', when: 'current-spawn', to: 'running', effect: 'spawned' },
  { from: 'running', event: 'CHILD_SETTLED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'running', event: 'CHILD_SETTLED', when: 'join-open', to: 'running', effect: 'settle-branch' },
  ...routed('running', 'CHILD_SETTLED'),
  { from: 'running', event: 'HOP_SUSPENDED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'running', event: 'HOP_SUSPENDED', when: 'current-hop', to: 'suspended', effect: 'suspend' },
  {
    from: 'running',
    event: 'APPROVAL_REQUIRED',
    when: 'current-hop',
    to: 'awaiting-approval',
    effect: 'require-approval',
  },
  { from: 'running', event: 'GOVERNANCE_DENIED', when: 'current-hop', to: 'failed', effect: 'governance-deny' },
  // A hop past its stage's timeout: published again while its retry policy allows, else failed as exhausted.
  { from: 'running', event: 'HOP_TIMED_OUT', when: 'timeout-republish', to: 'running', effect: 'republish' },
  { from: 'running', event: 'HOP_TIMED_OUT', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  ...routed('running', 'HOP_TIMED_OUT'),
  ...ticks('running'),
  { from: 'running', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  { from: 'awaiting-approval', event: 'APPROVED', when: 'named-approver', to: 'running', effect: 'approve' },
  { from: 'awaiting-approval', event: 'DENIED', when: 'named-approver', to: 'failed', effect: 'deny' },
  ...ticks('awaiting-approval'),
  { from: 'awaiting-approval', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },

  // A hop that started children itself: each child's end settles its branch; the last one resumes the hop.
  { from: 'suspended', event: 'CHILD_SETTLED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'suspended', event: 'CHILD_SETTLED', when: 'join-open', to: 'suspended', effect: 'settle-branch' },
  { from: 'suspended', event: 'CHILD_SETTLED', when: 'join-decided', to: 'running', effect: 'resume-children' },
  { from: 'suspended', event: 'HOP_RESUMED', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'suspended', event: 'HOP_RESUMED', when: 'current-continuation', to: 'running', effect: 'resume' },
  // The suspended hop's question, refused by governance.
  { from: 'suspended', event: 'GOVERNANCE_DENIED', when: 'current-hop', to: 'failed', effect: 'governance-deny' },
  // The suspended hop's query past the asking stage's timeout: published again, or the hop resumes with the failure.
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'timeout-republish', to: 'suspended', effect: 'republish' },
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'over-budget', to: 'failed', effect: 'budget-exceeded' },
  { from: 'suspended', event: 'HOP_TIMED_OUT', when: 'current-timeout', to: 'running', effect: 'resume' },
  ...ticks('suspended'),
  { from: 'suspended', event: 'CANCEL', when: 'always', to: 'canceled', effect: 'cancel' },
] satisfies WorkflowRunTransition[]);

function isCurrentHop(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (!('hop' in event) || event.hop !== ctx.hop) return false;
  if (event.type === 'CHILD_SETTLED') return branchRunning(ctx.join ?? null, event.hop, event.branch);
  if (event.type === 'CHILDREN_SPAWNED') return ctx.directive.kind === 'spawn' && ctx.directive.hop === event.hop;
  return !('attempt' in event) || event.attempt === ctx.attempt;
}

/**
 * Whether a `HOP_TIMED_OUT` names the current hop and attempt: a running
 * hop's (no continuation), or the query the suspended hop waits on.
 */
function isCurrentTimeout(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (event.type !== 'HOP_TIMED_OUT' || !isCurrentHop(ctx, event)) return false;
  const d = ctx.directive;
  if (event.continuation === undefined) return d.kind === 'dispatch';
  return d.kind === 'await-reply' && d.continuation === event.continuation;
}

/** Whether a current `HOP_TIMED_OUT` may be published again: its stage's retry policy has attempts left. */
function mayRepublish(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  if (event.type !== 'HOP_TIMED_OUT' || !isCurrentTimeout(ctx, event) || ctx.stage === null) return false;
  if (event.continuation !== undefined && event.questionKept === false) return false;
  const max = stageRetryPolicy(ctx.definition, ctx.stage).maximumAttempts;
  return max === 0 || event.timeouts < max;
}

function isCurrentContinuation(ctx: WorkflowRunContext, event: WorkflowRunEvent): boolean {
  return (
    event.type === 'HOP_RESUMED' &&
    event.hop === ctx.hop &&
    ctx.directive.kind === 'await-reply' &&
    ctx.directive.continuation === event.continuation
  );
}

/** Whether a `CHILD_SETTLED` of a running branch decides its join. */
function joinDecidedBy(ctx: WorkflowRunContext, event: Extract<WorkflowRunEvent, { type: 'CHILD_SETTLED' }>): boolean {
  const join = ctx.join ?? null;
  if (join === null) return false;
  return joinOutcome(joinSettledBy(join, event)).status !== 'open';
}

/** Whether a row's condition holds. */
export function conditionHolds(ctx: WorkflowRunContext, event: WorkflowRunEvent, when: RunCondition): boolean {
  switch (when) {
    case 'always':
      return true;
    case 'current-hop':
      return isCurrentHop(ctx, event);
    case 'current-continuation':
      return isCurrentContinuation(ctx, event);
    case 'past-deadline': {
      const deadline = ctx.deadline ?? null;
      return event.type === 'TICK' && deadline !== null && event.now >= deadline.at;
    }
    case 'timeout-republish':
      return mayRepublish(ctx, event);
    case 'join-open':
      return event.type === 'CHILD_SETTLED' && isCurrentHop(ctx, event) && !joinDecidedBy(ctx, event);
    case 'join-decided':
      return event.type === 'CHILD_SETTLED' && isCurrentHop(ctx, event) && joinDecidedBy(ctx, event);
    case 'current-spawn':
      return event.type === 'CHILDREN_SPAWNED' && isCurrentHop(ctx, event);
    case 'current-timeout':
      return isCurrentTimeout(ctx, event);
    case 'over-budget': {
      const current =
        event.type === 'HOP_RESUMED'
          ? isCurrentContinuation(ctx, event)
          : event.type === 'HOP_TIMED_OUT'
            ? isCurrentTimeout(ctx, event)
            : isCurrentHop(ctx, event);
      return current && budgetOverrun(ctx.budget ?? null, accrue(ctx, event)) !== null;
    }
    case 'item-budget-stop':
      return event.type === 'HOP_FAILED' && event.errorType === ITEM_BUDGET_EXCEEDED && isCurrentHop(ctx, event);
    case 'named-approver': {
      if ((event.type !== 'APPROVED' && event.type !== 'DENIED') || ctx.directive.kind !== 'await-approval')
        return false;
      return ctx.directive.approvers === null || ctx.directive.approvers.includes(event.by);
    }
    default: {
      if (event.type !== 'START' && !isCurrentHop(ctx, event)) return false;
      if (event.type === 'HOP_TIMED_OUT' && !isCurrentTimeout(ctx, event)) return false;
      const route = routeOf(ctx, event);
      return route !== null && `route:${routeKind(route)}` === when;
    }
  }
}

/** Why an event that no row accepts is refused. */
export function refusalReason(state: WorkflowRunState, ctx: WorkflowRunContext, event: unknown): RefusalReason {
  const parsed = WorkflowRunEventSchema.safeParse(event);
  if (!parsed.success) return 'malformed';
  const e = parsed.data;
  const rows = WORKFLOW_RUN_TRANSITIONS.filter((t) => t.from === state && t.event === e.type);
  if (rows.length === 0) return 'not-in-state';
  if ('hop' in e && !isCurrentHop(ctx, e)) return 'stale-hop';
  if (e.type === 'HOP_RESUMED' || e.type === 'HOP_TIMED_OUT') return 'wrong-continuation';
  if (e.type === 'APPROVED' || e.type === 'DENIED') return 'not-an-approver';
  return 'not-in-state';
}
