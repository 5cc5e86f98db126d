import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { isPlainRunEvent } from '../../src/machines/workflow-run-machine.js';
import { WorkflowRunEventSchema } from '../../src/protocol/workflow.js';

/** The run machine's zod-free check of the events of every hop never accepts what the schema refuses. */

const value = fc.oneof(
  fc.anything(),
  fc.constantFrom(undefined, null, -1, 0, -0, 1, 2, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53, '1', {}, []),
);
const usage = fc.oneof(
  fc.record(
    { inputTokens: value, outputTokens: value, costUsd: value, elapsedMs: value, extra: value },
    { requiredKeys: [] },
  ),
  fc.record({
    inputTokens: fc.nat(),
    outputTokens: fc.nat(),
    costUsd: fc.double({ min: 0, noNaN: true }),
    elapsedMs: fc.double({ min: 0, noNaN: true }),
  }),
  value,
);
const eventLike = fc.record(
  {
    type: fc.oneof(fc.constantFrom('START', 'HOP_SUCCEEDED', 'HOP_FAILED', 'CANCEL'), fc.string()),
    hop: fc.oneof(fc.integer({ min: -2, max: 5 }), value),
    attempt: fc.oneof(fc.integer({ min: -2, max: 5 }), value),
    usage,
    extra: value,
  },
  { requiredKeys: [] },
);

describe('the run machine event check without zod', () => {
  test.prop([eventLike], { numRuns: 500 })('never accepts what the schema refuses', (event) => {
    if (isPlainRunEvent(event)) expect(WorkflowRunEventSchema.safeParse(event).success).toBe(true);
  });

  it('accepts the events of every hop', () => {
    const usage = { inputTokens: 100, outputTokens: 20, costUsd: 0.0001, elapsedMs: 3 };
    for (const event of [
      { type: 'START' },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 },
      { type: 'HOP_SUCCEEDED', hop: 4, attempt: 2, usage },
    ]) {
      expect(WorkflowRunEventSchema.safeParse(event).success).toBe(true);
      expect(isPlainRunEvent(event)).toBe(true);
    }
    for (const event of [
      { type: 'START', hop: 1 },
      { type: 'HOP_SUCCEEDED', hop: 0, attempt: 1 },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, usage: { ...usage, costUsd: -1 } },
      { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, note: 'x' },
    ]) {
      expect(isPlainRunEvent(event)).toBe(false);
      expect(WorkflowRunEventSchema.safeParse(event).success).toBe(false);
    }
  });
});
