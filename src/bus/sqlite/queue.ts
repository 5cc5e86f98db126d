import { randomBytes } from 'node:crypto';
import { LEASE_EXPIRED_ERROR, decideExpiry, decideNack } from '../../machines/delivery-machine.js';
import type { BusEnvelope, RetryPolicy, WorkError } from '../../protocol/work-envelope.js';
import { type SqliteDatabase, openDatabase } from '../../persistence/kernel/database.js';
import { CommitBatcher } from '../../persistence/kernel/commit-batcher.js';
import {
  type CheckedPublish,
  type ResolvedRoleSettings,
  checkConsume,
  checkExtend,
  checkNack,
  checkPublish,
  checkRole,
} from '../queue-arguments.js';
import { deadLetterNotice } from '../dead-letter-notice.js';
import {
  type CompiledSqliteQueueOptions,
  type SqliteQueueOptions,
  compileSqliteQueueOptions,
} from './queue-options.js';
import { migrateBus } from './schema.js';
import { type JobRow, type LeaseRow, type QueueStatements, prepareQueueStatements } from './statements.js';
import { WakeSignal } from './wake-signal.js';
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

export type { SqliteQueueOptions } from './queue-options.js';

interface LeaseRequest {
  consumer: string;
  visibilityTimeoutMs: number;
  max: number;
  resolve: (deliveries: Delivery[]) => void;
  reject: (error: unknown) => void;
}

/** A delivery as this backend hands it out: `seq` is the row. */
interface SqliteDelivery extends Delivery {
  readonly seq: number;
}

/** Done rows past their retention are pruned every this many acks. */
const PRUNE_EVERY_ACKS = 500;

function parseError(text: string | null): WorkError | undefined {
  if (text === null) return undefined;
  return JSON.parse(text) as WorkError;
}

/**
 * The embedded work bus: every role's queue in one SQLite file (WAL), durable
 * before any call resolves. Calls made in the same event-loop turn share one
 * transaction (group commit). Several processes may open the same file; each
 * finds the others' work by polling.
 */
export class SqliteQueue implements WorkQueue {
  readonly backend = 'sqlite';
  readonly deadLetters: DeadLetterQueue;

  private readonly db: SqliteDatabase;
  private readonly ownsDb: boolean;
  /** The options checked, with their defaults. */
  private readonly options: CompiledSqliteQueueOptions;
  private readonly batcher: CommitBatcher;
  private readonly wake = new WakeSignal();
  private readonly leaseNonce = randomBytes(6).toString('hex');
  private leaseCounter = 0;
  private closed = false;
  private acksSincePrune = 0;
  private readonly leaseRequests = new Map<string, LeaseRequest[]>();

  private readonly s: QueueStatements;

  constructor(options: SqliteQueueOptions) {
    this.options = compileSqliteQueueOptions(options);
    const { database, durability } = this.options;
    this.ownsDb = typeof database === 'string';
    this.db = typeof database === 'string' ? openDatabase(database, { durability }) : database;
    migrateBus(this.db);
    this.s = prepareQueueStatements(this.db);
    this.batcher = new CommitBatcher(this.db);
    this.deadLetters = {
      list: (role, opts) => this.listDead(role, opts),
      replay: (role, opts) => this.replayDead(role, opts),
      purge: (role, opts) => this.purgeDead(role, opts),
    };
  }

  private settings(role: string): ResolvedRoleSettings {
    return this.options.roles.get(role) ?? this.options.defaults;
  }

  private policyOf(role: string, stored: string | null): RetryPolicy {
    const base = this.settings(role).retryPolicy;
    if (stored === null) return base;
    return { ...base, ...(JSON.parse(stored) as Partial<RetryPolicy>) };
  }

  private assertOpen(): void {
    if (this.closed) throw new BusError('BUS_CLOSED', 'the work queue is closed');
  }

  private run<T>(op: () => T, atomic = true): Promise<T> {
    return this.batcher.submit(op, { atomic }).catch((error: unknown) => {
      if (error instanceof BusError) throw error;
      throw new BusError('BUS_BACKEND', `SQLite work queue: ${(error as Error)?.message ?? String(error)}`, {
        cause: error,
      });
    });
  }

  // ---------------------------------------------------------------- publish

  private insertOne(p: CheckedPublish, now: number): PublishResult {
    const info = this.s.insert.run(
      p.role,
      p.idempotencyKey,
      p.taskKey ?? null,
      JSON.stringify(p.envelope),
      now + p.delayMs,
      now,
      p.retryPolicy === undefined ? null : JSON.stringify(p.retryPolicy),
    );
    if (info.changes === 1) return { id: String(info.lastInsertRowid), duplicate: false };
    const row = this.s.byKey.get(p.role, p.idempotencyKey) as { seq: number };
    return { id: String(row.seq), duplicate: true };
  }

