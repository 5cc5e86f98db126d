import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PRICING,
  NO_SPEND,
  addStep,
  checkPricing,
  priceOf,
  stepCost,
  stepTokens,
} from '../../src/agents/pricing.js';
import { budgetStop, modelStepKey, toolStepKey } from '../../src/agents/steps.js';
import { ModelAgentCheckpointSchema } from '../../src/protocol/model-agent-checkpoint.js';

// The pure pieces of model agents: prices, token counts, step keys, the
// budget's stop, and the checkpoint's shape.

describe('pricing', () => {
  it('finds a model by its id or the longest family its id starts with', () => {
    expect(priceOf(DEFAULT_PRICING, 'gpt-4o')).toBe(DEFAULT_PRICING['gpt-4o']);
    expect(priceOf(DEFAULT_PRICING, 'gpt-4o-mini-2024-07-18')).toBe(DEFAULT_PRICING['gpt-4o-mini']);
    expect(priceOf(DEFAULT_PRICING, 'claude-sonnet-4-20250514')).toBe(DEFAULT_PRICING['claude-sonnet-4']);
    expect(priceOf(DEFAULT_PRICING, 'house-model')).toBeUndefined();
    expect(priceOf(DEFAULT_PRICING, 'constructor')).toBeUndefined();
  });

  it('reads the AI SDK v6 usage fields, the deprecated ones as a fallback, and missing counts as 0', () => {
    expect(
      stepTokens({
        inputTokens: 1000,
        outputTokens: 300,
        inputTokenDetails: { cacheReadTokens: 800 },
        outputTokenDetails: { reasoningTokens: 200 },
      }),
    ).toEqual({ inputTokens: 1000, outputTokens: 300, cachedInputTokens: 800, reasoningTokens: 200 });
    expect(stepTokens({ inputTokens: 10, outputTokens: 5, cachedInputTokens: 4, reasoningTokens: 1 })).toEqual({
      inputTokens: 10,
      outputTokens: 5,
      cachedInputTokens: 4,
      reasoningTokens: 1,
    });
    expect(stepTokens(undefined)).toEqual({
      inputTokens: 0,
      outputTokens: 0,
      cachedInputTokens: 0,
      reasoningTokens: 0,
    });
  });

  it('prices uncached input, cached input and output at their rates', () => {
    const price = { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 };
    const tokens = { inputTokens: 1_000_000, outputTokens: 100_000, cachedInputTokens: 500_000, reasoningTokens: 0 };
    expect(stepCost(price, tokens)).toBeCloseTo(1.5 + 0.15 + 1.5, 12);
    // No cached rate: cached input at the input rate.
    expect(stepCost({ inputPerMTok: 3, outputPerMTok: 15 }, tokens)).toBeCloseTo(3 + 1.5, 12);
  });

  it('refuses a price that is not a finite number at least 0, naming the field', () => {
    expect(() => checkPricing({ inputPerMTok: -1, outputPerMTok: 1 }, 'm')).toThrow(/pricing of m: inputPerMTok/);
    expect(() => checkPricing({ inputPerMTok: 1, outputPerMTok: Number.NaN }, 'm')).toThrow(/outputPerMTok/);
    for (const [model, price] of Object.entries(DEFAULT_PRICING)) expect(checkPricing(price, model)).toBe(price);
  });

  const tokens = fc
    .record({
      input: fc.nat(10_000_000),
      output: fc.nat(10_000_000),
      cached: fc.nat(10_000_000),
      reasoning: fc.nat(1e6),
    })
    .map((t) =>
      stepTokens({
        inputTokens: t.input,
        outputTokens: t.output,
        cachedInputTokens: t.cached,
        reasoningTokens: t.reasoning,
      }),
    );
  const price = fc.record({
    inputPerMTok: fc.double({ min: 0, max: 100, noNaN: true }),
    outputPerMTok: fc.double({ min: 0, max: 100, noNaN: true }),
    cachedInputPerMTok: fc.double({ min: 0, max: 100, noNaN: true }),
  });

  test.prop([tokens])('cached and reasoning tokens never exceed the input and output they are part of', (t) => {
    expect(t.cachedInputTokens).toBeLessThanOrEqual(t.inputTokens);
    expect(t.reasoningTokens).toBeLessThanOrEqual(t.outputTokens);
  });

  test.prop([fc.array(fc.tuple(tokens, price), { maxLength: 8 })])(
    'the hop’s spend is the sum of its priced steps, whatever their order',
    (steps) => {
      const spent = steps.reduce((s, [t, p]) => addStep(s, t, stepCost(p, t)), { ...NO_SPEND });
      const reversed = [...steps].reverse().reduce((s, [t, p]) => addStep(s, t, stepCost(p, t)), { ...NO_SPEND });
      const sum = steps.reduce((n, [t, p]) => n + stepCost(p, t), 0);
      expect(spent.costUsd).toBeCloseTo(sum, 9);
      expect(reversed.inputTokens).toBe(spent.inputTokens);
      expect(spent.costUsd).toBeGreaterThanOrEqual(0);
    },
  );
});

