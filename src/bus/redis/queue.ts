import { randomBytes, randomUUID } from 'node:crypto';
import { LEASE_EXPIRED_ERROR, decideNack } from '../../machines/delivery-machine.js';
import type { BusEnvelope, RetryPolicy, WorkError } from '../../protocol/work-envelope.js';
import { CommandTimeouts } from '../../persistence/kernel/redis/command-timeouts.js';
import { type ScriptConnection, runScript } from '../../persistence/kernel/redis/lua-script.js';
import {
  type NodeRedisModule,
  type RedisClient,
  connectWithin,
  createRedisClient,
  loadNodeRedis,
} from '../../persistence/kernel/redis/node-redis.js';
import { safeRedisUrl } from '../../persistence/kernel/redis/url.js';
import {
  type CheckedPublish,
  type ResolvedRoleSettings,
  checkConsume,
  checkExtend,
  checkNack,
  checkPublish,
  checkRole,
} from '../queue-arguments.js';
import {
  BusError,
  type ConsumeOptions,
  type DeadLetter,
  type DeadLetterQueue,
  type Delivery,
  type NackOptions,
  type NackResult,
  type PublishOptions,
  type PublishRequest,
  type PublishResult,
  type QueueStats,
  type WorkQueue,
} from '../work-queue.js';
import { BlockingReads, sleep } from './blocking-reads.js';
import type { RedisKeys } from './keys.js';
import { type CompiledRedisQueueOptions, type RedisQueueOptions, compileRedisQueueOptions } from './queue-options.js';
import { type BusScripts, busScripts } from './scripts.js';
import {
  type EntryFields,
  type ReadEntry,
  type RedisDelivery,
  deliveryOf,
  entryFields,
  parseJson,
} from './stream-entries.js';
import { TickBatch } from './tick-batch.js';

export type { RedisQueueOptions } from './queue-options.js';

/** A lease as the lease script returns it: entry id, lease token, the entry's fields (unless the caller sent them). */
type LeaseRow = [string, string, string[]?];

const EXPIRED_ERROR = JSON.stringify({
  type: LEASE_EXPIRED_ERROR,
  message: 'the lease expired before the delivery was acked',
} satisfies WorkError);

const DEAD_BATCH = 500;
/** Deliveries per ack script call (each is atomic). */
const ACK_BATCH = 500;

/**
 * The work bus on Redis Streams (Redis 7.0+, node-redis). One stream and one
 * consumer group per role; consumers wait in `XREADGROUP ... BLOCK` on
 * connections of their own; every state change is one Lua script (atomic).
 * Leases are tracked per message with a fencing lease id and a deadline in a
 * per-role sorted set (the visibility timeout is per lease and extended by
 * heartbeats, which `XAUTOCLAIM`'s single idle time cannot express);
 * `XAUTOCLAIM` reclaims entries read but never leased by a consumer that died.
 * Several processes share the queues through the same Redis and prefix.
 */
export class RedisQueue implements WorkQueue {
  readonly backend = 'redis';
  readonly deadLetters: DeadLetterQueue;
  readonly keys: RedisKeys;

  /** The options checked, with their defaults. */
  private readonly options: CompiledRedisQueueOptions;
  /** The scripts' answers are waited for under these (one timer), not node-redis's timer per command. */
  private readonly timeouts = new CommandTimeouts();
  /** A turn's `publish` and `publishMany` calls, sent as one script call (see `publishCalls`). */
  private readonly publishes = new TickBatch<readonly CheckedPublish[], PublishResult[]>((calls) =>
    this.publishCalls(calls),
  );
  /**
   * A turn's `ack` calls, sent as one script call (`ackMany`'s). The same
   * lease twice in a turn: the first call acks it, the others find it gone,
   * as calls one after another would.
   */
  private readonly acks = new TickBatch<RedisDelivery, boolean>(async (own) => {
    const at = new Map<string, number>();
    const unique: RedisDelivery[] = [];
    const place = own.map((d) => {
      const key = `${d.role}\u0000${d.leaseId}`;
      if (at.has(key)) return -1;
      at.set(key, unique.length);
      unique.push(d);
      return unique.length - 1;
    });
    const acked = await this.ackOwn(unique);
    return place.map((i) => i >= 0 && acked[i] === true);
  });
  /** node-redis, the command connection and the scripts: set by `connect`. */
  private redis: NodeRedisModule | undefined;
  private commandConnection: RedisClient | undefined;
  private scripts!: BusScripts;
  /** The consumers' blocking reads, on connections of their own. */
  private readonly blocking: BlockingReads;
  private readonly nonce = randomBytes(6).toString('hex');
  private closed = false;
  /** Roles of deliveries already checked (settling skips the schema check for them). */
  private readonly checkedRoles = new Set<string>();
  /** Consumers whose blocking read failed: their next lease re-reads their pending entries (id 0). */
  private readonly recover = new Set<string>();
  /**
   * Roles taken over from a dead consumer (`expireLeases`): the next lease of
   * the role claims at once what another consumer read but never leased (a
   * blocking read answered as it died), not once idle `orphanIdleMs`.
   */
  private readonly orphansNow = new Set<string>();