  async publish(role: string, envelope: BusEnvelope, options: PublishOptions): Promise<PublishResult> {
    const [result] = await this.publishMany([{ ...(options ?? {}), role, envelope } as PublishRequest]);
    return result!;
  }

  async publishMany(messages: readonly PublishRequest[]): Promise<PublishResult[]> {
    this.assertOpen();
    if (!Array.isArray(messages)) throw new BusError('BUS_INVALID_ARGUMENT', 'publishMany takes an array');
    const checked = messages.map((m) => checkPublish(m));
    if (checked.length === 0) return [];
    const results = await this.run(() => {
      const now = this.options.clock.now();
      return checked.map((p) => this.insertOne(p, now));
    });
    const woken = new Map<string, number>();
    checked.forEach((p, i) => {
      if (!results[i]!.duplicate && p.delayMs === 0) woken.set(p.role, (woken.get(p.role) ?? 0) + 1);
    });
    for (const [role, n] of woken) this.wake.notify(role, n);
    return results;
  }

  /** Inside the dead-letter move's transaction: a dead work message's failure result (see `dead-letter-notice.ts`). */
  private notifyDead(seq: number, role: string, error: WorkError, deliveries: number, now: number): void {
    const row = this.s.envelopeOf.get(seq) as { envelope: string | null } | undefined;
    if (row?.envelope == null) return;
    const notice = deadLetterNotice({
      envelope: JSON.parse(row.envelope),
      role,
      error,
      deliveries,
      messageId: String(seq),
      at: now,
    });
    if (notice === undefined) return;
    const result = this.insertOne(checkPublish(notice), now);
    if (!result.duplicate) this.wake.notify(notice.role, 1);
  }

  // ---------------------------------------------------------------- consume

  private reclaimExpired(role: string, now: number): number {
    const rows = this.s.expired.all(role, now) as LeaseRow[];
    let ready = 0;
    const settings = this.settings(role);
    for (const row of rows) {
      const policy = this.policyOf(role, row.retry_policy);
      const error: WorkError = {
        type: LEASE_EXPIRED_ERROR,
        message: 'the lease expired before the delivery was acked',
      };
      if (decideExpiry(policy, row.deliveries, settings.maxDeliveries) === 'dead') {
        this.s.expireDead.run(now, JSON.stringify(error), row.seq);
        this.notifyDead(row.seq, role, error, row.deliveries, now);
      } else {
        this.s.expireReady.run(JSON.stringify(error), row.seq);
        ready++;
      }
    }
    return ready;
  }

  /**
   * Leases for every consume request of one role gathered in this tick, with
   * one reclaim and one candidate query: 32 consumers asking at once cost one
   * index seek, not 32. Requests are served in arrival order.
   */
  private leaseFor(role: string, requests: readonly LeaseRequest[]): SqliteDelivery[][] {
    const now = this.options.clock.now();
    this.reclaimExpired(role, now);
    let total = 0;
    for (const r of requests) total += r.max;
    const rows = this.s.candidates.all(role, now, now, total) as JobRow[];
    const out: SqliteDelivery[][] = requests.map(() => []);
    const taskKeys = new Set<string>();
    let next = 0;
    for (const row of rows) {
      if (row.task_key !== null) {
        if (taskKeys.has(row.task_key)) continue;
        taskKeys.add(row.task_key);
      }
      while (next < requests.length && out[next]!.length >= requests[next]!.max) next++;
      if (next >= requests.length) break;
      const request = requests[next]!;
      const leaseId = `${this.leaseNonce}.${(++this.leaseCounter).toString(36)}`;
      this.s.lease.run(
        leaseId,
        request.consumer,
        now + request.visibilityTimeoutMs,
        request.visibilityTimeoutMs,
        row.seq,
      );
      out[next]!.push({
        seq: row.seq,
        id: String(row.seq),
        role,
        envelope: JSON.parse(row.envelope!) as BusEnvelope,
        idempotencyKey: row.idempotency_key,
        taskKey: row.task_key ?? undefined,
        leaseId,
        consumer: request.consumer,
        deliveries: row.deliveries + 1,
        visibilityTimeoutMs: request.visibilityTimeoutMs,
        publishedAt: row.published_at,
        lastError: parseError(row.last_error),
      });
    }
    return out;
  }

