import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { parseAsk, parseDelegate } from '../../src/agents/suspending-tools.js';
import { budgetStop, itemBudgetStop, modelStepKey, toolStepKey } from '../../src/agents/steps.js';
import type { AgentSpend } from '../../src/protocol/model-agent-checkpoint.js';

/**
 * The rules of a model agent's steps and of the calls that suspend it,
 * each stated on its own:
 * - a model call's key is `model/<n>`, a tool call's `tool/<n>/<id>` with
 *   the id cut at 200 characters;
 * - a hop's own budget stops the next model call once what the hop spent
 *   reaches any of its limits, and names each limit reached;
 * - the work item's budget does the same with what the item had spent when
 *   the hop went out added;
 * - an `ask` takes a role (not a `$` one, and one of the roles it may ask
 *   when they are listed) and a non-empty question, else an error that
 *   says what it takes;
 * - a `delegate` takes a workflow reference, an input and an optional
 *   budget, else an error that says what it takes and what was wrong.
 */

const spendArb: fc.Arbitrary<AgentSpend> = fc.record({
  inputTokens: fc.integer({ min: 0, max: 100 }),
  outputTokens: fc.integer({ min: 0, max: 100 }),
  cachedInputTokens: fc.constant(0),
  reasoningTokens: fc.constant(0),
  costUsd: fc.integer({ min: 0, max: 20 }).map((c) => c / 10),
});
const limitArb = fc.option(fc.integer({ min: 0, max: 250 }), { nil: undefined });
const costLimitArb = fc.option(
  fc.integer({ min: 0, max: 30 }).map((c) => c / 10),
  { nil: undefined },
);

describe("a model agent's steps", () => {
  test.prop([fc.nat({ max: 1_000 })])('a model call is keyed by its number', (n) => {
    expect(modelStepKey(n)).toBe(`model/${n}`);
  });

  test.prop([fc.nat({ max: 1_000 }), fc.string({ minLength: 1, maxLength: 400 })])(
    'a tool call is keyed by its model call and its id, cut at 200 characters',
    (n, id) => {
      expect(toolStepKey(n, id)).toBe(`tool/${n}/${id.slice(0, 200)}`);
    },
  );

  test.prop([spendArb, limitArb, costLimitArb, fc.boolean()])(
    "a hop's budget stops the next call once a limit is reached, naming each one reached",
    (spent, maxTokens, maxCostUsd, none) => {
      if (none) {
        expect(budgetStop(undefined, spent)).toBeNull();
        return;
      }
      const budget = {
        ...(maxTokens === undefined ? {} : { maxTokens }),
        ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
      };
      const tokens = spent.inputTokens + spent.outputTokens;
      const over: string[] = [];
      if (maxTokens !== undefined && tokens >= maxTokens) over.push(`${tokens} of ${maxTokens} tokens`);
      if (maxCostUsd !== undefined && spent.costUsd >= maxCostUsd) over.push(`${spent.costUsd} of ${maxCostUsd} USD`);
      expect(budgetStop(budget, spent)).toBe(over.length === 0 ? null : `budget spent: ${over.join(', ')}`);
    },
  );

  test.prop([
    spendArb,
    limitArb,
    costLimitArb,
    fc.integer({ min: 0, max: 100 }),
    fc.integer({ min: 0, max: 10 }).map((c) => c / 10),
    fc.boolean(),
  ])(
    "the item's budget counts what the item had spent with what the hop spent since",
    (spent, maxTokens, maxCostUsd, spentTokens, spentCostUsd, none) => {
      if (none) {
        expect(itemBudgetStop(undefined, spent)).toBeNull();
        return;
      }
      const header = {
        spentTokens,
        spentCostUsd,
        ...(maxTokens === undefined ? {} : { maxTokens }),
        ...(maxCostUsd === undefined ? {} : { maxCostUsd }),
      };
      const tokens = spentTokens + spent.inputTokens + spent.outputTokens;
      const cost = spentCostUsd + spent.costUsd;
      const over: string[] = [];
      if (maxTokens !== undefined && tokens >= maxTokens) over.push(`${tokens} of ${maxTokens} tokens`);
      if (maxCostUsd !== undefined && cost >= maxCostUsd) over.push(`${cost} of ${maxCostUsd} USD`);
      expect(itemBudgetStop(header, spent)).toBe(
        over.length === 0 ? null : `the work item's budget is spent: ${over.join(', ')}`,
      );
    },
  );
});

