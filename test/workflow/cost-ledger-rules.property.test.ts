import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ZERO_RUN_USAGE, addRunUsage } from '../../src/protocol/workflow.js';
import { UNREPORTED_MODEL, accrue, segmentMs, toRunUsage, totalTokens } from '../../src/workflow/cost-ledger.js';
import { type HopRecord, type ItemRecord, dispatchedHop } from '../../src/workflow/records.js';

/**
 * The cost ledger's rules over any hop, item and report (docs/coordinator.md,
 * cost): what a result adds is what the worker reported plus the time the
 * hop ran since it last started, and the same amount lands on the hop, on
 * its item and in the usage row, whatever the clock did.
 */

const usageArb = fc.record({
  inputTokens: fc.nat(5_000),
  outputTokens: fc.nat(5_000),
  costUsd: fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1_000),
  elapsedMs: fc.nat(100_000),
});
const reportArb = fc.option(
  fc.record({
    inputTokens: fc.nat(5_000),
    outputTokens: fc.nat(5_000),
    costUsd: fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1_000),
    model: fc.constantFrom('demo-small', 'demo-large'),
  }),
  { nil: undefined },
);

const hopArb: fc.Arbitrary<HopRecord> = fc
  .record({
    activeSince: fc.option(fc.integer({ min: 0, max: 20_000 }), { nil: null }),
    model: fc.option(fc.constantFrom('hop-model'), { nil: null }),
    usage: usageArb,
  })
  .map(({ activeSince, model, usage }) => ({
    ...dispatchedHop({
      id: 'hop-7',
      itemId: 'item-3',
      seq: 7,
      hop: 4,
      attempt: 2,
      kind: 'stage',
      stage: 'review',
      role: 'reviewer',
      idempotencyKey: 'item-3/4/2',
      continuation: null,
      askedBy: null,
      dispatchedAt: 0,
      activeSince,
    }),
    model,
    usage,
  }));

const itemArb: fc.Arbitrary<ItemRecord> = usageArb.map((usage) => ({
  id: 'item-3',
  taskId: null,
  workflow: { id: 'dev-sdlc', version: 1 },
  state: 'running',
  stage: 'review',
  hop: 4,
  hops: 7,
  input: [],
  budget: null,
  attributes: null,
  usage,
  failure: null,
  approval: null,
  createdAt: 0,
  updatedAt: 5,
  finishedAt: null,
  output: null,
  mirrored: false,
}));

describe('accrue', () => {
  test.prop([hopArb, itemArb, reportArb, fc.integer({ min: 0, max: 40_000 })])(
    'adds the report and the running time to the hop, the item and the row alike',
    (hop, item, report, now) => {
      const elapsedMs = hop.activeSince === null ? 0 : Math.max(0, now - hop.activeSince);
      const added =
        report === undefined
          ? { ...ZERO_RUN_USAGE, elapsedMs }
          : { inputTokens: report.inputTokens, outputTokens: report.outputTokens, costUsd: report.costUsd, elapsedMs };
      const model = report?.model ?? hop.model ?? UNREPORTED_MODEL;
      const a = accrue(hop, item, report, now);
      expect(segmentMs(hop, now)).toBe(elapsedMs);
      expect(a.added).toEqual(added);
      expect(a.model).toBe(model);
      // The hop's running segment ends here; everything else about it stays.
      expect(a.hop).toEqual({ ...hop, usage: addRunUsage(hop.usage, added), model, activeSince: null });
      expect(a.item).toEqual({ ...item, usage: addRunUsage(item.usage, added), updatedAt: now });
      expect(a.row).toEqual({
        hopId: hop.id,
        itemId: hop.itemId,
        agent: hop.role,
        model,
        ...added,
        at: now,
      });
      expect(totalTokens(a.item.usage)).toBe(totalTokens(item.usage) + added.inputTokens + added.outputTokens);
    },
  );

  it('a report with no usage adds only time; its model is what the hop had, else unreported', () => {
    expect(toRunUsage(undefined, 42)).toEqual({ inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 42 });
    expect(UNREPORTED_MODEL).toBe('unreported');
    expect(totalTokens({ inputTokens: 3, outputTokens: 4, costUsd: 1, elapsedMs: 9 })).toBe(7);
  });
});
