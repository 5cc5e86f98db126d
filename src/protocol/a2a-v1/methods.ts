import { z } from 'zod';
import { AgentKindSchema, AgentNameSchema, RegisterContextIdSchema, RegisterSkillSchema } from '../agent.js';
import { BrokerError, invalidParams } from '../broker-error.js';
import { MAX_EVENTS_LIMIT } from '../bounds.js';
import type { DurableEvent, PushConfig } from '../events.js';
import type {
  EventsSinceResult,
  GetPushConfigResult,
  ListAgentsResult,
  ListTasksResult,
  MethodName,
  RegisterResult,
  SetPushConfigResult,
  TaskResult,
} from '../methods.js';
import { ListAgentsParamsSchema } from '../methods.js';
import { PruneParamsSchema } from '../retention.js';
import { parseParams } from '../parse.js';
import { V1_CARRY_KEY, withExtras } from './carry.js';
import { TASK_STATE_V03 } from './field-table.js';
import { listTasksPage } from './list-tasks.js';
import { V1CapabilitySchema, V1HistoryLengthSchema, V1SendParamsSchema, plainV1Send } from './send-params.js';
import { ARTIFACT_EXTRAS, messageSendFromV1, partToV03 } from './message-mapping.js';
import {
  V1ListTasksRequestSchema,
  V1MessageSchema,
  V1MetadataSchema,
  V1PartSchema,
  V1TaskPushNotificationConfigSchema,
  V1TaskStateSchema,
  type V1TaskPushNotificationConfig,
} from './schemas.js';
import { agentCardToV1, statusToV1, taskEventToV1, taskToV1 } from './task-mapping.js';

/** The id of the one push notification config a task holds, as v1.0 names it. */
export const PUSH_CONFIG_ID = 'default';

const Id = z.string().min(1).max(256);

/** One call of version 11: the broker method it becomes, its params there, and how its answer reads in v1.0. */
export interface V1Call {
  readonly method: MethodName;
  readonly params: unknown;
  answer(result: unknown): unknown;
}

/** A row of `V1_METHODS`: the broker method a version-11 method becomes. */
interface V1Method {
  /** The method of version 10 that serves it. */
  readonly serves: MethodName;
  /** What it is, for the docs. */
  readonly note: string;
  call(params: unknown, serverVersion: string): V1Call;
}

function pushConfigToV1(taskId: string, config: PushConfig): V1TaskPushNotificationConfig {
  const out: V1TaskPushNotificationConfig = { id: PUSH_CONFIG_ID, taskId };
  if (config.token !== undefined) out.token = config.token;
  return out;
}

/** The v1.0 shape of one durable event's params (`a2a.task.event` or `a2a.push`). */
export function notificationToV1(method: string, params: unknown): unknown {
  if (method === 'a2a.task.event') {
    const p = params as Extract<DurableEvent, { method: 'a2a.task.event' }>['params'];
    return { ...p, event: taskEventToV1(p.event) };
  }
  if (method === 'a2a.push') {
    const p = params as Extract<DurableEvent, { method: 'a2a.push' }>['params'];
    return { ...p, status: statusToV1(p.status) };
  }
  return params;
}

const sendMessage = (note: string): V1Method => ({
  serves: 'a2a.message.send',
  note,
  call(raw) {
    // The common shape without the generic parse (`send-params.ts`).
    const p = plainV1Send(raw) ?? parseParams(V1SendParamsSchema, raw);
    if (p.configuration?.taskPushNotificationConfig !== undefined) {
      throw invalidParams(
        'a push config is set on a task that exists: call CreateTaskPushNotificationConfig with the task id this call answers',
      );
    }
    const taskId = p.message.taskId === undefined || p.message.taskId === '' ? undefined : p.message.taskId;
    return {
      method: 'a2a.message.send',
      params: {
        token: p.capability,
        to: p.to,
        taskId,
        message: messageSendFromV1(p.message),
        historyLength: p.configuration?.historyLength,
      },
      answer: (result) => ({ task: taskToV1((result as TaskResult).task) }),
    };
  },
});

const TaskRefSchema = z.object({ capability: V1CapabilitySchema, id: Id, historyLength: V1HistoryLengthSchema });
const PushRefSchema = z.object({ capability: V1CapabilitySchema, taskId: Id, id: z.string().optional() });
const CreatePushSchema = V1TaskPushNotificationConfigSchema.extend({ capability: V1CapabilitySchema });