describe('the calls that suspend a model agent', () => {
  const roleArb = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}$/);
  const ASK_SHAPE = 'ask takes { role, question }: a role name and a non-empty question';

  test.prop([
    roleArb,
    fc.string({ minLength: 1, maxLength: 20 }),
    fc.option(fc.uniqueArray(roleArb, { maxLength: 3 })),
  ])('an ask takes a role it may ask and a question', (role, question, listed) => {
    const roles = listed === null ? undefined : new Set(listed);
    const r = parseAsk({ role, question }, roles);
    if (roles === undefined || roles.has(role)) expect(r).toEqual({ role, question });
    else expect(r).toEqual({ error: `you may ask ${[...roles].join(', ')}, not ${role}` });
  });

  test.prop([
    fc.oneof(
      roleArb.map((role) => ({ role: `$${role}`, question: 'q' })),
      roleArb.map((role) => ({ role, question: '' })),
      roleArb.map((role) => ({ role })),
      fc.string().map((question) => ({ question })),
      fc.constantFrom(null, 'ask', 3, [] as unknown[]),
    ),
  ])('an ask without a role of its own or a question is an error that says what it takes', (input) => {
    expect(parseAsk(input, undefined)).toEqual({ error: ASK_SHAPE });
    expect(parseAsk(input, new Set(['a']))).toEqual({ error: ASK_SHAPE });
  });

  test.prop([
    fc.stringMatching(/^[a-z][a-z0-9-]{0,8}@[1-9][0-9]{0,2}$/),
    fc.string({ minLength: 1, maxLength: 20 }),
    fc.option(
      fc.record(
        { maxTokens: fc.integer({ min: 1, max: 1_000 }), maxHops: fc.integer({ min: 1, max: 9 }) },
        { requiredKeys: ['maxHops'] },
      ),
      { nil: undefined },
    ),
  ])('a delegate takes a workflow, an input and a budget if it gives one', (workflow, input, budget) => {
    const r = parseDelegate({ workflow, input, ...(budget === undefined ? {} : { budget }) });
    expect(r).toEqual({ workflow, input, ...(budget === undefined ? {} : { budget }) });
    if (budget === undefined) expect(r).not.toHaveProperty('budget');
  });

  test.prop([
    fc.oneof(
      fc.record({ workflow: fc.constantFrom('no-version', '@1', ''), input: fc.constant('x') }),
      fc.record({ workflow: fc.constant('w@1'), input: fc.constant('') }),
      fc.record({ workflow: fc.constant('w@1'), input: fc.constant('x'), budget: fc.constant({ maxTokens: -1 }) }),
      fc.constant({ input: 'x' }),
    ),
  ])('a delegate that is not one is an error that says what it takes and what was wrong', (input) => {
    const r = parseDelegate(input);
    expect(r).toHaveProperty('error');
    const error = (r as { error: string }).error;
    expect(error.startsWith('delegate takes { workflow: "id@version", input, budget?: ')).toBe(true);
    // What was wrong: the path of the first problem, after the shape.
    const wrong = error.slice(error.indexOf('}: ') + 3);
    const field =
      !('workflow' in input) || input.workflow !== 'w@1' ? 'workflow' : 'budget' in input ? 'budget' : 'input';
    expect(wrong.startsWith(field)).toBe(true);
    expect(wrong.length).toBeGreaterThan(field.length + 1);
  });

  test.prop([fc.oneof(fc.constant(null), fc.string(), fc.integer(), fc.array(fc.integer(), { maxLength: 3 }))])(
    'a delegate that is not an object says what it takes and what it got, with no path',
    (input) => {
      const r = parseDelegate(input);
      const error = (r as { error: string }).error;
      const shape =
        'delegate takes { workflow: "id@version", input, budget?: { maxTokens?, maxCostUsd?, maxHops?, deadline? } }: ';
      expect(error.startsWith(shape)).toBe(true);
      const wrong = error.slice(shape.length);
      // zod's own words for the whole input, neither led nor followed by a space.
      expect(wrong).toMatch(/^Invalid input: expected object, received \w+$/);
    },
  );

  test('a delegate with a wrong field names its path, then what is wrong with it', () => {
    const r = parseDelegate({ workflow: 'w@1', input: 'x', budget: { maxTokens: -1 } }) as { error: string };
    expect(r.error).toMatch(/\}: budget\.maxTokens [A-Z][^ ]/);
    expect(r.error).not.toMatch(/\s$/);
  });
});
