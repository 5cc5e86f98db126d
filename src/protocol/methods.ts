import { z } from 'zod';
import {
  AgentCardSchema,
  AgentKindSchema,
  AgentNameSchema,
  RegisterContextIdSchema,
  RegisterSkillSchema,
} from './agent.js';
import { DEFAULT_EVENTS_LIMIT, MAX_EVENTS_LIMIT } from './bounds.js';
import { DurableEventSchema, PushConfigSchema } from './events.js';
import { MetadataSchema, PartSchema } from './parts.js';
import { IdSchema, MessageSendSchema, TaskSchema, TaskStateSchema } from './task.js';

/** A capability token as it travels in params. Never logged, never stored. */
export const TokenSchema = z.string().min(1).max(256);

/** Params of `app.handshake`: the protocol version the client speaks, and optionally who it is. */
export const HandshakeParamsSchema = z.object({
  protocolVersion: z.number().int(),
  client: z.object({ name: z.string().max(256), version: z.string().max(256) }).optional(),
});
/** Result of `app.handshake`: the server's protocol and schema versions, capabilities and name. */
export const HandshakeResultSchema = z.object({
  protocolVersion: z.number().int(),
  schemaVersion: z.number().int(),
  capabilities: z.array(z.string()),
  server: z.object({ name: z.string(), version: z.string() }),
});

/** Params of `a2a.agents.register`: the agent's name, context, and optional kind, description and skills. */
export const RegisterParamsSchema = z.object({
  name: AgentNameSchema,
  contextId: RegisterContextIdSchema,
  kind: AgentKindSchema.optional(),
  description: z.string().max(16_000).optional(),
  skills: z.array(RegisterSkillSchema).max(256).optional(),
});
/** Result of `a2a.agents.register`: the new agent's id, its capability token and its card. */
export const RegisterResultSchema = z.object({
  agentId: IdSchema,
  token: TokenSchema,
  card: AgentCardSchema,
});

/** Params of the methods that take only the caller's token (`a2a.agents.deregister`, `a2a.agents.list`). */
export const TokenOnlyParamsSchema = z.object({ token: TokenSchema });
/** Result of `a2a.agents.deregister`: `{deregistered: true}`. */
export const DeregisterResultSchema = z.object({ deregistered: z.literal(true) });
/** Result of `a2a.agents.list`: the cards of the addressable peers, not the caller's. */
export const ListAgentsResultSchema = z.object({ agents: z.array(AgentCardSchema) });

/**
 * How many of the newest history messages an answer's task carries (all when
 * absent): keeps the answers about a long or heavy task small.
 */
export const HistoryLengthSchema = z.number().int().min(0).optional();

/** Params of `a2a.message.send`: a message to a named agent (new task) or to an existing task, never both. */
export const SendParamsSchema = z
  .object({
    token: TokenSchema,
    message: MessageSendSchema,
    to: z.string().min(1).max(256).optional(),
    taskId: IdSchema.optional(),
    historyLength: HistoryLengthSchema,
  })
  .superRefine((params, ctx) => {
    if (params.to !== undefined && params.taskId !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'give either to (new task) or taskId (existing task), not both',
        path: ['to'],
      });
    } else if (params.to === undefined && params.taskId === undefined) {
      ctx.addIssue({ code: 'custom', message: 'give to (new task) or taskId (existing task)', path: ['to'] });
    }
  });
/** Result of the methods that answer one task (`a2a.message.send`, `a2a.tasks.get`, status, artifact, cancel, resubscribe). */
export const TaskResultSchema = z.object({ task: TaskSchema });

/** Params of `a2a.tasks.get`: the task's id and how many history messages to return. */
export const GetTaskParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  historyLength: HistoryLengthSchema,
});

/** Params of `a2a.tasks.list`: the caller's tasks, filtered by its role in them and by state. */
export const ListTasksParamsSchema = z.object({
  token: TokenSchema,
  role: z.enum(['requester', 'worker']).optional(),
  states: z.array(TaskStateSchema).optional(),
});
/** Result of `a2a.tasks.list`: the matching tasks. */
export const ListTasksResultSchema = z.object({ tasks: z.array(TaskSchema) });

/** Params of `a2a.tasks.status` (worker only): the task's new state and an optional message. */
export const SetStatusParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  state: TaskStateSchema,
  message: MessageSendSchema.optional(),
  historyLength: HistoryLengthSchema,
});

/** An artifact as the worker sends it: the broker assigns `artifactId` when absent. */
export const ArtifactSendSchema = z.object({
  artifactId: IdSchema.optional(),
  name: z.string().max(1024).optional(),
  description: z.string().max(16_000).optional(),
  parts: z.array(PartSchema).min(1),
  metadata: MetadataSchema.optional(),
});
/** Params of `a2a.tasks.artifact` (worker only): an artifact for the task, whole or as a chunk. */
export const AddArtifactParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  artifact: ArtifactSendSchema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
});

/** Params of the methods that name one task by id (`a2a.tasks.cancel`, resubscribe, push config get). */
export const TaskRefParamsSchema = z.object({ token: TokenSchema, id: IdSchema });

/** Params of `a2a.tasks.pushNotificationConfig.set`: the push config for one task. */
export const SetPushConfigParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  config: PushConfigSchema,
});
/** Result of `a2a.tasks.pushNotificationConfig.set`: the config now in force. */
export const SetPushConfigResultSchema = z.object({ config: PushConfigSchema });
/** Result of `a2a.tasks.pushNotificationConfig.get`: the task's push config, or null when none is set. */
export const GetPushConfigResultSchema = z.object({ config: PushConfigSchema.nullable() });

