import { z } from 'zod';
import { A2A_MAX_STREAM_WAIT_SECONDS, A2A_MAX_TASK_HISTORY, MAX_ID_CHARS } from './bounds.js';
import { IdSchema } from './task.js';

/**
 * The model-facing `A2A` tool's input: one flat object (LLM tool calling
 * wants an object at the top), checked per action. It has no token field:
 * the tool closes over the caller's token, which the model never sees.
 */
export const A2A_TOOL_ACTIONS = ['discover', 'send', 'get', 'wait', 'ask', 'stream', 'complete', 'cancel'] as const;
/** One action of the model-facing `A2A` tool (one of `A2A_TOOL_ACTIONS`). */
export type A2AToolAction = (typeof A2A_TOOL_ACTIONS)[number];

/** How `complete` ends a task (the worker's terminal states). */
export const A2A_TOOL_OUTCOMES = ['completed', 'failed', 'rejected'] as const;

/** History entries `get` returns when the model does not say (a decision of this project). */
export const A2A_TOOL_DEFAULT_HISTORY = 10;

const DataSchema = z
  .record(z.string(), z.unknown())
  .describe('Structured data as a JSON object, sent as a data part next to the text.');

/** The artifact name `stream` and `complete` use when the model gives none. */
export const A2A_TOOL_DEFAULT_ARTIFACT = 'result';

/**
 * The result a model attaches with `stream` or `complete`, as the `A2A` tool
 * takes it: a name, and text or data. The name is the artifact's id on its
 * task: chunks streamed under one name append to one artifact.
 */
export const A2AToolArtifactSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(MAX_ID_CHARS)
      .optional()
      .describe(
        `A short name for the result, e.g. "report.md" (default "${A2A_TOOL_DEFAULT_ARTIFACT}"); chunks with one name form one artifact.`,
      ),
    text: z.string().optional().describe('The result as text.'),
    data: DataSchema.optional(),
  })
  .refine((artifact) => artifact.text !== undefined || artifact.data !== undefined, {
    message: 'an artifact needs text or data',
  });

/** The `A2A` tool's input as the model gives it: one flat object, its fields checked per action. */
export const A2AToolInputSchema = z
  .object({
    action: z
      .enum(A2A_TOOL_ACTIONS)
      .describe(
        'discover: list the agents you can address. send: start a task for another agent (with `to`) or add a ' +
          'message to a task you are part of (with `taskId`). get: read a task. wait: block until something ' +
          'happens on your tasks. ask: ask the requester of a task you serve a question. stream: send part of ' +
          'your result now. complete: finish a task you serve, with your result. cancel: stop a task.',
      ),
    to: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe('send, new task only: the name (or agentId) of the agent to ask, as listed by discover.'),
    taskId: IdSchema.optional().describe(
      'The task to act on: needed by get, ask, stream, complete and cancel, and by send to reply on an existing task; ' +
        'optional for wait (only that task).',
    ),
    text: z.string().optional().describe('send, ask and complete: the message (or question), in plain words.'),
    data: DataSchema.optional(),
    outcome: z
      .enum(A2A_TOOL_OUTCOMES)
      .optional()
      .describe(
        'complete: how the task ends. completed (default) when done, failed when you could not do it, ' +
          'rejected when you will not do it.',
      ),
    artifact: A2AToolArtifactSchema.optional().describe(
      'stream: the chunk of your result to send now; complete: the (last part of the) result to attach.',
    ),
    timeoutSeconds: z
      .number()
      .min(0)
      .max(A2A_MAX_STREAM_WAIT_SECONDS)
      .optional()
      .describe(`wait: how long to wait at most, in seconds (default 30, at most ${A2A_MAX_STREAM_WAIT_SECONDS}).`),
    historyLength: z
      .number()
      .int()
      .min(0)
      .max(A2A_MAX_TASK_HISTORY)
      .optional()
      .describe('get: how many of the latest messages to include (default 10).'),
  })
  .superRefine((input, ctx) => {
    const need = (field: 'to' | 'taskId', why: string) =>
      ctx.addIssue({ code: 'custom', path: [field], message: `${input.action} needs ${field}: ${why}` });
    switch (input.action) {
      case 'send':
        if (input.to === undefined && input.taskId === undefined) {
          need('to', 'give `to` to start a task, or `taskId` to add to one');
        } else if (input.to !== undefined && input.taskId !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['to'],
            message: 'send takes either `to` (new task) or `taskId` (existing task), not both',
          });
        }
        if (input.text === undefined && input.data === undefined) {
          ctx.addIssue({ code: 'custom', path: ['text'], message: 'send needs text or data' });
        }
        break;
      case 'ask':
        if (input.taskId === undefined) need('taskId', 'the id of the task you serve');
        if (input.text === undefined && input.data === undefined) {
          ctx.addIssue({ code: 'custom', path: ['text'], message: 'ask needs text (the question) or data' });
        }
        break;
      case 'stream':
        if (input.taskId === undefined) need('taskId', 'the id of the task you serve');
        if (input.artifact === undefined) {
          ctx.addIssue({ code: 'custom', path: ['artifact'], message: 'stream needs artifact: the chunk to send' });
        }
        break;
      case 'get':
      case 'complete':
      case 'cancel':
        if (input.taskId === undefined) need('taskId', 'the id of the task');
        break;
      default:
        break;
    }
  });
/** The `A2A` tool's input as the model gives it (inferred from `A2AToolInputSchema`). */
export type A2AToolInput = z.infer<typeof A2AToolInputSchema>;

const input = A2AToolInputSchema.shape;

/** A strict-mode field: the type or null, described as the field it stands for. */
function nullable<T extends z.ZodType>(type: T, of: z.ZodType, more = '') {
  return type.nullable().describe(`${of.description ?? ''}${more}`);
}

const strictData = (where: string) =>
  z
    .string()
    .nullable()
    .describe(
      `${where}Structured data: a JSON object written as a string, e.g. "{\\"city\\":\\"Paris\\"}"; null when there is none.`,
    );

/**
 * The `A2A` tool's input in the shape OpenAI's strict mode (Structured
 * Outputs for function calling) accepts: every field is required and
 * nullable (`null` means absent), structured data is a JSON object written
 * as a string, and no bound is a schema keyword (the tool checks them: the
 * input is read back into `A2AToolInputSchema`).
 */
export const A2AToolStrictInputSchema = z.object({
  action: input.action,
  to: nullable(z.string(), input.to),
  taskId: nullable(z.string(), input.taskId),
  text: nullable(z.string(), input.text),
  data: strictData('send, ask and complete: '),
  outcome: nullable(z.enum(A2A_TOOL_OUTCOMES), input.outcome),
  artifact: nullable(
    z.object({
      name: nullable(z.string(), A2AToolArtifactSchema.shape.name),
      text: nullable(z.string(), A2AToolArtifactSchema.shape.text),
      data: strictData(''),
    }),
    input.artifact,
  ),
  timeoutSeconds: nullable(z.number(), input.timeoutSeconds),
  historyLength: nullable(z.number(), input.historyLength, ' A whole number.'),
});
/** The `A2A` tool's input in OpenAI strict mode (inferred from `A2AToolStrictInputSchema`). */
export type A2AToolStrictInput = z.infer<typeof A2AToolStrictInputSchema>;
