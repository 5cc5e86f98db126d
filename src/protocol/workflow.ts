import { z } from 'zod';
import {
  DurationSchema,
  type RetryPolicyFields,
  type RetryPolicyFieldsInput,
  RetryPolicyFieldsSchema,
} from './retry-policy.js';
import { type BudgetCarve, type BudgetCarveInput, BudgetCarveSchema, WorkflowRefTextSchema } from './child-work.js';
import { named } from './wire-schema.js';

export { type BudgetCarve, type BudgetCarveInput, BudgetCarveSchema, WorkflowRefTextSchema } from './child-work.js';

/** `DurationSchema` named by what it parses (milliseconds) and accepts (milliseconds or a duration string). */
const Duration = named<number, number | string>(DurationSchema);
/** `RetryPolicyFieldsSchema` named by the fields it parses and accepts. */
const RetryPolicyFieldsRef = named<RetryPolicyFields, RetryPolicyFieldsInput>(RetryPolicyFieldsSchema);

/**
 * Workflow definitions: the versioned, declarative shape of a work item's
 * path through roles. A definition is data (JSON); it is checked as a whole
 * (targets, reachability, loop bounds, known roles) by
 * `parseWorkflowDefinition` in `src/workflow/definition.ts`.
 */

/** A workflow id: lower case, digits, `.`, `_`, `-`. */
export const WorkflowIdSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,127}$/, 'expected lower-case letters, digits, ".", "_" or "-" (at most 128)');
/** A stage name, unique within its definition. */
export const StageNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_-]{0,63}$/, 'expected a lower-case name of letters, digits, "_" or "-" (at most 64)');
/** The role whose queue a stage's hop is dispatched to. */
export const RoleNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/, 'expected a role name without spaces (at most 128)');
/** A person or agent allowed to approve a gate. */
export const ApproverNameSchema = z.string().min(1).max(128);

/** The outcomes a `next` rule branches on. */
export const NEXT_RULE_OUTCOMES = ['succeeded', 'failed'] as const;
/** The outcome a `next` rule branches on, in a workflow definition: one of `NEXT_RULE_OUTCOMES`. */
export const NextRuleOutcomeSchema = z.enum(NEXT_RULE_OUTCOMES);
/** The outcome a `next` rule branches on (inferred from `NextRuleOutcomeSchema`). */
export type NextRuleOutcome = z.infer<typeof NextRuleOutcomeSchema>;

/** How a run ends when a rule ends it. */
export const RUN_ENDINGS = ['completed', 'failed'] as const;
/** How an `end` rule ends the run, in a workflow definition: one of `RUN_ENDINGS`. */
export const RunEndingSchema = z.enum(RUN_ENDINGS);
/** How an `end` rule ends the run (inferred from `RunEndingSchema`). */
export type RunEnding = z.infer<typeof RunEndingSchema>;

/** A JSON pointer (RFC 6901): empty (the whole value) or `/`-separated tokens, `~0` for `~` and `~1` for `/`. */
export const JsonPointerSchema = z
  .string()
  .max(512)
  .regex(
    /^(\/([^~/]|~[01])*)*$/,
    'expected a JSON pointer: "" or "/" followed by names, with "~0" for "~" and "~1" for "/" (say "/verdict")',
  );

/** The operators a rule's condition compares with. */
export const CONDITION_OPERATORS = ['equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] as const;

/**
 * A condition over a stage's output (its result's `data` part, or a parallel
 * or map stage's joined outputs): the value at `pointer` compared with
 * exactly one operator.
 */
export const RuleConditionSchema = z
  .strictObject({
    pointer: JsonPointerSchema,
    /** Equal to this JSON value (deep equality, key order ignored). */
    equals: z.json().optional(),
    /** Equal to one of these JSON values. */
    in: z.array(z.json()).min(1).max(64).optional(),
    /** Present (`true`) or absent (`false`). */
    exists: z.boolean().optional(),
    gt: z.number().finite().optional(),
    gte: z.number().finite().optional(),
    lt: z.number().finite().optional(),
    lte: z.number().finite().optional(),
  })
  .superRefine((when, ctx) => {
    const used = CONDITION_OPERATORS.filter((op) => when[op] !== undefined);
    if (used.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: `a condition has exactly one operator of ${CONDITION_OPERATORS.join(', ')} (found ${used.length === 0 ? 'none' : used.join(', ')})`,
      });
    }
  });
/** A condition of a `next` rule (inferred from `RuleConditionSchema`). */
export interface RuleCondition extends z.infer<typeof RuleConditionSchema> {}

