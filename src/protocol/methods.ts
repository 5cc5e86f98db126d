import { z } from 'zod';
import {
  type AgentCard,
  AgentCardSchema,
  type AgentKind,
  AgentKindSchema,
  AgentNameSchema,
  RegisterContextIdSchema,
  RegisterSkillSchema,
} from './agent.js';
import { DEFAULT_EVENTS_LIMIT, MAX_AGENTS_LIMIT, MAX_EVENTS_LIMIT } from './bounds.js';
import { type DurableEvent, DurableEventSchema, type PushConfig, PushConfigSchema } from './events.js';
import { type DataPart, type FilePart, MetadataSchema, PartSchema, type TextPart } from './parts.js';
import {
  IdSchema,
  type MessageSend,
  MessageSendSchema,
  type Task,
  TaskSchema,
  type TaskState,
  TaskStateSchema,
} from './task.js';
import { type PruneParams, PruneParamsSchema, type PruneResult, PruneResultSchema } from './retention.js';
import { type WireSchema, named } from './wire-schema.js';

/** `PartSchema` named by the parts it parses. */
const PartRef = named<TextPart | FilePart | DataPart>(PartSchema);

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
  kind: named<AgentKind>(AgentKindSchema).optional(),
  description: z.string().max(16_000).optional(),
  skills: z.array(RegisterSkillSchema).max(256).optional(),
});
/** Result of `a2a.agents.register`: the new agent's id, its capability token and its card. */
export const RegisterResultSchema = z.object({
  agentId: IdSchema,
  token: TokenSchema,
  card: named<AgentCard>(AgentCardSchema),
});

/** Params of the methods that take only the caller's token (`a2a.agents.list`). */
export const TokenOnlyParamsSchema = z.object({ token: TokenSchema });
/**
 * Params of `a2a.agents.deregister`: the caller's token, and whether its open
 * tasks end with the registration (the default) or are kept for the party's
 * next registration, as when its connection closes.
 */
export const DeregisterParamsSchema = z.object({
  token: TokenSchema,
  keepTasks: z
    .boolean()
    .optional()
    .describe(
      'true: the open tasks are kept, as when the connection closes (the requesters of those it serves are told it left); the same (contextId, name) registering again regains them',
    ),
});
/** Result of `a2a.agents.deregister`: `{deregistered: true}`. */
export const DeregisterResultSchema = z.object({ deregistered: z.literal(true) });
/**
 * Params of `a2a.agents.list`: the caller's token and a page. `cursor` is the
 * `nextCursor` of the previous page (absent: the first page); `limit` cards
 * at most (default `DEFAULT_AGENTS_LIMIT`, 100; at most `MAX_AGENTS_LIMIT`, 1,000).
 */
export const ListAgentsParamsSchema = z.object({
  token: TokenSchema,
  cursor: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'a cursor is the nextCursor of a previous page')
    .optional(),
  limit: z.number().int().min(1).max(MAX_AGENTS_LIMIT).optional(),
});
/**
 * Result of `a2a.agents.list`: one page of the cards of the addressable
 * peers (not the caller's), in registration order; `nextCursor` is present
 * when more may follow (pass it as `cursor`).
 */
export const ListAgentsResultSchema = z.object({
  agents: z.array(named<AgentCard>(AgentCardSchema)),
  nextCursor: z.string().optional(),
});

/**
 * How many of the newest history messages an answer's task carries (all when
 * absent): keeps the answers about a long or heavy task small.
 */
export const HistoryLengthSchema = z.number().int().min(0).optional();

/** Params of `a2a.message.send`: a message to a named agent (new task) or to an existing task, never both. */
export const SendParamsSchema = z
  .object({
    token: TokenSchema,
    message: named<MessageSend>(MessageSendSchema),
    to: z.string().min(1).max(256).optional(),
    taskId: IdSchema.optional(),
    historyLength: HistoryLengthSchema,
    /**
     * Answer once the task settles (it ends, or needs its requester:
     * `input-required`, `auth-required`) instead of at once; servers with the
     * capability `a2a.send.blocking` read it.
     */
    blocking: z.boolean().optional(),
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
export const TaskResultSchema = z.object({ task: named<Task>(TaskSchema) });

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
  states: z.array(named<TaskState>(TaskStateSchema)).optional(),
});
/** Result of `a2a.tasks.list`: the matching tasks. */
export const ListTasksResultSchema = z.object({ tasks: z.array(named<Task>(TaskSchema)) });

/** Params of `a2a.tasks.status` (worker only): the task's new state and an optional message. */
export const SetStatusParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  state: named<TaskState>(TaskStateSchema),
  message: named<MessageSend>(MessageSendSchema).optional(),
  historyLength: HistoryLengthSchema,
});

