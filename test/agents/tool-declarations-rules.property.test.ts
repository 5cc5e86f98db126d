import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { ASK_TOOL, DELEGATE_TOOL, parseAsk, parseDelegate } from '../../src/agents/suspending-tools.js';

/**
 * What a model agent is told of its own tools (`ask`, `delegate`) agrees with
 * what the calls are parsed against: the same fields, the same required ones,
 * the same types and bounds, nothing else allowed, and every field described.
 * A model told a field the parser refuses (or a bound it does not keep)
 * makes calls that fail.
 */

interface Declared {
  type: string;
  description?: string;
  properties?: Record<string, Declared>;
  required?: string[];
  additionalProperties?: boolean;
  enum?: string[];
  minimum?: number;
  exclusiveMinimum?: number;
}

async function declared(tool: Promise<{ description?: string; inputSchema: unknown }>): Promise<{
  description: string | undefined;
  schema: Declared;
}> {
  const t = await tool;
  return { description: t.description, schema: (t.inputSchema as { jsonSchema: Declared }).jsonSchema };
}

const DELEGATE = { workflow: 'w@1', input: 'x' };

/** Whether `parseDelegate` takes a budget with `field` set to `value`. */
function takesBudget(field: string, value: unknown): boolean {
  return !('error' in parseDelegate({ ...DELEGATE, budget: { [field]: value } }));
}

describe('the tools a model agent is told of, against the parser of their calls', () => {
  test.prop([fc.option(fc.uniqueArray(fc.stringMatching(/^[a-z][a-z-]{0,8}$/), { minLength: 1, maxLength: 4 }))])(
    'ask: a role (one of those it may ask, when limited) and a question, both required, nothing else',
    async (roles) => {
      const { description, schema } = await declared(ASK_TOOL(roles === null ? undefined : new Set(roles)));
      expect(description).toMatch(/^Ask another role a question/);
      expect(schema.type).toBe('object');
      expect(schema.additionalProperties).toBe(false);
      expect(Object.keys(schema.properties!).sort()).toEqual(['question', 'role']);
      expect(schema.required).toEqual(['role', 'question']);
      for (const [name, p] of Object.entries(schema.properties!)) {
        expect(p.type, name).toBe('string');
        expect(p.description?.length ?? 0, name).toBeGreaterThan(0);
      }
      if (roles === null) expect(schema.properties!.role).not.toHaveProperty('enum');
      else {
        expect(schema.properties!.role!.enum).toEqual(roles);
        // The parser keeps the same limit.
        for (const role of roles)
          expect(parseAsk({ role, question: 'q' }, new Set(roles))).toEqual({ role, question: 'q' });
        expect(parseAsk({ role: 'not-listed', question: 'q' }, new Set(roles))).toHaveProperty('error');
      }
    },
  );

  test('delegate: a workflow and an input, required, and a budget whose fields and bounds are the carve parser’s', async () => {
    const { description, schema } = await declared(DELEGATE_TOOL());
    expect(description).toMatch(/^Run a workflow as a child work item/);
    expect(schema.type).toBe('object');
    expect(schema.additionalProperties).toBe(false);
    expect(Object.keys(schema.properties!)).toEqual(['workflow', 'input', 'budget']);
    expect(schema.required).toEqual(['workflow', 'input']);
    // The required fields are the parser's: a call without either is refused, one without a budget taken.
    expect(parseDelegate({ input: 'x' })).toHaveProperty('error');
    expect(parseDelegate({ workflow: 'w@1' })).toHaveProperty('error');
    expect(parseDelegate(DELEGATE)).toEqual(DELEGATE);
    for (const name of ['workflow', 'input'] as const) {
      const p = schema.properties![name]!;
      expect(p.type, name).toBe('string');
      expect(p.description?.length ?? 0, name).toBeGreaterThan(0);
    }
    // The workflow's example (after its shape) is one the parser takes.
    const example = /say "([^"]+)"/.exec(schema.properties!.workflow!.description!)![1];
    expect(parseDelegate({ ...DELEGATE, workflow: example })).not.toHaveProperty('error');

    const budget = schema.properties!.budget!;
    expect(budget.type).toBe('object');
    expect(budget.additionalProperties).toBe(false);
    expect(Object.keys(budget.properties!).sort()).toEqual(['deadline', 'maxCostUsd', 'maxHops', 'maxTokens']);
    // Nothing else in a budget: the parser refuses another field too.
    expect(takesBudget('maxDollars', 1)).toBe(false);
    for (const [name, p] of Object.entries(budget.properties!)) {
      if (p.type === 'string') {
        // A duration: its examples are ones the parser takes.
        const examples = [...p.description!.matchAll(/"([^"]+)"/g)].map((m) => m[1]);
        expect(examples.length, name).toBeGreaterThan(0);
        for (const e of examples) expect(takesBudget(name, e), `${name} ${e}`).toBe(true);
        expect(takesBudget(name, 'soon'), name).toBe(false);
        continue;
      }
      expect(['integer', 'number'], name).toContain(p.type);
      // An integer field refuses a fraction; a number field takes one.
      expect(takesBudget(name, 2.5), name).toBe(p.type === 'number');
      if (p.minimum !== undefined) {
        expect(takesBudget(name, p.minimum), name).toBe(true);
        expect(takesBudget(name, p.minimum - 1), name).toBe(false);
      } else {
        expect(p.exclusiveMinimum, name).toBeDefined();
        expect(takesBudget(name, p.exclusiveMinimum!), name).toBe(false);
        expect(takesBudget(name, p.exclusiveMinimum! + 0.5), name).toBe(true);
      }
    }
  });
});