/**
 * One branch of a stage's `next` list. Rules are tried in order; the first
 * that matches the hop's outcome (and `errorType`, for a failure, and `when`,
 * a condition over a success's output) and is not exhausted decides. A `goto` rule moves to another stage (at most
 * `maxTraversals` times per run); an `end` rule ends the run.
 */
export const NextRuleSchema = z
  .strictObject({
    on: named<NextRuleOutcome>(NextRuleOutcomeSchema),
    /** Only for `on: 'failed'`: the rule matches this error type only. */
    errorType: z.string().min(1).max(128).optional(),
    /** Only for `on: 'succeeded'`: the rule matches when the stage's output meets this condition. */
    when: named<RuleCondition>(RuleConditionSchema).optional(),
    goto: StageNameSchema.optional(),
    end: named<RunEnding>(RunEndingSchema).optional(),
    /** Only with `goto`: how many times this rule may be taken in one run. */
    maxTraversals: z.number().int().min(1).max(1_000).optional(),
    /** Only with `end: 'failed'`: the reason the run fails with. */
    reason: z.string().min(1).max(500).optional(),
  })
  .superRefine((rule, ctx) => {
    if ((rule.goto === undefined) === (rule.end === undefined)) {
      ctx.addIssue({ code: 'custom', path: [], message: 'a rule has exactly one of "goto" or "end"' });
    }
    if (rule.errorType !== undefined && rule.on !== 'failed') {
      ctx.addIssue({ code: 'custom', path: ['errorType'], message: '"errorType" applies only to on: "failed"' });
    }
    if (rule.when !== undefined && rule.on !== 'succeeded') {
      ctx.addIssue({ code: 'custom', path: ['when'], message: '"when" applies only to on: "succeeded"' });
    }
    if (rule.maxTraversals !== undefined && rule.goto === undefined) {
      ctx.addIssue({ code: 'custom', path: ['maxTraversals'], message: '"maxTraversals" applies only to a goto rule' });
    }
    if (rule.reason !== undefined && rule.end !== 'failed') {
      ctx.addIssue({ code: 'custom', path: ['reason'], message: '"reason" applies only to end: "failed"' });
    }
  });
/** One branch of a stage's `next` list, as written (inferred from `NextRuleSchema`). */
export interface NextRule extends z.infer<typeof NextRuleSchema> {}

/** A gate before a stage's hop: the run waits for one of `approvers` to approve. */
export const ApprovalGateSchema = z.strictObject({
  approvers: z
    .array(ApproverNameSchema)
    .min(1)
    .max(32)
    .refine((a) => new Set(a).size === a.length, 'approvers are listed once each'),
  reason: z.string().min(1).max(500).optional(),
});
/** A gate before a stage's hop, as written (inferred from `ApprovalGateSchema`). */
export interface ApprovalGate extends z.infer<typeof ApprovalGateSchema> {}

/**
 * One branch of a parallel stage: a role's hop, a sequence of roles run one
 * after another, or another workflow; each runs as a child work item.
 */
export const BranchSchema = z
  .strictObject({
    role: RoleNameSchema.optional(),
    /** Roles run one after another (each hop's success leads to the next). */
    sequence: z.array(RoleNameSchema).min(1).max(32).optional(),
    workflow: WorkflowRefTextSchema.optional(),
    /** What this branch may spend (default: an equal share of what the parent has left). */
    budget: named<BudgetCarve, BudgetCarveInput>(BudgetCarveSchema).optional(),
  })
  .superRefine((b, ctx) => {
    const kinds = [b.role, b.sequence, b.workflow].filter((k) => k !== undefined).length;
    if (kinds !== 1) {
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: 'a branch has exactly one of "role", "sequence" or "workflow"',
      });
    }
  });
/** One branch of a parallel stage (inferred from `BranchSchema`). */
export interface Branch extends z.infer<typeof BranchSchema> {}
/** A branch as written (a carve's `deadline` may be a duration string). */
export interface BranchInput extends z.input<typeof BranchSchema> {}

/** How a parallel stage's branches are joined: every one, the first success, or at least `n` successes. */
export const JoinModeSchema = z.union(
  [z.literal('all'), z.literal('any'), z.strictObject({ atLeast: z.number().int().min(1).max(64) })],
  { error: 'a join is "all" (every branch), "any" (the first success) or { "atLeast": n } with n from 1 to 64' },
);
/** How branches are joined (inferred from `JoinModeSchema`). */
export type JoinMode = z.infer<typeof JoinModeSchema>;