function checkPushId(id: string | undefined): void {
  if (id !== undefined && id !== '' && id !== PUSH_CONFIG_ID) {
    throw invalidParams(
      `a task holds one push notification config here, its id "${PUSH_CONFIG_ID}": pass that id or none`,
    );
  }
}

/**
 * Every A2A v1.0 method version 11 serves, by its v1.0 name, and the broker
 * method that serves it. The v1.0 requests are taken as the specification
 * writes them, plus `capability` (the caller's token).
 */
export const V1_METHODS: Readonly<Record<string, V1Method>> = {
  SendMessage: sendMessage('a new task (`to`) or a message to a task (`message.taskId`); answers `{task}`'),
  SendStreamingMessage: sendMessage(
    'as SendMessage: answers the first stream response `{task}`; the rest come as `a2a.task.event` notifications',
  ),
  GetTask: {
    serves: 'a2a.tasks.get',
    note: 'answers the Task',
    call(raw) {
      const p = parseParams(TaskRefSchema, raw);
      return {
        method: 'a2a.tasks.get',
        params: { token: p.capability, id: p.id, historyLength: p.historyLength },
        answer: (result) => taskToV1((result as TaskResult).task),
      };
    },
  },
  ListTasks: {
    serves: 'a2a.tasks.list',
    note: 'one page of the caller’s tasks (`role` narrows to `requester` or `worker`)',
    call(raw) {
      const p = parseParams(
        V1ListTasksRequestSchema.extend({
          capability: V1CapabilitySchema,
          role: z.enum(['requester', 'worker']).optional(),
        }),
        raw,
      );
      return {
        method: 'a2a.tasks.list',
        params: {
          token: p.capability,
          role: p.role,
          states: p.status === undefined ? undefined : [TASK_STATE_V03[p.status]],
        },
        answer: (result) => listTasksPage((result as ListTasksResult).tasks, p),
      };
    },
  },
  CancelTask: {
    serves: 'a2a.tasks.cancel',
    note: 'answers the Task',
    call(raw) {
      const p = parseParams(
        TaskRefSchema.omit({ historyLength: true }).extend({ metadata: V1MetadataSchema.optional() }),
        raw,
      );
      return {
        method: 'a2a.tasks.cancel',
        params: { token: p.capability, id: p.id },
        answer: (result) => taskToV1((result as TaskResult).task),
      };
    },
  },
  SubscribeToTask: {
    serves: 'a2a.tasks.resubscribe',
    note: 'answers the first stream response `{task}`; the rest come as notifications',
    call(raw) {
      const p = parseParams(TaskRefSchema.omit({ historyLength: true }), raw);
      return {
        method: 'a2a.tasks.resubscribe',
        params: { token: p.capability, id: p.id },
        answer: (result) => ({ task: taskToV1((result as TaskResult).task) }),
      };
    },
  },
  CreateTaskPushNotificationConfig: {
    serves: 'a2a.tasks.pushNotificationConfig.set',
    note: 'the task’s one config (`token` only: pushes come as `a2a.push` notifications on this connection)',
    call(raw) {
      const p = parseParams(CreatePushSchema, raw);
      checkPushId(p.id);
      if ((p.url !== undefined && p.url !== '') || p.authentication !== undefined) {
        throw invalidParams(
          'this wire delivers pushes as a2a.push notifications on the connection: leave out url and authentication',
        );
      }
      const config: PushConfig = p.token === undefined ? {} : { token: p.token };
      return {
        method: 'a2a.tasks.pushNotificationConfig.set',
        params: { token: p.capability, id: p.taskId, config },
        answer: (result) => pushConfigToV1(p.taskId, (result as SetPushConfigResult).config),
      };
    },
  },
  GetTaskPushNotificationConfig: {
    serves: 'a2a.tasks.pushNotificationConfig.get',
    note: 'the task’s config; refused when none is set',
    call(raw) {
      const p = parseParams(PushRefSchema, raw);
      checkPushId(p.id);
      return {
        method: 'a2a.tasks.pushNotificationConfig.get',
        params: { token: p.capability, id: p.taskId },
        answer: (result) => {
          const { config } = result as GetPushConfigResult;
          if (config === null) {
            throw invalidParams(
              `task ${p.taskId} has no push notification config: create one with CreateTaskPushNotificationConfig`,
            );
          }
          return pushConfigToV1(p.taskId, config);
        },
      };
    },
  },
  ListTaskPushNotificationConfigs: {
    serves: 'a2a.tasks.pushNotificationConfig.get',
    note: 'the task’s configs: none or one',
    call(raw) {
      const p = parseParams(
        PushRefSchema.omit({ id: true }).extend({
          pageSize: z.number().int().min(0).optional(),
          pageToken: z.string().optional(),
        }),
        raw,
      );
      return {
        method: 'a2a.tasks.pushNotificationConfig.get',
        params: { token: p.capability, id: p.taskId },
        answer: (result) => {
          const { config } = result as GetPushConfigResult;
          return { configs: config === null ? [] : [pushConfigToV1(p.taskId, config)], nextPageToken: '' };
        },
      };
    },
  },
};

