import { randomFillSync } from 'node:crypto';

/** Makes ids. Injectable so that tests can make them predictable. */
export interface IdSource {
  /** The next id. */
  next(): string;
}

/** Random bytes drawn from the OS in blocks, not one system call per id. */
class RandomPool {
  private readonly pool: Buffer;
  private offset: number;
  constructor(size = 4096) {
    this.pool = Buffer.allocUnsafe(size);
    this.offset = size;
  }
  /** Copies `n` random bytes into `target` at `at`. */
  fill(target: Buffer, at: number, n: number): void {
    if (this.offset + n > this.pool.length) {
      randomFillSync(this.pool);
      this.offset = 0;
    }
    this.pool.copy(target, at, this.offset, this.offset + n);
    this.offset += n;
  }
}

const HEX: string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/**
 * UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, then random bits, so rows
 * keyed by it insert in order. Monotonic within one source: ids made in the
 * same millisecond (or while the clock steps back) still sort in creation
 * order, through a 12-bit counter in `rand_a`.
 */
export function createUuidV7Source(now: () => number = Date.now): IdSource {
  const random = new RandomPool();
  const bytes = Buffer.alloc(16);
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
        random.fill(bytes, 6, 2);
        counter = bytes.readUInt16BE(6) & 0x3ff;
      }
      lastMs = ms;
      random.fill(bytes, 8, 8);
      bytes.writeUIntBE(ms, 0, 6);
      bytes[6] = 0x70 | ((counter >> 8) & 0x0f);
      bytes[7] = counter & 0xff;
      bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
      let s = '';
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) s += '-';
        s += HEX[bytes[i] ?? 0];
      }
      return s;
    },
  };
}

/** Deterministic ids for tests: `prefix-000001`, `prefix-000002`, ... */
export function createSequentialIdSource(prefix = 'id'): IdSource {
  let n = 0;
  return { next: () => `${prefix}-${String(++n).padStart(6, '0')}` };
}