/** A parallel stage's branches, by name (run in definition order), and how they are joined. */
export const ParallelSchema = z.strictObject({
  branches: z
    .record(StageNameSchema, named<Branch, BranchInput>(BranchSchema))
    .refine((b) => Object.keys(b).length > 0, 'a parallel stage has at least one branch')
    .refine((b) => Object.keys(b).length <= 64, 'a parallel stage has at most 64 branches'),
  /** `all` (default), `any` (the first success wins, the rest are canceled), or `{ atLeast: n }`. */
  join: JoinModeSchema.default('all'),
  /** `fail` (default): a branch's failure fails the join and cancels the rest; `collect`: failures are kept in the output. */
  onBranchFailure: z.enum(['fail', 'collect']).default('fail'),
});
/** A parallel stage's fields, after parsing (inferred from `ParallelSchema`). */
export interface Parallel extends z.output<typeof ParallelSchema> {}
/** A parallel stage's fields, as written (inferred from `ParallelSchema`). */
export interface ParallelInput extends z.input<typeof ParallelSchema> {}

/**
 * One stage of a workflow definition: what runs it (a role's hop, parallel
 * branches, a map over a list, or another workflow), its gate, retry, visit
 * bound and `next` rules.
 */
export const StageSchema = z.strictObject({
  /** The role whose queue the stage's hop goes to (with `forEach`: each element's hop). */
  role: RoleNameSchema.optional(),
  /** Branches run at once as child work items, then joined. */
  parallel: named<Parallel, ParallelInput>(ParallelSchema).optional(),
  /** Another workflow run as a child work item (with `forEach`: one child per element). */
  workflow: WorkflowRefTextSchema.optional(),
  /** A JSON pointer to a list in the previous stage's output: one child work item per element, gathered in order. */
  forEach: JsonPointerSchema.optional(),
  /** With `forEach`: how many elements run at once (default 8). */
  maxConcurrency: z.number().int().min(1).max(1_000).optional(),
  /** With `forEach`: the longest list taken (default 1,000); a longer one fails the stage (`MapTooLarge`). */
  maxItems: z.number().int().min(1).max(100_000).optional(),
  /** For a child work item this stage makes (each branch, element or workflow): what it may spend. */
  budget: named<BudgetCarve, BudgetCarveInput>(BudgetCarveSchema).optional(),
  description: z.string().max(1_000).optional(),
  approval: named<ApprovalGate>(ApprovalGateSchema).optional(),
  /** Overrides `defaults.retry` field by field. */
  retry: RetryPolicyFieldsRef.optional(),
  /** How many times a run may enter this stage. */
  maxVisits: z.number().int().min(1).max(1_000).optional(),
  /**
   * How long a hop of this stage may be out (from its dispatch, or its resume)
   * before the Coordinator re-publishes it under the same idempotency key
   * (found again when its message was lost), once per timeout, until its retry
   * policy's `maximumAttempts` is spent: then the hop fails (`HopTimedOut`).
   * Without it, the Coordinator's default hop timeout applies (`hopTimeoutMs`,
   * `--hop-timeout`: 10 minutes unless set otherwise).
   */
  timeout: Duration.pipe(z.number().int().min(1)).optional(),
  /**
   * Where the run goes after this stage's hop. With no matching rule, a
   * success completes the run and a failure fails it.
   */
  next: z.array(named<NextRule>(NextRuleSchema)).max(32).default([]),
});
/** One stage of a workflow definition, after parsing (inferred from `StageSchema`). */
export interface Stage extends z.infer<typeof StageSchema> {}
/** A stage as written, before its defaults (inferred from `StageSchema`). */
export interface StageInput extends z.input<typeof StageSchema> {}

/** A workflow definition's shape (JSON): its id, version, start stage, defaults and stages, checked field by field. */
export const WorkflowDefinitionSchema = z.strictObject({
  id: WorkflowIdSchema,
  version: z.number().int().min(1).max(1_000_000),
  title: z.string().max(200).optional(),
  description: z.string().max(2_000).optional(),
  start: StageNameSchema,
  defaults: z.strictObject({ retry: RetryPolicyFieldsRef.optional() }).optional(),
  /** How long a work item may run, from its creation: past it, it fails (`DEADLINE_EXCEEDED`). */
  deadline: Duration.pipe(z.number().int().min(1)).optional(),
  stages: z
    .record(StageNameSchema, named<Stage, StageInput>(StageSchema))
    .refine((s) => Object.keys(s).length > 0, 'a workflow has at least one stage')
    .refine((s) => Object.keys(s).length <= 64, 'a workflow has at most 64 stages'),
});
/** A definition as written (durations may be strings, `next` may be left out). */
export interface WorkflowDefinitionInput extends z.input<typeof WorkflowDefinitionSchema> {}
/** A definition after parsing (durations in milliseconds, `next` filled in). */
export interface WorkflowDefinition extends z.output<typeof WorkflowDefinitionSchema> {}