describe('steps', () => {
  it('keys model calls by their index in the hop and tool calls by the model call and the call id', () => {
    expect(modelStepKey(0)).toBe('model/0');
    expect(toolStepKey(3, 'call_abc')).toBe('tool/3/call_abc');
    expect(toolStepKey(1, 'x'.repeat(5000)).length).toBeLessThanOrEqual(1024);
  });

  test.prop([fc.nat(1000), fc.nat(1000)])(
    'two model steps of a hop share a key only when they are the same step',
    (a, b) => {
      expect(modelStepKey(a) === modelStepKey(b)).toBe(a === b);
      expect(modelStepKey(a)).not.toBe(toolStepKey(a, 'model'));
    },
  );

  it('stops at the limit, not before: tokens, dollars, or both named', () => {
    const spent = { ...NO_SPEND, inputTokens: 200, outputTokens: 50, costUsd: 0.02 };
    expect(budgetStop(undefined, spent)).toBeNull();
    expect(budgetStop({ maxTokens: 251 }, spent)).toBeNull();
    expect(budgetStop({ maxTokens: 250 }, spent)).toBe('budget spent: 250 of 250 tokens');
    expect(budgetStop({ maxTokens: 100, maxCostUsd: 0.01 }, spent)).toBe(
      'budget spent: 250 of 100 tokens, 0.02 of 0.01 USD',
    );
    expect(budgetStop({ maxCostUsd: 0.03 }, spent)).toBeNull();
  });
});

describe('the checkpoint', () => {
  const checkpoint = {
    kind: 'model-agent',
    version: 1,
    model: 'mock:gpt-4o-mini',
    messages: [
      { role: 'user', content: 'Build it' },
      {
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: 'q1', toolName: 'ask', input: { role: 'a', question: '?' } }],
      },
    ],
    step: 1,
    spent: { inputTokens: 1, outputTokens: 2, cachedInputTokens: 0, reasoningTokens: 0, costUsd: 0.1 },
    pending: { toolCallId: 'q1', toolName: 'ask' },
  };

  it('holds the conversation, the step count, the spend and the pending call', () => {
    expect(ModelAgentCheckpointSchema.parse(checkpoint)).toEqual(checkpoint);
  });

  it('refuses what is not one: another handler’s state, a pending call of an ordinary tool', () => {
    expect(ModelAgentCheckpointSchema.safeParse({ draft: 'x' }).success).toBe(false);
    expect(
      ModelAgentCheckpointSchema.safeParse({ ...checkpoint, pending: { toolCallId: 'q1', toolName: 'lookup' } })
        .success,
    ).toBe(false);
    expect(ModelAgentCheckpointSchema.safeParse({ ...checkpoint, version: 2 }).success).toBe(false);
  });
});
