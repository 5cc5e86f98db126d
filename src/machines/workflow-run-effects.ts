import { ITEM_BUDGET_EXCEEDED } from '../protocol/work-envelope.js';
import type { WorkflowRunEvent } from '../protocol/workflow.js';
import { budgetStatus } from '../workflow/governance.js';
import {
  type RunDirective,
  type RunFailureCode,
  type WorkflowRunContext,
  accrue,
  budgetOverrun,
} from './workflow-run-context.js';
import { abandonedBranches, isFanOutStage, openJoin, spawnJoin, startBranches } from './workflow-run-join.js';
import { type Route, joinSettledBy, routeOf, ruleKey } from './workflow-run-routing.js';

/**
 * What an accepted WorkflowRun transition does to the run's context, by the
 * effect its row names: enter a stage, retry, suspend, resume, wait for an
 * approval, fail, and so on. Pure.
 */

/** What an accepted transition does to the context. */
export type RunEffect =
  | 'enter-start'
  | 'follow-route'
  | 'suspend'
  | 'resume'
  | 'require-approval'
  | 'approve'
  | 'deny'
  | 'governance-deny'
  | 'budget-exceeded'
  | 'deadline-exceeded'
  | 'republish'
  /** A child of the open join settled; the join is not decided yet (more children may start). */
  | 'settle-branch'
  /** The driver wrote the children: the run waits for them. */
  | 'spawned'
  /** The last child a suspended hop started ended: the hop resumes with their outcomes. */
  | 'resume-children'
  /** Accepted, nothing changes (a `TICK` before the deadline). */
  | 'none'
  | 'cancel';

/**
 * Why the run fails `BUDGET_EXCEEDED`: the usage over its budget (the
 * context's usage has the event's in it), and, for a hop that stopped
 * because the item's budget is spent, what the hop said.
 */
function budgetReason(ctx: WorkflowRunContext, event: WorkflowRunEvent): string {
  const over = budgetOverrun(ctx.budget ?? null, ctx.usage);
  const stopped = event.type === 'HOP_FAILED' && event.errorType === ITEM_BUDGET_EXCEEDED;
  if (!stopped) return over ?? 'budget exceeded';
  const status = ctx.budget == null ? null : budgetStatus(ctx.budget, ctx.usage);
  return `${over ?? status?.reason ?? 'budget spent'} (hop ${event.hop} stopped: ${(event.message ?? event.errorType).slice(0, 300)})`;
}

function dispatchDirective(
  ctx: WorkflowRunContext,
  stage: string,
  fields: { hop: number; attempt: number; delayMs?: number; resume?: string | null; approvedBy?: string | null },
): RunDirective {
  return {
    kind: 'dispatch',
    stage,
    role: ctx.definition.stages[stage]?.role ?? '',
    hop: fields.hop,
    attempt: fields.attempt,
    delayMs: fields.delayMs ?? 0,
    resume: fields.resume ?? null,
    approvedBy: fields.approvedBy ?? null,
  };
}

/**
 * How a stage's work starts at `hop`: a hop dispatched to its role, or (a
 * parallel, map or workflow stage) its join opened and its first children
 * asked for.
 */
function startStage(
  ctx: WorkflowRunContext,
  stage: string,
  fields: { hop: number; attempt: number; approvedBy?: string | null },
): Partial<WorkflowRunContext> {
  const def = ctx.definition;
  if (!isFanOutStage(def.stages[stage])) return { join: null, directive: dispatchDirective(ctx, stage, fields) };
  const used = { ...ctx.usage, hops: fields.hop + (ctx.childHops ?? 0) };
  const opening = openJoin(def, stage, fields.hop, ctx.output ?? null, ctx.budget ?? null, used);
  const spawn = (branches: string[], immediate: Extract<RunDirective, { kind: 'spawn' }>['immediate']) =>
    ({ kind: 'spawn', stage, hop: fields.hop, branches, immediate }) as const;
  if (opening.kind === 'empty') {
    return { join: null, directive: spawn([], { outcome: 'succeeded', output: opening.output }) };
  }
  if (opening.kind === 'invalid') {
    return {
      join: null,
      directive: spawn([], { outcome: 'failed', errorType: opening.errorType, message: opening.message }),
    };
  }
  const { join, started } = startBranches(opening.join);
  return { join, directive: spawn(started, null) };
}

