import type {
  RunUsage,
  WorkflowDefinition,
  WorkflowRef,
  WorkflowRunEvent,
  WorkflowRunState,
} from '../protocol/workflow.js';
import { addRunUsage } from '../protocol/workflow.js';
import { budgetStatus } from '../workflow/governance.js';
import type { ItemBudget } from '../workflow/records.js';
import type { JsonValue } from '../protocol/audit.js';
import type { RunJoin } from './workflow-run-join.js';

/**
 * A WorkflowRun's context: what a run knows (its stage, hop, attempt,
 * visits, usage, budget, deadline), what it asks of whoever drives it (its
 * directive) and how it ended. Plain data; `workflow-run-transitions.ts`
 * holds the rules that move it.
 */

export const FINAL_RUN_STATES = ['completed', 'failed', 'canceled'] as const satisfies readonly WorkflowRunState[];
export type FinalRunState = (typeof FINAL_RUN_STATES)[number];
export type LiveRunState = Exclude<WorkflowRunState, FinalRunState>;
export function isFinalRunState(state: string): state is FinalRunState {
  return (FINAL_RUN_STATES as readonly string[]).includes(state);
}

/** Why a run failed. */
export type RunFailureCode =
  /** The hop failed with an error type its retry policy does not retry (or reported as final), and no rule routes it. */
  | 'NON_RETRYABLE'
  /** The hop failed on its last allowed attempt, and no rule routes it. */
  | 'RETRIES_EXHAUSTED'
  /** A rule `{ end: 'failed' }` ended the run. */
  | 'RULE_ENDED'
  /** Rules matched, but each was used up (`maxTraversals`) or led to a stage at its `maxVisits`. */
  | 'LOOP_BOUND'
  | 'GOVERNANCE_DENIED'
  | 'APPROVAL_DENIED'
  | 'BUDGET_EXCEEDED'
  /** A parallel, map or workflow stage's join failed, and no rule routes it. */
  | 'JOIN_FAILED'
  /** The work item was still running past its definition's `deadline`. */
  | 'DEADLINE_EXCEEDED';

export interface RunFailure {
  code: RunFailureCode;
  reason: string;
  stage: string | null;
  hop: number;
}

/** What the run asks of whoever drives it (the Coordinator), as data. */
export type RunDirective =
  | { kind: 'start' }
  | {
      kind: 'dispatch';
      stage: string;
      role: string;
      hop: number;
      attempt: number;
      /** Wait this long before dispatching (a retry's backoff). */
      delayMs: number;
      /** Set when re-dispatching a suspended hop: the continuation to resume. */
      resume: string | null;
      /** Set when the hop was approved (gate or governance): who approved. */
      approvedBy: string | null;
    }
  | {
      kind: 'await-approval';
      stage: string;
      hop: number;
      source: 'gate' | 'governance';
      /** Who may approve; `null` means any named approver. */
      approvers: string[] | null;
      reason: string;
    }
  | { kind: 'await-reply'; stage: string; hop: number; continuation: string; askedRole: string | null }
  /**
   * Start the children of a fan-out stage (`branches`, by key); the driver
   * answers `CHILDREN_SPAWNED` once it has written them. `immediate` is set
   * when there is nothing to start: the stage's outcome to report at once
   * (an empty map succeeds, a map over something not a list fails).
   */
  | {
      kind: 'spawn';
      stage: string;
      hop: number;
      branches: string[];
      immediate:
        | { outcome: 'succeeded'; output: JsonValue }
        | { outcome: 'failed'; errorType: string; message: string }
        | null;
    }
  /** The stage's children run: wait for them (`CHILD_SETTLED`). */
  | { kind: 'await-children'; stage: string; hop: number }
  | { kind: 'none' };

export type RefusalReason =
  /** The event is not taken in this state. */
  | 'not-in-state'
  /** The event does not match the schema of `WorkflowRunEventSchema`. */
  | 'malformed'
  /** It names a hop or attempt other than the current one (late or redelivered). */
  | 'stale-hop'
  /** A resume that names another continuation than the one the hop suspended under. */
  | 'wrong-continuation'
  /** An approval or denial from someone not among the approvers. */
  | 'not-an-approver';

export interface RunRefusal {
  event: string;
  state: WorkflowRunState;
  reason: RefusalReason;
}

/** When a run's work item is past its definition's `deadline`: `at` (ms since the epoch), `ms` the deadline itself. */
export interface RunDeadline {
  at: number;
  ms: number;
}

