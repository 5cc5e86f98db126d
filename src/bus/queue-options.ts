import { type Clock, systemClock } from '../persistence/kernel/clock.js';
import { BASE_ROLE_SETTINGS, type ResolvedRoleSettings, checkRole, resolveRoleSettings } from './queue-arguments.js';
import { DEFAULT_IDEMPOTENCY_RETENTION_MS, DEFAULT_JITTER_RATIO, type RoleSettings } from './work-queue.js';

/** The options every `WorkQueue` backend takes: per-role settings, clock, jitter and idempotency retention. */
export interface QueueOptions {
  /**
   * Settings of every role, then per role overrides (`roles`).
   * @defaultValue the bus's defaults (`DEFAULT_RETRY_POLICY`, `DEFAULT_MAX_DELIVERIES`)
   */
  defaults?: RoleSettings;
  /**
   * Settings of single roles, by role, over `defaults`.
   * @defaultValue none: every role has `defaults`
   */
  roles?: Record<string, RoleSettings>;
  /**
   * Lease deadlines, delays and retry times (on Redis too: the client's clock, never the server's).
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * Returns [0, 1): the jitter source.
   * @defaultValue `Math.random`
   */
  random?: () => number;
  /**
   * How much a retry's backoff varies at random, as a fraction of it.
   * @defaultValue `DEFAULT_JITTER_RATIO` (0.2)
   */
  jitterRatio?: number;
  /**
   * How long an acked message's idempotency key keeps refusing a duplicate
   * publish (on Redis, in the server's time).
   * @defaultValue `DEFAULT_IDEMPOTENCY_RETENTION_MS` (1 h)
   */
  idempotencyRetentionMs?: number;
}

/** `QueueOptions` with every default filled in and every role's settings resolved. */
export interface CompiledQueueOptions {
  readonly clock: Clock;
  readonly random: () => number;
  readonly jitterRatio: number;
  readonly idempotencyRetentionMs: number;
  /** The settings of a role without settings of its own. */
  readonly defaults: ResolvedRoleSettings;
  /** The roles with settings of their own. */
  readonly roles: ReadonlyMap<string, ResolvedRoleSettings>;
}

/** Fills in the defaults and resolves the role settings: a bad role name or setting is refused with `BUS_INVALID_ARGUMENT`. */
export function compileQueueOptions(options: QueueOptions): CompiledQueueOptions {
  const defaults = resolveRoleSettings(BASE_ROLE_SETTINGS, options.defaults);
  const roles = new Map<string, ResolvedRoleSettings>();
  for (const [role, settings] of Object.entries(options.roles ?? {})) {
    roles.set(checkRole(role), resolveRoleSettings(defaults, settings));
  }
  return {
    clock: options.clock ?? systemClock,
    random: options.random ?? Math.random,
    jitterRatio: options.jitterRatio ?? DEFAULT_JITTER_RATIO,
    idempotencyRetentionMs: options.idempotencyRetentionMs ?? DEFAULT_IDEMPOTENCY_RETENTION_MS,
    defaults,
    roles,
  };
}
