import { z } from 'zod';
import { IdSchema, NameSchema, ArtifactSchema, TaskStatusSchema } from './task.js';

export const TaskStatusUpdateEventSchema = z.object({
  kind: z.literal('status-update'),
  taskId: IdSchema,
  contextId: IdSchema,
  status: TaskStatusSchema,
  final: z.boolean(),
});
export type TaskStatusUpdateEvent = z.infer<typeof TaskStatusUpdateEventSchema>;

export const TaskArtifactUpdateEventSchema = z.object({
  kind: z.literal('artifact-update'),
  taskId: IdSchema,
  contextId: IdSchema,
  artifact: ArtifactSchema,
  append: z.boolean(),
  lastChunk: z.boolean(),
});
export type TaskArtifactUpdateEvent = z.infer<typeof TaskArtifactUpdateEventSchema>;

export const TaskEventSchema = z.discriminatedUnion('kind', [
  TaskStatusUpdateEventSchema,
  TaskArtifactUpdateEventSchema,
]);
export type TaskEvent = z.infer<typeof TaskEventSchema>;

export const SeqSchema = z.number().int().min(1);

/** Params of the `a2a.task.event` notification. */
export const TaskEventNotificationSchema = z.object({
  recipient: IdSchema,
  recipientName: NameSchema,
  contextId: IdSchema,
  seq: SeqSchema,
  event: TaskEventSchema,
});
export type TaskEventNotification = z.infer<typeof TaskEventNotificationSchema>;

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
  status: TaskStatusSchema,
  seq: SeqSchema,
});
export type PushNotification = z.infer<typeof PushNotificationSchema>;

export const NOTIFICATION_METHODS = ['a2a.task.event', 'a2a.push'] as const;
export type NotificationMethod = (typeof NOTIFICATION_METHODS)[number];

/** One entry of the durable per-recipient event log. */
export const DurableEventSchema = z.discriminatedUnion('method', [
  z.object({ seq: SeqSchema, method: z.literal('a2a.task.event'), params: TaskEventNotificationSchema }),
  z.object({ seq: SeqSchema, method: z.literal('a2a.push'), params: PushNotificationSchema }),
]);
export type DurableEvent = z.infer<typeof DurableEventSchema>;

export const PushConfigSchema = z.object({
  token: z.string().max(4096).optional(),
});
export type PushConfig = z.infer<typeof PushConfigSchema>;
