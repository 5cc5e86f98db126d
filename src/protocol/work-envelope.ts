import { z } from 'zod';
import { MAX_ID_CHARS, MAX_NAME_CHARS, MAX_STACK_CHARS } from './bounds.js';
import { type DataPart, type FilePart, MetadataSchema, PartSchema, type TextPart } from './parts.js';
import { type Artifact, ArtifactSchema, IdSchema, type MessageRole, MessageRoleSchema } from './task.js';
import { type BudgetCarve, type BudgetCarveInput, BudgetCarveSchema, WorkflowRefTextSchema } from './child-work.js';
import { named } from './wire-schema.js';

/** `PartSchema` named by the parts it parses. */
const PartRef = named<TextPart | FilePart | DataPart>(PartSchema);

/**
 * What travels on the work bus between processes (the Coordinator, workers,
 * any backend: SQLite or Redis Streams). Every shape here is parsed on publish,
 * so a bad envelope is refused before it is stored.
 */

/** A queue name: the role (capability) that serves the work. `$`-prefixed roles are reserved for the runtime. */
export const RoleSchema = z
  .string()
  .min(1)
  .max(MAX_NAME_CHARS)
  .regex(/^[$A-Za-z0-9][A-Za-z0-9._:/-]*$/, 'a role is letters, digits and . _ : / - (an optional leading $)');
/** A queue name (a role) as on the bus (inferred from `RoleSchema`). */
export type Role = z.infer<typeof RoleSchema>;

/** The role the worker harness publishes hop results to unless a hop names another (`headers.resultRole`). */
export const RESULTS_ROLE = '$results';

/** A suspended hop waiting for this query's reply: where the reply must be re-dispatched. */
export const AskedBySchema = z.object({
  role: RoleSchema,
  continuationToken: IdSchema,
  taskId: IdSchema,
  hop: z.number().int().nonnegative(),
});
/** Where a query's reply must be re-dispatched, as on the bus (inferred from `AskedBySchema`). */
export interface AskedBy extends z.infer<typeof AskedBySchema> {}

/**
 * The trace fields a message carries across processes: what the registered
 * OpenTelemetry propagator writes (W3C `traceparent` and `tracestate` by
 * default; a user's propagator may add its own keys). At most 8 keys.
 */
export const TraceFieldsSchema = z
  .record(z.string().min(1).max(64), z.string().max(1024))
  .refine((fields) => Object.keys(fields).length <= 8, 'trace fields are at most 8 keys');
/** Trace fields as on the bus (inferred from `TraceFieldsSchema`). */
export type TraceFields = z.infer<typeof TraceFieldsSchema>;

/**
 * The work item's budget as a hop is published with it: the item's limits
 * and what the item had spent then. A handler that spends (a model agent)
 * stops before it passes what is left (`limit - spent`).
 */
export const ItemBudgetHeaderSchema = z.object({
  /** Input plus output tokens the work item may spend. */
  maxTokens: z.number().int().nonnegative().optional(),
  /** The most the work item may cost, in US dollars. */
  maxCostUsd: z.number().nonnegative().finite().optional(),
  /** Input plus output tokens the work item had spent when the hop was published. */
  spentTokens: z.number().int().nonnegative(),
  /** What the work item had cost, in US dollars, when the hop was published. */
  spentCostUsd: z.number().nonnegative().finite(),
});
/** The work item's budget as a hop carries it (inferred from `ItemBudgetHeaderSchema`). */
export interface ItemBudgetHeader extends z.infer<typeof ItemBudgetHeaderSchema> {}

/** A work envelope's headers on the bus: which task, run, hop and attempt it is, with its idempotency key. */
export const WorkHeadersSchema = z.object({
  /** The A2A task this hop is (a child task of the work item). */
  taskId: IdSchema,
  /** The workflow run (the work item); the context store keys a work item's context by it. */
  runId: IdSchema,
  /** The hop's index in the run. */
  hop: z.number().int().nonnegative(),
  /** The Coordinator's attempt number of this hop (the bus counts deliveries separately). */
  attempt: z.number().int().min(1),
  /** The key that makes publishing, completing and applying the effects of this hop happen once. */
  idempotencyKey: IdSchema,
  /** Present when this delivery resumes a suspended hop: the key of its checkpoint. */
  continuationToken: IdSchema.optional(),
  /** Present on a query: the suspended hop its result answers. */
  askedBy: named<AskedBy>(AskedBySchema).optional(),
  /** Where the worker publishes this hop's result (default `$results`). */
  resultRole: RoleSchema.optional(),
  /**
   * The trace this message continues (`traceparent`, `tracestate`): set by
   * whoever published it when tracing is on. Optional: envelopes without it
   * parse as before.
   */
  trace: TraceFieldsSchema.optional(),
  /**
   * The work item's budget and what it had spent when the hop was published
   * (absent when the item has no budget). Optional: envelopes without it
   * parse as before, and a worker that does not read it still works.
   */
  itemBudget: named<ItemBudgetHeader>(ItemBudgetHeaderSchema).optional(),
});
/** A work envelope's headers as on the bus (inferred from `WorkHeadersSchema`). */
export interface WorkHeaders extends z.infer<typeof WorkHeadersSchema> {}