const ArtifactSendV1Schema = z.object({
  artifactId: Id.optional(),
  name: z.string().max(1024).optional(),
  description: z.string().max(16_000).optional(),
  parts: z.array(V1PartSchema).min(1),
  metadata: V1MetadataSchema.optional(),
  extensions: z.array(z.string()).optional(),
});

/**
 * The methods of this broker v1.0 has no counterpart for (registration, the
 * worker's moves, the event log), on version 11: same names, v1.0 shapes
 * inside, `capability` for the token.
 */
export const V1_LOCAL_METHODS: Readonly<Record<string, V1Method>> = {
  'a2a.agents.register': {
    serves: 'a2a.agents.register',
    note: 'params as on version 10; the card in the answer is a v1.0 AgentCard',
    call(raw, version) {
      const p = parseParams(
        z.object({
          name: AgentNameSchema,
          contextId: RegisterContextIdSchema,
          kind: AgentKindSchema.optional(),
          description: z.string().max(16_000).optional(),
          skills: z.array(RegisterSkillSchema).max(256).optional(),
        }),
        raw,
      );
      return {
        method: 'a2a.agents.register',
        params: p,
        answer: (result) => {
          const r = result as RegisterResult;
          return { ...r, card: agentCardToV1(r.card, version) };
        },
      };
    },
  },
  'broker.tasks.prune': {
    serves: 'broker.tasks.prune',
    note: 'as on version 10 (the broker’s own method: no A2A shapes in it)',
    call(raw) {
      const p = parseParams(PruneParamsSchema, raw);
      return { method: 'broker.tasks.prune', params: p, answer: (result) => result };
    },
  },
  'a2a.agents.deregister': {
    serves: 'a2a.agents.deregister',
    note: '`capability` for the token; `keepTasks` as on version 10',
    call(raw) {
      const p = parseParams(z.object({ capability: V1CapabilitySchema, keepTasks: z.boolean().optional() }), raw);
      const params = { token: p.capability, ...(p.keepTasks === undefined ? {} : { keepTasks: p.keepTasks }) };
      return { method: 'a2a.agents.deregister', params, answer: (result) => result };
    },
  },
  'a2a.agents.list': {
    serves: 'a2a.agents.list',
    note: 'the peers’ v1.0 AgentCards, paged as on version 10 (`cursor`, `limit`; `nextCursor`)',
    call(raw, version) {
      const p = parseParams(
        z.object({
          capability: V1CapabilitySchema,
          cursor: ListAgentsParamsSchema.shape.cursor,
          limit: ListAgentsParamsSchema.shape.limit,
        }),
        raw,
      );
      return {
        method: 'a2a.agents.list',
        params: {
          token: p.capability,
          ...(p.cursor === undefined ? {} : { cursor: p.cursor }),
          ...(p.limit === undefined ? {} : { limit: p.limit }),
        },
        answer: (result) => {
          const page = result as ListAgentsResult;
          return {
            agents: page.agents.map((c) => agentCardToV1(c, version)),
            ...(page.nextCursor === undefined ? {} : { nextCursor: page.nextCursor }),
          };
        },
      };
    },
  },
  'a2a.tasks.status': {
    serves: 'a2a.tasks.status',
    note: 'the worker’s move: `state` a TASK_STATE_* name, `message` a v1.0 Message; answers `{task}`',
    call(raw) {
      const p = parseParams(
        z.object({
          capability: V1CapabilitySchema,
          id: Id,
          state: V1TaskStateSchema,
          message: V1MessageSchema.optional(),
          historyLength: V1HistoryLengthSchema,
        }),
        raw,
      );
      return {
        method: 'a2a.tasks.status',
        params: {
          token: p.capability,
          id: p.id,
          state: TASK_STATE_V03[p.state],
          message: p.message === undefined ? undefined : messageSendFromV1(p.message),
          historyLength: p.historyLength,
        },
        answer: (result) => ({ task: taskToV1((result as TaskResult).task) }),
      };
    },
  },
  'a2a.tasks.artifact': {
    serves: 'a2a.tasks.artifact',
    note: 'the worker’s artifact, v1.0 parts; answers `{task}`',
    call(raw) {
      const p = parseParams(
        z.object({
          capability: V1CapabilitySchema,
          id: Id,
          artifact: ArtifactSendV1Schema,
          append: z.boolean().optional(),
          lastChunk: z.boolean().optional(),
        }),
        raw,
      );
      const { extensions, parts, ...artifact } = p.artifact;
      const metadata = withExtras(
        artifact.metadata,
        V1_CARRY_KEY,
        { extensions: extensions === undefined || extensions.length === 0 ? undefined : extensions },
        ARTIFACT_EXTRAS,
      );
      return {
        method: 'a2a.tasks.artifact',
        params: {
          token: p.capability,
          id: p.id,
          artifact: { ...artifact, parts: parts.map(partToV03), ...(metadata === undefined ? {} : { metadata }) },
          append: p.append,
          lastChunk: p.lastChunk,
        },
        answer: (result) => ({ task: taskToV1((result as TaskResult).task) }),
      };
    },
  },
  'a2a.events.since': {
    serves: 'a2a.events.since',
    note: 'the durable events, each in the v1.0 shape of its notification',
    call(raw) {
      const p = parseParams(
        z.object({
          capability: V1CapabilitySchema,
          after: z.number().int().min(0),
          limit: z.number().int().min(1).max(MAX_EVENTS_LIMIT).optional(),
        }),
        raw,
      );
      return {
        method: 'a2a.events.since',
        params: { token: p.capability, after: p.after, limit: p.limit },
        answer: (result) => ({
          events: (result as EventsSinceResult).events.map((e) => ({
            seq: e.seq,
            method: e.method,
            params: notificationToV1(e.method, e.params),
          })),
        }),
      };
    },
  },
};