  private requestLease(role: string, consumer: string, visibilityTimeoutMs: number, max: number): Promise<Delivery[]> {
    return new Promise<Delivery[]>((resolve, reject) => {
      let list = this.leaseRequests.get(role);
      if (list === undefined) {
        const requests: LeaseRequest[] = [];
        list = requests;
        this.leaseRequests.set(role, requests);
        this.run(() => {
          if (this.leaseRequests.get(role) === requests) this.leaseRequests.delete(role);
          return this.leaseFor(role, requests);
        }).then(
          (results) => {
            requests.forEach((r, i) => {
              r.resolve(results[i] ?? []);
            });
          },
          (error: unknown) => {
            for (const r of requests) r.reject(error);
          },
        );
      }
      list.push({ consumer, visibilityTimeoutMs, max, resolve, reject });
    });
  }

  async consume(role: string, options: ConsumeOptions): Promise<Delivery[]> {
    this.assertOpen();
    const c = checkConsume(role, options);
    if (c.signal?.aborted) return [];
    const deadline = Date.now() + c.waitMs;
    let interval = this.options.pollIntervalMs.min;
    for (;;) {
      const got = await this.requestLease(c.role, c.consumer, c.visibilityTimeoutMs, c.max);
      if (got.length > 0 || this.closed || c.signal?.aborted) return got;
      const remaining = deadline - Date.now();
      if (remaining <= 0) return got;
      await this.wake.wait(c.role, Math.min(interval, remaining), c.signal);
      interval = Math.min(interval * 2, this.options.pollIntervalMs.max);
      if (this.closed) return [];
    }
  }

  // ---------------------------------------------------------------- settle

