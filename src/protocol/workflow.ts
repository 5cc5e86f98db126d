import { z } from 'zod';
import {
  DurationSchema,
  type RetryPolicyFields,
  type RetryPolicyFieldsInput,
  RetryPolicyFieldsSchema,
} from './retry-policy.js';
import { named } from './wire-schema.js';

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

/**
 * One branch of a stage's `next` list. Rules are tried in order; the first
 * that matches the hop's outcome (and `errorType`, for a failure) and is not
 * exhausted decides. A `goto` rule moves to another stage (at most
 * `maxTraversals` times per run); an `end` rule ends the run.
 */
export const NextRuleSchema = z
  .strictObject({
    on: named<NextRuleOutcome>(NextRuleOutcomeSchema),
    /** Only for `on: 'failed'`: the rule matches this error type only. */
    errorType: z.string().min(1).max(128).optional(),
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

/** One stage of a workflow definition: the role that runs it, its gate, retry, visit bound and `next` rules. */
export const StageSchema = z.strictObject({
  role: RoleNameSchema,
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
  z.strictObject({ type: z.literal('START') }),
  z.strictObject({
    type: z.literal('HOP_SUCCEEDED'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    usage: named<RunUsage>(RunUsageSchema).optional(),
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
  z.strictObject({
    type: z.literal('HOP_SUSPENDED'),
    hop: HopNumberSchema,
    attempt: AttemptSchema,
    /** The token the worker checkpointed under; the resume must name it. */
    continuation: ContinuationSchema,
    /** The role the worker asked. */
    askedRole: RoleNameSchema.optional(),
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
  }),
  z.strictObject({
    /**
     * A hop out longer than its stage's `timeout`, for the `timeouts`-th
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
