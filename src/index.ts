/**
 * switchboard: the library entry, what an embedder uses. Advanced pieces live
 * under the subpath exports (`a2a-switchboard/protocol`, `/machines`, `/bus`,
 * `/transport`, `/workflow`, `/coordinator`); internals are not exported.
 *
 * @packageDocumentation
 */

// The package.
export { VERSION } from './version.js';

// The wire: the schemas a caller validates with and the types inferred from
// them. Every schema, bound and constant of the wire, with the helpers around
// them, is in `a2a-switchboard/protocol`.
export { A2A_MAX_TEXT_CHARS, A2A_MAX_FILE_BYTES } from './protocol/bounds.js';
export type { WireSchema } from './protocol/wire-schema.js';
export { TextPartSchema, FilePartSchema, DataPartSchema, PartSchema } from './protocol/parts.js';
export type { Metadata, TextPart, FileContent, FilePart, DataPart, Part } from './protocol/parts.js';
export { MessageSendSchema, MessageSchema, ArtifactSchema, TaskSchema } from './protocol/task.js';
export type {
  TaskState,
  TerminalState,
  MessageSend,
  MessageRole,
  Message,
  TaskStatus,
  Artifact,
  Task,
} from './protocol/task.js';
export { AgentCardSchema } from './protocol/agent.js';
export type { AgentKind, Skill, AgentCard } from './protocol/agent.js';
export { TaskStatusUpdateEventSchema, TaskArtifactUpdateEventSchema, PushConfigSchema } from './protocol/events.js';
export type {
  TaskStatusUpdateEvent,
  TaskArtifactUpdateEvent,
  TaskAgentUpdateEvent,
  AgentPresence,
  TaskEvent,
  PushConfig,
} from './protocol/events.js';
// The broker's methods: their names, params and results (`MethodName`,
// `MethodParams`, `SendParams`, ...), the JSON-RPC frames (their schemas
// `JsonRpcRequestSchema`, `JsonRpcResponseSchema`, ..., for a transport of one's
// own) and the durable events are in `a2a-switchboard/protocol`.
export { METHODS } from './protocol/methods.js';
export { WorkEnvelopeSchema } from './protocol/work-envelope.js';
export type {
  Role,
  WorkMessage,
  WorkEnvelope,
  WorkHeaders,
  ItemBudgetHeader,
  Usage,
  WorkError,
  RetryPolicy,
} from './protocol/work-envelope.js';
export { WorkflowDefinitionSchema } from './protocol/workflow.js';
export type { WorkflowDefinitionInput, WorkflowDefinition, WorkflowRef, RunUsage } from './protocol/workflow.js';

// Types the options below share: a database handle, a clock, id sources, a
// logger, an XState inspector.
export type {
  SqliteDatabase,
  SqliteStatement,
  SqliteTransaction,
  SqliteRunResult,
  Durability,
} from './persistence/kernel/database.js';
export type { Clock } from './persistence/kernel/clock.js';
export type { IdSource } from './persistence/kernel/ids.js';
export type { Logger } from './log/logger.js';
export type { ActorInspector } from './actors/inspection.js';

// The broker, embedded in process.
export { createBroker } from './actors/broker/broker.js';
export type { Broker, BrokerOptions, BrokerOpenReport } from './actors/broker/broker.js';
export type { BrokerApi, BrokerMethod, CallOptions } from './actors/broker/api.js';
// A prune of ended tasks (`Broker.pruneTasks`, the `broker.tasks.prune` method).
export type { PruneParams, PruneResult, PruneCounts } from './protocol/retention.js';

// The client: over stdio (`switchboard serve`) or in process.
export { connect } from './transport/client.js';
export type {
  SwitchboardClient,
  ConnectOptions,
  RegisterOptions,
  StreamPair,
  WaitOptions,
} from './transport/client.js';
export { connectInProcess } from './transport/in-process.js';
export type { InProcessConnection } from './transport/in-process.js';
export { ServeProcess, SWITCHBOARD_BIN, serveArguments } from './transport/serve-process.js';
export type { SpawnServeOptions } from './transport/serve-process.js';

