import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { deliveries } from '../../src/bus/deliveries.js';
import { BusError, type Delivery, type RoleSettings, type WorkQueue } from '../../src/bus/work-queue.js';
import type { Clock } from '../../src/persistence/kernel/clock.js';
import type { WorkEnvelope } from '../../src/protocol/work-envelope.js';

/**
 * The contract every `WorkQueue` backend keeps. A backend's test file calls
 * `runWorkQueueContract(name, factory)`; nothing here knows how a backend
 * stores anything. Lease expiry runs on real time (short leases); backoff and
 * delays run on an injected clock that is real time plus an offset the test
 * moves forward, so no test sleeps for a backoff.
 */

export interface ContractQueueOptions {
  clock: Clock;
  /** The jitter source. */
  random?: () => number;
  defaults?: RoleSettings;
}

export interface ContractBackend {
  queue: WorkQueue;
  /** Another handle onto the same queues, as another process would have (its own connection). */
  connect(): Promise<WorkQueue>;
  /** Closes everything the factory opened and removes what it stored. */
  cleanup(): Promise<void>;
}

export type WorkQueueFactory = (options: ContractQueueOptions) => Promise<ContractBackend>;

/** Real time plus an offset that only moves forward. */
export class OffsetClock implements Clock {
  private offset = 0;
  now(): number {
    return Date.now() + this.offset;
  }
  advance(ms: number): void {
    this.offset += ms;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function workEnvelope(n: number | string, extra: Partial<WorkEnvelope['headers']> = {}): WorkEnvelope {
  return {
    kind: 'work',
    headers: {
      taskId: `task-${n}`,
      runId: 'run-1',
      hop: 0,
      attempt: 1,
      idempotencyKey: `key-${n}`,
      ...extra,
    },
    message: { role: 'user', parts: [{ kind: 'text', text: `job ${n}` }] },
  };
}

function uniqueRole(prefix = 'role'): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

const LEASE = 150;

export function runWorkQueueContract(name: string, factory: WorkQueueFactory): void {
  describe(`WorkQueue contract: ${name}`, () => {
    const opened: ContractBackend[] = [];
    const extra: WorkQueue[] = [];
    afterEach(async () => {
      for (const q of extra.splice(0)) await q.close().catch(() => undefined);
      for (const b of opened.splice(0)) await b.cleanup();
    });

    async function setup(options: Partial<ContractQueueOptions> = {}) {
      const clock = options.clock ?? new OffsetClock();
      const backend = await factory({ clock, ...options });
      opened.push(backend);
      const connect = async () => {
        const q = await backend.connect();
        extra.push(q);
        return q;
      };
      return { queue: backend.queue, clock: clock as OffsetClock, connect, role: uniqueRole() };
    }

    async function publishN(queue: WorkQueue, role: string, n: number, taskKey?: (i: number) => string | undefined) {
      const ids: string[] = [];
      for (let i = 0; i < n; i++) {
        const tk = taskKey?.(i);
        const r = await queue.publish(role, workEnvelope(i), {
          idempotencyKey: `key-${i}`,
          ...(tk === undefined ? {} : { taskKey: tk }),
        });
        ids.push(r.id);
      }
      return ids;
    }

    describe('publish and consume', () => {
      it('delivers what was published, once, with its envelope, and ack removes it', async () => {
        const { queue, role } = await setup();
        const { id, duplicate } = await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
        expect(duplicate).toBe(false);
        expect(typeof id).toBe('string');
        const [d, ...rest] = await queue.consume(role, { consumer: 'c1', visibilityTimeoutMs: 5000 });
        expect(rest).toEqual([]);
        expect(d!.id).toBe(id);
        expect(d!.envelope).toEqual(workEnvelope(1));
        expect(d!.idempotencyKey).toBe('a');
        expect(d!.deliveries).toBe(1);
        expect(d!.lastError).toBeUndefined();
        expect(await queue.consume(role, { consumer: 'c2', visibilityTimeoutMs: 5000 })).toEqual([]);
        expect(await queue.ack(d!)).toBe(true);
        expect(await queue.ack(d!)).toBe(false);
        expect(await queue.consume(role, { consumer: 'c2', visibilityTimeoutMs: 5000 })).toEqual([]);
        const stats = await queue.stats(role);
        expect(stats).toMatchObject({ depth: 0, inFlight: 0, delayed: 0, deadLetters: 0 });
      });

      it('keeps roles apart', async () => {
        const { queue, role } = await setup();
        const other = uniqueRole('other');
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        expect(await queue.consume(other, { consumer: 'c', visibilityTimeoutMs: 1000 })).toEqual([]);
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 1000 })).toHaveLength(1);
      });

      it('delivers in publication order and leases up to max at once', async () => {
        const { queue, role } = await setup();
        const ids = await publishN(queue, role, 5);
        const first = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000, max: 3 });
        expect(first.map((d) => d.id)).toEqual(ids.slice(0, 3));
        const second = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000, max: 10 });
        expect(second.map((d) => d.id)).toEqual(ids.slice(3));
        expect(await queue.ackMany([...first, ...second])).toEqual([true, true, true, true, true]);
      });

      it('publishMany stores a batch and reports duplicates inside it', async () => {
        const { queue, role } = await setup();
        const results = await queue.publishMany([
          { role, envelope: workEnvelope(1), idempotencyKey: 'x' },
          { role, envelope: workEnvelope(2), idempotencyKey: 'y' },
          { role, envelope: workEnvelope(3), idempotencyKey: 'x' },
        ]);
        expect(results.map((r) => r.duplicate)).toEqual([false, false, true]);
        expect(results[2]!.id).toBe(results[0]!.id);
        expect((await queue.stats(role)).depth).toBe(2);
      });

      it('waits for work when asked to, and wakes on a publish', async () => {
        const { queue, role } = await setup();
        const started = Date.now();
        const waiting = queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 1000, waitMs: 3000 });
        await sleep(30);
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'w' });
        const got = await waiting;
        expect(got).toHaveLength(1);
        expect(Date.now() - started).toBeLessThan(2000);
      });

      it('returns empty after waitMs with no work, and at once when the signal aborts', async () => {
        const { queue, role } = await setup();
        let started = Date.now();
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 1000, waitMs: 120 })).toEqual([]);
        expect(Date.now() - started).toBeGreaterThanOrEqual(100);
        const controller = new AbortController();
        started = Date.now();
        const waiting = queue.consume(role, {
          consumer: 'c',
          visibilityTimeoutMs: 1000,
          waitMs: 5000,
          signal: controller.signal,
        });
        setTimeout(() => controller.abort(), 30);
        expect(await waiting).toEqual([]);
        expect(Date.now() - started).toBeLessThan(2000);
      });
    });

    describe('deliveries()', () => {
      it('iterates deliveries as they are published, blocking in between, and ends on abort', async () => {
        const { queue, role } = await setup();
        let consumes = 0;
        const counting = new Proxy(queue, {
          get(target, prop, receiver) {
            if (prop === 'consume') {
              return (...args: Parameters<WorkQueue['consume']>) => {
                consumes++;
                return target.consume(...args);
              };
            }
            const value = Reflect.get(target, prop, receiver);
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
        const controller = new AbortController();
        const got: string[] = [];
        const reading = (async () => {
          for await (const d of deliveries(counting, role, {
            consumer: 'iter',
            visibilityTimeoutMs: 5000,
            waitMs: 200,
            signal: controller.signal,
          })) {
            got.push(d.envelope.kind === 'work' ? d.envelope.headers.taskId : '?');
            await queue.ack(d);
          }
        })();
        await sleep(450);
        // Idle for 450 ms with a 200 ms wait: a handful of consumes, not a busy loop.
        expect(consumes).toBeLessThanOrEqual(4);
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a' });
        await queue.publish(role, workEnvelope(2), { idempotencyKey: 'b' });
        const deadline = Date.now() + 3000;
        while (got.length < 2 && Date.now() < deadline) await sleep(10);
        expect(got).toEqual(['task-1', 'task-2']);
        controller.abort();
        await reading;
      });
    });

    describe('bad input', () => {
      it('refuses an invalid envelope and stores nothing', async () => {
        const { queue, role } = await setup();
        const bad = { kind: 'work', headers: { taskId: 't' }, message: { parts: [] } };
        await expect(queue.publish(role, bad as never, { idempotencyKey: 'k' })).rejects.toMatchObject({
          code: 'BUS_INVALID_ENVELOPE',
        });
        await expect(
          queue.publishMany([
            { role, envelope: workEnvelope(1), idempotencyKey: 'ok' },
            { role, envelope: bad as never, idempotencyKey: 'bad' },
          ]),
        ).rejects.toBeInstanceOf(BusError);
        expect((await queue.stats(role)).depth).toBe(0);
      });

      it('refuses bad roles, keys and options', async () => {
        const { queue, role } = await setup();
        await expect(queue.publish('', workEnvelope(1), { idempotencyKey: 'k' })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(queue.publish('has space', workEnvelope(1), { idempotencyKey: 'k' })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(queue.publish(role, workEnvelope(1), { idempotencyKey: '' })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(queue.publish(role, workEnvelope(1), { idempotencyKey: 'k', delayMs: -5 })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(
          queue.publish(role, workEnvelope(1), { idempotencyKey: 'k', retryPolicy: { backoffCoefficient: 0.5 } }),
        ).rejects.toMatchObject({ code: 'BUS_INVALID_ARGUMENT' });
        await expect(queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 0 })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 100, max: 0 })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        await expect(queue.consume(role, { consumer: '', visibilityTimeoutMs: 100 })).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        expect((await queue.stats(role)).depth).toBe(0);
      });

      it('refuses a nack without an error and leaves the lease alone', async () => {
        const { queue, role } = await setup();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000 });
        await expect(queue.nack(d!, { retryable: true } as never)).rejects.toMatchObject({
          code: 'BUS_INVALID_ARGUMENT',
        });
        expect(await queue.ack(d!)).toBe(true);
      });

      it('refuses every call after close', async () => {
        const { queue, role } = await setup();
        await queue.close();
        await expect(queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' })).rejects.toMatchObject({
          code: 'BUS_CLOSED',
        });
        await expect(queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 100 })).rejects.toMatchObject({
          code: 'BUS_CLOSED',
        });
      });
    });

    describe('idempotent publish', () => {
      it('a second publish with the same key is a no-op returning the first id, even after ack', async () => {
        const { queue, role } = await setup();
        const first = await queue.publish(role, workEnvelope(1), { idempotencyKey: 'same' });
        const second = await queue.publish(role, workEnvelope(2), { idempotencyKey: 'same' });
        expect(second).toEqual({ id: first.id, duplicate: true });
        const got = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000, max: 10 });
        expect(got).toHaveLength(1);
        expect(got[0]!.envelope).toEqual(workEnvelope(1));
        await queue.ack(got[0]!);
        const third = await queue.publish(role, workEnvelope(3), { idempotencyKey: 'same' });
        expect(third).toEqual({ id: first.id, duplicate: true });
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000 })).toEqual([]);
      });

      it('concurrent publishes of one key store one message', async () => {
        const { queue, role, connect } = await setup();
        const other = await connect();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            (i % 2 ? other : queue).publish(role, workEnvelope(i), { idempotencyKey: 'race' }),
          ),
        );
        expect(new Set(results.map((r) => r.id)).size).toBe(1);
        expect(results.filter((r) => !r.duplicate)).toHaveLength(1);
        expect((await queue.stats(role)).depth).toBe(1);
      });

      it('the same key on another role is another message', async () => {
        const { queue, role } = await setup();
        const a = await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const b = await queue.publish(uniqueRole(), workEnvelope(1), { idempotencyKey: 'k' });
        expect(b.duplicate).toBe(false);
        expect(b.id).not.toBe(a.id);
      });
    });

    describe('leases', () => {
      it('redelivers after the lease expires and refuses the late ack of the first consumer', async () => {
        const { queue, role } = await setup();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const [first] = await queue.consume(role, { consumer: 'a', visibilityTimeoutMs: LEASE });
        expect(await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: LEASE })).toEqual([]);
        await sleep(LEASE + 80);
        const [second] = await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: 5000, waitMs: 2000 });
        expect(second!.id).toBe(first!.id);
        expect(second!.deliveries).toBe(2);
        expect(second!.leaseId).not.toBe(first!.leaseId);
        expect(second!.lastError?.type).toBe('LeaseExpired');
        expect(await queue.ack(first!)).toBe(false);
        expect(await queue.heartbeat(first!)).toBeNull();
        expect(await queue.nack(first!, { error: { type: 'E', message: 'late' }, retryable: true })).toEqual({
          outcome: 'lease-lost',
        });
        expect(await queue.ack(second!)).toBe(true);
        expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0, deadLetters: 0 });
      });

      it('at-least-once across a consumer that dies without acking', async () => {
        const { queue, role, connect } = await setup();
        const dying = await connect();
        const survivor = await connect();
        const ids = await publishN(queue, role, 3);
        const taken = await dying.consume(role, { consumer: 'dying', visibilityTimeoutMs: LEASE, max: 3 });
        expect(taken).toHaveLength(3);
        await dying.close();
        const seen = new Set<string>();
        const deadline = Date.now() + 5000;
        while (seen.size < 3 && Date.now() < deadline) {
          const got = await survivor.consume(role, {
            consumer: 'survivor',
            visibilityTimeoutMs: 5000,
            max: 3,
            waitMs: 500,
          });
          for (const d of got) {
            expect(d.deliveries).toBe(2);
            expect(await survivor.ack(d)).toBe(true);
            seen.add(d.id);
          }
        }
        expect([...seen].sort()).toEqual([...ids].sort());
      });

      it('a heartbeat keeps the lease', async () => {
        const { queue, role } = await setup();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        // A lease of 300 ms renewed every 60 ms, for 480 ms: well past its first term.
        const [d] = await queue.consume(role, { consumer: 'a', visibilityTimeoutMs: 300 });
        for (let i = 0; i < 8; i++) {
          await sleep(60);
          expect(await queue.heartbeat(d!)).not.toBeNull();
          expect(await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: LEASE })).toEqual([]);
        }
        expect(await queue.ack(d!)).toBe(true);
      });

      it('release gives the message back at once and fences the old lease', async () => {
        const { queue, role } = await setup();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const [d] = await queue.consume(role, { consumer: 'a', visibilityTimeoutMs: 60_000 });
        expect(await queue.release(d!)).toBe(true);
        const [again] = await queue.consume(role, { consumer: 'b', visibilityTimeoutMs: 60_000 });
        expect(again!.id).toBe(d!.id);
        expect(await queue.ack(d!)).toBe(false);
        expect(await queue.release(d!)).toBe(false);
        expect(await queue.ack(again!)).toBe(true);
      });

      it('expireLeases ends every live lease of a role at once: the messages are handed out again, the old leases fenced', async () => {
        const { queue, role } = await setup();
        const other = uniqueRole('other');
        await publishN(queue, role, 3);
        await queue.publish(other, workEnvelope(9), { idempotencyKey: 'o' });
        const held = await queue.consume(role, { consumer: 'dead', visibilityTimeoutMs: 600_000, max: 2 });
        const [elsewhere] = await queue.consume(other, { consumer: 'dead', visibilityTimeoutMs: 600_000 });
        expect(held).toHaveLength(2);
        expect(await queue.expireLeases(role)).toBe(2);
        // Nothing left to end: a second call ends none.
        expect(await queue.expireLeases(role)).toBe(0);
        const again = await queue.consume(role, { consumer: 'heir', visibilityTimeoutMs: 60_000, max: 3 });
        expect(again.map((d) => d.id).sort()).toEqual(
          [...held.map((d) => d.id), again.find((d) => !held.some((h) => h.id === d.id))!.id].sort(),
        );
        for (const d of again) {
          if (held.some((h) => h.id === d.id)) expect(d.deliveries).toBe(2);
        }
        for (const d of held) {
          expect(await queue.ack(d)).toBe(false);
          expect(await queue.heartbeat(d)).toBeNull();
        }
        expect(await queue.ackMany(again)).toEqual([true, true, true]);
        // Another role's leases are untouched.
        expect(await queue.ack(elsewhere!)).toBe(true);
        await expect(queue.expireLeases('not a role!')).rejects.toMatchObject({ code: 'BUS_INVALID_ARGUMENT' });
      });

      it('ackMany acks what it still holds and refuses the rest', async () => {
        const { queue, role } = await setup();
        await publishN(queue, role, 2);
        const [a, b] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 2 });
        await queue.release(b!);
        expect(await queue.ackMany([a!, b!])).toEqual([true, false]);
        expect((await queue.stats(role)).depth).toBe(1);
      });
    });

    describe('retries', () => {
      // Intervals are long next to the real time a loaded machine takes between
      // two calls: the clock runs on real time plus the offset the test adds.
      const policy = {
        initialInterval: 20_000,
        backoffCoefficient: 2,
        maximumInterval: 60_000,
        maximumAttempts: 0,
        nonRetryableErrorTypes: ['Fatal'],
      };

      async function nackAndTime(queue: WorkQueue, clock: OffsetClock, role: string, d: Delivery, expected: number) {
        const result = await queue.nack(d, {
          error: { type: 'Flaky', message: `try ${d.deliveries}` },
          retryable: true,
        });
        expect(result).toMatchObject({ outcome: 'retry', delayMs: expected });
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toEqual([]);
        expect(await queue.stats(role)).toMatchObject({ depth: 0, delayed: 1, inFlight: 0 });
        clock.advance(expected - 2000);
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toEqual([]);
        clock.advance(2100);
        const [next] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(next).toBeDefined();
        expect(next!.deliveries).toBe(d.deliveries + 1);
        expect(next!.lastError).toEqual({ type: 'Flaky', message: `try ${d.deliveries}` });
        return next!;
      }

      it('retries with exponential backoff capped at maximumInterval', async () => {
        const { queue, clock, role } = await setup({ random: () => 0, defaults: { retryPolicy: policy } });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        let [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        d = await nackAndTime(queue, clock, role, d!, 20_000);
        d = await nackAndTime(queue, clock, role, d, 40_000);
        d = await nackAndTime(queue, clock, role, d, 60_000);
        d = await nackAndTime(queue, clock, role, d, 60_000);
        expect(await queue.ack(d)).toBe(true);
      });

      it('jitter shortens a delay by at most the jitter ratio, never lengthens it', async () => {
        const { queue, role } = await setup({ random: () => 0.999, defaults: { retryPolicy: policy } });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        const result = await queue.nack(d!, { error: { type: 'Flaky', message: 'x' }, retryable: true });
        expect(result.outcome).toBe('retry');
        if (result.outcome !== 'retry') return;
        expect(result.delayMs).toBeLessThan(20_000);
        expect(result.delayMs).toBeGreaterThanOrEqual(16_000);
      });

      it('an explicit nack delay and a publish delay hold the message back', async () => {
        const { queue, clock, role } = await setup({ random: () => 0 });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k', delayMs: 5000 });
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toEqual([]);
        expect((await queue.stats(role)).delayed).toBe(1);
        clock.advance(5001);
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(d).toBeDefined();
        expect(await queue.nack(d!, { error: { type: 'E', message: 'm' }, retryable: true, delayMs: 0 })).toMatchObject(
          {
            outcome: 'retry',
            delayMs: 0,
          },
        );
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toHaveLength(1);
      });

      it('a per-message retry policy overrides the role policy', async () => {
        const { queue, role } = await setup({ random: () => 0, defaults: { retryPolicy: policy } });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k', retryPolicy: { initialInterval: 10 } });
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(await queue.nack(d!, { error: { type: 'E', message: 'm' }, retryable: true })).toMatchObject({
          outcome: 'retry',
          delayMs: 10,
        });
      });
    });

    describe('dead letters', () => {
      const policy = {
        initialInterval: 0,
        backoffCoefficient: 1,
        maximumInterval: 0,
        maximumAttempts: 3,
        nonRetryableErrorTypes: ['Fatal'],
      };

      it('dead-letters after maximumAttempts deliveries with the last error and attempt count', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy } });
        const { id } = await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k', taskKey: 'T' });
        const outcomes: string[] = [];
        for (let i = 1; i <= 3; i++) {
          const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
          expect(d!.deliveries).toBe(i);
          const r = await queue.nack(d!, { error: { type: 'Flaky', message: `failure ${i}` }, retryable: true });
          outcomes.push(r.outcome);
        }
        expect(outcomes).toEqual(['retry', 'retry', 'dead-letter']);
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toEqual([]);
        const dead = await queue.deadLetters.list(role);
        expect(dead).toHaveLength(1);
        expect(dead[0]).toMatchObject({
          id,
          role,
          idempotencyKey: 'k',
          taskKey: 'T',
          deliveries: 3,
          lastError: { type: 'Flaky', message: 'failure 3' },
          envelope: workEnvelope(1),
        });
        expect(await queue.stats(role)).toMatchObject({ depth: 0, delayed: 0, inFlight: 0, deadLetters: 1 });
      });

      it('an uncounted retry (counted: false) uses up no attempt: past maximumAttempts and maxDeliveries it is retried, and a counted nack then dead-letters it', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy, maxDeliveries: 4 } });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        for (let i = 1; i <= 6; i++) {
          const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
          expect(d!.deliveries).toBe(i);
          expect(
            await queue.nack(d!, { error: { type: 'Down', message: `outage ${i}` }, retryable: true, counted: false }),
          ).toMatchObject({ outcome: 'retry' });
        }
        // Not retryable still dead-letters at once, counted or not; a counted nack past the attempts dead-letters.
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(await queue.nack(d!, { error: { type: 'Flaky', message: 'its own' }, retryable: true })).toMatchObject({
          outcome: 'dead-letter',
        });
        expect((await queue.deadLetters.list(role)).map((x) => [x.deliveries, x.lastError.type])).toEqual([
          [7, 'Flaky'],
        ]);
        await queue.publish(role, workEnvelope(2), { idempotencyKey: 'k2' });
        const [e] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(
          await queue.nack(e!, { error: { type: 'Bad', message: 'm' }, retryable: false, counted: false }),
        ).toMatchObject({ outcome: 'dead-letter' });
      });

      it('refuses a nack whose counted is not a boolean and leaves the lease alone', async () => {
        const { queue, role } = await setup();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        const [d] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 5000 });
        await expect(
          queue.nack(d!, { error: { type: 'E', message: 'm' }, retryable: true, counted: 'no' } as never),
        ).rejects.toMatchObject({ code: 'BUS_INVALID_ARGUMENT', message: expect.stringContaining('counted') });
        expect(await queue.ack(d!)).toBe(true);
      });

      it('dead-letters at once when not retryable or the error type is non-retryable', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy } });
        await publishN(queue, role, 2);
        const [a, b] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 2 });
        expect(await queue.nack(a!, { error: { type: 'Bad', message: 'm' }, retryable: false })).toMatchObject({
          outcome: 'dead-letter',
        });
        expect(await queue.nack(b!, { error: { type: 'Fatal', message: 'm' }, retryable: true })).toMatchObject({
          outcome: 'dead-letter',
        });
        const dead = await queue.deadLetters.list(role);
        expect(dead.map((d) => d.deliveries)).toEqual([1, 1]);
        expect(dead.map((d) => d.lastError.type).sort()).toEqual(['Bad', 'Fatal']);
      });

      it('dead-letters a message whose leases keep expiring, past maxDeliveries', async () => {
        const { queue, role } = await setup({
          defaults: { maxDeliveries: 2, retryPolicy: { ...policy, maximumAttempts: 0 } },
        });
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'k' });
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE })).toHaveLength(1);
        await sleep(LEASE + 60);
        const [second] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE, waitMs: 2000 });
        expect(second!.deliveries).toBe(2);
        await sleep(LEASE + 60);
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE, waitMs: 300 })).toEqual([]);
        const dead = await queue.deadLetters.list(role);
        expect(dead).toHaveLength(1);
        expect(dead[0]!.deliveries).toBe(2);
        expect(dead[0]!.lastError.type).toBe('LeaseExpired');
        expect((await queue.stats(role)).deadLetters).toBe(1);
      });

      it('a dead work message publishes its failed result to its result role, in the same move', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy } });
        const results = uniqueRole('results');
        const envelope = workEnvelope(1, { resultRole: results });
        await queue.publish(role, envelope, { idempotencyKey: 'k' });
        // Not dead yet: a retry publishes nothing.
        const [first] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(await queue.nack(first!, { error: { type: 'Flaky', message: 'once' }, retryable: true })).toMatchObject({
          outcome: 'retry',
        });
        expect(await queue.stats(results)).toMatchObject({ depth: 0 });
        const [second] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(await queue.nack(second!, { error: { type: 'Fatal', message: 'boom' }, retryable: true })).toMatchObject(
          {
            outcome: 'dead-letter',
          },
        );
        const notices = await queue.consume(results, { consumer: 'r', visibilityTimeoutMs: 60_000, max: 10 });
        expect(notices).toHaveLength(1);
        expect(notices[0]!.envelope).toEqual({
          kind: 'result',
          headers: envelope.headers,
          role,
          outcome: 'failed',
          parts: [],
          artifacts: [],
          error: { type: 'Fatal', message: 'boom' },
          deliveries: 2,
          // The dead letter it names: the one `deadLetters.list` shows (what the Coordinator purges once handled).
          deadLetter: second!.id,
        });
        expect((await queue.deadLetters.list(role)).map((l) => l.id)).toEqual([second!.id]);
        expect(notices[0]!.idempotencyKey.startsWith('$dead:')).toBe(true);
        // A result (or anything but work) that dies is only a dead letter.
        const resultsOfResults = uniqueRole('results');
        await queue.publish(
          results,
          {
            ...(notices[0]!.envelope as object),
            headers: { ...envelope.headers, resultRole: resultsOfResults },
          } as never,
          {
            idempotencyKey: 'a-result',
          },
        );
        await queue.ack(notices[0]!);
        const [result] = await queue.consume(results, { consumer: 'r', visibilityTimeoutMs: 60_000 });
        expect(await queue.nack(result!, { error: { type: 'Bad', message: 'm' }, retryable: false })).toMatchObject({
          outcome: 'dead-letter',
        });
        expect(await queue.stats(resultsOfResults)).toMatchObject({ depth: 0 });
        expect(await queue.stats(results)).toMatchObject({ depth: 0, deadLetters: 1 });
      });

      it('a work message that dies of expired leases publishes a LeaseExpired failed result (default role $results)', async () => {
        const { queue, role } = await setup({
          defaults: { maxDeliveries: 1, retryPolicy: { ...policy, maximumAttempts: 0 } },
        });
        const before = (await queue.stats('$results')).depth;
        await queue.publish(role, workEnvelope('expiring'), { idempotencyKey: 'k' });
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE })).toHaveLength(1);
        await sleep(LEASE + 60);
        // Whoever looks at the role next finds the lease expired: the move and the notice happen there.
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE, waitMs: 300 })).toEqual([]);
        expect((await queue.stats(role)).deadLetters).toBe(1);
        expect((await queue.stats('$results')).depth).toBe(before + 1);
        const notices = await queue.consume('$results', { consumer: 'r', visibilityTimeoutMs: 60_000, max: 100 });
        const mine = notices.filter(
          (d) =>
            d.envelope.kind === 'result' && d.envelope.headers.taskId === 'task-expiring' && d.envelope.role === role,
        );
        expect(mine).toHaveLength(1);
        expect(mine[0]!.envelope).toMatchObject({
          outcome: 'failed',
          error: { type: 'LeaseExpired' },
          deliveries: 1,
        });
      });

      it('replays dead letters with a fresh attempt count, all or by id', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy } });
        await publishN(queue, role, 3);
        const got = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 3 });
        for (const d of got) await queue.nack(d, { error: { type: 'Bad', message: 'm' }, retryable: false });
        expect((await queue.stats(role)).deadLetters).toBe(3);
        expect(await queue.deadLetters.replay(role, { ids: [got[0]!.id] })).toBe(1);
        const [one] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 5 });
        expect(one!.id).toBe(got[0]!.id);
        expect(one!.deliveries).toBe(1);
        expect(one!.envelope).toEqual(got[0]!.envelope);
        expect(await queue.ack(one!)).toBe(true);
        expect(await queue.deadLetters.replay(role)).toBe(2);
        const rest = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 5 });
        expect(rest.map((d) => d.id).sort()).toEqual([got[1]!.id, got[2]!.id].sort());
        expect(await queue.ackMany(rest)).toEqual([true, true]);
        expect(await queue.stats(role)).toMatchObject({ depth: 0, deadLetters: 0, inFlight: 0 });
      });

      it('purges dead letters, all or by id, and lists them in pages', async () => {
        const { queue, role } = await setup({ defaults: { retryPolicy: policy } });
        await publishN(queue, role, 4);
        const got = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 4 });
        for (const d of got) await queue.nack(d, { error: { type: 'Bad', message: d.id }, retryable: false });
        const page = await queue.deadLetters.list(role, { limit: 2, offset: 1 });
        expect(page).toHaveLength(2);
        expect(await queue.deadLetters.purge(role, { ids: [got[0]!.id] })).toBe(1);
        expect((await queue.deadLetters.list(role)).map((d) => d.id)).not.toContain(got[0]!.id);
        expect(await queue.deadLetters.purge(role)).toBe(3);
        expect(await queue.deadLetters.list(role)).toEqual([]);
        expect(await queue.deadLetters.replay(role)).toBe(0);
        expect(await queue.stats(role)).toMatchObject({ depth: 0, deadLetters: 0 });
      });
    });

    describe('per-task serialization', () => {
      it('never leases two messages of one task at once, and keeps their order', async () => {
        const { queue, role } = await setup();
        const ids = await publishN(queue, role, 4, (i) => (i < 3 ? 'T' : 'U'));
        const first = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 10 });
        expect(first.map((d) => d.id)).toEqual([ids[0], ids[3]]);
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 10 })).toEqual([]);
        await queue.ack(first[0]!);
        const second = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 10 });
        expect(second.map((d) => d.id)).toEqual([ids[1]]);
        await queue.nack(second[0]!, { error: { type: 'E', message: 'm' }, retryable: true, delayMs: 0 });
        const third = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 10 });
        expect(third).toHaveLength(1);
        expect([ids[1], ids[2]]).toContain(third[0]!.id);
        expect(await queue.stats(role)).toMatchObject({ inFlight: 2 });
      });

      it('serializes a task across roles', async () => {
        const { queue, role } = await setup();
        const other = uniqueRole();
        await queue.publish(role, workEnvelope(1), { idempotencyKey: 'a', taskKey: 'shared' });
        await queue.publish(other, workEnvelope(2), { idempotencyKey: 'b', taskKey: 'shared' });
        const [a] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000 });
        expect(a).toBeDefined();
        expect(await queue.consume(other, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toEqual([]);
        await queue.ack(a!);
        expect(await queue.consume(other, { consumer: 'c', visibilityTimeoutMs: 60_000 })).toHaveLength(1);
      });

      it('an expired lease frees the task', async () => {
        const { queue, role } = await setup();
        await publishN(queue, role, 2, () => 'T');
        const [a] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE, max: 5 });
        expect(a).toBeDefined();
        expect(await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: LEASE, max: 5 })).toEqual([]);
        await sleep(LEASE + 60);
        const next = await queue.consume(role, { consumer: 'd', visibilityTimeoutMs: 60_000, max: 5, waitMs: 1000 });
        expect(next).toHaveLength(1);
      });

      it('holds under concurrent consumers: no two deliveries of one task overlap', async () => {
        const { queue, role, connect } = await setup();
        const other = await connect();
        const tasks = ['A', 'B', 'C', 'D'];
        const total = 60;
        await queue.publishMany(
          Array.from({ length: total }, (_, i) => ({
            role,
            envelope: workEnvelope(i),
            idempotencyKey: `k${i}`,
            taskKey: tasks[i % tasks.length]!,
          })),
        );
        const running = new Map<string, number>();
        let overlaps = 0;
        let done = 0;
        const loop = async (q: WorkQueue, name: string) => {
          while (done < total) {
            const got = await q.consume(role, { consumer: name, visibilityTimeoutMs: 10_000, max: 2, waitMs: 50 });
            await Promise.all(
              got.map(async (d) => {
                const n = (running.get(d.taskKey!) ?? 0) + 1;
                running.set(d.taskKey!, n);
                if (n > 1) overlaps++;
                await sleep(2);
                running.set(d.taskKey!, (running.get(d.taskKey!) ?? 1) - 1);
                if (await q.ack(d)) done++;
              }),
            );
          }
        };
        await Promise.all([0, 1, 2, 3, 4, 5].map((i) => loop(i % 2 ? other : queue, `c${i}`)));
        expect(done).toBe(total);
        expect(overlaps).toBe(0);
      });
    });

    describe('under concurrent consumers', () => {
      it('loses nothing and completes nothing twice while consumers fail, retry and die', async () => {
        const { queue, role, connect } = await setup({
          random: () => 0.5,
          defaults: { retryPolicy: { initialInterval: 5, maximumInterval: 20, maximumAttempts: 0 }, maxDeliveries: 50 },
        });
        const handles = [queue, await connect(), await connect()];
        const total = 300;
        const published = await queue.publishMany(
          Array.from({ length: total }, (_, i) => ({ role, envelope: workEnvelope(i), idempotencyKey: `k${i}` })),
        );
        const ids = new Set(published.map((p) => p.id));
        expect(ids.size).toBe(total);
        const completions = new Map<string, number>();
        let seq = 0;
        const loop = async (q: WorkQueue, name: string) => {
          const stopAt = Date.now() + 20_000;
          while (completions.size < total && Date.now() < stopAt) {
            const got = await q.consume(role, { consumer: name, visibilityTimeoutMs: LEASE, max: 8, waitMs: 30 });
            for (const d of got) {
              const roll = seq++ % 10;
              if (roll === 0) continue; // dies holding it: the lease expires
              if (roll === 1) {
                await q.nack(d, { error: { type: 'Flaky', message: 'x' }, retryable: true });
                continue;
              }
              if (await q.ack(d)) completions.set(d.id, (completions.get(d.id) ?? 0) + 1);
            }
          }
        };
        await Promise.all(Array.from({ length: 6 }, (_, i) => loop(handles[i % handles.length]!, `c${i}`)));
        expect(completions.size).toBe(total);
        expect([...completions.keys()].every((id) => ids.has(id))).toBe(true);
        expect([...completions.values()].every((n) => n === 1)).toBe(true);
        expect(await queue.stats(role)).toMatchObject({ depth: 0, inFlight: 0, delayed: 0, deadLetters: 0 });
      });
    });

    describe('stats', () => {
      it('reports depth, delayed, in-flight, lag and dead letters', async () => {
        const { queue, clock, role } = await setup();
        await publishN(queue, role, 4);
        await queue.publish(role, workEnvelope('later'), { idempotencyKey: 'later', delayMs: 60_000 });
        clock.advance(500);
        const [a, b] = await queue.consume(role, { consumer: 'c', visibilityTimeoutMs: 60_000, max: 2 });
        await queue.nack(b!, { error: { type: 'E', message: 'm' }, retryable: false });
        const stats = await queue.stats(role);
        expect(stats).toMatchObject({ role, depth: 2, delayed: 1, inFlight: 1, deadLetters: 1 });
        expect(stats.lag).toBeGreaterThanOrEqual(500);
        expect(stats.lag).toBeLessThan(5000);
        await queue.ack(a!);
        const empty = await queue.stats(uniqueRole());
        expect(empty).toMatchObject({ depth: 0, delayed: 0, inFlight: 0, lag: 0, deadLetters: 0 });
      });
    });
  });
}