/** The deadline of a work item created at `createdAt` under `definition` (`null` when it sets none). */
export function runDeadline(definition: WorkflowDefinition, createdAt: number): RunDeadline | null {
  const ms = definition.deadline;
  return ms === undefined ? null : { at: createdAt + ms, ms };
}

/** A timed-out hop (or query) the run wants published again, under the same idempotency key. */
export interface RunRepublish {
  hop: number;
  attempt: number;
  timeouts: number;
  /** The query's continuation when it is a suspended hop's query that timed out. */
  continuation: string | null;
}

export interface WorkflowRunContext {
  runId: string;
  workflow: WorkflowRef;
  /** The definition the run follows, kept whole so that a restored run keeps its version. */
  definition: WorkflowDefinition;
  stage: string | null;
  /** The current hop's number: hops started so far (a retry is another attempt of the same hop). */
  hop: number;
  attempt: number;
  /** Times each stage was entered. */
  visits: Record<string, number>;
  /** Times each `goto` rule was taken, by `ruleKey(stage, index)`. */
  traversals: Record<string, number>;
  /** Who approved the current hop (its gate or governance); kept across its retries and resumes. */
  approvedBy: string | null;
  /** Accrued over every accepted hop result. */
  usage: RunUsage;
  /**
   * Hops the run's settled children (and theirs) took, from each accepted
   * `CHILD_SETTLED`: they count against the budget's `maxHops` with the
   * run's own. Absent in a snapshot from before hops were counted (read as 0).
   */
  childHops?: number;
  /**
   * What the work item may spend (`null`: no bound). An event whose usage
   * takes `usage` over it fails the run (`BUDGET_EXCEEDED`). A snapshot
   * persisted before the run held its budget has none: whoever restores it
   * puts the item's budget back.
   */
  budget: ItemBudget | null;
  /**
   * When the work item is past its deadline (`null`: none). A `TICK` at or
   * after `deadline.at` fails the run (`DEADLINE_EXCEEDED`). A snapshot
   * persisted before the run held its deadline has none: whoever restores it
   * puts it back from the item's creation time and definition.
   */
  deadline: RunDeadline | null;
  /**
   * Set by an accepted `HOP_TIMED_OUT` its stage's retry policy still allows:
   * the hop (or query) to publish again. Cleared by the next accepted event.
   */
  republish: RunRepublish | null;
  /**
   * The last stage's output (a hop's data part, or a join's outputs): what
   * the `next` conditions and a `forEach` read. Absent in a snapshot from
   * before outputs were kept (read as `null`).
   */
  output?: JsonValue | null;
  /** The open join of a parallel, map or workflow stage (absent or `null`: none). */
  join?: RunJoin | null;
  /**
   * Set by an accepted event that left a join with children still running
   * (decided, canceled, failed): their keys at that hop, to cancel. Cleared
   * by the next accepted event.
   */
  cancelChildren?: { hop: number; branches: string[] } | null;
  directive: RunDirective;
  failure: RunFailure | null;
  cancellation: { by: string | null; reason: string | null } | null;
  /** The last refused event, cleared by the next accepted one. */
  refusal: RunRefusal | null;
}

/** Why a usage is strictly over a budget (`budgetStatus` exceeded), or `null` when it is not. */
export function budgetOverrun(budget: ItemBudget | null, usage: RunUsage): string | null {
  if (budget === null) return null;
  const status = budgetStatus(budget, usage);
  return status?.state === 'exceeded' ? status.reason : null;
}

/** The run's usage with the event's (if it carries any) added. */
export function accrue(ctx: WorkflowRunContext, event: WorkflowRunEvent): RunUsage {
  return 'usage' in event && event.usage !== undefined ? addRunUsage(ctx.usage, event.usage) : ctx.usage;
}

/** The context of a run that has not started. */
export function initialRunContext(
  runId: string,
  definition: WorkflowDefinition,
  budget: ItemBudget | null = null,
  deadline: RunDeadline | null = null,
): WorkflowRunContext {
  return {
    runId,
    workflow: { id: definition.id, version: definition.version },
    definition,
    stage: null,
    hop: 0,
    attempt: 0,
    visits: {},
    traversals: {},
    approvedBy: null,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    budget,
    deadline,
    republish: null,
    output: null,
    join: null,
    cancelChildren: null,
    directive: { kind: 'start' },
    failure: null,
    cancellation: null,
    refusal: null,
  };
}
