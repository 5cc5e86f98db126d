import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { CONNECTION_ANSWER_BUDGET_BYTES, MAX_LINE_BYTES, MAX_LINE_NESTING } from '../../src/protocol/bounds.js';
import {
  AnswerBudget,
  BATCH_IN_FLIGHT_BYTES,
  ENTRY_RESERVE_BYTES,
  MIN_CALL_ESTIMATE_BYTES,
} from '../../src/transport/answer-budget.js';
import { lineNesting } from '../../src/transport/line-nesting.js';

describe('the answer budget of a connection', () => {
  it('defaults to 64 MiB per connection and one line per batch', () => {
    const budget = new AnswerBudget();
    expect(budget.maxBytes).toBe(CONNECTION_ANSWER_BUDGET_BYTES);
    expect(CONNECTION_ANSWER_BUDGET_BYTES).toBe(64 * 1024 * 1024);
    expect(budget.lineBytes).toBe(MAX_LINE_BYTES);
  });

  it("keeps a batch's answers while they fit its line, then spends the batch", () => {
    // One call counted (so no room is reserved for the others).
    const budget = new AnswerBudget(1000, 100);
    const batch = budget.openBatch(1);
    expect(batch.admit(40)).toBe(true);
    batch.answered();
    expect(batch.bytes).toBe(2 + 41);
    // 43 + 61 passes the 100-byte line: refused, and the batch is spent from then on.
    expect(batch.admit(60)).toBe(false);
    expect(batch.spent).toBe('MAX_LINE_BYTES');
    expect(batch.admit(1)).toBe(false);
    expect(budget.held).toBe(41);
    batch.close();
    expect(budget.held).toBe(0);
  });

  it('keeps room in the line for the error entries of the calls not yet answered', () => {
    const budget = new AnswerBudget(Number.MAX_SAFE_INTEGER, 10_000);
    const batch = budget.openBatch(5);
    // Four calls after this one: 4 KiB stays free, so 10,000 - 2 - 4,096 = 5,902 bytes of entry at most.
    expect(batch.admit(5_902)).toBe(false);
    const fresh = budget.openBatch(5);
    expect(fresh.admit(5_901)).toBe(true);
    expect(ENTRY_RESERVE_BYTES).toBe(1024);
  });

  it("counts every batch of the connection against its budget until the batch's line is written", () => {
    const budget = new AnswerBudget(250, 200);
    const first = budget.openBatch(1);
    const second = budget.openBatch(1);
    expect(first.admit(150)).toBe(true);
    expect(second.admit(150)).toBe(false);
    expect(second.spent).toBe('CONNECTION_ANSWER_BUDGET_BYTES');
    first.close();
    first.close();
    expect(budget.held).toBe(0);
    const third = budget.openBatch(1);
    expect(third.admit(150)).toBe(true);
  });

  it('error entries are always kept and counted', () => {
    const budget = new AnswerBudget(100, 100);
    const batch = budget.openBatch(2);
    batch.addError(300);
    expect(batch.bytes).toBe(303);
    expect(budget.held).toBe(301);
  });

  it('lets one call of a batch run whatever its estimate, more only while their answers would fit', () => {
    const budget = new AnswerBudget();
    const batch = budget.openBatch(1000);
    expect(batch.mayDispatch(MAX_LINE_BYTES * 4)).toBe(true);
    batch.inFlight = 1;
    expect(batch.mayDispatch(10 * 1024 * 1024)).toBe(false);
    // Small answers: weighed at MIN_CALL_ESTIMATE_BYTES each, so 16 at once.
    batch.inFlight = BATCH_IN_FLIGHT_BYTES / MIN_CALL_ESTIMATE_BYTES - 1;
    expect(batch.mayDispatch(200)).toBe(true);
    batch.inFlight = BATCH_IN_FLIGHT_BYTES / MIN_CALL_ESTIMATE_BYTES;
    expect(batch.mayDispatch(200)).toBe(false);
    expect(BATCH_IN_FLIGHT_BYTES / MIN_CALL_ESTIMATE_BYTES).toBe(16);
    // Large ones: no more than BATCH_IN_FLIGHT_BYTES of them.
    batch.inFlight = Math.floor(BATCH_IN_FLIGHT_BYTES / (300 * 1024));
    expect(batch.mayDispatch(300 * 1024)).toBe(false);
    batch.inFlight = 2;
    expect(batch.mayDispatch(300 * 1024)).toBe(true);
  });

  fcTest.prop([fc.array(fc.nat({ max: 5000 }), { minLength: 1, maxLength: 60 })])(
    'what a batch keeps never passes its line nor the budget, and closing gives all of it back',
    (sizes) => {
      const budget = new AnswerBudget(40_000, 20_000);
      const batch = budget.openBatch(sizes.length);
      for (const size of sizes) {
        if (size <= 64) batch.addError(size);
        else batch.admit(size);
        batch.answered();
        expect(batch.bytes).toBeLessThanOrEqual(20_000 + 65 * sizes.length);
        expect(budget.held).toBeLessThanOrEqual(40_000 + 65 * sizes.length);
      }
      batch.close();
      expect(budget.held).toBe(0);
    },
  );
});

describe('the nesting scan of a line', () => {
  it('counts arrays and objects, not brackets inside strings', () => {
    expect(lineNesting('{"a":[1,{"b":[]}]}', 10)).toBe(4);
    expect(lineNesting('{"a":"[[[[[[{{{{"}', 10)).toBe(1);
    expect(lineNesting('{"a":"quote \\" then [[[[[[","b":[]}', 10)).toBe(2);
    expect(lineNesting('{"a":"ends in a backslash \\\\","b":[[]]}', 10)).toBe(3);
    expect(lineNesting('"unterminated [[[[', 10)).toBe(0);
    expect(lineNesting('', 10)).toBe(0);
  });

  it('stops as soon as the line passes the bound', () => {
    const deep = `${'['.repeat(1_000_000)}${']'.repeat(1_000_000)}`;
    expect(lineNesting(deep, MAX_LINE_NESTING)).toBe(MAX_LINE_NESTING + 1);
    expect(MAX_LINE_NESTING).toBe(256);
  });

  fcTest.prop([fc.jsonValue({ maxDepth: 8 })])('agrees with the depth of the parsed value', (value) => {
    const depth = (v: unknown): number =>
      v !== null && typeof v === 'object'
        ? 1 + Math.max(0, ...Object.values(v as Record<string, unknown>).map(depth))
        : 0;
    expect(lineNesting(JSON.stringify(value), 100)).toBe(depth(value));
  });
});
