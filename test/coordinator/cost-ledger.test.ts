import { describe, expect, it } from 'vitest';
import { type HopRecord, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';
import { UNREPORTED_MODEL, accrue, segmentMs, totalTokens } from '../../src/workflow/cost-ledger.js';
import { segmentEnd } from '../../src/decisions/coordinator/result.js';

const zero = { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 };

function hop(extra: Partial<HopRecord> = {}): HopRecord {
  return {
    ...dispatchedHop({
      id: 'hop-1',
      itemId: 'item-1',
      seq: 1,
      hop: 1,
      attempt: 1,
      kind: 'stage',
      stage: 'coding',
      role: 'coding',
      idempotencyKey: 'item-1/1/1',
      continuation: null,
      askedBy: null,
      dispatchedAt: 1_000,
      activeSince: 1_000,
    }),
    ...extra,
  };
}

const item: ItemRecord = {
  id: 'item-1',
  taskId: null,
  workflow: { id: 'dev-sdlc', version: 1 },
  state: 'running',
  stage: 'coding',
  hop: 1,
  hops: 1,
  input: [{ kind: 'text', text: 'x' }],
  budget: null,
  attributes: null,
  usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.1, elapsedMs: 40 },
  failure: null,
  approval: null,
  createdAt: 900,
  updatedAt: 900,
  finishedAt: null,
  output: null,
  mirrored: false,
};

describe('cost ledger', () => {
  it('accrues the reported usage and the measured time onto the hop and rolls it up to the item', () => {
    const a = accrue(hop(), item, { inputTokens: 100, outputTokens: 20, costUsd: 0.3, model: 'demo-medium' }, 1_250);
    expect(a.added).toEqual({ inputTokens: 100, outputTokens: 20, costUsd: 0.3, elapsedMs: 250 });
    expect(a.hop.usage).toEqual(a.added);
    expect(a.hop.activeSince).toBeNull();
    expect(a.hop.model).toBe('demo-medium');
    expect(a.item.usage).toEqual({ inputTokens: 110, outputTokens: 25, costUsd: 0.4, elapsedMs: 290 });
    expect(a.item.updatedAt).toBe(1_250);
    expect(a.row).toEqual({
      hopId: 'hop-1',
      itemId: 'item-1',
      agent: 'coding',
      model: 'demo-medium',
      inputTokens: 100,
      outputTokens: 20,
      costUsd: 0.3,
      elapsedMs: 250,
      at: 1_250,
    });
    expect(totalTokens(a.item.usage)).toBe(135);
  });

  it('a hop accrues per running segment: none while suspended', () => {
    const suspended = hop({
      activeSince: null,
      usage: { inputTokens: 5, outputTokens: 1, costUsd: 0.01, elapsedMs: 30 },
    });
    expect(segmentMs(suspended, 5_000)).toBe(0);
    const a = accrue(suspended, item, { inputTokens: 1, outputTokens: 1, costUsd: 0.02, model: 'm' }, 5_000);
    expect(a.hop.usage).toEqual({ inputTokens: 6, outputTokens: 2, costUsd: 0.03, elapsedMs: 30 });
    // A clock that went backwards never makes negative time.
    expect(segmentMs(hop({ activeSince: 2_000 }), 1_000)).toBe(0);
  });

  it("a hop's time ends when its result was published, not when a Coordinator came to apply it", () => {
    // Published at 1,200, applied at 20,000 (a dead leader held the result): 200 ms, updated at 20,000.
    const a = accrue(hop(), item, undefined, 20_000, segmentEnd(hop(), 20_000, 1_200));
    expect(a.added.elapsedMs).toBe(200);
    expect(a.row.elapsedMs).toBe(200);
    expect(a.item.updatedAt).toBe(20_000);
    // Unknown publish time: now. A publish time from a clock behind the segment's start: no time, never
    // negative; one ahead of now: now.
    expect(segmentEnd(hop(), 20_000, undefined)).toBe(20_000);
    expect(segmentEnd(hop(), 20_000, 500)).toBe(1_000);
    expect(segmentEnd(hop(), 20_000, 90_000)).toBe(20_000);
    expect(segmentEnd(hop({ activeSince: null }), 20_000, 1_200)).toBe(20_000);
  });

  it('a result without usage still accrues its time, under the hop model or "unreported"', () => {
    const a = accrue(hop(), item, undefined, 1_100);
    expect(a.added).toEqual({ ...zero, elapsedMs: 100 });
    expect(a.model).toBe(UNREPORTED_MODEL);
    expect(accrue(hop({ model: 'demo-large' }), item, undefined, 1_100).model).toBe('demo-large');
  });

  it('sums of many small costs stay exact to the nano-dollar', () => {
    let it2 = item;
    let h = hop();
    for (let i = 0; i < 1000; i++) {
      const a = accrue(
        { ...h, activeSince: 0 },
        it2,
        { inputTokens: 1, outputTokens: 0, costUsd: 0.000001, model: 'm' },
        0,
      );
      it2 = a.item;
      h = a.hop;
    }
    expect(h.usage.costUsd).toBe(0.001);
    expect(it2.usage.costUsd).toBe(0.101);
  });
});