function enter(ctx: WorkflowRunContext, route: Extract<Route, { kind: 'enter' }>): Partial<WorkflowRunContext> {
  const stage = route.stage;
  const hop = ctx.hop + 1;
  const gate = ctx.definition.stages[stage]?.approval;
  const traversals =
    route.via === null
      ? ctx.traversals
      : {
          ...ctx.traversals,
          [ruleKey(route.via.from, route.via.index)]:
            (ctx.traversals[ruleKey(route.via.from, route.via.index)] ?? 0) + 1,
        };
  const output = route.output === undefined ? (ctx.output ?? null) : route.output;
  const entered = { ...ctx, output };
  return {
    stage,
    hop,
    attempt: 1,
    visits: { ...ctx.visits, [stage]: (ctx.visits[stage] ?? 0) + 1 },
    approvedBy: null,
    traversals,
    output,
    ...(gate
      ? {
          join: null,
          directive: {
            kind: 'await-approval',
            stage,
            hop,
            source: 'gate',
            approvers: [...gate.approvers],
            reason: gate.reason ?? `stage ${stage} has an approval gate`,
          },
        }
      : startStage(entered, stage, { hop, attempt: 1 })),
  };
}

function fail(ctx: WorkflowRunContext, code: RunFailureCode, reason: string): Partial<WorkflowRunContext> {
  return { failure: { code, reason, stage: ctx.stage, hop: ctx.hop }, join: null, directive: { kind: 'none' } };
}

/**
 * The context after an accepted transition (the caller has checked the row's
 * condition). Pure: the same context and event always give the same result.
 */
export function applyEffect(ctx: WorkflowRunContext, event: WorkflowRunEvent, effect: RunEffect): WorkflowRunContext {
  // A hop published again has cost nothing yet: its usage is taken when it ends.
  const usage = effect === 'republish' ? ctx.usage : accrue(ctx, event);
  const base: WorkflowRunContext = {
    ...ctx,
    usage,
    ...(event.type === 'CHILD_SETTLED' && event.hops !== undefined
      ? { childHops: (ctx.childHops ?? 0) + event.hops }
      : {}),
    refusal: null,
    republish: null,
    cancelChildren: null,
  };
  const next: WorkflowRunContext = { ...base, ...effectChanges(base, event, effect) };
  // Children still running when the run leaves their join (decided, canceled, failed) are canceled.
  const before = ctx.join ?? null;
  if (before === null) return next;
  const settled = event.type === 'CHILD_SETTLED' ? event.branch : null;
  const abandoned = abandonedBranches(before, next.join ?? null, settled);
  return abandoned.length === 0 ? next : { ...next, cancelChildren: { hop: before.hop, branches: abandoned } };
}

