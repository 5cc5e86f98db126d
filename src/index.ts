/**
 * switchboard: the library entry. Everything a user embedding the runtime
 * needs is exported from here.
 */
export * from './protocol/index.js';
export * from './machines/task-transitions.js';
export * from './machines/task-machine.js';
export * from './machines/agent-machine.js';
export { VERSION } from './version.js';
export { createBroker, brokerClosedError } from './actors/broker/broker.js';
export type { Broker, BrokerOptions, BrokerOpenReport } from './actors/broker/broker.js';
export type { BrokerApi, BrokerMethod } from './actors/broker/api.js';
export * from './protocol/a2a-tool.js';
export { connect, CLIENT_METHODS } from './transport/client.js';
export type {
  SwitchboardClient,
  ClientMethods,
  ConnectOptions,
  RegisterOptions,
  StreamPair,
  WaitOptions,
} from './transport/client.js';
export { ServeProcess, SWITCHBOARD_BIN, serveArguments } from './transport/serve-process.js';
export type { SpawnServeOptions } from './transport/serve-process.js';
export { TransportError, TRANSPORT_ERROR_CODES, isTransportError } from './transport/transport-error.js';
export { SchemaVersionError } from './persistence/kernel/migrations.js';
export * from './transport/jsonrpc-errors.js';
export type { TransportErrorCode } from './transport/transport-error.js';
export { createA2ATool, A2A_TOOL_DESCRIPTION } from './transport/a2a-tool.js';
export type {
  A2ATool,
  A2AToolClient,
  A2AToolResult,
  A2AToolSuccess,
  A2AToolFailure,
  TaskView,
  MessageView,
  ArtifactView,
  EventView,
  AgentView,
} from './transport/a2a-tool.js';
export { delegate } from './transport/delegate.js';
export type { Delegation, DelegateOptions } from './transport/delegate.js';
export { connectInProcess } from './transport/in-process.js';
export type { InProcessConnection } from './transport/in-process.js';
export { BrokerSession } from './transport/broker-session.js';
export type { BrokerSessionOptions } from './transport/broker-session.js';
export { JsonRpcServer } from './transport/jsonrpc-server.js';
export type { Dispatch, JsonRpcServerOptions } from './transport/jsonrpc-server.js';
export { LineSplitter } from './transport/ndjson.js';
export { LineWriter } from './transport/line-writer.js';
export { AgentInbox, MAX_BUFFERED_EVENTS } from './transport/agent-inbox.js';
// The work bus (issue 5): queues, the SQLite backend, the worker harness, the Context Engine and pools.
export * from './protocol/work-envelope.js';
export * from './machines/delivery-machine.js';
export * from './machines/pool-machine.js';
export * from './bus/work-queue.js';
export { SqliteQueue, createSqliteQueue } from './bus/sqlite/queue.js';
export type { SqliteQueueOptions } from './bus/sqlite/queue.js';
export { RedisQueue, createRedisQueue } from './bus/redis/queue.js';
export type { RedisQueueOptions } from './bus/redis/queue.js';
export {
  RedisContextStore,
  createRedisContextStore,
} from './persistence/context/redis-store.js';
export type { RedisContextStoreOptions } from './persistence/context/redis-store.js';
export { RedisKeys, REDIS_GROUP } from './bus/redis/keys.js';
export { replyDispatch, replyInfo, resumeKey, REPLY_METADATA_KEY } from './bus/reply-routing.js';
export type { ReplyInfo } from './bus/reply-routing.js';
export { deliveries } from './bus/deliveries.js';
export type { DeliveriesOptions } from './bus/deliveries.js';
export { createDispatcher } from './bus/dispatcher.js';
export type { Dispatcher, StartHop, Started, RoleQuery, ResultDelivery } from './bus/dispatcher.js';
export * from './persistence/context/sqlite-store.js';
export * from './persistence/context/retention.js';
export {
  createWorker,
  complete,
  suspend,
  derivedKey,
  NonRetryableError,
  WorkerError,
  WORKER_ERROR_CODES,
} from './actors/worker/worker.js';
export type {
  Worker,
  WorkerOptions,
  WorkHandler,
  HopInput,
  HopResume,
  HandlerResult,
  Completion,
  Suspension,
  Effects,
  StopOptions,
  WorkerErrorCode,
} from './actors/worker/worker.js';
export { createPool } from './actors/worker/pool.js';
export type { Pool, PoolOptions } from './actors/worker/pool.js';
// Workflows, the WorkflowRun, governance and the hash-chained audit (issue 6).
export * from './protocol/retry-policy.js';
export * from './protocol/workflow.js';
export * from './protocol/audit.js';
export * from './workflow/definition.js';
export * from './machines/workflow-run-transitions.js';
export * from './machines/workflow-run-machine.js';
export * from './workflow/governance.js';
export * from './persistence/audit/chain.js';
export * from './actors/coordinator/workflow-loader.js';
// The Coordinator (issue 6).
export { createCoordinator } from './actors/coordinator/coordinator.js';
export type {
  Coordinator,
  CoordinatorOptions,
  CreateWorkItem,
  RoleDeployment,
} from './actors/coordinator/coordinator.js';
export type { ForgetRunsOptions } from './actors/coordinator/forget.js';
export * from './actors/coordinator/types.js';
export * from './persistence/coordinator/store.js';
export { COORDINATOR_AGENT_NAME, EDGE_AGENT_NAME, SWITCHBOARD_METADATA_KEY } from './actors/coordinator/human-edge.js';
export { ROLE_AGENTS_CONTEXT } from './actors/coordinator/mirror.js';
export { DEFAULT_MAX_HOPS } from './actors/coordinator/policies.js';
export { hopKey } from './actors/coordinator/engine.js';
export type { TimedStep } from './actors/coordinator/engine.js';
export { ASK_ROLE_PREFIX, AskForwarder, askTarget, routeAsks } from './actors/coordinator/asks.js';
export {
  APPROVALS_ROLE,
  CoordinatorIntake,
  ITEMS_ROLE,
  REQUEST_ATTRIBUTE,
  submitApproval,
  submitItems,
} from './actors/coordinator/intake.js';
export type { ApprovalRequest, IntakeOptions, ItemRequest } from './actors/coordinator/intake.js';
