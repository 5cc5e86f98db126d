import { type CompiledQueueOptions, type QueueOptions, compileQueueOptions } from '../queue-options.js';
import { BusError, DEFAULT_IDEMPOTENCY_RETENTION_MS } from '../work-queue.js';
import { RedisKeys } from './keys.js';

/** Options of `createRedisQueue`: the server URL, key prefix, per-role settings, clock and timings. */
export interface RedisQueueOptions extends QueueOptions {
  /**
   * `redis://host:port[/db]`.
   * @defaultValue `'redis://127.0.0.1:6379'`
   */
  url?: string;
  /**
   * The deployment's key prefix: every key is `{prefix}:...` (one hash slot).
   * @defaultValue `'switchboard'`
   */
  prefix?: string;
  /**
   * Entries a consumer read with a blocking `XREADGROUP` but never leased (its
   * process died in between) are claimed with `XAUTOCLAIM` once idle this long.
   * @defaultValue 30 000 ms
   */
  orphanIdleMs?: number;
  /**
   * Blocking connections for concurrent waiting consumes; more waiters poll.
   * @defaultValue 16
   */
  maxBlockingConnections?: number;
  /**
   * Longest single `XREADGROUP ... BLOCK`; a consume waits longer in several.
   * Also bounds how late a waiting consumer notices a delayed message or an
   * expired lease that another process created.
   * @defaultValue 1000 ms
   */
  maxBlockMs?: number;
  /**
   * Messages per publish script call in `publishMany`: each call is atomic.
   * @defaultValue 500
   */
  publishBatch?: number;
  /**
   * Connection errors (node-redis reconnects by itself).
   * @defaultValue ignored
   */
  onConnectionError?: (error: Error) => void;
  /**
   * Client name prefix shown by `CLIENT LIST`.
   * @defaultValue `'switchboard'`
   */
  clientName?: string;
  /**
   * How long connecting may take before `createRedisQueue` (or a consume's first wait) fails.
   * @defaultValue 5000 ms
   */
  connectTimeoutMs?: number;
}

/** `RedisQueueOptions` checked, every default filled in, the prefix compiled into the key layout. */
export interface CompiledRedisQueueOptions extends CompiledQueueOptions {
  readonly url: string;
  readonly keys: RedisKeys;
  readonly clientName: string;
  readonly orphanIdleMs: number;
  readonly maxBlockingConnections: number;
  readonly maxBlockMs: number;
  readonly publishBatch: number;
  readonly onConnectionError: (error: Error) => void;
  readonly connectTimeoutMs: number;
}

/**
 * Checks `options` and fills in the defaults: a bad prefix, a count or
 * duration that is not an integer of at least 1, or a bad role name or
 * role setting, is refused with `BUS_INVALID_ARGUMENT` (in that order).
 */
export function compileRedisQueueOptions(options: RedisQueueOptions): CompiledRedisQueueOptions {
  const keys = new RedisKeys(options.prefix ?? 'switchboard');
  const numbers = {
    connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    orphanIdleMs: options.orphanIdleMs ?? 30_000,
    maxBlockMs: options.maxBlockMs ?? 1000,
    maxBlockingConnections: options.maxBlockingConnections ?? 16,
    publishBatch: options.publishBatch ?? 500,
    idempotencyRetentionMs: options.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS,
  };
  for (const [name, value] of Object.entries(numbers)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new BusError('BUS_INVALID_ARGUMENT', `${name} must be an integer >= 1`);
    }
  }
  return {
    ...compileQueueOptions(options),
    url: options.url ?? 'redis://127.0.0.1:6379',
    keys,
    clientName: options.clientName ?? 'switchboard',
    onConnectionError: options.onConnectionError ?? (() => undefined),
    ...numbers,
  };
}