  private own(delivery: Delivery): SqliteDelivery {
    if (
      delivery === null ||
      typeof delivery !== 'object' ||
      typeof delivery.leaseId !== 'string' ||
      typeof delivery.id !== 'string' ||
      !/^[0-9]+$/.test(delivery.id)
    ) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'not a delivery of this queue');
    }
    const seq = Number(delivery.id);
    return { ...delivery, seq } as SqliteDelivery;
  }

  private ackOne(d: SqliteDelivery, now: number): boolean {
    return this.s.ack.run(now, d.seq, d.leaseId).changes === 1;
  }

  private maybePrune(now: number, acked: number): void {
    this.acksSincePrune += acked;
    if (this.acksSincePrune < PRUNE_EVERY_ACKS) return;
    this.acksSincePrune = 0;
    this.s.prune.run(now - this.options.idempotencyRetentionMs);
  }

  async ack(delivery: Delivery): Promise<boolean> {
    const [ok] = await this.ackMany([delivery]);
    return ok!;
  }

  async ackMany(deliveries: readonly Delivery[]): Promise<boolean[]> {
    this.assertOpen();
    if (!Array.isArray(deliveries)) throw new BusError('BUS_INVALID_ARGUMENT', 'ackMany takes an array');
    const own = deliveries.map((d) => this.own(d));
    if (own.length === 0) return [];
    return this.run(
      () => {
        const now = this.options.clock.now();
        const out = own.map((d) => this.ackOne(d, now));
        this.maybePrune(now, own.length);
        return out;
      },
      own.length > 1 || this.acksSincePrune + own.length >= PRUNE_EVERY_ACKS,
    );
  }

  async heartbeat(delivery: Delivery, extendMs?: number): Promise<number | null> {
    this.assertOpen();
    const d = this.own(delivery);
    const extend = checkExtend(extendMs, d.visibilityTimeoutMs);
    return this.run(() => {
      const until = this.options.clock.now() + extend;
      return this.s.heartbeat.run(until, d.seq, d.leaseId).changes === 1 ? until : null;
    }, false);
  }

  async expireLeases(role: string): Promise<number> {
    this.assertOpen();
    checkRole(role);
    return this.run(() => {
      const now = this.options.clock.now();
      // Each lease runs out now; the next consume of the role hands the messages out again.
      return this.s.expireAll.run(now, role, now).changes;
    }, false);
  }

  async generation(): Promise<string | null> {
    this.assertOpen();
    // Kept in a file backed up and restored with the Coordinator's tables: it does not lose state on its own.
    return null;
  }

  async nack(delivery: Delivery, options: NackOptions): Promise<NackResult> {
    this.assertOpen();
    const d = this.own(delivery);
    const opts = checkNack(options);
    const result = await this.run((): NackResult => {
      const row = this.s.leaseOf.get(d.seq, d.leaseId) as LeaseRow | undefined;
      if (row === undefined) return { outcome: 'lease-lost' };
      const now = this.options.clock.now();
      const decision = decideNack({
        policy: this.policyOf(d.role, row.retry_policy),
        deliveries: row.deliveries,
        maxDeliveries: this.settings(d.role).maxDeliveries,
        error: opts.error,
        retryable: opts.retryable,
        ...(opts.delayMs === undefined ? {} : { delayMs: opts.delayMs }),
        ...(opts.counted === undefined ? {} : { counted: opts.counted }),
        jitterRatio: this.options.jitterRatio,
        random: this.options.random,
      });
      const error = JSON.stringify(opts.error);
      if (decision.to === 'dead') {
        this.s.dead.run(now, error, d.seq);
        this.notifyDead(d.seq, d.role, opts.error, row.deliveries, now);
        return { outcome: 'dead-letter', reason: decision.reason };
      }
      this.s.retry.run(now + decision.delayMs, error, d.seq);
      return { outcome: 'retry', availableAt: now + decision.delayMs, delayMs: decision.delayMs };
    }, false);
    if (result.outcome === 'retry' && result.delayMs === 0) this.wake.notify(d.role, 1);
    return result;
  }

  async release(delivery: Delivery): Promise<boolean> {
    this.assertOpen();
    const d = this.own(delivery);
    const ok = await this.run(
      () => this.s.release.run(this.options.clock.now(), d.seq, d.leaseId).changes === 1,
      false,
    );
    if (ok) this.wake.notify(d.role, 1);
    return ok;
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
    const rows = this.s.listDead.all(r, limit, offset) as JobRow[];
    return rows.map((row) => ({
      id: String(row.seq),
      role: row.role,
      envelope: JSON.parse(row.envelope!) as BusEnvelope,
      idempotencyKey: row.idempotency_key,
      taskKey: row.task_key ?? undefined,
      deliveries: row.deliveries,
      lastError: parseError(row.last_error) ?? { type: 'Unknown', message: '' },
      publishedAt: row.published_at,
      deadAt: row.finished_at ?? 0,
    }));
  }

  private checkIds(ids: readonly string[] | undefined): number[] | undefined {
    if (ids === undefined) return undefined;
    if (!Array.isArray(ids) || ids.some((id) => typeof id !== 'string' || !/^[0-9]{1,15}$/.test(id))) {
      throw new BusError('BUS_INVALID_ARGUMENT', 'ids must be message ids of this queue');
    }
    return ids.map(Number);
  }

  private async replayDead(role: string, options: { ids?: readonly string[] } = {}): Promise<number> {
    this.assertOpen();
    const r = checkRole(role);
    const ids = this.checkIds(options.ids);
    const n = await this.run(() => {
      const now = this.options.clock.now();
      if (ids === undefined) return this.s.replayAll.run(now, r).changes;
      let count = 0;
      for (const seq of ids) count += this.s.replayOne.run(now, r, seq).changes;
      return count;
    });
    if (n > 0) this.wake.notify(r, n);
    return n;
  }

  private async purgeDead(role: string, options: { ids?: readonly string[] } = {}): Promise<number> {
    this.assertOpen();
    const r = checkRole(role);
    const ids = this.checkIds(options.ids);
    return this.run(() => {
      if (ids === undefined) return this.s.purgeAll.run(r).changes;
      let count = 0;
      for (const seq of ids) count += this.s.purgeOne.run(r, seq).changes;
      return count;
    });
  }

  // ---------------------------------------------------------------- stats

  async stats(role: string): Promise<QueueStats> {
    this.assertOpen();
    const r = checkRole(role);
    const now = this.options.clock.now();
    const read = this.db.transaction(() => {
      const ready = this.s.statReady.get(r, now) as { n: number; oldest: number | null };
      const expired = this.s.statExpired.get(r, now) as { n: number; oldest: number | null };
      const delayed = this.s.statDelayed.get(r, now) as { n: number };
      const leased = this.s.statLeased.get(r, now) as { n: number };
      const dead = this.s.statDead.get(r) as { n: number };
      const oldest = Math.min(ready.oldest ?? Number.POSITIVE_INFINITY, expired.oldest ?? Number.POSITIVE_INFINITY);
      return {
        role: r,
        depth: ready.n + expired.n,
        delayed: delayed.n,
        inFlight: leased.n,
        lag: Number.isFinite(oldest) ? Math.max(0, now - oldest) : 0,
        deadLetters: dead.n,
      };
    });
    return read.deferred();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.batcher.flush();
    this.wake.notifyAll();
    if (this.ownsDb) this.db.close();
  }
}

/** Opens a work queue on a SQLite database (the embedded bus). */
export function createSqliteQueue(options: SqliteQueueOptions): SqliteQueue {
  return new SqliteQueue(options);
}