/** Params of `a2a.events.since`: the durable events after a seq, at most `limit` of them. */
export const EventsSinceParamsSchema = z.object({
  token: TokenSchema,
  after: z.number().int().min(0),
  limit: z.number().int().min(1).max(MAX_EVENTS_LIMIT).optional(),
});
/** Result of `a2a.events.since`: one page of the caller's durable events, in seq order. */
export const EventsSinceResultSchema = z.object({ events: z.array(DurableEventSchema) });
export { DEFAULT_EVENTS_LIMIT };

/**
 * Every method of the wire, with its params and result schemas: the one place
 * server and client are typed from.
 */
export const METHODS = {
  'app.handshake': { params: HandshakeParamsSchema, result: HandshakeResultSchema },
  'a2a.agents.register': { params: RegisterParamsSchema, result: RegisterResultSchema },
  'a2a.agents.deregister': { params: TokenOnlyParamsSchema, result: DeregisterResultSchema },
  'a2a.agents.list': { params: TokenOnlyParamsSchema, result: ListAgentsResultSchema },
  'a2a.message.send': { params: SendParamsSchema, result: TaskResultSchema },
  'a2a.tasks.get': { params: GetTaskParamsSchema, result: TaskResultSchema },
  'a2a.tasks.list': { params: ListTasksParamsSchema, result: ListTasksResultSchema },
  'a2a.tasks.status': { params: SetStatusParamsSchema, result: TaskResultSchema },
  'a2a.tasks.artifact': { params: AddArtifactParamsSchema, result: TaskResultSchema },
  'a2a.tasks.cancel': { params: TaskRefParamsSchema, result: TaskResultSchema },
  'a2a.tasks.resubscribe': { params: TaskRefParamsSchema, result: TaskResultSchema },
  'a2a.tasks.pushNotificationConfig.set': { params: SetPushConfigParamsSchema, result: SetPushConfigResultSchema },
  'a2a.tasks.pushNotificationConfig.get': { params: TaskRefParamsSchema, result: GetPushConfigResultSchema },
  'a2a.events.since': { params: EventsSinceParamsSchema, result: EventsSinceResultSchema },
} as const;

/** The name of one method of the wire (a key of `METHODS`). */
export type MethodName = keyof typeof METHODS;
/** Every method name of the wire, in the order of `METHODS`. */
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];
/** The params of method `M` as the server reads them (inferred from its schema in `METHODS`). */
export type MethodParams<M extends MethodName> = z.infer<(typeof METHODS)[M]['params']>;
/** Params as a caller may write them (before defaults and transforms). */
export type MethodParamsInput<M extends MethodName> = z.input<(typeof METHODS)[M]['params']>;
/** The result of method `M` as on the wire (inferred from its schema in `METHODS`). */
export type MethodResult<M extends MethodName> = z.infer<(typeof METHODS)[M]['result']>;

/** Whether a string names a method of the wire (narrows it to `MethodName`). */
export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}

/** Params of `app.handshake` as on the wire (inferred from `HandshakeParamsSchema`). */
export type HandshakeParams = MethodParams<'app.handshake'>;
/** Result of `app.handshake` as on the wire (inferred from `HandshakeResultSchema`). */
export type HandshakeResult = MethodResult<'app.handshake'>;
/** Params of `a2a.agents.register` as on the wire (inferred from `RegisterParamsSchema`). */
export type RegisterParams = MethodParams<'a2a.agents.register'>;
/** Result of `a2a.agents.register` as on the wire (inferred from `RegisterResultSchema`). */
export type RegisterResult = MethodResult<'a2a.agents.register'>;
/** Params of `a2a.message.send` as on the wire (inferred from `SendParamsSchema`). */
export type SendParams = MethodParams<'a2a.message.send'>;
/** Params of `a2a.tasks.get` as on the wire (inferred from `GetTaskParamsSchema`). */
export type GetTaskParams = MethodParams<'a2a.tasks.get'>;
/** Params of `a2a.tasks.list` as on the wire (inferred from `ListTasksParamsSchema`). */
export type ListTasksParams = MethodParams<'a2a.tasks.list'>;
/** Params of `a2a.tasks.status` as on the wire (inferred from `SetStatusParamsSchema`). */
export type SetStatusParams = MethodParams<'a2a.tasks.status'>;
/** Params of `a2a.tasks.artifact` as on the wire (inferred from `AddArtifactParamsSchema`). */
export type AddArtifactParams = MethodParams<'a2a.tasks.artifact'>;
/** An artifact as the worker sends it (inferred from `ArtifactSendSchema`). */
export type ArtifactSend = z.infer<typeof ArtifactSendSchema>;
/** Params that name one task as on the wire (inferred from `TaskRefParamsSchema`). */
export type TaskRefParams = MethodParams<'a2a.tasks.cancel'>;
/** Params of `a2a.tasks.pushNotificationConfig.set` as on the wire (inferred from `SetPushConfigParamsSchema`). */
export type SetPushConfigParams = MethodParams<'a2a.tasks.pushNotificationConfig.set'>;
/** Params of `a2a.events.since` as on the wire (inferred from `EventsSinceParamsSchema`). */
export type EventsSinceParams = MethodParams<'a2a.events.since'>;
