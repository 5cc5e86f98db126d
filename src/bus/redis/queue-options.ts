import { type Clock, systemClock } from '../../persistence/kernel/clock.js';
import { BASE_ROLE_SETTINGS, type ResolvedRoleSettings, checkRole, resolveRoleSettings } from '../queue-arguments.js';
import { BusError, DEFAULT_IDEMPOTENCY_RETENTION_MS, DEFAULT_JITTER_RATIO, type RoleSettings } from '../work-queue.js';
import { RedisKeys } from './keys.js';

/** Options of `createRedisQueue`: the server URL, key prefix, per-role settings, clock and timings. */
export interface RedisQueueOptions {
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
   * Settings of every role, then per role overrides.
   * @defaultValue the bus's defaults (`DEFAULT_RETRY_POLICY`, `DEFAULT_MAX_DELIVERIES`)
   */
  defaults?: RoleSettings;
  /** @defaultValue none: every role has `defaults` */
  roles?: Record<string, RoleSettings>;
  /**
   * Lease deadlines, delays and retry times (client-side; the server's clock is not used for them).
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * Returns [0, 1): the jitter source.
   * @defaultValue `Math.random`
   */
  random?: () => number;
  /** @defaultValue `DEFAULT_JITTER_RATIO` (0.2) */
  jitterRatio?: number;
  /**
   * How long an acked message's idempotency key keeps refusing a duplicate publish (server time).
   * @defaultValue `DEFAULT_IDEMPOTENCY_RETENTION_MS` (1 h)
   */
  idempotencyRetentionMs?: number;
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
export interface CompiledRedisQueueOptions {
  readonly url: string;
  readonly keys: RedisKeys;
  readonly clientName: string;
  readonly clock: Clock;
  readonly random: () => number;
  readonly jitterRatio: number;
  readonly idempotencyRetentionMs: number;
  readonly orphanIdleMs: number;
  readonly maxBlockingConnections: number;
  readonly maxBlockMs: number;
  readonly publishBatch: number;
  readonly onConnectionError: (error: Error) => void;
  readonly connectTimeoutMs: number;
  /** The settings of a role without settings of its own. */
  readonly defaults: ResolvedRoleSettings;
  /** The roles with settings of their own. */
  readonly roles: ReadonlyMap<string, ResolvedRoleSettings>;
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
  const defaults = resolveRoleSettings(BASE_ROLE_SETTINGS, options.defaults);
  const roles = new Map<string, ResolvedRoleSettings>();
  for (const [role, settings] of Object.entries(options.roles ?? {})) {
    roles.set(checkRole(role), resolveRoleSettings(defaults, settings));
  }
  return {
    url: options.url ?? 'redis://127.0.0.1:6379',
    keys,
    clientName: options.clientName ?? 'switchboard',
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    jitterRatio: options.jitterRatio ?? DEFAULT_JITTER_RATIO,
    onConnectionError: options.onConnectionError ?? (() => undefined),
    ...numbers,
    defaults,
    roles,
  };
}
