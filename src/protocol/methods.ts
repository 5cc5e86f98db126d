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

export const HandshakeParamsSchema = z.object({
  protocolVersion: z.number().int(),
  client: z.object({ name: z.string().max(256), version: z.string().max(256) }).optional(),
});
export const HandshakeResultSchema = z.object({
  protocolVersion: z.number().int(),
  schemaVersion: z.number().int(),
  capabilities: z.array(z.string()),
  server: z.object({ name: z.string(), version: z.string() }),
});

export const RegisterParamsSchema = z.object({
  name: AgentNameSchema,
  contextId: RegisterContextIdSchema,
  kind: AgentKindSchema.optional(),
  description: z.string().max(16_000).optional(),
  skills: z.array(RegisterSkillSchema).max(256).optional(),
});
export const RegisterResultSchema = z.object({
  agentId: IdSchema,
  token: TokenSchema,
  card: AgentCardSchema,
});

export const TokenOnlyParamsSchema = z.object({ token: TokenSchema });
export const DeregisterResultSchema = z.object({ deregistered: z.literal(true) });
export const ListAgentsResultSchema = z.object({ agents: z.array(AgentCardSchema) });

/**
 * How many of the newest history messages an answer's task carries (all when
 * absent): keeps the answers about a long or heavy task small.
 */
export const HistoryLengthSchema = z.number().int().min(0).optional();

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
export const TaskResultSchema = z.object({ task: TaskSchema });

export const GetTaskParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  historyLength: HistoryLengthSchema,
});

export const ListTasksParamsSchema = z.object({
  token: TokenSchema,
  role: z.enum(['requester', 'worker']).optional(),
  states: z.array(TaskStateSchema).optional(),
});
export const ListTasksResultSchema = z.object({ tasks: z.array(TaskSchema) });

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
export const AddArtifactParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  artifact: ArtifactSendSchema,
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
});

export const TaskRefParamsSchema = z.object({ token: TokenSchema, id: IdSchema });

export const SetPushConfigParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  config: PushConfigSchema,
});
export const SetPushConfigResultSchema = z.object({ config: PushConfigSchema });
export const GetPushConfigResultSchema = z.object({ config: PushConfigSchema.nullable() });

export const EventsSinceParamsSchema = z.object({
  token: TokenSchema,
  after: z.number().int().min(0),
  limit: z.number().int().min(1).max(MAX_EVENTS_LIMIT).optional(),
});
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

export type MethodName = keyof typeof METHODS;
export const METHOD_NAMES = Object.keys(METHODS) as MethodName[];
export type MethodParams<M extends MethodName> = z.infer<(typeof METHODS)[M]['params']>;
/** Params as a caller may write them (before defaults and transforms). */
export type MethodParamsInput<M extends MethodName> = z.input<(typeof METHODS)[M]['params']>;
export type MethodResult<M extends MethodName> = z.infer<(typeof METHODS)[M]['result']>;

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(METHODS, name);
}

export type HandshakeParams = MethodParams<'app.handshake'>;
export type HandshakeResult = MethodResult<'app.handshake'>;
export type RegisterParams = MethodParams<'a2a.agents.register'>;
export type RegisterResult = MethodResult<'a2a.agents.register'>;
export type SendParams = MethodParams<'a2a.message.send'>;
export type GetTaskParams = MethodParams<'a2a.tasks.get'>;
export type ListTasksParams = MethodParams<'a2a.tasks.list'>;
export type SetStatusParams = MethodParams<'a2a.tasks.status'>;
export type AddArtifactParams = MethodParams<'a2a.tasks.artifact'>;
export type ArtifactSend = z.infer<typeof ArtifactSendSchema>;
export type TaskRefParams = MethodParams<'a2a.tasks.cancel'>;
export type SetPushConfigParams = MethodParams<'a2a.tasks.pushNotificationConfig.set'>;
export type EventsSinceParams = MethodParams<'a2a.events.since'>;
