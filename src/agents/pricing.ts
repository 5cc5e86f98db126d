import type { AgentSpend } from '../protocol/model-agent-checkpoint.js';
import { NonRetryableError } from '../actors/worker/errors.js';

/** What a model's tokens cost, in USD per million tokens. */
export interface ModelPricing {
  /** Input (prompt) tokens not read from a cache. */
  inputPerMTok: number;
  /** Output tokens (reasoning tokens included: providers count them as output). */
  outputPerMTok: number;
  /** Input tokens read from the provider's prompt cache (default: `inputPerMTok`). */
  cachedInputPerMTok?: number;
}

/** Prices by model id; an id also matches a key it starts with (`gpt-4o-2024-08-06` is priced as `gpt-4o`). */
export type PricingTable = Readonly<Record<string, ModelPricing>>;

/**
 * List prices of common models (USD per million tokens, standard tier, as the
 * vendors published them when this table was written). Prices change: pass
 * your own `pricing` to `createModelAgent` (or `pricing` in an agent file)
 * for any model you pay for.
 */
export const DEFAULT_PRICING: PricingTable = Object.freeze({
  'gpt-4o': { inputPerMTok: 2.5, outputPerMTok: 10, cachedInputPerMTok: 1.25 },
  'gpt-4o-mini': { inputPerMTok: 0.15, outputPerMTok: 0.6, cachedInputPerMTok: 0.075 },
  'gpt-4.1': { inputPerMTok: 2, outputPerMTok: 8, cachedInputPerMTok: 0.5 },
  'gpt-4.1-mini': { inputPerMTok: 0.4, outputPerMTok: 1.6, cachedInputPerMTok: 0.1 },
  'gpt-4.1-nano': { inputPerMTok: 0.1, outputPerMTok: 0.4, cachedInputPerMTok: 0.025 },
  'o4-mini': { inputPerMTok: 1.1, outputPerMTok: 4.4, cachedInputPerMTok: 0.275 },
  'claude-opus-4': { inputPerMTok: 15, outputPerMTok: 75, cachedInputPerMTok: 1.5 },
  'claude-sonnet-4': { inputPerMTok: 3, outputPerMTok: 15, cachedInputPerMTok: 0.3 },
  'claude-3-5-haiku': { inputPerMTok: 0.8, outputPerMTok: 4, cachedInputPerMTok: 0.08 },
  'gemini-2.5-pro': { inputPerMTok: 1.25, outputPerMTok: 10, cachedInputPerMTok: 0.31 },
  'gemini-2.5-flash': { inputPerMTok: 0.3, outputPerMTok: 2.5, cachedInputPerMTok: 0.075 },
});

function checkPrice(value: unknown, what: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new NonRetryableError(`${what} must be a finite number of USD per million tokens, at least 0`, {
      type: 'InvalidPricing',
    });
  }
}

/** Checks a price: every rate a finite number, at least 0 (throws `InvalidPricing` saying which is not). */
export function checkPricing(pricing: ModelPricing, model: string): ModelPricing {
  checkPrice(pricing.inputPerMTok, `pricing of ${model}: inputPerMTok`);
  checkPrice(pricing.outputPerMTok, `pricing of ${model}: outputPerMTok`);
  if (pricing.cachedInputPerMTok !== undefined) {
    checkPrice(pricing.cachedInputPerMTok, `pricing of ${model}: cachedInputPerMTok`);
  }
  return pricing;
}

/**
 * The price of `modelId` in `table`: its own entry, else the longest key it
 * starts with (dated and suffixed ids take their family's price), else
 * undefined.
 */
export function priceOf(table: PricingTable, modelId: string): ModelPricing | undefined {
  const own = Object.hasOwn(table, modelId) ? table[modelId] : undefined;
  if (own !== undefined) return own;
  let best: string | undefined;
  for (const key of Object.keys(table)) {
    if (modelId.startsWith(key) && (best === undefined || key.length > best.length)) best = key;
  }
  return best === undefined ? undefined : table[best];
}

/** Token counts of one model call, as the AI SDK (v6) reports them. */
export interface StepTokens {
  inputTokens: number;
  outputTokens: number;
  cachedInputTokens: number;
  reasoningTokens: number;
}

/** The AI SDK's `LanguageModelUsage`, the fields read here (so that the type needs no `ai`). */
export interface SdkUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  inputTokenDetails?: { cacheReadTokens?: number | undefined } | undefined;
  outputTokenDetails?: { reasoningTokens?: number | undefined } | undefined;
  cachedInputTokens?: number | undefined;
  reasoningTokens?: number | undefined;
}

function count(value: number | undefined): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/** The token counts of an AI SDK usage: what the provider did not report counts 0. */
export function stepTokens(usage: SdkUsage | undefined): StepTokens {
  const inputTokens = count(usage?.inputTokens);
  const outputTokens = count(usage?.outputTokens);
  return {
    inputTokens,
    outputTokens,
    // Cached and reasoning tokens are parts of the input and output counts, never more than them.
    cachedInputTokens: Math.min(
      inputTokens,
      count(usage?.inputTokenDetails?.cacheReadTokens ?? usage?.cachedInputTokens),
    ),
    reasoningTokens: Math.min(
      outputTokens,
      count(usage?.outputTokenDetails?.reasoningTokens ?? usage?.reasoningTokens),
    ),
  };
}

/**
 * What one model call cost in USD: uncached input at the input rate, cached
 * input at the cached rate, output (reasoning included) at the output rate.
 */
export function stepCost(pricing: ModelPricing, tokens: StepTokens): number {
  const cached = tokens.cachedInputTokens;
  const cachedRate = pricing.cachedInputPerMTok ?? pricing.inputPerMTok;
  return (
    ((tokens.inputTokens - cached) * pricing.inputPerMTok +
      cached * cachedRate +
      tokens.outputTokens * pricing.outputPerMTok) /
    1_000_000
  );
}

/** Nothing spent. */
export const NO_SPEND: Readonly<AgentSpend> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cachedInputTokens: 0,
  reasoningTokens: 0,
  costUsd: 0,
});

/** `spend` with one priced model call added. */
export function addStep(spend: AgentSpend, tokens: StepTokens, costUsd: number): AgentSpend {
  return {
    inputTokens: spend.inputTokens + tokens.inputTokens,
    outputTokens: spend.outputTokens + tokens.outputTokens,
    cachedInputTokens: spend.cachedInputTokens + tokens.cachedInputTokens,
    reasoningTokens: spend.reasoningTokens + tokens.reasoningTokens,
    costUsd: spend.costUsd + costUsd,
  };
}