  constructor(options: RedisQueueOptions = {}) {
    this.options = compileRedisQueueOptions(options);
    this.keys = this.options.keys;
    this.blocking = new BlockingReads({
      maxConnections: this.options.maxBlockingConnections,
      newClient: (kind) => this.newClient(kind),
      open: (client) => this.open(client),
      command: () => this.commandConnection,
      readFailed: (consumer) => this.recover.add(consumer),
    });
    this.deadLetters = {
      list: (role, opts) => this.listDead(role, opts),
      replay: (role, opts) => this.moveDead('replay', role, opts),
      purge: (role, opts) => this.moveDead('purge', role, opts),
    };
  }

  /**
   * Loads node-redis (the optional peer dependency `redis`: a clear BUS_BACKEND
   * error says what to install when it is missing) and connects the command
   * connection. `createRedisQueue` calls it.
   */
  async connect(): Promise<this> {
    this.assertOpen();
    this.redis ??= await loadNodeRedis(
      'the Redis Streams work bus',
      (message, cause) => new BusError('BUS_BACKEND', message, { cause }),
    );
    this.scripts = busScripts();
    this.commandConnection ??= this.newClient('cmd');
    await this.open(this.commandConnection);
    return this;
  }

  /** The command connection; calls before `connect` fail with BUS_BACKEND. */
  private get command(): RedisClient {
    if (this.commandConnection === undefined) {
      throw new BusError(
        'BUS_BACKEND',
        'the Redis work queue is not connected: call connect() first, or use createRedisQueue()',
      );
    }
    return this.commandConnection;
  }

  private run(script: keyof BusScripts, keys: readonly string[], args: readonly string[]): Promise<unknown> {
    return runScript(this.command as unknown as ScriptConnection, this.scripts[script], keys, args, this.timeouts);
  }

  /** Connects a client, or fails with BUS_BACKEND after the connect timeout (the client is destroyed). */
  private async open(client: RedisClient): Promise<void> {
    try {
      await connectWithin(
        client,
        this.options.connectTimeoutMs,
        () =>
          new BusError(
            'BUS_BACKEND',
            `no answer from Redis at ${safeRedisUrl(this.options.url)} within ${this.options.connectTimeoutMs} ms`,
          ),
      );
    } catch (error) {
      throw this.backendError(error);
    }
  }

  private newClient(kind: string): RedisClient {
    if (this.redis === undefined)
      throw new BusError('BUS_BACKEND', 'the Redis work queue is not connected: call connect() first');
    // With no offline queue, a call made while the connection is down fails at once (BUS_BACKEND): a
    // consume retries within its wait, a caller of publish/ack retries or lets the lease expire.
    const client = createRedisClient(this.redis, {
      url: this.options.url,
      name: `${this.options.clientName}:${kind}:${this.nonce}`,
      connectTimeoutMs: this.options.connectTimeoutMs,
    });
    client.on('error', (error: Error) => this.options.onConnectionError(error));
    return client;
  }

  private settings(role: string): ResolvedRoleSettings {
    return this.options.roles.get(role) ?? this.options.defaults;
  }

  private assertOpen(): void {
    if (this.closed) throw new BusError('BUS_CLOSED', 'the work queue is closed');
  }