/** An A2A-message-like body: the broker's stamping (from, timestamp) is not needed on the bus. */
export const WorkMessageSchema = z.object({
  messageId: IdSchema.optional(),
  role: named<MessageRole>(MessageRoleSchema).optional(),
  parts: z.array(PartRef).min(1),
  metadata: MetadataSchema.optional(),
});
/** The message body of a work envelope as on the bus (inferred from `WorkMessageSchema`). */
export interface WorkMessage extends z.infer<typeof WorkMessageSchema> {}

/** Work for a role: a hop, a query from a suspended hop, or a reply resuming one. */
export const WorkEnvelopeSchema = z.object({
  kind: z.literal('work'),
  headers: named<WorkHeaders>(WorkHeadersSchema),
  message: named<WorkMessage>(WorkMessageSchema),
  metadata: MetadataSchema.optional(),
});
/** Work for a role as on the bus (inferred from `WorkEnvelopeSchema`). */
export interface WorkEnvelope extends z.infer<typeof WorkEnvelopeSchema> {}

/** What one hop cost. */
export const UsageSchema = z.object({
  inputTokens: z.number().int().nonnegative(),
  outputTokens: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative(),
  model: z.string().min(1).max(MAX_NAME_CHARS),
});
/** What one hop cost, as a worker reports it on the bus (inferred from `UsageSchema`). */
export interface Usage extends z.infer<typeof UsageSchema> {}

/**
 * A hop's failure as it travels: the error's type name (matched against
 * `nonRetryableErrorTypes`), its message, and the stack of the error the
 * handler threw (cut to `MAX_STACK_CHARS`; absent when it had none).
 */
export const WorkErrorSchema = z.object({
  type: z.string().min(1).max(MAX_NAME_CHARS),
  message: z.string().max(16_000),
  stack: z.string().max(MAX_STACK_CHARS).optional(),
  /**
   * What the hop spent before it failed (a model agent's calls), charged to
   * the work item like a completed hop's usage. Optional.
   */
  usage: named<Usage>(UsageSchema).optional(),
});
/**
 * The error type of a hop that stopped because the work item's budget
 * (`headers.itemBudget`) is spent: the item fails `BUDGET_EXCEEDED`, whatever
 * its stage's rules say.
 */
export const ITEM_BUDGET_EXCEEDED = 'ItemBudgetExceeded';

/** A hop's failure as on the bus (inferred from `WorkErrorSchema`). */
export interface WorkError extends z.infer<typeof WorkErrorSchema> {}

/**
 * The error type of a resumed hop whose checkpoint the worker cannot find
 * (its Context Engine lost it: a Redis restarted empty, or it was pruned):
 * the Coordinator starts the hop over under its own key.
 */
export const UNKNOWN_CONTINUATION = 'UnknownContinuation';

/** A child work item a hop asks for (`ResultEnvelope.spawn`): the workflow it runs, its input, what it may spend. */
export const ChildRequestSchema = z.strictObject({
  workflow: WorkflowRefTextSchema,
  input: z.array(PartRef).min(1).max(64),
  budget: named<BudgetCarve, BudgetCarveInput>(BudgetCarveSchema).optional(),
});
/** A child work item a hop asks for (inferred from `ChildRequestSchema`). */
export interface ChildRequest extends z.infer<typeof ChildRequestSchema> {}
/** A child work item as a hop may write it (a carve's `deadline` may be a duration string). */
export interface ChildRequestInput extends z.input<typeof ChildRequestSchema> {}