function effectChanges(
  ctx: WorkflowRunContext,
  event: WorkflowRunEvent,
  effect: RunEffect,
): Partial<WorkflowRunContext> {
  switch (effect) {
    case 'enter-start':
    case 'follow-route': {
      const route = routeOf(ctx, event);
      if (route === null) return {};
      switch (route.kind) {
        case 'enter':
          return enter(ctx, route);
        case 'retry':
          return {
            attempt: route.attempt,
            directive: dispatchDirective(ctx, ctx.stage!, {
              hop: ctx.hop,
              attempt: route.attempt,
              delayMs: route.delayMs,
              approvedBy: ctx.approvedBy,
            }),
          };
        case 'complete':
          return {
            output: route.output === undefined ? (ctx.output ?? null) : route.output,
            join: null,
            directive: { kind: 'none' },
          };
        case 'fail':
          return fail(ctx, route.code, route.reason);
      }
      return {};
    }
    case 'suspend':
      if (event.type !== 'HOP_SUSPENDED') return {};
      return {
        ...(event.children === undefined
          ? {}
          : {
              join: spawnJoin(ctx.stage!, ctx.hop, event.children, ctx.budget ?? null, {
                ...ctx.usage,
                hops: ctx.hop + (ctx.childHops ?? 0),
              }),
            }),
        directive: {
          kind: 'await-reply',
          stage: ctx.stage!,
          hop: ctx.hop,
          continuation: event.continuation,
          askedRole: event.askedRole ?? null,
        },
      };
    case 'resume':
      // A query's answer, or its timeout (the hop resumes with that failure as its answer).
      if (event.type !== 'HOP_RESUMED' && (event.type !== 'HOP_TIMED_OUT' || event.continuation === undefined)) {
        return {};
      }
      return {
        directive: dispatchDirective(ctx, ctx.stage!, {
          hop: ctx.hop,
          attempt: ctx.attempt,
          resume: event.continuation!,
          approvedBy: ctx.approvedBy,
        }),
      };
    case 'require-approval':
      if (event.type !== 'APPROVAL_REQUIRED') return {};
      return {
        directive: {
          kind: 'await-approval',
          stage: ctx.stage!,
          hop: ctx.hop,
          source: 'governance',
          approvers: event.approvers ? [...event.approvers] : null,
          reason: event.reason,
        },
      };
    case 'approve':
      if (event.type !== 'APPROVED') return {};
      return {
        approvedBy: event.by,
        ...startStage(ctx, ctx.stage!, { hop: ctx.hop, attempt: ctx.attempt, approvedBy: event.by }),
      };
    case 'settle-branch': {
      const join = ctx.join ?? null;
      if (event.type !== 'CHILD_SETTLED' || join === null) return {};
      const started = startBranches(joinSettledBy(join, event));
      if (started.started.length === 0) return { join: started.join, directive: ctx.directive };
      // Children of this join asked for and not yet written (the driver settles several ends before it
      // writes what they started) are still asked for: the new ones go after them.
      const asked = ctx.directive.kind === 'spawn' && ctx.directive.hop === join.hop ? ctx.directive.branches : [];
      return {
        join: started.join,
        directive: {
          kind: 'spawn',
          stage: join.stage,
          hop: join.hop,
          branches: [...asked, ...started.started],
          immediate: null,
        },
      };
    }
    case 'resume-children':
      if (event.type !== 'CHILD_SETTLED' || ctx.directive.kind !== 'await-reply') return {};
      return {
        join: null,
        directive: dispatchDirective(ctx, ctx.stage!, {
          hop: ctx.hop,
          attempt: ctx.attempt,
          resume: ctx.directive.continuation,
          approvedBy: ctx.approvedBy,
        }),
      };
    case 'spawned':
      if (event.type !== 'CHILDREN_SPAWNED' || ctx.directive.kind !== 'spawn') return {};
      return { directive: { kind: 'await-children', stage: ctx.directive.stage, hop: ctx.directive.hop } };
    case 'deny':
      if (event.type !== 'DENIED') return {};
      return fail(ctx, 'APPROVAL_DENIED', `approval denied by ${event.by}${event.reason ? `: ${event.reason}` : ''}`);
    case 'governance-deny':
      if (event.type !== 'GOVERNANCE_DENIED') return {};
      return fail(
        ctx,
        event.code ?? 'GOVERNANCE_DENIED',
        event.policy ? `${event.policy}: ${event.reason}` : event.reason,
      );
    case 'budget-exceeded':
      // The context's usage has the event's usage in it already.
      return fail(ctx, 'BUDGET_EXCEEDED', budgetReason(ctx, event));
    case 'deadline-exceeded': {
      const deadline = ctx.deadline ?? null;
      if (event.type !== 'TICK' || deadline === null) return {};
      const ageMs = event.now - (deadline.at - deadline.ms);
      return fail(ctx, 'DEADLINE_EXCEEDED', `the work item ran past its deadline of ${deadline.ms} ms (${ageMs} ms)`);
    }
    case 'republish':
      if (event.type !== 'HOP_TIMED_OUT') return {};
      return {
        republish: {
          hop: event.hop,
          attempt: event.attempt,
          timeouts: event.timeouts,
          continuation: event.continuation ?? null,
        },
      };
    case 'none':
      return {};
    case 'cancel':
      if (event.type !== 'CANCEL') return {};
      return {
        cancellation: { by: event.by ?? null, reason: event.reason ?? null },
        join: null,
        directive: { kind: 'none' },
      };
  }
}