/** An artifact as the worker sends it: the broker assigns `artifactId` when absent. */
export const ArtifactSendSchema = z.object({
  artifactId: IdSchema.optional(),
  name: z.string().max(1024).optional(),
  description: z.string().max(16_000).optional(),
  parts: z.array(PartRef).min(1),
  metadata: MetadataSchema.optional(),
});
/** Params of `a2a.tasks.artifact` (worker only): an artifact for the task, whole or as a chunk. */
export const AddArtifactParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  artifact: named<ArtifactSend>(ArtifactSendSchema),
  append: z.boolean().optional(),
  lastChunk: z.boolean().optional(),
});

/** Params of the methods that name one task by id (`a2a.tasks.cancel`, resubscribe, push config get). */
export const TaskRefParamsSchema = z.object({ token: TokenSchema, id: IdSchema });

/** Params of `a2a.tasks.pushNotificationConfig.set`: the push config for one task. */
export const SetPushConfigParamsSchema = z.object({
  token: TokenSchema,
  id: IdSchema,
  config: named<PushConfig>(PushConfigSchema),
});
/** Result of `a2a.tasks.pushNotificationConfig.set`: the config now in force. */
export const SetPushConfigResultSchema = z.object({ config: named<PushConfig>(PushConfigSchema) });
/** Result of `a2a.tasks.pushNotificationConfig.get`: the task's push config, or null when none is set. */
export const GetPushConfigResultSchema = z.object({ config: named<PushConfig>(PushConfigSchema).nullable() });

/** Params of `a2a.events.since`: the durable events after a seq, at most `limit` of them. */
export const EventsSinceParamsSchema = z.object({
  token: TokenSchema,
  after: z.number().int().min(0),
  limit: z.number().int().min(1).max(MAX_EVENTS_LIMIT).optional(),
});
/** Result of `a2a.events.since`: one page of the caller's durable events, in seq order. */
export const EventsSinceResultSchema = z.object({ events: z.array(named<DurableEvent>(DurableEventSchema)) });
export { DEFAULT_EVENTS_LIMIT };

/** Params of `app.handshake` as on the wire (inferred from `HandshakeParamsSchema`). */
export interface HandshakeParams extends z.infer<typeof HandshakeParamsSchema> {}
/** Result of `app.handshake` as on the wire (inferred from `HandshakeResultSchema`). */
export interface HandshakeResult extends z.infer<typeof HandshakeResultSchema> {}
/** Params of `a2a.agents.register` as on the wire (inferred from `RegisterParamsSchema`). */
export interface RegisterParams extends z.infer<typeof RegisterParamsSchema> {}
/** Result of `a2a.agents.register` as on the wire (inferred from `RegisterResultSchema`). */
export interface RegisterResult extends z.infer<typeof RegisterResultSchema> {}
/** Params that carry only the caller's token (`a2a.agents.list`) as on the wire (inferred from `TokenOnlyParamsSchema`). */
export interface TokenOnlyParams extends z.infer<typeof TokenOnlyParamsSchema> {}
/** Params of `a2a.agents.deregister` as on the wire (inferred from `DeregisterParamsSchema`). */
export interface DeregisterParams extends z.infer<typeof DeregisterParamsSchema> {}
/** Result of `a2a.agents.deregister` as on the wire (inferred from `DeregisterResultSchema`). */
export interface DeregisterResult extends z.infer<typeof DeregisterResultSchema> {}
/** Params of `a2a.agents.list` as on the wire (inferred from `ListAgentsParamsSchema`). */
export interface ListAgentsParams extends z.infer<typeof ListAgentsParamsSchema> {}
/** Result of `a2a.agents.list` as on the wire (inferred from `ListAgentsResultSchema`). */
export interface ListAgentsResult extends z.infer<typeof ListAgentsResultSchema> {}
/** Params of `a2a.message.send` as on the wire (inferred from `SendParamsSchema`). */
export interface SendParams extends z.infer<typeof SendParamsSchema> {}
/** Result of the methods that answer one task as on the wire (inferred from `TaskResultSchema`). */
export interface TaskResult extends z.infer<typeof TaskResultSchema> {}
/** Params of `a2a.tasks.get` as on the wire (inferred from `GetTaskParamsSchema`). */
export interface GetTaskParams extends z.infer<typeof GetTaskParamsSchema> {}
/** Params of `a2a.tasks.list` as on the wire (inferred from `ListTasksParamsSchema`). */
export interface ListTasksParams extends z.infer<typeof ListTasksParamsSchema> {}
/** Result of `a2a.tasks.list` as on the wire (inferred from `ListTasksResultSchema`). */
export interface ListTasksResult extends z.infer<typeof ListTasksResultSchema> {}
/** Params of `a2a.tasks.status` as on the wire (inferred from `SetStatusParamsSchema`). */
export interface SetStatusParams extends z.infer<typeof SetStatusParamsSchema> {}
/** Params of `a2a.tasks.artifact` as on the wire (inferred from `AddArtifactParamsSchema`). */
export interface AddArtifactParams extends z.infer<typeof AddArtifactParamsSchema> {}
/** Params that name one task as on the wire (inferred from `TaskRefParamsSchema`). */
export interface TaskRefParams extends z.infer<typeof TaskRefParamsSchema> {}
/** Params of `a2a.tasks.pushNotificationConfig.set` as on the wire (inferred from `SetPushConfigParamsSchema`). */
export interface SetPushConfigParams extends z.infer<typeof SetPushConfigParamsSchema> {}
/** Result of `a2a.tasks.pushNotificationConfig.set` as on the wire (inferred from `SetPushConfigResultSchema`). */
export interface SetPushConfigResult extends z.infer<typeof SetPushConfigResultSchema> {}
/** Result of `a2a.tasks.pushNotificationConfig.get` as on the wire (inferred from `GetPushConfigResultSchema`). */
export interface GetPushConfigResult extends z.infer<typeof GetPushConfigResultSchema> {}
/** Params of `a2a.events.since` as on the wire (inferred from `EventsSinceParamsSchema`). */
export interface EventsSinceParams extends z.infer<typeof EventsSinceParamsSchema> {}
/** Result of `a2a.events.since` as on the wire (inferred from `EventsSinceResultSchema`). */
export interface EventsSinceResult extends z.infer<typeof EventsSinceResultSchema> {}

