import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type RunState, initialRun, stepRun } from '../../src/machines/workflow-run-machine.js';
import { ITEM_BUDGET_EXCEEDED } from '../../src/protocol/work-envelope.js';
import type { RunUsage, WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * How a run ends on its budget, as rules over any usage and any failure of
 * the current hop:
 * - usage that takes the run strictly over its budget fails it
 *   `BUDGET_EXCEEDED` with the budget's words, whatever the event;
 * - a hop that stopped because the item's budget is spent
 *   (`ItemBudgetExceeded`) fails the run at once, never retried, whatever
 *   its stage's retry policy: the reason is the budget's state (exceeded,
 *   else spent, else "budget spent") and what the hop said (its message, else
 *   its error type, cut at 300 characters), naming the hop;
 * - any other failure within the budget is the stage's to retry or route;
 * - a stale failure is refused and changes nothing.
 */

const definition = parseWorkflowDefinition({
  id: 'spend',
  version: 1,
  start: 'work',
  stages: {
    work: { role: 'worker', retry: { maximumAttempts: 5 }, next: [{ on: 'failed', end: 'failed' }] },
  },
});

const MAX_TOKENS = 100;
const usageOf = (tokens: number): RunUsage => ({ inputTokens: tokens, outputTokens: 0, costUsd: 0, elapsedMs: 1 });

function running(spent: number): RunState {
  let run = stepRun(initialRun({ runId: 'item', definition, budget: { maxTokens: MAX_TOKENS } }), { type: 'START' });
  if (spent > 0) {
    // A first attempt that failed and is retried, having spent `spent` tokens.
    run = stepRun(run, { type: 'HOP_FAILED', hop: 1, attempt: 1, errorType: 'Boom', usage: usageOf(spent) });
    expect(run.value).toBe('running');
  }
  return run;
}

const messageArb = fc.option(
  fc.oneof(fc.string({ minLength: 1, maxLength: 20 }), fc.string({ minLength: 290, maxLength: 400 })),
  { nil: undefined },
);

describe("a run's end on its budget", () => {
  test.prop([
    fc.integer({ min: 0, max: MAX_TOKENS }),
    fc.integer({ min: 0, max: 60 }),
    fc.constantFrom(ITEM_BUDGET_EXCEEDED, 'Boom'),
    messageArb,
    fc.constantFrom(0, 0, 0, 1),
  ])(
    'a failure of the current hop ends the run on the budget when the rules say so',
    (spent, tokens, errorType, message, stale) => {
      const before = running(spent);
      const attempt = before.context.attempt;
      const event: WorkflowRunEvent = {
        type: 'HOP_FAILED',
        hop: 1 + stale,
        attempt,
        errorType,
        ...(message === undefined ? {} : { message }),
        usage: usageOf(tokens),
      };
      const after = stepRun(before, event);
      if (stale > 0) {
        expect(after.value).toBe('running');
        expect({ ...after.context, refusal: null }).toEqual({ ...before.context, refusal: null });
        expect(after.context.refusal?.reason).toBe('stale-hop');
        return;
      }
      const total = spent + tokens;
      const over = total > MAX_TOKENS;
      const stopped = errorType === ITEM_BUDGET_EXCEEDED;
      if (!over && !stopped) {
        // Within the budget: the stage retries it (5 attempts).
        expect(after.value).toBe('running');
        expect(after.context.failure).toBeNull();
        expect(after.context.attempt).toBe(attempt + 1);
        return;
      }
      expect(after.value).toBe('failed');
      expect(after.context.failure?.code).toBe('BUDGET_EXCEEDED');
      expect(after.context.failure?.hop).toBe(1);
      expect(after.context.failure?.stage).toBe('work');
      expect(after.context.directive).toEqual({ kind: 'none' });
      const state = over
        ? `budget exceeded: ${total} of ${MAX_TOKENS} tokens`
        : total === MAX_TOKENS
          ? `budget spent: ${total} of ${MAX_TOKENS} tokens`
          : 'budget spent';
      const said = (message ?? errorType).slice(0, 300);
      expect(after.context.failure?.reason).toBe(stopped ? `${state} (hop 1 stopped: ${said})` : state);
    },
  );
});
