/**
 * `a2a-switchboard/bus`: the work bus beyond its create functions: the queue
 * classes, the dispatcher, reply routing and the Redis key layout.
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
