import type { MessageRole, TaskState } from '../task.js';
import { V03_CARRY_KEY, V1_CARRY_KEY } from './carry.js';
import type { V1Role, V1TaskState } from './schemas.js';

/** Each v0.3 task state and its v1.0 name: the one table both directions read. */
export const TASK_STATE_V1: Readonly<Record<TaskState, V1TaskState>> = {
  submitted: 'TASK_STATE_SUBMITTED',
  working: 'TASK_STATE_WORKING',
  'input-required': 'TASK_STATE_INPUT_REQUIRED',
  'auth-required': 'TASK_STATE_AUTH_REQUIRED',
  completed: 'TASK_STATE_COMPLETED',
  canceled: 'TASK_STATE_CANCELED',
  failed: 'TASK_STATE_FAILED',
  rejected: 'TASK_STATE_REJECTED',
};
/** Each v1.0 task state and its v0.3 name (`TASK_STATE_V1` read backwards). */
export const TASK_STATE_V03 = Object.fromEntries(
  Object.entries(TASK_STATE_V1).map(([v03, v1]) => [v1, v03]),
) as Readonly<Record<V1TaskState, TaskState>>;

/** Each v0.3 message role and its v1.0 name. */
export const ROLE_V1: Readonly<Record<MessageRole, V1Role>> = { user: 'ROLE_USER', agent: 'ROLE_AGENT' };
/** Each v1.0 message role and its v0.3 name. */
export const ROLE_V03 = Object.fromEntries(Object.entries(ROLE_V1).map(([v03, v1]) => [v1, v03])) as Readonly<
  Record<V1Role, MessageRole>
>;

/** One field of a v0.3 shape and where it is in v1.0. */
export interface FieldMapping {
  /** The shape, by its v0.3 name (`Task`, `TextPart`, ...). */
  readonly shape: string;
  /** The v0.3 field, or `-` when only v1.0 has it. */
  readonly v03: string;
  /** The v1.0 field, or `-` when only v0.3 has it. */
  readonly v1: string;
  /** How the value changes on the way. */
  readonly rule: string;
}

const same = 'same value';
const carried03 = `carried in v1.0 \`metadata["${V03_CARRY_KEY}"]\``;
const carried1 = `carried in v0.3 \`metadata["${V1_CARRY_KEY}"]\``;
const meta = `same object; v0.3-only fields under \`"${V03_CARRY_KEY}"\` on the v1.0 side, v1.0-only ones under \`"${V1_CARRY_KEY}"\` on the v0.3 side`;

/**
 * Every field of the v0.3 shapes on our wire and where it is in v1.0 (and the
 * v1.0 fields v0.3 has no member for). docs/interop.md shows this table; a
 * test checks both that it lists every field of the v0.3 schemas and that
 * the docs show it as it is.
 */
