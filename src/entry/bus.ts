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
export { RedisKeys, REDIS_GROUP } from '../bus/redis/keys.js';
// Consuming, dispatching hops and routing replies.
export { deliveries } from '../bus/deliveries.js';
export type { DeliveriesOptions } from '../bus/deliveries.js';
export { createDispatcher } from '../bus/dispatcher.js';
export type { Dispatcher, StartHop, Started, RoleQuery, ResultDelivery } from '../bus/dispatcher.js';
export { replyDispatch, replyInfo, resumeKey, REPLY_METADATA_KEY } from '../bus/reply-routing.js';
export type { ReplyInfo } from '../bus/reply-routing.js';
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