  private backendError(error: unknown): BusError {
    if (error instanceof BusError) return error;
    if (this.closed) return new BusError('BUS_CLOSED', 'the work queue is closed', { cause: error });
    return new BusError('BUS_BACKEND', `Redis work queue: ${(error as Error)?.message ?? String(error)}`, {
      cause: error,
    });
  }

  private async call<T>(op: () => Promise<unknown>): Promise<T> {
    try {
      return (await op()) as T;
    } catch (error) {
      throw this.backendError(error);
    }
  }

  // ---------------------------------------------------------------- publish

  async publish(role: string, envelope: BusEnvelope, options: PublishOptions): Promise<PublishResult> {
    this.assertOpen();
    // Checked alone (a bad one is refused alone), then published with the turn's other publishes.
    const [result] = await this.publishes.add([checkPublish({ ...(options ?? {}), role, envelope } as PublishRequest)]);
    return result!;
  }

  async publishMany(messages: readonly PublishRequest[]): Promise<PublishResult[]> {
    this.assertOpen();
    if (!Array.isArray(messages)) throw new BusError('BUS_INVALID_ARGUMENT', 'publishMany takes an array');
    // All checked first (a bad one publishes nothing), then published with the turn's other publishes, in
    // the same script call (atomic together) unless they are more than a batch.
    const checked = messages.map((m) => checkPublish(m));
    return checked.length === 0 ? [] : this.publishes.add(checked);
  }

  /**
   * A turn's publish calls: as many whole calls per script call as fit in a
   * batch (a call's messages are published together); a call of more than a
   * batch goes alone, a batch at a time. One answer per call.
   */
  private async publishCalls(calls: readonly (readonly CheckedPublish[])[]): Promise<PublishResult[][]> {
    const out: PublishResult[][] = [];
    let together: (readonly CheckedPublish[])[] = [];
    let size = 0;
    const send = async () => {
      if (together.length === 0) return;
      const results = await this.publishChecked(together.flat());
      let at = 0;
      for (const call of together) {
        out.push(results.slice(at, at + call.length));
        at += call.length;
      }
      together = [];
      size = 0;
    };
    for (const call of calls) {
      if (size + call.length > this.options.publishBatch) await send();
      together.push(call);
      size += call.length;
    }
    await send();
    return out;
  }

  private async publishChecked(checked: readonly CheckedPublish[]): Promise<PublishResult[]> {
    const results: PublishResult[] = [];
    for (let i = 0; i < checked.length; i += this.options.publishBatch) {
      const batch = checked.slice(i, i + this.options.publishBatch);
      const now = String(this.options.clock.now());
      const args: string[] = [];
      for (const p of batch) this.pushPublishArgs(args, p, now);
      const keys = this.keys.scriptKeysOf(batch.map((p) => p.role));
      const flat = await this.call<(string | number)[]>(() => this.run('publish', keys, args));
      for (let j = 0; j < flat.length; j += 2) results.push({ id: String(flat[j]), duplicate: flat[j + 1] === 1 });
    }
    return results;
  }

  /** Role, key, delay, the x field after the id, field count, then the other fields in entry order (see the PUBLISH script). */
  private pushPublishArgs(args: string[], p: CheckedPublish, now: string): void {
    const at = p.delayMs > 0 ? String(Number(now) + p.delayMs) : now;
    const start = args.length;
    args.push(p.role, p.idempotencyKey, String(p.delayMs), `|0|${now}|${at}`, '4');
    args.push('k', p.idempotencyKey, 'env', JSON.stringify(p.envelope));
    if (p.taskKey !== undefined) args.push('t', p.taskKey);
    if (p.retryPolicy !== undefined) {
      args.push('rp', JSON.stringify(p.retryPolicy));
      if (p.retryPolicy.maximumAttempts !== undefined) args.push('ma', String(p.retryPolicy.maximumAttempts));
    }
    args[start + 4] = String(args.length - start - 5);
  }

  // ---------------------------------------------------------------- consume

