import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { mcpToolOutput } from '../../src/agents/mcp/tool-result.js';
import { NO_SPEND, addStep, checkPricing, priceOf, stepTokens } from '../../src/agents/pricing.js';
import { itemBudgetStop } from '../../src/agents/steps.js';

/**
 * The rules of a model agent's spend and of an MCP tool's result beside
 * pricing.test.ts and mcp-tool-result.test.ts, each stated on its own:
 * - a spend adds each count of a step to its own;
 * - a cached rate, when given, is checked like the others;
 * - a model takes the price of the longest key its id starts with,
 *   whatever the table's order;
 * - a count the provider gave that is not a finite positive number is 0;
 * - the work item's budget stops a call at its limit, not past it;
 * - a failed MCP call without text names the tool; structured content of
 *   null is none; content, when given, wins over a 2024-10-07 result.
 */

const tokensArb = fc.record({
  inputTokens: fc.nat(1_000),
  outputTokens: fc.nat(1_000),
  cachedInputTokens: fc.nat(1_000),
  reasoningTokens: fc.nat(1_000),
});

describe("a model agent's spend", () => {
  test.prop([tokensArb, tokensArb, fc.nat(100), fc.nat(100)])('adds each count of a step to its own', (a, b, x, y) => {
    const spend = addStep(addStep({ ...NO_SPEND }, a, x), b, y);
    expect(spend).toEqual({
      inputTokens: a.inputTokens + b.inputTokens,
      outputTokens: a.outputTokens + b.outputTokens,
      cachedInputTokens: a.cachedInputTokens + b.cachedInputTokens,
      reasoningTokens: a.reasoningTokens + b.reasoningTokens,
      costUsd: x + y,
    });
  });

  test.prop([fc.constantFrom(-1, Number.NaN, Number.POSITIVE_INFINITY)])(
    'a cached rate that is not a finite number at least 0 is refused, named',
    (bad) => {
      expect(() => checkPricing({ inputPerMTok: 1, outputPerMTok: 1, cachedInputPerMTok: bad }, 'm')).toThrow(
        /pricing of m: cachedInputPerMTok/,
      );
      expect(checkPricing({ inputPerMTok: 1, outputPerMTok: 1, cachedInputPerMTok: 0 }, 'm').cachedInputPerMTok).toBe(
        0,
      );
    },
  );

  test.prop([fc.boolean()])('a model takes the price of the longest key its id starts with', (longFirst) => {
    const short = { inputPerMTok: 1, outputPerMTok: 1 };
    const long = { inputPerMTok: 2, outputPerMTok: 2 };
    const table = longFirst ? { 'gpt-4o': long, gpt: short } : { gpt: short, 'gpt-4o': long };
    expect(priceOf(table, 'gpt-4o-2024')).toBe(long);
    expect(priceOf(table, 'gpt-3')).toBe(short);
  });

  test.prop([fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, -5, '12', null, 0)])(
    'a count that is not a finite positive number is 0',
    (bad) => {
      const t = stepTokens({ inputTokens: bad as number, outputTokens: bad as number });
      expect(t).toEqual({ inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, reasoningTokens: 0 });
    },
  );

  test.prop([fc.nat(100), fc.nat(100), fc.nat(50)])(
    "the item's budget stops a call at its limit exactly",
    (spentTokens, used, cents) => {
      const spent = { ...NO_SPEND, inputTokens: used, costUsd: cents / 100 };
      const header = { spentTokens, spentCostUsd: 0, maxTokens: spentTokens + used };
      expect(itemBudgetStop(header, spent)).toContain(`${spentTokens + used} of ${spentTokens + used} tokens`);
      expect(itemBudgetStop({ ...header, maxTokens: spentTokens + used + 1 }, spent)).toBeNull();
      const money = { spentTokens: 0, spentCostUsd: 0, maxCostUsd: cents / 100 };
      expect(itemBudgetStop(money, spent)).toContain(`${cents / 100} of ${cents / 100} USD`);
    },
  );
});

describe("an MCP tool's result", () => {
  it('a failed call with no text to say names the tool', () => {
    expect(mcpToolOutput({ isError: true }, 'fs__read')).toEqual({
      type: 'error-text',
      value: 'the tool fs__read failed',
    });
    expect(mcpToolOutput({ content: [{ type: 'text', text: '' }], isError: true }, 'fs__read')).toEqual({
      type: 'error-text',
      value: 'the tool fs__read failed',
    });
  });

  it('reads a part as text only when it is a text part with a string', () => {
    const notText = [{ type: 'image', text: 'caption' }];
    expect(mcpToolOutput({ content: notText }, 't')).toEqual({ type: 'json', value: { content: notText } });
    const noString = [{ type: 'text', text: 3 }];
    expect(mcpToolOutput({ content: noString }, 't')).toEqual({ type: 'json', value: { content: noString } });
  });

  it('takes structured content of null as none, and content over an old result', () => {
    const content = [{ type: 'text', text: 'a' }];
    expect(mcpToolOutput({ content, structuredContent: null as unknown as Record<string, unknown> }, 't')).toEqual({
      type: 'text',
      value: 'a',
    });
    expect(mcpToolOutput({ content, toolResult: { old: true } }, 't')).toEqual({ type: 'text', value: 'a' });
    // Neither content nor an old result: no text.
    expect(mcpToolOutput({}, 't')).toEqual({ type: 'text', value: '' });
  });
});