/** The params and result schemas of one method of the wire, named by the types they parse. */
export interface MethodSchemas<Params, Result> {
  readonly params: WireSchema<Params>;
  readonly result: WireSchema<Result>;
}

/** One row of `METHODS`: its two schemas, named by `Params` and `Result`. */
function method<Params, Result>(
  params: z.ZodType<Params, Params>,
  result: z.ZodType<Result, Result>,
): MethodSchemas<Params, Result> {
  return { params, result };
}

/**
 * Every method of the wire, with its params and result schemas: the one place
 * server and client are typed from.
 */
export const METHODS = {
  'app.handshake': method<HandshakeParams, HandshakeResult>(HandshakeParamsSchema, HandshakeResultSchema),
  'a2a.agents.register': method<RegisterParams, RegisterResult>(RegisterParamsSchema, RegisterResultSchema),
  'a2a.agents.deregister': method<DeregisterParams, DeregisterResult>(DeregisterParamsSchema, DeregisterResultSchema),
  'a2a.agents.list': method<ListAgentsParams, ListAgentsResult>(ListAgentsParamsSchema, ListAgentsResultSchema),
  'a2a.message.send': method<SendParams, TaskResult>(SendParamsSchema, TaskResultSchema),
  'a2a.tasks.get': method<GetTaskParams, TaskResult>(GetTaskParamsSchema, TaskResultSchema),
  'a2a.tasks.list': method<ListTasksParams, ListTasksResult>(ListTasksParamsSchema, ListTasksResultSchema),
  'a2a.tasks.status': method<SetStatusParams, TaskResult>(SetStatusParamsSchema, TaskResultSchema),
  'a2a.tasks.artifact': method<AddArtifactParams, TaskResult>(AddArtifactParamsSchema, TaskResultSchema),
  'a2a.tasks.cancel': method<TaskRefParams, TaskResult>(TaskRefParamsSchema, TaskResultSchema),
  'a2a.tasks.resubscribe': method<TaskRefParams, TaskResult>(TaskRefParamsSchema, TaskResultSchema),
  'a2a.tasks.pushNotificationConfig.set': method<SetPushConfigParams, SetPushConfigResult>(
    SetPushConfigParamsSchema,
    SetPushConfigResultSchema,
  ),
  'a2a.tasks.pushNotificationConfig.get': method<TaskRefParams, GetPushConfigResult>(
    TaskRefParamsSchema,
    GetPushConfigResultSchema,
  ),
  'a2a.events.since': method<EventsSinceParams, EventsSinceResult>(EventsSinceParamsSchema, EventsSinceResultSchema),
  'broker.tasks.prune': method<PruneParams, PruneResult>(PruneParamsSchema, PruneResultSchema),
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

/** An artifact as the worker sends it (inferred from `ArtifactSendSchema`). */
export interface ArtifactSend extends z.infer<typeof ArtifactSendSchema> {}