  private async lease(
    role: string,
    consumer: string,
    visibilityTimeoutMs: number,
    max: number,
    entries: readonly ReadEntry[],
  ): Promise<{ deliveries: RedisDelivery[]; next: number }> {
    const settings = this.settings(role);
    // The script reads new entries itself (XREADGROUP inside the script: one
    // round trip; a plain XREADGROUP first measured more client CPU per hop
    // than it saved on the server).
    const mode = entries.length === 0 && this.recover.has(consumer) ? 'recover' : 'ids';
    const args: string[] = [
      role,
      String(this.options.clock.now()),
      consumer,
      String(max),
      String(visibilityTimeoutMs),
      String(settings.maxDeliveries),
      String(settings.retryPolicy.maximumAttempts),
      EXPIRED_ERROR,
      mode,
      // ':now': claim every entry read but not leased, whatever its idle time (a role just taken over).
      this.options.orphanIdleMs > 0 && this.orphansNow.delete(role)
        ? `${this.options.orphanIdleMs}:now`
        : String(this.options.orphanIdleMs),
    ];
    // Entries read by a blocking read: the script needs their ids, message id,
    // key and task key; their fields stay here.
    const read = new Map<string, EntryFields>();
    for (const [entry, flat] of entries) {
      const f = entryFields(flat);
      read.set(entry, f);
      args.push(entry, f.m, f.k, f.t);
    }
    const [rows, next] = await this.call<[LeaseRow[], string]>(() =>
      this.run('lease', this.keys.scriptKeys(role), args),
    );
    if (mode === 'recover') this.recover.delete(consumer);
    const deliveries: RedisDelivery[] = [];
    for (const [entry, leaseId, flat] of rows) {
      const f = flat === undefined ? read.get(entry) : entryFields(flat);
      if (f !== undefined) deliveries.push(deliveryOf(f, { role, leaseId, consumer, visibilityTimeoutMs }));
    }
    return { deliveries, next: Number(next) };
  }

  async consume(role: string, options: ConsumeOptions): Promise<Delivery[]> {
    this.assertOpen();
    const c = checkConsume(role, options);
    const deadline = Date.now() + c.waitMs;
    for (;;) {
      let got: { deliveries: RedisDelivery[]; next: number };
      try {
        got = await this.lease(c.role, c.consumer, c.visibilityTimeoutMs, c.max, []);
      } catch (error) {
        if (this.closed) return [];
        this.recover.add(c.consumer);
        if (Date.now() + 50 >= deadline || c.signal?.aborted) throw error;
        await sleep(50, c.signal);
        continue;
      }
      if (got.deliveries.length > 0 || this.closed || c.signal?.aborted) return got.deliveries;
      let wait = deadline - Date.now();
      if (wait <= 0) return [];
      if (got.next >= 0) wait = Math.min(wait, Math.max(1, got.next - this.options.clock.now()));
      const entries = await this.blocking.read(
        this.keys.stream(c.role),
        c.consumer,
        c.max,
        Math.min(wait, this.options.maxBlockMs),
        c.signal,
      );
      if (this.closed) return [];
      if (entries.length > 0) {
        try {
          got = await this.lease(c.role, c.consumer, c.visibilityTimeoutMs, c.max, entries);
        } catch (error) {
          if (this.closed) return [];
          // The entries stay pending for this consumer: the next lease re-reads them.
          this.recover.add(c.consumer);
          throw error;
        }
        if (got.deliveries.length > 0) return got.deliveries;
      }
      if (c.signal?.aborted || Date.now() >= deadline) return [];
    }
  }

  // ---------------------------------------------------------------- settle