// The model-facing `A2A` tool and `delegate()` (the two arms of a tool result
// with the views inside them, and the adapters' tool and message shapes, are
// in `a2a-switchboard/transport`; the tool's input schemas in
// `a2a-switchboard/protocol`).
export type { A2AToolInput } from './protocol/a2a-tool.js';
export { createA2ATool, A2A_TOOL_DESCRIPTION } from './transport/a2a-tool.js';
export type {
  A2ATool,
  A2AToolClient,
  A2AToolResult,
  A2AToolOptions,
} from './transport/a2a-tool.js';
// Adapters of the `A2A` tool for the common LLM SDKs (no runtime dependency on them).
export { toAISDKTool } from './transport/a2a-tool-ai-sdk.js';
export { a2aToolStrictJsonSchema, toOpenAITool } from './transport/a2a-tool-openai.js';
export { toAnthropicTool } from './transport/a2a-tool-anthropic.js';
export { MCP_DEFAULT_MAX_WAIT_SECONDS, createA2AMcpServer } from './transport/a2a-tool-mcp.js';
export type { A2AMcpServerOptions } from './transport/a2a-tool-mcp.js';
export { delegate } from './transport/delegate.js';
export type { Delegation, DelegateOptions } from './transport/delegate.js';

// Work queues: the SQLite and Redis Streams buses, held as a `WorkQueue` (the
// classes, deliveries, dead letters, stats, the defaults and the bus internals
// are in `a2a-switchboard/bus`).
export { createSqliteQueue } from './bus/sqlite/queue.js';
export type { SqliteQueueOptions } from './bus/sqlite/queue.js';
export { createRedisQueue } from './bus/redis/queue.js';
export type { RedisQueueOptions } from './bus/redis/queue.js';
export type { QueueOptions } from './bus/queue-options.js';
export type { WorkQueue, PublishOptions, PublishRequest, PublishResult } from './bus/work-queue.js';

// Context stores: the Context Engine on SQLite and on Redis, held as a
// `ContextStore` (the classes, the records they keep and the retention defaults
// are in `a2a-switchboard/bus`).
export { createSqliteContextStore } from './persistence/context/sqlite-store.js';
export type {
  ContextStore,
  SqliteContextStoreOptions,
  WorkItemContext,
} from './persistence/context/sqlite-store.js';
export { createRedisContextStore } from './persistence/context/redis-store.js';
export type { RedisContextStoreOptions } from './persistence/context/redis-store.js';
export type { ContextRetentionOptions } from './persistence/context/retention.js';

// Workers and pools.
export { createWorker, complete, spawn, suspend, derivedKey } from './actors/worker/worker.js';
export type {
  Worker,
  WorkerOptions,
  WorkHandler,
  HopInput,
  HopResume,
  HopStream,
  HandlerResult,
  Completion,
  Suspension,
  ChildSpawn,
  Effects,
  StopOptions,
} from './actors/worker/worker.js';
export { createPool } from './actors/worker/pool.js';
export type { Pool, PoolOptions } from './actors/worker/pool.js';
export type { PoolDeployment } from './machines/pool-machine.js';

// Model agents: a model run through the Vercel AI SDK as a worker handler.
export { createModelAgent } from './agents/model-agent.js';
export type { ModelAgent, ModelAgentOptions, AgentLanguageModel, AgentTool } from './agents/model-agent.js';
export { McpServerError } from './agents/mcp/mcp-servers.js';
export { RemoteAgentError } from './remote/remote-errors.js';
export { addRemoteAgent, listRemoteAgents, removeRemoteAgent } from './remote/remote-agents.js';
export type { AddRemoteAgentOptions } from './remote/remote-agents.js';
export { startRemoteBridge } from './remote/remote-bridge.js';
export type { RemoteBridge, RemoteBridgeOptions } from './remote/remote-bridge.js';
export type { RemoteAgentRow } from './remote/remotes-file.js';
export type { V1AgentCard } from './protocol/a2a-v1/schemas.js';
export type {
  McpServerConfig,
  McpStdioServer,
  McpHttpServer,
  McpServerErrorCode,
} from './agents/mcp/mcp-servers.js';
export { DEFAULT_PRICING } from './agents/pricing.js';
export type { ModelPricing, PricingTable } from './agents/pricing.js';
export type { AgentBudget } from './agents/steps.js';

