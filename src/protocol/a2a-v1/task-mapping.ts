import { z } from 'zod';
import type { AgentCard, AgentKind } from '../agent.js';
import type { AgentPresence, TaskArtifactUpdateEvent, TaskEvent, TaskStatusUpdateEvent } from '../events.js';
import { type Task, type TaskStatus, isTerminalState } from '../task.js';
import { V03_CARRY_KEY, mappingError, putCarried, takeCarried } from './carry.js';
import { TASK_STATE_V03, TASK_STATE_V1 } from './field-table.js';
import { artifactToV03, artifactToV1, messageToV03, messageToV1 } from './message-mapping.js';
import type {
  V1AgentCard,
  V1AgentUpdateEvent,
  V1StreamResponse,
  V1Task,
  V1TaskArtifactUpdateEvent,
  V1TaskStatus,
  V1TaskStatusUpdateEvent,
} from './schemas.js';

/** The v0.3-only fields of a task, as carried on the v1.0 side. */
const TaskCarrySchema = z.object({
  agentName: z.string(),
  agentContextId: z.string(),
  requesterName: z.string(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

/** The `final` of a status event, carried when it is not what the state says. */
const FinalCarrySchema = z.object({ final: z.boolean() });

/** A v0.3 task status in v1.0 shape. */
export function statusToV1(status: TaskStatus): V1TaskStatus {
  const out: V1TaskStatus = { state: TASK_STATE_V1[status.state], timestamp: status.timestamp };
  if (status.message !== undefined) out.message = messageToV1(status.message);
  return out;
}

/** A v1.0 task status this broker produced, in v0.3 shape. */
export function statusToV03(status: V1TaskStatus): TaskStatus {
  if (status.timestamp === undefined) throw mappingError('a stored task status has a timestamp');
  const out: TaskStatus = { state: TASK_STATE_V03[status.state], timestamp: status.timestamp };
  if (status.message !== undefined) out.message = messageToV03(status.message);
  return out;
}

/** A v0.3 task in v1.0 shape: its parties and stamps carried in its metadata, empty lists left out. */
export function taskToV1(task: Task): V1Task {
  const out: V1Task = { id: task.id, contextId: task.contextId, status: statusToV1(task.status) };
  if (task.artifacts.length > 0) out.artifacts = task.artifacts.map(artifactToV1);
  if (task.history.length > 0) out.history = task.history.map(messageToV1);
  out.metadata = putCarried(task.metadata, V03_CARRY_KEY, {
    agentName: task.agentName,
    agentContextId: task.agentContextId,
    requesterName: task.requesterName,
    createdAt: task.createdAt,
    updatedAt: task.updatedAt,
  });
  return out;
}

/** A v1.0 task this broker produced, back in v0.3 shape. */
export function taskToV03(task: V1Task): Task {
  const { fields, metadata } = takeCarried(task.metadata, V03_CARRY_KEY, TaskCarrySchema, 'task');
  const out: Task = {
    kind: 'task',
    id: task.id,
    contextId: task.contextId,
    agentName: fields.agentName,
    agentContextId: fields.agentContextId,
    requesterName: fields.requesterName,
    status: statusToV03(task.status),
    history: (task.history ?? []).map(messageToV03),
    artifacts: (task.artifacts ?? []).map(artifactToV03),
    createdAt: fields.createdAt,
    updatedAt: fields.updatedAt,
  };
  if (metadata !== undefined) out.metadata = metadata;
  return out;
}

/** A v0.3 status-update event in v1.0 shape: `final` carried only when it is not what the state says. */
export function statusEventToV1(event: TaskStatusUpdateEvent): V1TaskStatusUpdateEvent {
  const out: V1TaskStatusUpdateEvent = {
    taskId: event.taskId,
    contextId: event.contextId,
    status: statusToV1(event.status),
  };
  if (event.final !== isTerminalState(event.status.state)) out.metadata = { [V03_CARRY_KEY]: { final: event.final } };
  return out;
}

/** A v1.0 status-update event in v0.3 shape (`final` when the state is terminal, unless carried). */
export function statusEventToV03(event: V1TaskStatusUpdateEvent): TaskStatusUpdateEvent {
  const status = statusToV03(event.status);
  const carried = FinalCarrySchema.safeParse(event.metadata?.[V03_CARRY_KEY]);
  const final = carried.success ? carried.data.final : isTerminalState(status.state);
  return { kind: 'status-update', taskId: event.taskId, contextId: event.contextId, status, final };
}

/** A v0.3 artifact-update event in v1.0 shape (a false flag left out, as ProtoJSON does). */
export function artifactEventToV1(event: TaskArtifactUpdateEvent): V1TaskArtifactUpdateEvent {
  const out: V1TaskArtifactUpdateEvent = {
    taskId: event.taskId,
    contextId: event.contextId,
    artifact: artifactToV1(event.artifact),
  };
  // ProtoJSON leaves a false flag out.
  if (event.append) out.append = true;
  if (event.lastChunk) out.lastChunk = true;
  return out;
}

/** A v1.0 artifact-update event in v0.3 shape (an absent flag reads false). */
export function artifactEventToV03(event: V1TaskArtifactUpdateEvent): TaskArtifactUpdateEvent {
  return {
    kind: 'artifact-update',
    taskId: event.taskId,
    contextId: event.contextId,
    artifact: artifactToV03(event.artifact),
    append: event.append ?? false,
    lastChunk: event.lastChunk ?? false,
  };
}

const PRESENCE_V1: Readonly<Record<AgentPresence, V1AgentUpdateEvent['presence']>> = {
  left: 'AGENT_PRESENCE_LEFT',
  back: 'AGENT_PRESENCE_BACK',
};

/** A v0.3 task event as a v1.0 stream response: `statusUpdate`, `artifactUpdate` or this broker's `agentUpdate`. */
export function taskEventToV1(event: TaskEvent): V1StreamResponse {
  switch (event.kind) {
    case 'status-update':
      return { statusUpdate: statusEventToV1(event) };
    case 'artifact-update':
      return { artifactUpdate: artifactEventToV1(event) };
    case 'agent-update':
      return {
        agentUpdate: {
          taskId: event.taskId,
          contextId: event.contextId,
          agentName: event.agentName,
          agentContextId: event.agentContextId,
          presence: PRESENCE_V1[event.presence],
        },
      };
  }
}

/** A v1.0 stream response holding a task event, in v0.3 shape (a `task` or `message` member is not an event). */
export function taskEventToV03(response: V1StreamResponse): TaskEvent {
  if ('statusUpdate' in response) return statusEventToV03(response.statusUpdate);
  if ('artifactUpdate' in response) return artifactEventToV03(response.artifactUpdate);
  if ('agentUpdate' in response) {
    const event = response.agentUpdate;
    return {
      kind: 'agent-update',
      taskId: event.taskId,
      contextId: event.contextId,
      agentName: event.agentName,
      agentContextId: event.agentContextId,
      presence: event.presence === 'AGENT_PRESENCE_LEFT' ? 'left' : 'back',
    };
  }
  throw mappingError('only statusUpdate, artifactUpdate and agentUpdate stream responses are task events');
}

/** The URI of the extension a v1.0 card of this broker's agent declares, its params naming the registration. */
export const SWITCHBOARD_AGENT_EXTENSION = 'urn:switchboard:agent';
/** The media types a card of this broker's agent declares for input and output. */
export const CARD_MODES = ['text/plain', 'application/json'] as const;

const CardExtensionParamsSchema = z.object({
  agentId: z.string(),
  contextId: z.string(),
  kind: z.enum(['subagent', 'parent']),
});

/** A v0.3 agent card in v1.0 shape; `version` is the server's version. */
export function agentCardToV1(card: AgentCard, version: string): V1AgentCard {
  return {
    name: card.name,
    description: card.description,
    version,
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extensions: [
        {
          uri: SWITCHBOARD_AGENT_EXTENSION,
          description: 'the registration on this broker: its agentId, contextId and kind',
          params: { agentId: card.agentId, contextId: card.contextId, kind: card.kind },
        },
      ],
    },
    defaultInputModes: [...CARD_MODES],
    defaultOutputModes: [...CARD_MODES],
    skills: card.skills.map((skill) => ({ ...skill })),
  };
}

/** A v1.0 card of this broker's agent, back in v0.3 shape (its registration read from the agent extension). */
export function agentCardToV03(card: V1AgentCard): AgentCard {
  const extension = card.capabilities.extensions?.find((e) => e.uri === SWITCHBOARD_AGENT_EXTENSION);
  const params = CardExtensionParamsSchema.safeParse(extension?.params);
  if (!params.success) {
    throw mappingError(
      `this card declares no ${SWITCHBOARD_AGENT_EXTENSION} extension: it is not an agent of this broker`,
    );
  }
  const kind: AgentKind = params.data.kind;
  return {
    agentId: params.data.agentId,
    name: card.name,
    contextId: params.data.contextId,
    kind,
    description: card.description,
    skills: card.skills.map((skill) => {
      const { id, name, description, tags, examples } = skill;
      const out: AgentCard['skills'][number] = { id, name };
      if (description !== undefined) out.description = description;
      if (tags !== undefined) out.tags = tags;
      if (examples !== undefined) out.examples = examples;
      return out;
    }),
  };
}
