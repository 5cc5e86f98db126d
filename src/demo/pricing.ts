import type { Usage } from '../protocol/work-envelope.js';

/**
 * Made-up models and prices for the demo (USD per million tokens). They are
 * plausible, not any vendor's: the demo's agents are scripted and call no
 * model at all.
 */
export const DEMO_MODELS = {
  'demo-large': { inputPerMTok: 15, outputPerMTok: 75 },
  'demo-medium': { inputPerMTok: 3, outputPerMTok: 15 },
  'demo-small': { inputPerMTok: 0.25, outputPerMTok: 1.25 },
} as const;
export type DemoModel = keyof typeof DEMO_MODELS;

/** What a call of `model` with these token counts costs, as the worker reports it. */
export function demoUsage(model: DemoModel, inputTokens: number, outputTokens: number): Usage {
  const price = DEMO_MODELS[model];
  const costUsd = (inputTokens * price.inputPerMTok + outputTokens * price.outputPerMTok) / 1_000_000;
  return { inputTokens, outputTokens, costUsd: Math.round(costUsd * 1e6) / 1e6, model };
}