/** How one hop can end: completed, suspended (waiting on a reply) or failed. */
export const HOP_OUTCOMES = ['completed', 'suspended', 'failed'] as const;
/** A hop's outcome on the bus: one of `HOP_OUTCOMES`. */
export const HopOutcomeSchema = z.enum(HOP_OUTCOMES);
/** A hop's outcome as on the bus (inferred from `HopOutcomeSchema`). */
export type HopOutcome = z.infer<typeof HopOutcomeSchema>;

/**
 * A hop's result, published by the worker harness on the results role for the
 * Coordinator: `completed` (parts, artifacts, usage), `suspended` (the hop
 * asks `ask.role` the question `ask.message` and stood down; the Coordinator
 * governs the question and publishes it, and its reply resumes the hop under
 * `ask.continuationToken`), or `failed` (dead-lettered: `error`, `deliveries`).
 */
export const ResultEnvelopeSchema = z.object({
  kind: z.literal('result'),
  /** The headers of the hop this result is for. */
  headers: named<WorkHeaders>(WorkHeadersSchema),
  /** The role that ran the hop. */
  role: RoleSchema,
  outcome: named<HopOutcome>(HopOutcomeSchema),
  parts: z.array(PartRef),
  artifacts: z.array(named<Artifact>(ArtifactSchema)),
  usage: named<Usage>(UsageSchema).optional(),
  error: named<WorkError>(WorkErrorSchema).optional(),
  /** Deliveries the hop took (set on `failed`). */
  deliveries: z.number().int().min(1).optional(),
  /**
   * On `failed`: the id of the dead letter the hop's work message became on
   * `role`'s queue. The Coordinator purges it once the run handled the failure
   * (a `next` rule routed it): a failure the workflow expects is not a dead letter.
   */
  deadLetter: z.string().min(1).max(MAX_ID_CHARS).optional(),
  /** On `suspended`: the question, for the Coordinator to publish (a worker never publishes a hop itself). */
  ask: z
    .object({ role: RoleSchema, continuationToken: IdSchema, message: named<WorkMessage>(WorkMessageSchema) })
    .optional(),
  /**
   * On `suspended`, instead of `ask`: child work items to run (another
   * workflow each, with its input and an optional budget carved from the
   * work item's); the hop resumes under `continuationToken` once they have
   * all ended, with their outcomes and outputs as the reply.
   */
  spawn: z
    .object({
      continuationToken: IdSchema,
      children: z.array(named<ChildRequest, ChildRequestInput>(ChildRequestSchema)).min(1).max(64),
    })
    .optional(),
  metadata: MetadataSchema.optional(),
});
/** A hop's result as on the bus (inferred from `ResultEnvelopeSchema`). */
export interface ResultEnvelope extends z.infer<typeof ResultEnvelopeSchema> {}

/** Anything the work bus carries: a work envelope or a result envelope, told apart by `kind`. */
export const BusEnvelopeSchema = z.discriminatedUnion('kind', [WorkEnvelopeSchema, ResultEnvelopeSchema]);
/** An envelope as on the bus (inferred from `BusEnvelopeSchema`). */
export type BusEnvelope = z.infer<typeof BusEnvelopeSchema>;

/**
 * An activity retry policy, Temporal-shaped, in milliseconds. The delay before
 * retry n (n = 1 after the first failed delivery) is
 * `min(initialInterval * backoffCoefficient^(n-1), maximumInterval)`, less a
 * random jitter. `maximumAttempts: 0` means unlimited (bounded by the queue's
 * `maxDeliveries`). An error whose type is listed in `nonRetryableErrorTypes`
 * is dead-lettered at once.
 */
export const RetryPolicySchema = z.object({
  initialInterval: z.number().int().min(0),
  backoffCoefficient: z.number().min(1),
  maximumInterval: z.number().int().min(0),
  maximumAttempts: z.number().int().min(0),
  nonRetryableErrorTypes: z.array(z.string().min(1).max(MAX_NAME_CHARS)),
});
/** An activity retry policy as a hop carries it (inferred from `RetryPolicySchema`). */
export interface RetryPolicy extends z.infer<typeof RetryPolicySchema> {}

/** The retry policy of a hop that names none: 1 s doubling up to 60 s, at most 5 attempts. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = Object.freeze({
  initialInterval: 1000,
  backoffCoefficient: 2,
  maximumInterval: 60_000,
  maximumAttempts: 5,
  nonRetryableErrorTypes: Object.freeze([]) as unknown as string[],
});
