import { z } from 'zod';
import { type Artifact, ArtifactSchema, IdSchema, NameSchema, type TaskStatus, TaskStatusSchema } from './task.js';
import { named } from './wire-schema.js';

/** A status-update event on the wire: a task's new status, `final` when it is terminal. */
export const TaskStatusUpdateEventSchema = z.object({
  kind: z.literal('status-update'),
  taskId: IdSchema,
  contextId: IdSchema,
  status: named<TaskStatus>(TaskStatusSchema),
  final: z.boolean(),
});
/** A status-update event as on the wire (inferred from `TaskStatusUpdateEventSchema`). */
export interface TaskStatusUpdateEvent extends z.infer<typeof TaskStatusUpdateEventSchema> {}

/** An artifact-update event on the wire: an artifact added to a task, whole or as a chunk. */
export const TaskArtifactUpdateEventSchema = z.object({
  kind: z.literal('artifact-update'),
  taskId: IdSchema,
  contextId: IdSchema,
  artifact: named<Artifact>(ArtifactSchema),
  append: z.boolean(),
  lastChunk: z.boolean(),
});
/** An artifact-update event as on the wire (inferred from `TaskArtifactUpdateEventSchema`). */
export interface TaskArtifactUpdateEvent extends z.infer<typeof TaskArtifactUpdateEventSchema> {}

/** Where the agent serving a task is: `left` (its connection to the broker closed) or `back` (it registered again). */
export const AgentPresenceSchema = z.enum(['left', 'back']);
/** Where the agent serving a task is, as on the wire (inferred from `AgentPresenceSchema`). */
export type AgentPresence = z.infer<typeof AgentPresenceSchema>;

/**
 * An agent-update event on the wire, to the requester of an open task: the
 * agent serving it left the broker (its connection closed, crash included;
 * the task is kept and waits for it) or is back (it registered again under
 * the same `(agentContextId, agentName)`). Tells a dead worker from a slow one.
 */
export const TaskAgentUpdateEventSchema = z.object({
  kind: z.literal('agent-update'),
  taskId: IdSchema,
  contextId: IdSchema,
  agentName: NameSchema,
  agentContextId: IdSchema,
  presence: named<AgentPresence>(AgentPresenceSchema),
});
/** An agent-update event as on the wire (inferred from `TaskAgentUpdateEventSchema`). */
export interface TaskAgentUpdateEvent extends z.infer<typeof TaskAgentUpdateEventSchema> {}

/** A task event on the wire: a status update, an artifact update or an agent update, told apart by `kind`. */
export const TaskEventSchema = z.discriminatedUnion('kind', [
  TaskStatusUpdateEventSchema,
  TaskArtifactUpdateEventSchema,
  TaskAgentUpdateEventSchema,
]);
/** A task event as on the wire (inferred from `TaskEventSchema`). */
export type TaskEvent = z.infer<typeof TaskEventSchema>;

/** A durable event's sequence number on the wire: a positive integer, rising per recipient. */
export const SeqSchema = z.number().int().min(1);

/** Params of the `a2a.task.event` notification. */
export const TaskEventNotificationSchema = z.object({
  recipient: IdSchema,
  recipientName: NameSchema,
  contextId: IdSchema,
  seq: SeqSchema,
  event: named<TaskStatusUpdateEvent | TaskArtifactUpdateEvent | TaskAgentUpdateEvent>(TaskEventSchema),
});
/** Params of the `a2a.task.event` notification as on the wire (inferred from `TaskEventNotificationSchema`). */
export interface TaskEventNotification extends z.infer<typeof TaskEventNotificationSchema> {}

/**
 * Params of the `a2a.push` notification. `seq` is an addition of this project
 * (the page names `{recipient, contextId, taskId, token?, status}`): a push is a
 * durable event like any other and the client needs its seq to replay.
 */
export const PushNotificationSchema = z.object({
  recipient: IdSchema,
  contextId: IdSchema,
  taskId: IdSchema,
  token: z.string().optional(),
  status: named<TaskStatus>(TaskStatusSchema),
  seq: SeqSchema,
});
/** Params of the `a2a.push` notification as on the wire (inferred from `PushNotificationSchema`). */
export interface PushNotification extends z.infer<typeof PushNotificationSchema> {}

/** The notifications the broker sends a client: task events and pushes. */
export const NOTIFICATION_METHODS = ['a2a.task.event', 'a2a.push'] as const;
/** The name of one notification the broker sends (`NOTIFICATION_METHODS`). */
export type NotificationMethod = (typeof NOTIFICATION_METHODS)[number];

/** One entry of the durable per-recipient event log. */
export const DurableEventSchema = z.discriminatedUnion('method', [
  z.object({
    seq: SeqSchema,
    method: z.literal('a2a.task.event'),
    params: named<TaskEventNotification>(TaskEventNotificationSchema),
  }),
  z.object({ seq: SeqSchema, method: z.literal('a2a.push'), params: named<PushNotification>(PushNotificationSchema) }),
]);
/** One entry of the durable per-recipient event log (inferred from `DurableEventSchema`). */
export type DurableEvent = z.infer<typeof DurableEventSchema>;

/** A task's push notification config on the wire: the optional token echoed in each push. */
export const PushConfigSchema = z.object({
  token: z.string().max(4096).optional(),
});
/** A push notification config as on the wire (inferred from `PushConfigSchema`). */
export interface PushConfig extends z.infer<typeof PushConfigSchema> {}
