import { hashTag } from '../../persistence/kernel/redis/hash-tag.js';
import { BusError } from '../work-queue.js';

/**
 * Key names of the Redis Streams work bus. Every key of one deployment starts
 * with the hash tag `{prefix}` (`persistence/kernel/redis/hash-tag.ts`), so
 * all of them hash to one Redis Cluster slot: the Lua scripts move messages
 * between a role's stream, its delayed set, its lease set, its dead-letter
 * stream and the per-task locks of any role in one atomic step (per-task
 * serialization holds across roles), which a cluster only allows within one
 * slot. Several deployments (prefixes) share a Redis or spread over a
 * cluster's slots. The scripts (`bus/redis/scripts/*.lua`) take
 * these names as KEYS, built here, the one place the layout is written down
 * on the TypeScript side; they derive at run time only the keys they discover
 * from data (task locks, roles named by a lock, a waiting list or an envelope:
 * see `scripts/library.lua`), from the same hash tag.
 *
 *   {p}:seq                 message id counter (INCRBY)
 *   {p}:roles               roles seen (set)
 *   {p}:gen                 the deployment's generation (a random id, set if missing: a new one after a data loss)
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

/**
 * A role's keys in the order the scripts take them as a group
 * (`ROLE_KEYS` in `scripts/library.lua`).
 */
const ROLE_KEY_SUFFIXES = ['s', 'z', 'L', 'held', 'dlq', 'dx', 'idem', 'ix', 'n', 'oc', 'ocur', 'tr'] as const;

export class RedisKeys {
  /** `{prefix}`: the hash tag every key starts with. */
  readonly tag: string;
  readonly #groups = new Map<string, readonly string[]>();
  readonly #scriptKeys = new Map<string, readonly string[]>();

  /** A bad prefix is refused with `BUS_INVALID_ARGUMENT`. */
  constructor(prefix: string) {
    this.tag = hashTag(prefix, (message) => new BusError('BUS_INVALID_ARGUMENT', message));
  }

  /** The group of a role's keys (`{p}:r:<role>:s`, `:z`, `:L`, ... in the scripts' order). */
  roleKeys(role: string): readonly string[] {
    let group = this.#groups.get(role);
    if (group === undefined) {
      group = ROLE_KEY_SUFFIXES.map((s) => `${this.tag}:r:${role}:${s}`);
      this.#groups.set(role, group);
    }
    return group;
  }

  /** KEYS of a script that moves messages of one role: seq, roles, the role's group. */
  scriptKeys(role: string): readonly string[] {
    let keys = this.#scriptKeys.get(role);
    if (keys === undefined) {
      keys = [this.seq(), this.roles(), ...this.roleKeys(role)];
      this.#scriptKeys.set(role, keys);
    }
    return keys;
  }

  /** KEYS of a script that moves messages of several roles: seq, roles, each role's group in order of first appearance. */
  scriptKeysOf(roles: Iterable<string>): readonly string[] {
    const seen = new Set<string>();
    for (const role of roles) seen.add(role);
    if (seen.size === 1) return this.scriptKeys(seen.values().next().value!);
    const keys = [this.seq(), this.roles()];
    for (const role of seen) keys.push(...this.roleKeys(role));
    return keys;
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

  counters(role: string): string {
    return `${this.tag}:r:${role}:n`;
  }

  roles(): string {
    return `${this.tag}:roles`;
  }

  seq(): string {
    return `${this.tag}:seq`;
  }

  /** `{p}:gen`: the deployment's generation, set once by whoever reads it first (lost with the server's data). */
  generation(): string {
    return `${this.tag}:gen`;
  }
}
