import { z } from 'zod';
import { MAX_ID_CHARS } from '../bounds.js';
import { named } from '../wire-schema.js';

/**
 * A2A v1.0's data model in its JSON form (the ProtoJSON of the `lf.a2a.v1`
 * package): members in lowerCamelCase, enums as their SCREAMING_SNAKE_CASE
 * names, a field at its default (empty string, empty list) may be absent.
 * These schemas check the structure only: the broker's bounds (text, file,
 * data and metadata sizes) apply to what a value maps to in v0.3 shapes.
 */

const V1Id = z.string().min(1).max(MAX_ID_CHARS);
/** A v1.0 metadata object (`google.protobuf.Struct`): any JSON object. */
export const V1MetadataSchema = z.record(z.string(), z.unknown());
/** A v1.0 metadata object (inferred from `V1MetadataSchema`). */
export type V1Metadata = z.infer<typeof V1MetadataSchema>;

/** Every v1.0 task state this broker holds (`TASK_STATE_UNSPECIFIED` is not a state a task can be in). */
export const V1_TASK_STATES = [
  'TASK_STATE_SUBMITTED',
  'TASK_STATE_WORKING',
  'TASK_STATE_INPUT_REQUIRED',
  'TASK_STATE_AUTH_REQUIRED',
  'TASK_STATE_COMPLETED',
  'TASK_STATE_CANCELED',
  'TASK_STATE_FAILED',
  'TASK_STATE_REJECTED',
] as const;
/** A v1.0 task state: one of `V1_TASK_STATES`. */
export const V1TaskStateSchema = z.enum(V1_TASK_STATES);
/** A v1.0 task state (inferred from `V1TaskStateSchema`). */
export type V1TaskState = z.infer<typeof V1TaskStateSchema>;

/** A v1.0 message role (`ROLE_UNSPECIFIED` is refused: every message has a sender). */
export const V1RoleSchema = z.enum(['ROLE_USER', 'ROLE_AGENT']);
/** A v1.0 message role (inferred from `V1RoleSchema`). */
export type V1Role = z.infer<typeof V1RoleSchema>;

/** The members of a v1.0 part that hold its content: exactly one is set. */
export const V1_PART_CONTENT_MEMBERS = ['text', 'raw', 'url', 'data'] as const;

/**
 * A v1.0 part: its content by member (`text`, `raw` base64 bytes, `url`, or
 * `data` any JSON value), with optional `filename`, `mediaType` and `metadata`.
 */
export const V1PartSchema = z
  .object({
    text: z.string().optional(),
    raw: z.string().optional(),
    url: z.string().min(1).optional(),
    data: z.unknown().optional(),
    filename: z.string().optional(),
    mediaType: z.string().optional(),
    metadata: V1MetadataSchema.optional(),
  })
  .superRefine((part, ctx) => {
    const set = V1_PART_CONTENT_MEMBERS.filter((member) => part[member] !== undefined);
    if (set.length !== 1) {
      ctx.addIssue({
        code: 'custom',
        message: `a part sets exactly one of ${V1_PART_CONTENT_MEMBERS.join(', ')} (this one sets ${set.length === 0 ? 'none' : set.join(' and ')})`,
      });
    }
  });
/** A v1.0 part (inferred from `V1PartSchema`). */
export interface V1Part extends z.infer<typeof V1PartSchema> {}

const V1Parts = z.array(named<V1Part>(V1PartSchema)).min(1);

