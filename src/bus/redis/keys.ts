import { BusError } from '../work-queue.js';

/**
 * Key names of the Redis Streams work bus. Every key of one deployment starts
 * with the hash tag `{prefix}`, so all of them hash to one Redis Cluster slot:
 * the Lua scripts move messages between a role's stream, its delayed set, its
 * lease set, its dead-letter stream and the per-task locks of any role in one
 * atomic step (per-task serialization holds across roles), which a cluster
 * only allows within one slot. Several deployments (prefixes) share a Redis or
 * spread over a cluster's slots. The scripts build the same names from the
 * prefix (see `bus/redis/scripts.ts`); this module is the one place the layout is
 * written down on the TypeScript side.
 *
 *   {p}:seq                 message id counter (INCRBY)
 *   {p}:roles               roles seen (set)
 *   {p}:r:<role>:s          the role's stream: each entry is a whole message (id, envelope, deliveries, ...), group `g`
 *   {p}:r:<role>:L          live leases: lease token `<entry id>|<task part>|<key>` scored by its deadline (sorted set)
 *   {p}:r:<role>:z          delayed messages' ready times (sorted set); the messages sit in `held`
 *   {p}:r:<role>:held       messages delayed or waiting for their task (hash: id -> JSON)
 *   {p}:r:<role>:dlq        the role's dead-letter stream (whole messages), `dx`: id -> its entry id
 *   {p}:r:<role>:idem       idempotency key -> message id (hash); `ix`: acked keys, one `<ack time>|<JSON keys>` per ack call (list)
 *   {p}:r:<role>:n          counters (hash: `ready`); `oc`, `ocur`, `tr`: orphan-scan and trim throttles
 *   {p}:t:<taskKey>         per-task lock: `l|<role>|<lease token>` (leased) or `p|<id>|<role>` (reserved for the next in line)
 *   {p}:tw:<taskKey>        messages of the task waiting for the lock (list of `<id>|<role>`)
 */

/** The consumer group every role stream has. */
export const REDIS_GROUP = 'g';

const PREFIX_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;

/** Checks a deployment prefix and returns its hash-tagged form `{prefix}`. */
export function hashTag(prefix: unknown): string {
  if (typeof prefix !== 'string' || !PREFIX_PATTERN.test(prefix)) {
    throw new BusError('BUS_INVALID_ARGUMENT', 'prefix must be 1-64 letters, digits, . _ : or -');
  }
  return `{${prefix}}`;
}

export class RedisKeys {
  /** `{prefix}`: the hash tag every key starts with. */
  readonly tag: string;

  constructor(prefix: string) {
    this.tag = hashTag(prefix);
  }

  /** A glob matching every key of this deployment (for `SCAN`). */
  get pattern(): string {
    return `${this.tag}:*`;
  }

  stream(role: string): string {
    return `${this.tag}:r:${role}:s`;
  }

  delayed(role: string): string {
    return `${this.tag}:r:${role}:z`;
  }

  deadLetters(role: string): string {
    return `${this.tag}:r:${role}:dlq`;
  }

  leaseDeadlines(role: string): string {
    return `${this.tag}:r:${role}:L`;
  }

  idempotency(role: string): string {
    return `${this.tag}:r:${role}:idem`;
  }

  taskLock(taskKey: string): string {
    return `${this.tag}:t:${taskKey}`;
  }

  roles(): string {
    return `${this.tag}:roles`;
  }
}
