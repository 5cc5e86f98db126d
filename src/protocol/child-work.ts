import { z } from 'zod';

/**
 * What child work items are named by and may spend: a workflow reference
 * as `"id@version"` and a budget carved from a parent's. Shared by workflow
 * definitions (a stage's children) and hop results (a handler's children).
 */

/** A reference to a workflow definition by id and version, as `"id@version"`. */
export const WorkflowRefTextSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,127}@[1-9][0-9]{0,6}$/, 'expected "id@version", say "code-review@1"');

/** What a child work item may spend, carved from its parent's budget: tokens, dollars, or both. */
export const BudgetCarveSchema = z
  .strictObject({
    maxTokens: z.number().int().min(1).optional(),
    maxCostUsd: z.number().positive().finite().optional(),
  })
  .refine(
    (b) => b.maxTokens !== undefined || b.maxCostUsd !== undefined,
    'a budget sets maxTokens, maxCostUsd or both',
  );
/** What a child may spend (inferred from `BudgetCarveSchema`). */
export interface BudgetCarve extends z.infer<typeof BudgetCarveSchema> {}
