import { z } from 'zod';
import { MAX_ID_CHARS, MAX_NAME_CHARS } from './bounds.js';
import { MetadataSchema, PartSchema } from './parts.js';

export const IdSchema = z.string().min(1).max(MAX_ID_CHARS);
export const NameSchema = z.string().min(1).max(MAX_NAME_CHARS);
export const TimestampSchema = z.string();

export const TASK_STATES = [
  'submitted',
  'working',
  'input-required',
  'auth-required',
  'completed',
  'canceled',
  'failed',
  'rejected',
] as const;
export const TaskStateSchema = z.enum(TASK_STATES);
export type TaskState = z.infer<typeof TaskStateSchema>;

export const TERMINAL_STATES = ['completed', 'canceled', 'failed', 'rejected'] as const satisfies readonly TaskState[];
export type TerminalState = (typeof TERMINAL_STATES)[number];
export function isTerminalState(state: TaskState): state is TerminalState {
  return (TERMINAL_STATES as readonly TaskState[]).includes(state);
}

/** A message as a caller sends it: the broker stamps everything else. */
export const MessageSendSchema = z.object({
  messageId: IdSchema.optional(),
  parts: z.array(PartSchema).min(1),
  metadata: MetadataSchema.optional(),
});
export type MessageSend = z.infer<typeof MessageSendSchema>;

export const MessageRoleSchema = z.enum(['user', 'agent']);
export type MessageRole = z.infer<typeof MessageRoleSchema>;

/** A message as stored and delivered: stamped by the broker. */
export const MessageSchema = z.object({
  kind: z.literal('message'),
  messageId: IdSchema,
  role: MessageRoleSchema,
  from: NameSchema,
  taskId: IdSchema,
  contextId: IdSchema,
  timestamp: TimestampSchema,
  parts: z.array(PartSchema).min(1),
  metadata: MetadataSchema.optional(),
});
export type Message = z.infer<typeof MessageSchema>;

export const TaskStatusSchema = z.object({
  state: TaskStateSchema,
  message: MessageSchema.optional(),
  timestamp: TimestampSchema,
});
export type TaskStatus = z.infer<typeof TaskStatusSchema>;

export const ArtifactSchema = z.object({
  artifactId: IdSchema,
  name: z
    .string()
    .max(MAX_NAME_CHARS * 8)
    .optional(),
  description: z.string().max(16_000).optional(),
  parts: z.array(PartSchema).min(1),
  metadata: MetadataSchema.optional(),
});
export type Artifact = z.infer<typeof ArtifactSchema>;

export const TaskSchema = z.object({
  kind: z.literal('task'),
  id: IdSchema,
  contextId: IdSchema,
  agentName: NameSchema,
  agentContextId: IdSchema,
  requesterName: NameSchema,
  status: TaskStatusSchema,
  history: z.array(MessageSchema),
  artifacts: z.array(ArtifactSchema),
  createdAt: TimestampSchema,
  updatedAt: TimestampSchema,
  metadata: MetadataSchema.optional(),
});
export type Task = z.infer<typeof TaskSchema>;
