import { randomBytes } from 'node:crypto';

/** Makes ids. Injectable so that tests can make them predictable. */
export interface IdSource {
  next(): string;
}

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, so rows
 * keyed by it insert in order. Monotonic within one source: ids made in the
 * same millisecond still sort in creation order.
 */
export function createUuidV7Source(now: () => number = Date.now): IdSource {
  let lastMs = -1;
  let counter = 0;
  return {
    next() {
      let ms = now();
      if (ms <= lastMs) {
        ms = lastMs;
        counter++;
        if (counter > 0xfff) {
          ms = lastMs + 1;
          counter = 0;
        }
      } else {
        counter = randomBytes(2).readUInt16BE(0) & 0x3ff;
      }
      lastMs = ms;
      const bytes = randomBytes(16);
      bytes.writeUIntBE(ms, 0, 6);
      bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
      bytes[7] = counter & 0xff;
      bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
      const hex = bytes.toString('hex');
      return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
    },
  };
}

/** Deterministic ids for tests: `prefix-000001`, `prefix-000002`, ... */
export function createSequentialIdSource(prefix = 'id'): IdSource {
  let n = 0;
  return { next: () => `${prefix}-${String(++n).padStart(6, '0')}` };
}
