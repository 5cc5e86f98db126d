import type { BusEnvelope, RetryPolicy, WorkError } from '../../protocol/work-envelope.js';
import type { Delivery } from '../work-queue.js';

/**
 * A message's stream entry as the bus reads it back: the fields the scripts
 * write (see `bus/redis/scripts.ts`), as `XREADGROUP` and the lease script
 * return them, and the delivery a leased entry becomes.
 */

/** A delivery as this backend hands it out: `retryPolicy` is the message's own override. */
export interface RedisDelivery extends Delivery {
  readonly retryPolicy: Partial<RetryPolicy> | undefined;
}

/** A stream entry as XREADGROUP returns it: id and flat field list. */
export type ReadEntry = readonly [string, readonly string[]];

/** A stored JSON field, or `undefined` for `''` (the field is absent). */
export function parseJson<T>(text: string): T | undefined {
  return text === '' ? undefined : (JSON.parse(text) as T);
}

/** The entries of an XREADGROUP reply of one stream (entries deleted meanwhile left out). */
export function readEntries(reply: unknown): ReadEntry[] {
  const out: ReadEntry[] = [];
  const entries = (reply as [string, [string, string[] | null][]][] | null)?.[0]?.[1] ?? [];
  for (const [entry, fields] of entries) {
    if (fields !== null) out.push([entry, fields]);
  }
  return out;
}

/** The fields of a message's stream entry (see `bus/redis/scripts.ts`), `''` when absent. */
export interface EntryFields {
  m: string;
  k: string;
  env: string;
  d: string;
  pa: string;
  t: string;
  err: string;
  rp: string;
}

export function entryFields(flat: readonly string[]): EntryFields {
  const f: EntryFields = { m: '', k: '', env: '', d: '0', pa: '0', t: '', err: '', rp: '' };
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const name = flat[i]!;
    const value = flat[i + 1]!;
    if (name === 'x') {
      // '<id>|<deliveries>|<published at>|<ready since>'
      const a = value.indexOf('|');
      const b = value.indexOf('|', a + 1);
      const c = value.indexOf('|', b + 1);
      if (a > 0 && b > a && c > b) {
        f.m = value.slice(0, a);
        f.d = value.slice(a + 1, b);
        f.pa = value.slice(b + 1, c);
      }
    } else if (Object.hasOwn(f, name)) {
      f[name as keyof EntryFields] = value;
    }
  }
  return f;
}

/** The delivery of an entry just leased under `leaseId` (its deliveries counted with this one). */
export function deliveryOf(
  f: EntryFields,
  lease: { role: string; leaseId: string; consumer: string; visibilityTimeoutMs: number },
): RedisDelivery {
  return {
    id: f.m,
    role: lease.role,
    envelope: JSON.parse(f.env) as BusEnvelope,
    idempotencyKey: f.k,
    taskKey: f.t === '' ? undefined : f.t,
    leaseId: lease.leaseId,
    consumer: lease.consumer,
    deliveries: Number(f.d) + 1,
    visibilityTimeoutMs: lease.visibilityTimeoutMs,
    publishedAt: Number(f.pa),
    lastError: parseJson<WorkError>(f.err),
    retryPolicy: parseJson<Partial<RetryPolicy>>(f.rp),
  };
}