  private own(delivery: Delivery): RedisDelivery {
    if (
      delivery === null ||
      typeof delivery !== 'object' ||
      typeof delivery.leaseId !== 'string' ||
      typeof delivery.id !== 'string' ||
      !/^[0-9]{1,15}$/.test(delivery.id)
    ) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'not a delivery of this queue');
    }
    if (!this.checkedRoles.has(delivery.role)) {
      checkRole(delivery.role);
      this.checkedRoles.add(delivery.role);
    }
    return delivery as RedisDelivery;
  }

  async ack(delivery: Delivery): Promise<boolean> {
    this.assertOpen();
    // Checked alone, then acked with the turn's other acks.
    return this.acks.add(this.own(delivery));
  }

  async ackMany(deliveries: readonly Delivery[]): Promise<boolean[]> {
    this.assertOpen();
    if (!Array.isArray(deliveries)) throw new BusError('BUS_INVALID_ARGUMENT', 'ackMany takes an array');
    return this.ackOwn(deliveries.map((d) => this.own(d)));
  }

  private async ackOwn(own: readonly RedisDelivery[]): Promise<boolean[]> {
    if (own.length === 0) return [];
    const out: boolean[] = [];
    for (let i = 0; i < own.length; i += ACK_BATCH) {
      const chunk = own.slice(i, i + ACK_BATCH);
      const args: string[] = [String(this.options.idempotencyRetentionMs), String(this.options.clock.now())];
      for (const d of chunk) args.push(d.role, d.leaseId);
      const keys = this.keys.scriptKeysOf(chunk.map((d) => d.role));
      const res = await this.call<number[]>(() => this.run('ack', keys, args));
      for (const n of res) out.push(n === 1);
    }
    return out;
  }

  async heartbeat(delivery: Delivery, extendMs?: number): Promise<number | null> {
    this.assertOpen();
    const d = this.own(delivery);
    const extend = checkExtend(extendMs, d.visibilityTimeoutMs);
    const until = this.options.clock.now() + extend;
    const ok = await this.call<number>(() =>
      this.run('heartbeat', [this.keys.leaseDeadlines(d.role)], [d.leaseId, String(until)]),
    );
    return ok === 1 ? until : null;
  }

  async expireLeases(role: string): Promise<number> {
    this.assertOpen();
    checkRole(role);
    const now = this.options.clock.now();
    const ended = await this.call<number>(() =>
      this.run('expireLeases', [this.keys.leaseDeadlines(role)], [String(now)]),
    );
    this.orphansNow.add(role);
    return ended;
  }

  async generation(): Promise<string> {
    this.assertOpen();
    return this.call<string>(() => this.run('generation', [this.keys.generation()], [randomUUID()]));
  }

  async nack(delivery: Delivery, options: NackOptions): Promise<NackResult> {
    this.assertOpen();
    const d = this.own(delivery);
    const opts = checkNack(options);
    const policy: RetryPolicy = { ...this.settings(d.role).retryPolicy, ...(d.retryPolicy ?? {}) };
    const decision = decideNack({
      policy,
      deliveries: d.deliveries,
      maxDeliveries: this.settings(d.role).maxDeliveries,
      error: opts.error,
      retryable: opts.retryable,
      ...(opts.delayMs === undefined ? {} : { delayMs: opts.delayMs }),
      ...(opts.counted === undefined ? {} : { counted: opts.counted }),
      jitterRatio: this.options.jitterRatio,
      random: this.options.random,
    });
    const now = this.options.clock.now();
    const at = decision.to === 'dead' ? now : now + decision.delayMs;
    const ok = await this.call<number>(() =>
      this.run('settle', this.keys.scriptKeys(d.role), [
        d.role,
        d.leaseId,
        String(now),
        decision.to === 'dead' ? 'dead' : 'retry',
        String(at),
        JSON.stringify(opts.error),
      ]),
    );
    if (ok !== 1) return { outcome: 'lease-lost' };
    if (decision.to === 'dead') return { outcome: 'dead-letter', reason: decision.reason };
    return { outcome: 'retry', availableAt: at, delayMs: decision.delayMs };
  }

  async release(delivery: Delivery): Promise<boolean> {
    this.assertOpen();
    const d = this.own(delivery);
    const now = String(this.options.clock.now());
    const ok = await this.call<number>(() =>
      this.run('settle', this.keys.scriptKeys(d.role), [d.role, d.leaseId, now, 'release', now, '']),
    );
    return ok === 1;
  }

  // ---------------------------------------------------------------- dead letters

  private async listDead(role: string, options: { limit?: number; offset?: number } = {}): Promise<DeadLetter[]> {
    this.assertOpen();
    const r = checkRole(role);
    const limit = options.limit ?? 100;
    const offset = options.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000 || !Number.isInteger(offset) || offset < 0) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'limit must be an integer in [1, 10000] and offset >= 0');
    }
    const rows = await this.call<string[][]>(() =>
      this.run('listDead', [this.keys.deadLetters(r)], [String(offset), String(limit)]),
    );
    return rows.map(([id, envelope, idempotencyKey, taskKey, deliveries, lastError, publishedAt, deadAt]) => ({
      id: id!,
      role: r,
      envelope: JSON.parse(envelope!) as BusEnvelope,
      idempotencyKey: idempotencyKey!,
      taskKey: taskKey === '' ? undefined : taskKey,
      deliveries: Number(deliveries),
      lastError: parseJson<WorkError>(lastError ?? '') ?? { type: 'Unknown', message: '' },
      publishedAt: Number(publishedAt),
      deadAt: Number(deadAt),
    }));
  }

  private checkIds(ids: readonly string[] | undefined): readonly string[] | undefined {
    if (ids === undefined) return undefined;
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || !/^[0-9]{1,15}$/.test(id))) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'ids must be message ids of this queue');
    }
    return ids;
  }

  private async moveDead(
    action: 'replay' | 'purge',
    role: string,
    options: { ids?: readonly string[] } = {},
  ): Promise<number> {
    this.assertOpen();
    const r = checkRole(role);
    const ids = this.checkIds(options.ids);
    const run = (chunk: readonly string[]) =>
      this.call<number>(() =>
        this.run('dead', this.keys.scriptKeys(r), [
          r,
          String(this.options.clock.now()),
          action,
          String(DEAD_BATCH),
          ...chunk,
        ]),
      );
    let total = 0;
    if (ids !== undefined) {
      for (let i = 0; i < ids.length; i += DEAD_BATCH) total += await run(ids.slice(i, i + DEAD_BATCH));
      return total;
    }
    // All of them, oldest first, a batch per script call (a long dead-letter
    // queue never blocks Redis for long). Bounded: letters dead-lettered again
    // meanwhile are not chased.
    const before = await this.call<number>(() => this.command.xLen(this.keys.deadLetters(r)));
    while (total < before) {
      const n = await run([]);
      total += n;
      if (n === 0) break;
    }
    return total;
  }

  // ---------------------------------------------------------------- stats and upkeep

  async stats(role: string): Promise<QueueStats> {
    this.assertOpen();
    const r = checkRole(role);
    const now = this.options.clock.now();
    const [depth, delayed, inFlight, deadLetters, oldest] = await this.call<[number, number, number, number, string]>(
      () =>
        this.run(
          'stats',
          [
            this.keys.stream(r),
            this.keys.delayed(r),
            this.keys.leaseDeadlines(r),
            this.keys.counters(r),
            this.keys.deadLetters(r),
          ],
          [String(now)],
        ),
    );
    const since = Number(oldest);
    return {
      role: r,
      depth: Number(depth),
      delayed: Number(delayed),
      inFlight: Number(inFlight),
      lag: since >= 0 ? Math.max(0, now - since) : 0,
      deadLetters: Number(deadLetters),
    };
  }

  /**
   * `stats` of every role of the deployment (each role whose stream exists:
   * published to or consumed from), by role name. Read-only: what
   * `switchboard top --bus` shows.
   */
  async statsOfAllRoles(): Promise<QueueStats[]> {
    this.assertOpen();
    const roles = await this.call<string[]>(() => this.command.sMembers(this.keys.roles()));
    return Promise.all([...roles].sort().map((role) => this.stats(role)));
  }

  /**
   * Trims a role's stream below its oldest pending entry (`XTRIM MINID`):
   * acked entries go, delivered-but-unacked and undelivered ones stay. Acks
   * do this by themselves at most once a second per role.
   */
  async trim(role: string): Promise<void> {
    this.assertOpen();
    const r = checkRole(role);
    await this.call(() => this.run('trim', [this.keys.stream(r)], []));
  }

  /** Stops waits in progress, then quits the connections. Leases held stay until they expire. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.blocking.close();
    if (this.commandConnection?.isOpen) await this.commandConnection.close().catch(() => undefined);
    this.timeouts.close();
  }
}

/** Creates a Redis Streams work queue and connects it. */
export async function createRedisQueue(options: RedisQueueOptions = {}): Promise<RedisQueue> {
  return new RedisQueue(options).connect();
}
