import { z } from 'zod';
import type { ChildSpawn } from '../actors/worker/handler.js';
import { BudgetCarveSchema, WorkflowRefTextSchema } from '../protocol/child-work.js';
import { RoleSchema } from '../protocol/work-envelope.js';
import { type ToolDeclaration, jsonSchemaOf } from './sdk.js';

/**
 * The agent's own tools, which stand the hop down: `ask` (a question to
 * another role; its answer is the tool's result) and `delegate` (a child work
 * item; its outcome is the tool's result). A bad call gets an error result
 * saying what to fix, and no suspension.
 */

/** The `ask` tool as the model is told of it. */
export async function ASK_TOOL(roles: Set<string> | undefined): Promise<ToolDeclaration> {
  const role: Record<string, unknown> = { type: 'string', description: 'the role to ask' };
  if (roles !== undefined) role.enum = [...roles];
  return {
    description:
      'Ask another role a question and wait for its answer (the answer is this tool’s result). Use it when you need a decision or knowledge you do not have.',
    inputSchema: await jsonSchemaOf({
      type: 'object',
      properties: { role, question: { type: 'string', description: 'the question, complete on its own' } },
      required: ['role', 'question'],
      additionalProperties: false,
    }),
  };
}

/** The `delegate` tool as the model is told of it. */
export async function DELEGATE_TOOL(): Promise<ToolDeclaration> {
  return {
    description:
      'Run a workflow as a child work item and wait for its outcome (its output is this tool’s result). The budget is what the child may spend.',
    inputSchema: await jsonSchemaOf({
      type: 'object',
      properties: {
        workflow: { type: 'string', description: 'the workflow as "id@version", say "code-review@1"' },
        input: { type: 'string', description: 'the child’s input' },
        budget: {
          type: 'object',
          properties: {
            maxTokens: { type: 'integer', minimum: 1 },
            maxCostUsd: { type: 'number', exclusiveMinimum: 0 },
            maxHops: { type: 'integer', minimum: 1 },
            deadline: { type: 'string', description: 'how long the child may run, say "30s" or "5m"' },
          },
          additionalProperties: false,
        },
      },
      required: ['workflow', 'input'],
      additionalProperties: false,
    }),
  };
}

const AskInputSchema = z.object({ role: RoleSchema, question: z.string().min(1).max(100_000) });

/** An `ask` call's role and question, or what is wrong with it. */
export function parseAsk(
  input: unknown,
  roles: Set<string> | undefined,
): { role: string; question: string } | { error: string } {
  const parsed = AskInputSchema.safeParse(input);
  if (!parsed.success || parsed.data.role.startsWith('$')) {
    return { error: 'ask takes { role, question }: a role name and a non-empty question' };
  }
  if (roles !== undefined && !roles.has(parsed.data.role)) {
    return { error: `you may ask ${[...roles].join(', ')}, not ${parsed.data.role}` };
  }
  return parsed.data;
}

const DelegateInputSchema = z.object({
  workflow: WorkflowRefTextSchema,
  input: z.string().min(1).max(100_000),
  budget: BudgetCarveSchema.optional(),
});

/** A `delegate` call's child, or what is wrong with it. */
export function parseDelegate(input: unknown): ChildSpawn | { error: string } {
  const parsed = DelegateInputSchema.safeParse(input);
  if (!parsed.success) {
    // A refused parse has at least one issue; its path is empty when the whole input is wrong.
    const issue = parsed.error.issues[0]!;
    const at = issue.path.length === 0 ? '' : `${issue.path.join('.')} `;
    return {
      error: `delegate takes { workflow: "id@version", input, budget?: { maxTokens?, maxCostUsd?, maxHops?, deadline? } }: ${at}${issue.message}`,
    };
  }
  const child: ChildSpawn = { workflow: parsed.data.workflow, input: parsed.data.input };
  if (parsed.data.budget !== undefined) child.budget = parsed.data.budget;
  return child;
}
