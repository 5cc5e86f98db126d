import { z } from 'zod';
import { DurationSchema } from './duration.js';

/**
 * What child work items are named by and may spend: a workflow reference
 * as `"id@version"` and a budget carved from a parent's. Shared by workflow
 * definitions (a stage's children) and hop results (a handler's children).
 */

/** A reference to a workflow definition by id and version, as `"id@version"`. */
export const WorkflowRefTextSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,127}@[1-9][0-9]{0,6}$/, 'expected "id@version", say "code-review@1"');

/** What a carve may set, as written: each optional, at least one of them. */
const CARVE_FIELDS = 'maxTokens, maxCostUsd, maxHops or deadline';

/**
 * What a child work item may spend, carved from its parent's budget: tokens,
 * dollars, hops (its own and its children's), and time (a deadline from its
 * start, never later than its parent's). What a carve leaves out is an equal
 * share of what the parent has left (its deadline: the parent's).
 */
export const BudgetCarveSchema = z
  .strictObject({
    maxTokens: z.number().int().min(1).optional(),
    maxCostUsd: z.number().positive().finite().optional(),
    /** Hops the child and its own children may take together. */
    maxHops: z.number().int().min(1).max(1_000_000).optional(),
    /** How long the child may run from its start (ms, or a duration such as "30s"); capped at its parent's deadline. */
    deadline: DurationSchema.pipe(z.number().int().min(1)).optional(),
  })
  .refine(
    (b) =>
      b.maxTokens !== undefined || b.maxCostUsd !== undefined || b.maxHops !== undefined || b.deadline !== undefined,
    `a budget sets ${CARVE_FIELDS} (one or more), say { "maxTokens": 2000 } or { "maxHops": 5, "deadline": "30s" }`,
  );
/** What a child may spend (inferred from `BudgetCarveSchema`; `deadline` in ms). */
export interface BudgetCarve extends z.infer<typeof BudgetCarveSchema> {}
/** A carve as written (`deadline` may be a duration string). */
export type BudgetCarveInput = z.input<typeof BudgetCarveSchema>;