/** The v1.0 methods version 11 refuses, and why (the message of the refusal). */
export const V1_REFUSED_METHODS: Readonly<Record<string, string>> = {
  DeleteTaskPushNotificationConfig:
    'this broker keeps a task’s push config until the task ends: set another with CreateTaskPushNotificationConfig instead',
  GetExtendedAgentCard:
    'the extended card is for authenticated clients of an HTTP server: call a2a.agents.list for the cards of your peers',
};

/** The version-10 names of the methods version 11 serves under their v1.0 names. */
const RENAMED: Readonly<Record<string, string>> = Object.fromEntries(
  Object.entries(V1_METHODS)
    .reverse()
    .map(([name, row]) => [row.serves, name]),
);

/**
 * A call of version 11 as the broker call it becomes: refused (nothing
 * called) when the method is unknown, renamed, refused on this wire, or its
 * params are not what the method takes.
 */
export function v1Call(method: string, params: unknown, serverVersion: string): V1Call {
  const row = Object.hasOwn(V1_METHODS, method)
    ? V1_METHODS[method]
    : Object.hasOwn(V1_LOCAL_METHODS, method)
      ? V1_LOCAL_METHODS[method]
      : undefined;
  if (row !== undefined) return row.call(params, serverVersion);
  if (Object.hasOwn(V1_REFUSED_METHODS, method)) {
    throw new BrokerError('METHOD_NOT_FOUND', `${method} is not served on this wire: ${V1_REFUSED_METHODS[method]}`, {
      details: { method },
    });
  }
  if (Object.hasOwn(RENAMED, method)) {
    throw new BrokerError(
      'METHOD_NOT_FOUND',
      `${method} is a protocol version 10 name: on version 11 call ${RENAMED[method]} (or handshake with version 10)`,
      { details: { method } },
    );
  }
  throw new BrokerError('METHOD_NOT_FOUND', `Method not found: ${method}`, { details: { method } });
}
