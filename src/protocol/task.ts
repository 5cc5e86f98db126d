import { z } from 'zod';
import { MAX_ID_CHARS, MAX_NAME_CHARS } from './bounds.js';
import { type DataPart, type FilePart, MetadataSchema, PartSchema, type TextPart } from './parts.js';
import { named } from './wire-schema.js';

/** `PartSchema` named by the parts it parses. */
const PartRef = named<TextPart | FilePart | DataPart>(PartSchema);

/** An identifier on the wire: a non-empty string of at most `MAX_ID_CHARS` characters. */
export const IdSchema = z.string().min(1).max(MAX_ID_CHARS);
/** A name on the wire (agent, sender, requester): a non-empty string of at most `MAX_NAME_CHARS` characters. */
export const NameSchema = z.string().min(1).max(MAX_NAME_CHARS);
/** A timestamp on the wire: an ISO 8601 string as the broker stamps it. */
export const TimestampSchema = z.string();

/** Every state of an A2A task, live ones first, then the terminal ones. */
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
/** A task's state on the wire: one of `TASK_STATES`. */
export const TaskStateSchema = z.enum(TASK_STATES);
/** A task's state as on the wire (inferred from `TaskStateSchema`). */
export type TaskState = z.infer<typeof TaskStateSchema>;

/** The states a task never leaves. */
export const TERMINAL_STATES = ['completed', 'canceled', 'failed', 'rejected'] as const satisfies readonly TaskState[];
/** One of the states a task never leaves (`TERMINAL_STATES`). */
export type TerminalState = (typeof TERMINAL_STATES)[number];
/** Whether a task in this state is finished for good (narrows it to `TerminalState`). */
export function isTerminalState(state: TaskState): state is TerminalState {
  return (TERMINAL_STATES as readonly TaskState[]).includes(state);
}

/** A message as a caller sends it: the broker stamps everything else. */
export const MessageSendSchema = z.object({
  messageId: IdSchema.optional(),
  parts: z.array(PartRef).min(1),
  metadata: MetadataSchema.optional(),
});
/** A message as a caller sends it (inferred from `MessageSendSchema`). */
export interface MessageSend extends z.infer<typeof MessageSendSchema> {}

/** A message's role on the wire: `user` from the requester, `agent` from the worker. */
export const MessageRoleSchema = z.enum(['user', 'agent']);
/** A message's role as on the wire (inferred from `MessageRoleSchema`). */
export type MessageRole = z.infer<typeof MessageRoleSchema>;

/** A message as stored and delivered: stamped by the broker. */
export const MessageSchema = z.object({
  kind: z.literal('message'),
  messageId: IdSchema,
  role: named<MessageRole>(MessageRoleSchema),
  from: NameSchema,
  taskId: IdSchema,
  contextId: IdSchema,
  timestamp: TimestampSchema,
  parts: z.array(PartRef).min(1),
  metadata: MetadataSchema.optional(),
});
/** A message as stored and delivered (inferred from `MessageSchema`). */
export interface Message extends z.infer<typeof MessageSchema> {}

/** A task's status on the wire: its state, when it got there, and the message that moved it, if any. */
export const TaskStatusSchema = z.object({
  state: named<TaskState>(TaskStateSchema),
  message: named<Message>(MessageSchema).optional(),
  timestamp: TimestampSchema,
});
/** A task's status as on the wire (inferred from `TaskStatusSchema`). */
export interface TaskStatus extends z.infer<typeof TaskStatusSchema> {}

/** An artifact on the wire: a named output of a task, made of parts. */
export const ArtifactSchema = z.object({
  artifactId: IdSchema,
  name: z
    .string()
    .max(MAX_NAME_CHARS * 8)
    .optional(),
  description: z.string().max(16_000).optional(),
  parts: z.array(PartRef).min(1),
  metadata: MetadataSchema.optional(),
});
/** An artifact as on the wire (inferred from `ArtifactSchema`). */
export interface Artifact extends z.infer<typeof ArtifactSchema> {}

/** A task on the wire: its ids, parties, status, history and artifacts. */
export const TaskSchema = z.object({
  kind: z.literal('task'),
  id: IdSchema,
  contextId: IdSchema,
  agentName: NameSchema,
  agentContextId: IdSchema,
  requesterName: NameSchema,
  status: named<TaskStatus>(TaskStatusSchema),
  history: z.array(named<Message>(MessageSchema)),
  artifacts: z.array(named<Artifact>(ArtifactSchema)),
  createdAt: TimestampSchema,
  updatedAt: TimestampSchema,
  metadata: MetadataSchema.optional(),
});
/** A task as on the wire (inferred from `TaskSchema`). */
export interface Task extends z.infer<typeof TaskSchema> {}
