import { MockLanguageModelV3 } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createModelAgent } from '../../src/agents/model-agent.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { type Fixture, auditRows, deployments, openFixture } from '../coordinator/helpers.js';

// A model agent under a work item's budget, in a real Coordinator with real
// workers: the model keeps calling a tool and never answers; the item's
// budget (carried on the hop as `headers.itemBudget`) stops it before it
// overspends, the item fails BUDGET_EXCEEDED, and what the model consumed is
// on the item's cost.

type Generate = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

const PRICE = { inputPerMTok: 2, outputPerMTok: 8 };
const STEP = { input: 1000, output: 100 };
const STEP_COST = (STEP.input * PRICE.inputPerMTok + STEP.output * PRICE.outputPerMTok) / 1e6;

/** A model that calls `lookup` on every turn, and counts its calls. */
function relentless(): MockLanguageModelV3 {
  let n = 0;
  return new MockLanguageModelV3({
    modelId: 'relentless-1',
    doGenerate: async (): Promise<Generate> => {
      n++;
      return {
        content: [
          { type: 'tool-call', toolCallId: `c${n}`, toolName: 'lookup', input: JSON.stringify({ q: `x${n}` }) },
        ],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage: {
          inputTokens: { total: STEP.input, noCache: STEP.input, cacheRead: 0, cacheWrite: undefined },
          outputTokens: { total: STEP.output, text: STEP.output, reasoning: 0 },
        },
        warnings: [],
      };
    },
  });
}

function architect(model: MockLanguageModelV3) {
  return createModelAgent({
    model,
    pricing: PRICE,
    ask: false,
    // The mock answers generateText only (doGenerate): each call whole, not streamed.
    stream: false,
    tools: {
      lookup: {
        description: 'look something up',
        inputSchema: z.object({ q: z.string() }),
        execute: async ({ q }: { q: string }) => `nothing on ${q}`,
      },
    },
  });
}

let f: Fixture | undefined;
afterEach(async () => {
  await f?.close();
  f = undefined;
});

describe('a model agent under the work item budget', () => {
  it('stops before passing the item budget: the item fails BUDGET_EXCEEDED, the audit says why, the spent usage is charged', async () => {
    const model = relentless();
    f = await openFixture({ deployments: deployments({ ...DEMO_HANDLERS, architect: architect(model) }) });
    const { coordinator } = f;
    const limit = 0.01;
    const id = await coordinator.createWorkItem({
      workflow: 'dev-sdlc',
      input: 'Design',
      budget: { maxCostUsd: limit },
    });
    const final = await coordinator.settled(id);

    expect(final.state).toBe('failed');
    expect(final.failure?.code).toBe('BUDGET_EXCEEDED');
    expect(final.failure?.reason).toMatch(/budget exceeded: [\d.]+ of 0\.01 USD/);
    // Four calls: three leave budget (0.0084), the fourth passes it; no fifth.
    const calls = model.doGenerateCalls.length;
    expect(calls).toBe(4);
    // The item's cost is the priced usage the mock reported, over the limit by one step at most.
    expect(final.usage.inputTokens).toBe(calls * STEP.input);
    expect(final.usage.outputTokens).toBe(calls * STEP.output);
    expect(final.usage.costUsd).toBeCloseTo(calls * STEP_COST, 12);
    expect(final.usage.costUsd).toBeGreaterThan(limit);
    expect(final.usage.costUsd - limit).toBeLessThanOrEqual(STEP_COST);

    const audit = await auditRows(coordinator, { itemId: id });
    const failure = audit.find((r) => r.kind === 'failure');
    expect(failure?.data).toMatchObject({ errorType: 'ItemBudgetExceeded' });
    expect(failure?.data.message).toMatch(/before model call 5: the work item's budget is spent: [\d.]+ of 0\.01 USD/);
    const cost = audit.filter((r) => r.kind === 'cost');
    expect(cost.map((r) => r.data.costUsd)).toEqual([final.usage.costUsd]);
    expect(audit.at(-1)?.data).toMatchObject({ failure: { code: 'BUDGET_EXCEEDED' } });
    // No hop after the architect's: the stop ended the item.
    expect(await coordinator.listHops(id)).toHaveLength(1);
  }, 60_000);

  it('a stop at exactly the limit (spent, not over) fails the item BUDGET_EXCEEDED too, not a routable hop failure', async () => {
    const model = relentless();
    f = await openFixture({ deployments: deployments({ ...DEMO_HANDLERS, architect: architect(model) }) });
    const { coordinator } = f;
    const limit = 3 * (STEP.input + STEP.output);
    const id = await coordinator.createWorkItem({
      workflow: 'dev-sdlc',
      input: 'Design',
      budget: { maxTokens: limit },
    });
    const final = await coordinator.settled(id);

    expect(model.doGenerateCalls.length).toBe(3);
    expect(final.state).toBe('failed');
    expect(final.failure?.code).toBe('BUDGET_EXCEEDED');
    expect(final.failure?.reason).toContain(`budget spent: ${limit} of ${limit} tokens`);
    expect(final.failure?.reason).toContain("the work item's budget is spent");
    expect(final.usage.inputTokens + final.usage.outputTokens).toBe(limit);
  }, 60_000);
});