/** A v1.0 message: who sent it, its parts, and the task and context it belongs to when known. */
export const V1MessageSchema = z.object({
  messageId: V1Id,
  contextId: z.string().optional(),
  taskId: z.string().optional(),
  role: named<V1Role>(V1RoleSchema),
  parts: V1Parts,
  metadata: V1MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
/** A v1.0 message (inferred from `V1MessageSchema`). */
export interface V1Message extends z.infer<typeof V1MessageSchema> {}

/** A v1.0 task status: its state, the message that moved it, and when. */
export const V1TaskStatusSchema = z.object({
  state: named<V1TaskState>(V1TaskStateSchema),
  message: named<V1Message>(V1MessageSchema).optional(),
  timestamp: z.string().optional(),
});
/** A v1.0 task status (inferred from `V1TaskStatusSchema`). */
export interface V1TaskStatus extends z.infer<typeof V1TaskStatusSchema> {}

/** A v1.0 artifact: a named output of a task, made of parts. */
export const V1ArtifactSchema = z.object({
  artifactId: V1Id,
  name: z.string().optional(),
  description: z.string().optional(),
  parts: V1Parts,
  metadata: V1MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
});
/** A v1.0 artifact (inferred from `V1ArtifactSchema`). */
export interface V1Artifact extends z.infer<typeof V1ArtifactSchema> {}

/** A v1.0 task: ids, status, and (when not empty) history and artifacts. */
export const V1TaskSchema = z.object({
  id: V1Id,
  contextId: V1Id,
  status: named<V1TaskStatus>(V1TaskStatusSchema),
  artifacts: z.array(named<V1Artifact>(V1ArtifactSchema)).optional(),
  history: z.array(named<V1Message>(V1MessageSchema)).optional(),
  metadata: V1MetadataSchema.optional(),
});
/** A v1.0 task (inferred from `V1TaskSchema`). */
export interface V1Task extends z.infer<typeof V1TaskSchema> {}

/** A v1.0 status-update event (v1.0 has no `final`: a stream ends after a terminal or interrupted state). */
export const V1TaskStatusUpdateEventSchema = z.object({
  taskId: V1Id,
  contextId: V1Id,
  status: named<V1TaskStatus>(V1TaskStatusSchema),
  metadata: V1MetadataSchema.optional(),
});
/** A v1.0 status-update event (inferred from `V1TaskStatusUpdateEventSchema`). */
export interface V1TaskStatusUpdateEvent extends z.infer<typeof V1TaskStatusUpdateEventSchema> {}

/** A v1.0 artifact-update event: an artifact of a task, whole or as a chunk. */
export const V1TaskArtifactUpdateEventSchema = z.object({
  taskId: V1Id,
  contextId: V1Id,
  artifact: named<V1Artifact>(V1ArtifactSchema),
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
  metadata: V1MetadataSchema.optional(),
});
/** A v1.0 artifact-update event (inferred from `V1TaskArtifactUpdateEventSchema`). */
export interface V1TaskArtifactUpdateEvent extends z.infer<typeof V1TaskArtifactUpdateEventSchema> {}

/**
 * Where the agent serving a task is (this broker's own event, which v1.0 has
 * no member for): carried as the `agentUpdate` member of a stream response.
 */
export const V1AgentUpdateEventSchema = z.object({
  taskId: V1Id,
  contextId: V1Id,
  agentName: z.string(),
  agentContextId: V1Id,
  presence: z.enum(['AGENT_PRESENCE_LEFT', 'AGENT_PRESENCE_BACK']),
});
/** An agent-update event in v1.0 style (inferred from `V1AgentUpdateEventSchema`). */
export interface V1AgentUpdateEvent extends z.infer<typeof V1AgentUpdateEventSchema> {}

/**
 * A v1.0 stream response: exactly one of `task`, `message`, `statusUpdate`,
 * `artifactUpdate` (and this broker's `agentUpdate`).
 */
export const V1StreamResponseSchema = z.union([
  z.strictObject({ task: named<V1Task>(V1TaskSchema) }),
  z.strictObject({ message: named<V1Message>(V1MessageSchema) }),
  z.strictObject({ statusUpdate: named<V1TaskStatusUpdateEvent>(V1TaskStatusUpdateEventSchema) }),
  z.strictObject({ artifactUpdate: named<V1TaskArtifactUpdateEvent>(V1TaskArtifactUpdateEventSchema) }),
  z.strictObject({ agentUpdate: named<V1AgentUpdateEvent>(V1AgentUpdateEventSchema) }),
]);
/** A v1.0 stream response (inferred from `V1StreamResponseSchema`). */
export type V1StreamResponse = z.infer<typeof V1StreamResponseSchema>;

/** A v1.0 agent extension: its URI and optional parameters. */
export const V1AgentExtensionSchema = z.object({
  uri: z.string().min(1),
  description: z.string().optional(),
  required: z.boolean().optional(),
  params: V1MetadataSchema.optional(),
});
/** A v1.0 agent extension (inferred from `V1AgentExtensionSchema`). */
export interface V1AgentExtension extends z.infer<typeof V1AgentExtensionSchema> {}

/** One interface of a v1.0 agent: URL, protocol binding and protocol version. */
export const V1AgentInterfaceSchema = z.object({
  url: z.string().min(1),
  protocolBinding: z.string().min(1),
  tenant: z.string().optional(),
  protocolVersion: z.string().min(1),
});
/** A v1.0 agent interface (inferred from `V1AgentInterfaceSchema`). */
export interface V1AgentInterface extends z.infer<typeof V1AgentInterfaceSchema> {}

/** A skill of a v1.0 agent card. */
export const V1AgentSkillSchema = z.object({
  id: V1Id,
  name: z.string().min(1),
  description: z.string().optional(),
  tags: z.array(z.string()).optional(),
  examples: z.array(z.string()).optional(),
  inputModes: z.array(z.string()).optional(),
  outputModes: z.array(z.string()).optional(),
  securityRequirements: z.array(z.unknown()).optional(),
});
/** A skill of a v1.0 agent card (inferred from `V1AgentSkillSchema`). */
export interface V1AgentSkill extends z.infer<typeof V1AgentSkillSchema> {}

/** A v1.0 agent card: who an agent is, where to reach it, what it can do. */
export const V1AgentCardSchema = z.object({
  name: z.string().min(1),
  description: z.string(),
  supportedInterfaces: z.array(named<V1AgentInterface>(V1AgentInterfaceSchema)).optional(),
  provider: z.object({ url: z.string(), organization: z.string() }).optional(),
  version: z.string().min(1),
  documentationUrl: z.string().optional(),
  capabilities: z.object({
    streaming: z.boolean().optional(),
    pushNotifications: z.boolean().optional(),
    extensions: z.array(named<V1AgentExtension>(V1AgentExtensionSchema)).optional(),
    extendedAgentCard: z.boolean().optional(),
  }),
  securitySchemes: z.record(z.string(), z.unknown()).optional(),
  securityRequirements: z.array(z.unknown()).optional(),
  defaultInputModes: z.array(z.string()),
  defaultOutputModes: z.array(z.string()),
  skills: z.array(named<V1AgentSkill>(V1AgentSkillSchema)),
  signatures: z.array(z.unknown()).optional(),
  iconUrl: z.string().optional(),
});
/** A v1.0 agent card (inferred from `V1AgentCardSchema`). */
export interface V1AgentCard extends z.infer<typeof V1AgentCardSchema> {}

/** A v1.0 push notification config of one task: where and how the agent pushes its updates. */
export const V1TaskPushNotificationConfigSchema = z.object({
  tenant: z.string().optional(),
  id: z.string().optional(),
  taskId: V1Id,
  url: z.string().optional(),
  token: z.string().max(4096).optional(),
  authentication: z.object({ scheme: z.string(), credentials: z.string().optional() }).optional(),
});
/** A v1.0 push notification config (inferred from `V1TaskPushNotificationConfigSchema`). */
export interface V1TaskPushNotificationConfig extends z.infer<typeof V1TaskPushNotificationConfigSchema> {}

/** Most tasks one `ListTasks` page holds (v1.0: 1 to 100, 50 when unset). */
export const V1_LIST_TASKS_MAX_PAGE_SIZE = 100;
/** Tasks one `ListTasks` page holds when the request names no size. */
export const V1_LIST_TASKS_DEFAULT_PAGE_SIZE = 50;

/** A v1.0 `ListTasks` request: filters, and one page of the answer. */
export const V1ListTasksRequestSchema = z.object({
  tenant: z.string().optional(),
  contextId: z.string().optional(),
  status: named<V1TaskState>(V1TaskStateSchema).optional(),
  pageSize: z.number().int().min(1).max(V1_LIST_TASKS_MAX_PAGE_SIZE).optional(),
  pageToken: z.string().optional(),
  historyLength: z.number().int().min(0).optional(),
  statusTimestampAfter: z.string().optional(),
  includeArtifacts: z.boolean().optional(),
});
/** A v1.0 `ListTasks` request (inferred from `V1ListTasksRequestSchema`). */
export interface V1ListTasksRequest extends z.infer<typeof V1ListTasksRequestSchema> {}

/** A v1.0 `ListTasks` response: one page of tasks, and the token of the next page (empty on the last). */
export const V1ListTasksResponseSchema = z.object({
  tasks: z.array(named<V1Task>(V1TaskSchema)),
  nextPageToken: z.string(),
  pageSize: z.number().int().min(0),
  totalSize: z.number().int().min(0),
});
/** A v1.0 `ListTasks` response (inferred from `V1ListTasksResponseSchema`). */
export interface V1ListTasksResponse extends z.infer<typeof V1ListTasksResponseSchema> {}

/** A v1.0 `ListTaskPushNotificationConfigs` response. */
export const V1ListPushConfigsResponseSchema = z.object({
  configs: z.array(named<V1TaskPushNotificationConfig>(V1TaskPushNotificationConfigSchema)),
  nextPageToken: z.string().optional(),
});
/** A v1.0 `ListTaskPushNotificationConfigs` response (inferred from `V1ListPushConfigsResponseSchema`). */
export interface V1ListPushConfigsResponse extends z.infer<typeof V1ListPushConfigsResponseSchema> {}
