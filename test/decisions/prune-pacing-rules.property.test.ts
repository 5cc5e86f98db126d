import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  PRUNE_BUSY_SHARE,
  PRUNE_IDLE_MS,
  PRUNE_MIN_WAIT_MS,
  busyWaitMs,
  pruneWaitMs,
} from '../../src/decisions/prune-pacing.js';

const ms = (max: number) => fc.double({ min: 0, max, noNaN: true });
const busySince = fc.double({ min: 0, max: PRUNE_IDLE_MS, maxExcluded: true, noNaN: true });

/** Follows the decision as the pruner does: waits what it says until it says go; the total wait. */
function waitedBeforeGo(batchMs: number, lastCallAgoMs: number, callsEvery: number | undefined): number {
  let waited = 0;
  let since = lastCallAgoMs;
  for (let steps = 0; steps < 10_000; steps++) {
    const wait = pruneWaitMs({ batchMs, waitedMs: waited, sinceLastCallMs: since });
    if (wait === 0) return waited;
    expect(wait).toBeGreaterThan(0);
    waited += wait;
    since += wait;
    // Calls keep coming: one at least every `callsEvery` ms.
    if (callsEvery !== undefined && since >= callsEvery) since %= callsEvery;
  }
  throw new Error('the decision never said go');
}

describe('the pace of a prune among calls', () => {
  test.prop([ms(50), ms(1_000)])(
    'an idle broker (no call for PRUNE_IDLE_MS) runs the next batch at once',
    (batchMs, extra) => {
      expect(pruneWaitMs({ batchMs, waitedMs: 0, sinceLastCallMs: PRUNE_IDLE_MS + extra })).toBe(0);
      expect(pruneWaitMs({ batchMs, waitedMs: 0, sinceLastCallMs: Number.POSITIVE_INFINITY })).toBe(0);
      // Idle from the very moment PRUNE_IDLE_MS has passed.
      expect(pruneWaitMs({ batchMs, waitedMs: 0, sinceLastCallMs: PRUNE_IDLE_MS })).toBe(0);
    },
  );

  test.prop([ms(50), fc.double({ min: 0.01, max: PRUNE_IDLE_MS - 1, noNaN: true })])(
    'while calls come in, a prune holds the broker at most PRUNE_BUSY_SHARE of the time',
    (batchMs, callsEvery) => {
      const waited = waitedBeforeGo(batchMs, 0, callsEvery);
      expect(waited).toBeGreaterThanOrEqual(PRUNE_MIN_WAIT_MS);
      // Held share: the batch over the batch and the wait after it.
      expect(batchMs / (batchMs + waited)).toBeLessThanOrEqual(PRUNE_BUSY_SHARE + 1e-9);
      // And no more than that is waited: the prune keeps going, at exactly its share when the batch is long
      // enough for the shortest wait not to matter.
      expect(waited).toBeCloseTo(busyWaitMs(batchMs), 6);
      if (batchMs * (1 / PRUNE_BUSY_SHARE - 1) >= PRUNE_MIN_WAIT_MS) {
        expect(batchMs / (batchMs + waited)).toBeCloseTo(PRUNE_BUSY_SHARE, 9);
      }
    },
  );

  test.prop([ms(50), busySince, ms(10_000)])(
    'a wait never runs past the moment the broker becomes idle, and is positive until it may go',
    (batchMs, sinceLastCallMs, waitedMs) => {
      const wait = pruneWaitMs({ batchMs, waitedMs, sinceLastCallMs });
      if (waitedMs >= busyWaitMs(batchMs)) expect(wait).toBe(0);
      else {
        expect(wait).toBeGreaterThan(0);
        expect(sinceLastCallMs + wait).toBeLessThanOrEqual(PRUNE_IDLE_MS + 1e-9);
        expect(waitedMs + wait).toBeLessThanOrEqual(busyWaitMs(batchMs) + 1e-9);
      }
    },
  );

  test.prop([ms(50), busySince])(
    'when the calls stop, the prune goes on no later than PRUNE_IDLE_MS after the last',
    (batchMs, ago) => {
      const waited = waitedBeforeGo(batchMs, ago, undefined);
      expect(waited).toBeLessThanOrEqual(Math.min(busyWaitMs(batchMs), PRUNE_IDLE_MS - ago) + 1e-9);
    },
  );

  test.prop([ms(50), ms(50)])('a longer batch owes a longer wait', (a, b) => {
    if (a <= b) expect(busyWaitMs(a)).toBeLessThanOrEqual(busyWaitMs(b));
  });
});