// The Coordinator: workflow definitions, governance, work items.
export { createCoordinator } from './actors/coordinator/coordinator.js';
export type {
  Coordinator,
  CoordinatorOptions,
  CreateWorkItem,
  PostgresStorage,
  RoleDeployment,
  SettleOptions,
} from './actors/coordinator/coordinator.js';
export type { ForgetRunsOptions } from './actors/coordinator/forget.js';
// `coordinator.audit`, on either backend (its rows and checkpoints are typed
// in `a2a-switchboard/workflow` and `a2a-switchboard/protocol`).
export type { AuditChain } from './persistence/audit/audit-chain.js';
export type { ItemEvent, ItemEventKind, ItemStatus } from './actors/coordinator/types.js';
export {
  SHIPPED_WORKFLOWS_DIR,
  DEV_SDLC_WORKFLOW_PATH,
  loadWorkflowFile,
  loadWorkflowDirectory,
} from './actors/coordinator/workflow-loader.js';
export type { WorkflowLoadOptions } from './actors/coordinator/workflow-loader.js';
export {
  WorkflowRegistry,
  checkWorkflowDefinition,
  parseWorkflowDefinition,
  parseWorkflowDefinitionJson,
} from './workflow/definition.js';
export type { WorkflowCheck, WorkflowCheckOptions } from './workflow/definition.js';
export { budgetPolicy, roleAllowListPolicy, maxHopsPolicy } from './workflow/governance.js';
export type { HopContext, Policy, PolicyVerdict, NamedPolicy, PolicyEntry, Budget } from './workflow/governance.js';
export type { WorkflowRunState } from './protocol/workflow.js';
// The item and hop records behind `getItem`, `listItems` and `listHops` are in
// `a2a-switchboard/workflow`.
export type { ItemState, ItemBudget } from './workflow/records.js';
export { ItemOutputSchema } from './protocol/item-output.js';
export type {
  ItemOutput,
  CompletedItemOutput,
  FailedItemOutput,
  CanceledItemOutput,
} from './protocol/item-output.js';

// Errors: one base (`SwitchboardError`: a string `code`, a message that says
// what to do, `details`), one subclass per subsystem, and the code lists
// (`ERROR_CODES` maps each class to its codes; each class's own list and the
// JSON-RPC codes are in `a2a-switchboard/protocol`).
export {
  SwitchboardError,
  isSwitchboardError,
  ERROR_CODES,
  SWITCHBOARD_ERROR_CODES,
} from './protocol/switchboard-error.js';
export type {
  SwitchboardErrorCode,
  SwitchboardErrorOptions,
  ErrorClassName,
  ErrorCodeOf,
} from './protocol/switchboard-error.js';
export { BrokerError, isBrokerError } from './protocol/broker-error.js';
export type { BrokerErrorCode, A2AErrorCode } from './protocol/broker-error.js';
export { toJsonRpcError, fromJsonRpcError } from './transport/jsonrpc-errors.js';
export type { JsonRpcErrorObject } from './transport/jsonrpc-errors.js';
export { BrokerOwnershipError } from './persistence/a2a/owner.js';
export type { BrokerOwner } from './persistence/a2a/owner.js';
export { SocketError } from './transport/socket-server.js';
export { TransportError, isTransportError } from './transport/transport-error.js';
export type { TransportErrorCode } from './transport/transport-error.js';
export { BusError } from './bus/work-queue.js';
export type { BusErrorCode } from './bus/work-queue.js';
export { ContextStoreError } from './persistence/context/arguments.js';
export type { ContextStoreErrorCode } from './persistence/context/arguments.js';
export { WorkerError, NonRetryableError } from './actors/worker/worker.js';
export type { WorkerErrorCode } from './actors/worker/worker.js';
export { CoordinatorError } from './actors/coordinator/types.js';
export type { CoordinatorErrorCode } from './actors/coordinator/types.js';
export { CoordinatorLeaseError } from './persistence/coordinator/postgres-lease.js';
export type { CoordinatorLeaseErrorCode } from './persistence/coordinator/postgres-lease.js';
export { WorkflowError } from './protocol/workflow-error.js';
export type { WorkflowErrorCode } from './protocol/workflow-error.js';
export type { WorkflowProblem, WorkflowProblemCode } from './workflow/definition.js';
export { AuditError } from './persistence/audit/audit-error.js';
export type { AuditErrorCode } from './persistence/audit/audit-error.js';
export { SchemaVersionError } from './persistence/kernel/migrations.js';
export { PostgresError } from './persistence/kernel/postgres.js';