/** Which definition a run follows. */
export const WorkflowRefSchema = z.strictObject({ id: WorkflowIdSchema, version: z.number().int().min(1) });
/** Which definition a run follows, by id and version (inferred from `WorkflowRefSchema`). */
export interface WorkflowRef extends z.infer<typeof WorkflowRefSchema> {}

/**
 * What a run has cost so far, or what one of its hops added: tokens, dollars
 * and elapsed time. (A worker's own report per hop, with its model, is
 * `Usage` of `./work-envelope.ts`; the Coordinator adds the elapsed time it
 * measured and accrues it here.)
 */
export const RunUsageSchema = z.strictObject({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative().finite(),
  elapsedMs: z.number().nonnegative().finite(),
});
/** What a run or one of its hops has cost (inferred from `RunUsageSchema`). */
export interface RunUsage extends z.infer<typeof RunUsageSchema> {}

export const ZERO_RUN_USAGE: Readonly<RunUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  costUsd: 0,
  elapsedMs: 0,
});

/** The sum of two usages (cost rounded to a nano-dollar to keep sums stable). */
export function addRunUsage(a: RunUsage, b: RunUsage): RunUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    costUsd: Math.round((a.costUsd + b.costUsd) * 1e9) / 1e9,
    elapsedMs: a.elapsedMs + b.elapsedMs,
  };
}

/** A workflow run's states, and so its work item's (`ItemRecord.state`): the one list. */
export const WORKFLOW_RUN_STATES = [
  'pending',
  'running',
  'awaiting-approval',
  'suspended',
  'completed',
  'failed',
  'canceled',
] as const;
/** One state of a workflow run and its work item (one of `WORKFLOW_RUN_STATES`). */
export type WorkflowRunState = (typeof WORKFLOW_RUN_STATES)[number];

/**
 * The events a WorkflowRun takes (see `src/machines/workflow-run-machine.ts`).
 * `hop` and `attempt` name the hop attempt a result belongs to: a result for
 * any other (a late or redelivered one) is refused and changes nothing.
 */
const HopNumberSchema = z.number().int().min(1);
const AttemptSchema = z.number().int().min(1);
const ReasonSchema = z.string().min(1).max(2_000);
const ContinuationSchema = z.string().min(1).max(512);