export const FIELD_TABLE: readonly FieldMapping[] = [
  { shape: 'TextPart', v03: 'kind: "text"', v1: 'text (member set)', rule: 'the member set tells the kind' },
  { shape: 'TextPart', v03: 'text', v1: 'text', rule: same },
  { shape: 'TextPart', v03: 'metadata', v1: 'metadata', rule: meta },
  { shape: 'TextPart', v03: '-', v1: 'mediaType, filename', rule: carried1 },
  { shape: 'FilePart', v03: 'kind: "file"', v1: 'raw or url (member set)', rule: 'the member set tells the kind' },
  { shape: 'FilePart', v03: 'file.bytes', v1: 'raw', rule: 'same base64 text' },
  { shape: 'FilePart', v03: 'file.uri', v1: 'url', rule: same },
  { shape: 'FilePart', v03: 'file.name', v1: 'filename', rule: same },
  { shape: 'FilePart', v03: 'file.mimeType', v1: 'mediaType', rule: same },
  { shape: 'FilePart', v03: 'metadata', v1: 'metadata', rule: meta },
  { shape: 'DataPart', v03: 'kind: "data"', v1: 'data (member set)', rule: 'the member set tells the kind' },
  {
    shape: 'DataPart',
    v03: 'data',
    v1: 'data',
    rule: `same object; a v1.0 value that is not an object is wrapped as \`{"value": ...}\` (${carried1})`,
  },
  { shape: 'DataPart', v03: 'metadata', v1: 'metadata', rule: meta },
  { shape: 'DataPart', v03: '-', v1: 'mediaType, filename', rule: carried1 },
  { shape: 'Message', v03: 'kind: "message"', v1: '-', rule: 'dropped: the member holding it tells the kind' },
  { shape: 'Message', v03: 'messageId', v1: 'messageId', rule: same },
  { shape: 'Message', v03: 'role', v1: 'role', rule: '`user` / `agent` become `ROLE_USER` / `ROLE_AGENT`' },
  { shape: 'Message', v03: 'from', v1: '-', rule: carried03 },
  { shape: 'Message', v03: 'taskId', v1: 'taskId', rule: same },
  { shape: 'Message', v03: 'contextId', v1: 'contextId', rule: same },
  { shape: 'Message', v03: 'timestamp', v1: '-', rule: carried03 },
  { shape: 'Message', v03: 'parts', v1: 'parts', rule: 'each part mapped' },
  { shape: 'Message', v03: 'metadata', v1: 'metadata', rule: meta },
  { shape: 'Message', v03: '-', v1: 'extensions, referenceTaskIds', rule: carried1 },
  { shape: 'MessageSend', v03: 'messageId', v1: 'messageId', rule: 'v1.0 requires it; the broker assigns one in v0.3' },
  { shape: 'MessageSend', v03: 'parts', v1: 'parts', rule: 'each part mapped' },
  { shape: 'MessageSend', v03: 'metadata', v1: 'metadata', rule: meta },
  {
    shape: 'MessageSend',
    v03: '-',
    v1: 'role, taskId, contextId',
    rule: 'read by the method: `taskId` names the task to continue',
  },
  { shape: 'TaskStatus', v03: 'state', v1: 'state', rule: '`working` becomes `TASK_STATE_WORKING`, and so on' },
  { shape: 'TaskStatus', v03: 'message', v1: 'message', rule: 'mapped as a Message' },
  { shape: 'TaskStatus', v03: 'timestamp', v1: 'timestamp', rule: same },
  { shape: 'Artifact', v03: 'artifactId', v1: 'artifactId', rule: same },
  { shape: 'Artifact', v03: 'name', v1: 'name', rule: same },
  { shape: 'Artifact', v03: 'description', v1: 'description', rule: same },
  { shape: 'Artifact', v03: 'parts', v1: 'parts', rule: 'each part mapped' },
  { shape: 'Artifact', v03: 'metadata', v1: 'metadata', rule: meta },
  { shape: 'Artifact', v03: '-', v1: 'extensions', rule: carried1 },
  { shape: 'Task', v03: 'kind: "task"', v1: '-', rule: 'dropped: the member holding it tells the kind' },
  { shape: 'Task', v03: 'id', v1: 'id', rule: same },
  { shape: 'Task', v03: 'contextId', v1: 'contextId', rule: same },
  { shape: 'Task', v03: 'agentName', v1: '-', rule: carried03 },
  { shape: 'Task', v03: 'agentContextId', v1: '-', rule: carried03 },
  { shape: 'Task', v03: 'requesterName', v1: '-', rule: carried03 },
  { shape: 'Task', v03: 'status', v1: 'status', rule: 'mapped as a TaskStatus' },
  { shape: 'Task', v03: 'history', v1: 'history', rule: 'each message mapped; absent when empty' },
  { shape: 'Task', v03: 'artifacts', v1: 'artifacts', rule: 'each artifact mapped; absent when empty' },
  { shape: 'Task', v03: 'createdAt', v1: '-', rule: carried03 },
  { shape: 'Task', v03: 'updatedAt', v1: '-', rule: carried03 },
  { shape: 'Task', v03: 'metadata', v1: 'metadata', rule: meta },
  {
    shape: 'TaskStatusUpdateEvent',
    v03: 'kind: "status-update"',
    v1: 'statusUpdate (member)',
    rule: 'the stream response member tells the kind',
  },
  { shape: 'TaskStatusUpdateEvent', v03: 'taskId', v1: 'taskId', rule: same },
  { shape: 'TaskStatusUpdateEvent', v03: 'contextId', v1: 'contextId', rule: same },
  { shape: 'TaskStatusUpdateEvent', v03: 'status', v1: 'status', rule: 'mapped as a TaskStatus' },
  {
    shape: 'TaskStatusUpdateEvent',
    v03: 'final',
    v1: '-',
    rule: `true exactly when the state is terminal; any other value ${carried03.replace('carried', 'is carried')}`,
  },
  {
    shape: 'TaskArtifactUpdateEvent',
    v03: 'kind: "artifact-update"',
    v1: 'artifactUpdate (member)',
    rule: 'the stream response member tells the kind',
  },
  { shape: 'TaskArtifactUpdateEvent', v03: 'taskId', v1: 'taskId', rule: same },
  { shape: 'TaskArtifactUpdateEvent', v03: 'contextId', v1: 'contextId', rule: same },
  { shape: 'TaskArtifactUpdateEvent', v03: 'artifact', v1: 'artifact', rule: 'mapped as an Artifact' },
  { shape: 'TaskArtifactUpdateEvent', v03: 'append', v1: 'append', rule: 'same; absent in v1.0 reads false' },
  { shape: 'TaskArtifactUpdateEvent', v03: 'lastChunk', v1: 'lastChunk', rule: 'same; absent in v1.0 reads false' },
  {
    shape: 'TaskAgentUpdateEvent',
    v03: 'kind: "agent-update"',
    v1: 'agentUpdate (member)',
    rule: 'this broker’s own member: v1.0 has no presence event',
  },
  { shape: 'TaskAgentUpdateEvent', v03: 'taskId', v1: 'taskId', rule: same },
  { shape: 'TaskAgentUpdateEvent', v03: 'contextId', v1: 'contextId', rule: same },
  { shape: 'TaskAgentUpdateEvent', v03: 'agentName', v1: 'agentName', rule: same },
  { shape: 'TaskAgentUpdateEvent', v03: 'agentContextId', v1: 'agentContextId', rule: same },
  {
    shape: 'TaskAgentUpdateEvent',
    v03: 'presence',
    v1: 'presence',
    rule: '`left` / `back` become `AGENT_PRESENCE_LEFT` / `AGENT_PRESENCE_BACK`',
  },
  {
    shape: 'AgentCard',
    v03: 'agentId',
    v1: 'capabilities.extensions[].params.agentId',
    rule: 'in the agent extension',
  },
  { shape: 'AgentCard', v03: 'name', v1: 'name', rule: same },
  {
    shape: 'AgentCard',
    v03: 'contextId',
    v1: 'capabilities.extensions[].params.contextId',
    rule: 'in the agent extension',
  },
  { shape: 'AgentCard', v03: 'kind', v1: 'capabilities.extensions[].params.kind', rule: 'in the agent extension' },
  { shape: 'AgentCard', v03: 'description', v1: 'description', rule: same },
  {
    shape: 'AgentCard',
    v03: 'skills',
    v1: 'skills',
    rule: 'each skill: id, name, description, tags, examples the same',
  },
  {
    shape: 'AgentCard',
    v03: '-',
    v1: 'version, capabilities, defaultInputModes, defaultOutputModes',
    rule: 'set by the broker (the server version; streaming and push notifications true; text and JSON modes)',
  },
  { shape: 'PushConfig', v03: 'token', v1: 'token', rule: 'same; one config per task, its v1.0 `id` is `default`' },
];
