/**
 * `a2a-switchboard/bus`: the work bus beyond its create functions: the queue
 * classes, the dispatcher, reply routing, the Redis key layout, the queues'
 * and context stores' defaults, and the workers' error codes.
 *
 * @packageDocumentation
 */

// The queue interface and its two backends.
export * from '../bus/work-queue.js';
export { SqliteQueue, createSqliteQueue } from '../bus/sqlite/queue.js';
export type { SqliteQueueOptions } from '../bus/sqlite/queue.js';
export { RedisQueue, createRedisQueue } from '../bus/redis/queue.js';
export type { RedisQueueOptions } from '../bus/redis/queue.js';
export type { QueueOptions } from '../bus/queue-options.js';
export { RedisKeys, REDIS_GROUP } from '../bus/redis/keys.js';
// Consuming, dispatching hops and routing replies.
export { deliveries } from '../bus/deliveries.js';
export type { DeliveriesOptions } from '../bus/deliveries.js';
export { createDispatcher } from '../bus/dispatcher.js';
export type { Dispatcher, StartHop, Started, RoleQuery, ResultDelivery } from '../bus/dispatcher.js';
export { replyDispatch, replyInfo, resumeKey, REPLY_METADATA_KEY } from '../bus/reply-routing.js';
export type { ReplyInfo } from '../bus/reply-routing.js';
// The Context Engine: its contract, its two backends and the records it keeps
// (the create functions are also at the package root).
export { createSqliteContextStore } from '../persistence/context/sqlite-store.js';
export type {
  ContextStore,
  SqliteContextStore,
  SqliteContextStoreOptions,
  HopOutput,
  WorkItemContext,
  Checkpoint,
  PendingPublish,
  HopCompletion,
  CompletionRecord,
} from '../persistence/context/sqlite-store.js';
export { createRedisContextStore } from '../persistence/context/redis-store.js';
export type { RedisContextStore, RedisContextStoreOptions } from '../persistence/context/redis-store.js';
export type { ContextRetentionOptions, PruneCounts, PruneOutcome } from '../persistence/context/retention.js';
// The context stores' retention defaults, and the code lists of the context
// stores' and the workers' errors (the classes are at the package root).
export {
  DEFAULT_CONTEXT_RETENTION_MS,
  DEFAULT_CONTEXT_PRUNE_INTERVAL_MS,
  DEFAULT_CONTEXT_PRUNE_BATCH,
  MAX_CONTEXT_RETENTION_MS,
} from '../persistence/context/retention.js';
export { CONTEXT_STORE_ERROR_CODES } from '../persistence/context/arguments.js';
export { WORKER_ERROR_CODES } from '../actors/worker/worker.js';