export const WorkflowRunEventSchema = z.discriminatedUnion('type', [
  /** Starts the run at the definition's start stage, or at `stage` (a retry of an item from one of its stages). */
  z.strictObject({ type: z.literal('START'), stage: z.string().min(1).max(128).optional() }),
  z.strictObject({
    type: z.literal('HOP_SUCCEEDED'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    usage: named<RunUsage>(RunUsageSchema).optional(),
    /** The hop's output (its result's first `data` part): what the stage's `next` conditions and a `forEach` read. */
    output: z.json().optional(),
  }),
  z.strictObject({
    /**
     * A child work item of the current parallel, map or workflow stage ended:
     * `branch` names it (a branch's name, or an element's index). `usage` is
     * what the child and its own children spent: it rolls up into the run.
     */
    type: z.literal('CHILD_SETTLED'),
    hop: HopNumberSchema,
    branch: z.string().min(1).max(64),
    outcome: z.enum(['completed', 'failed', 'canceled']),
    /** A completed child's output (its first `data` part, else its text). */
    output: z.json().optional(),
    /** A failed child's failure: its code and message. */
    error: z.strictObject({ type: z.string().min(1).max(128), message: z.string().max(2_000) }).optional(),
    usage: named<RunUsage>(RunUsageSchema).optional(),
    /** Hops the child took, its own children's counted in (they count against the parent's `maxHops`). */
    hops: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({
    type: z.literal('HOP_FAILED'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    errorType: z.string().min(1).max(128),
    message: z.string().max(2_000).optional(),
    /**
     * Set when the reporter knows the failure is final: `non-retryable`, or
     * `exhausted` (its retries were already spent, say by the bus). Without
     * it, the stage's retry policy decides.
     */
    final: z.enum(['non-retryable', 'exhausted']).optional(),
    /**
     * Set when the hop's worker already retried it (the bus counted its
     * deliveries and dead-lettered it): the failure is final, and the run
     * tells which way from the stage's retry policy: `exhausted` when its
     * `maximumAttempts` deliveries were spent on a retryable error type,
     * `non-retryable` otherwise. `final`, when also set, wins.
     */
    deliveries: z.number().int().min(1).optional(),
    usage: named<RunUsage>(RunUsageSchema).optional(),
  }),
  /** The driver wrote the children a `spawn` directive asked for: the run waits for them. */
  z.strictObject({ type: z.literal('CHILDREN_SPAWNED'), hop: HopNumberSchema }),
  z.strictObject({
    type: z.literal('HOP_SUSPENDED'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    /** The token the worker checkpointed under; the resume must name it. */
    continuation: ContinuationSchema,
    /** The role the worker asked. */
    askedRole: RoleNameSchema.optional(),
    /**
     * Instead of a question: the child work items the hop started (by key,
     * with each one's budget if its handler gave one); the hop resumes once
     * they have all ended.
     */
    children: z
      .array(
        z.strictObject({
          key: z.string().min(1).max(64),
          budget: named<BudgetCarve, BudgetCarveInput>(BudgetCarveSchema).optional(),
        }),
      )
      .min(1)
      .max(64)
      .optional(),
    usage: named<RunUsage>(RunUsageSchema).optional(),
  }),
  z.strictObject({
    type: z.literal('HOP_RESUMED'),
    hop: HopNumberSchema,
    continuation: ContinuationSchema,
    /** What answering the worker's question cost. */
    usage: named<RunUsage>(RunUsageSchema).optional(),
  }),
  z.strictObject({
    type: z.literal('APPROVAL_REQUIRED'),
    hop: HopNumberSchema,
    reason: ReasonSchema,
    approvers: z.array(ApproverNameSchema).min(1).max(32).optional(),
  }),
  z.strictObject({ type: z.literal('APPROVED'), by: ApproverNameSchema }),
  z.strictObject({ type: z.literal('DENIED'), by: ApproverNameSchema, reason: ReasonSchema.optional() }),
  z.strictObject({
    type: z.literal('GOVERNANCE_DENIED'),
    hop: HopNumberSchema,
    reason: ReasonSchema,
    policy: z.string().min(1).max(128).optional(),
    /**
     * `BUDGET_EXCEEDED` when the hop was denied because the item's `maxHops`
     * (its children's hops counted in) is spent: the run fails with that
     * code, as a cost or token overrun does (absent: `GOVERNANCE_DENIED`).
     */
    code: z.literal('BUDGET_EXCEEDED').optional(),
  }),
  z.strictObject({
    /**
     * A hop out longer than its stage's `timeout` (or, when its stage sets
     * none, the Coordinator's default hop timeout), for the `timeouts`-th
     * time: the run re-publishes it (`context.republish`) while its stage's
     * retry policy allows (`maximumAttempts`), and fails it as exhausted
     * (`HopTimedOut`, routed like any failure) once it does not. With
     * `continuation`, it is the query the suspended hop asked under that
     * token: a query that may not be re-published resumes the hop with the
     * failure as its answer. `usage` is what the hop (or query) cost if it fails.
     */
    type: z.literal('HOP_TIMED_OUT'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    timeouts: z.number().int().min(1),
    /**
     * The timeout it was out longer than, in ms: the stage's `timeout` or the
     * Coordinator's default (absent in events of earlier Coordinators: the stage's).
     */
    timeoutMs: z.number().int().min(1).optional(),
    continuation: ContinuationSchema.optional(),
    /** `false` when the query's question was not kept: it cannot be published again. */
    questionKept: z.boolean().optional(),
    usage: named<RunUsage>(RunUsageSchema).optional(),
  }),
  /** Time passed: `now` (ms since the epoch) at or past the run's deadline fails it (`DEADLINE_EXCEEDED`). */
  z.strictObject({ type: z.literal('TICK'), now: z.number().int().min(0) }),
  z.strictObject({
    type: z.literal('CANCEL'),
    by: z.string().min(1).max(256).optional(),
    reason: ReasonSchema.optional(),
  }),
]);
export type WorkflowRunEvent = z.infer<typeof WorkflowRunEventSchema>;
export type WorkflowRunEventType = WorkflowRunEvent['type'];
export const WORKFLOW_RUN_EVENT_TYPES = WorkflowRunEventSchema.options.map(
  (o) => o.shape.type.value,
) as readonly WorkflowRunEventType[];
