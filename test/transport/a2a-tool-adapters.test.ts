import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { A2A_TOOL_ACTIONS, type A2AToolStrictInput, A2AToolStrictInputSchema } from '../../src/protocol/a2a-tool.js';
import { A2A_TOOL_DESCRIPTION, createA2ATool } from '../../src/transport/a2a-tool.js';
import { toAnthropicTool } from '../../src/transport/a2a-tool-anthropic.js';
import { a2aToolStrictJsonSchema, toOpenAITool } from '../../src/transport/a2a-tool-openai.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { tempDir } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function twoAgents() {
  const tmp = tempDir();
  const broker = createBroker({ path: tmp.db });
  const { client } = await connectInProcess(broker);
  cleanups.push(
    tmp.cleanup,
    () => broker.close(),
    () => client.close(),
  );
  const lead = await client.register({ name: 'lead', contextId: 'session' });
  const researcher = await client.register({ name: 'researcher', contextId: 'session' });
  return {
    client,
    tokens: [lead.token, researcher.token],
    lead: createA2ATool({ client, token: lead.token }),
    researcher: createA2ATool({ client, token: researcher.token }),
  };
}

type Schema = Record<string, unknown>;

/**
 * OpenAI's published rules for strict mode (Structured Outputs, "Supported
 * schemas", function calling with `strict: true`), as a checker:
 *  1. The root is an object schema (`type: "object"`), not `anyOf`.
 *  2. Every object sets `additionalProperties: false`.
 *  3. Every property of every object is listed in `required` (an optional
 *     field is a union with `null`).
 *  4. Types are string, number, integer, boolean, object, array, null, with
 *     `enum` and `anyOf` (each branch itself valid).
 *  5. Keywords not supported: for strings `minLength`, `maxLength`; for
 *     objects `patternProperties`, `unevaluatedProperties`, `propertyNames`,
 *     `minProperties`, `maxProperties`; for arrays `unevaluatedItems`,
 *     `contains`, `minContains`, `maxContains`, `uniqueItems`; composition
 *     `allOf`, `not`, `if`/`then`/`else`, `dependentRequired`,
 *     `dependentSchemas`. Conservatively also refused here (supported only
 *     by newer models): `pattern`, `format`, `minimum`, `maximum`,
 *     `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`, `minItems`,
 *     `maxItems`, and `default`.
 *  6. At most 5,000 object properties in all and 10 levels of nesting (the
 *     first models: 100 and 5, checked here).
 *  7. At most 15,000 characters over all property names, enum values and
 *     const values, and at most 500 enum values in all (the first models'
 *     figures; newer ones allow more).
 */
function strictModeViolations(root: Schema): string[] {
  const violations: string[] = [];
  const unsupported = [
    'minLength',
    'maxLength',
    'patternProperties',
    'unevaluatedProperties',
    'propertyNames',
    'minProperties',
    'maxProperties',
    'unevaluatedItems',
    'contains',
    'minContains',
    'maxContains',
    'uniqueItems',
    'allOf',
    'not',
    'if',
    'then',
    'else',
    'dependentRequired',
    'dependentSchemas',
    'pattern',
    'format',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'multipleOf',
    'minItems',
    'maxItems',
    'default',
  ];
  const types = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
  let properties = 0;
  let enumValues = 0;
  let chars = 0;
  if (root.type !== 'object' || 'anyOf' in root) violations.push('root: must be type "object", not anyOf');
  const visit = (schema: Schema, path: string, depth: number) => {
    for (const keyword of unsupported) if (keyword in schema) violations.push(`${path}: unsupported ${keyword}`);
    const typeList = schema.type === undefined ? [] : ([] as unknown[]).concat(schema.type);
    for (const t of typeList) if (!types.has(String(t))) violations.push(`${path}: type ${String(t)}`);
    if (schema.type === undefined && !('anyOf' in schema) && !('enum' in schema) && !('$ref' in schema)) {
      violations.push(`${path}: no type`);
    }
    if (Array.isArray(schema.enum)) {
      enumValues += schema.enum.length;
      for (const v of schema.enum) chars += String(v).length;
    }
    if ('const' in schema) chars += String(schema.const).length;
    if (typeList.includes('object')) {
      if (depth > 5) violations.push(`${path}: nested deeper than 5 levels`);
      if (schema.additionalProperties !== false) violations.push(`${path}: additionalProperties must be false`);
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const required = new Set((schema.required ?? []) as string[]);
      for (const [name, sub] of Object.entries(props)) {
        properties += 1;
        chars += name.length;
        if (!required.has(name)) violations.push(`${path}.${name}: not in required`);
        visit(sub, `${path}.${name}`, depth + 1);
      }
    }
    if (schema.items !== undefined) visit(schema.items as Schema, `${path}[]`, depth + 1);
    if (Array.isArray(schema.anyOf)) {
      for (const [i, branch] of schema.anyOf.entries()) visit(branch as Schema, `${path}|${i}`, depth);
    }
  };
  visit(root, 'root', 1);
  if (properties > 100) violations.push(`${properties} properties (at most 100)`);
  if (enumValues > 500) violations.push(`${enumValues} enum values (at most 500)`);
  if (chars > 15_000) violations.push(`${chars} characters of names and values (at most 15,000)`);
  return violations;
}

describe('the OpenAI adapter', () => {
  it('has a strict schema meeting every rule of strict mode (the plain schema does not)', async () => {
    const { lead } = await twoAgents();
    const openai = toOpenAITool(lead);
    const schema = openai.chatTool.function.parameters;
    expect(strictModeViolations(schema)).toEqual([]);
    expect(schema).toEqual(a2aToolStrictJsonSchema());
    // The checker finds what the plain schema breaks (optional fields, bounds, open records).
    const plain = strictModeViolations(lead.jsonSchema);
    expect(plain).toEqual(
      expect.arrayContaining([
        'root.to: not in required',
        'root.to: unsupported minLength',
        'root.data: additionalProperties must be false',
        'root.data: unsupported propertyNames',
      ]),
    );
    expect((schema.properties as Record<string, { enum?: unknown }>).action?.enum).toEqual([...A2A_TOOL_ACTIONS]);
    expect(openai.chatTool).toEqual({
      type: 'function',
      function: { name: 'A2A', description: A2A_TOOL_DESCRIPTION, parameters: schema, strict: true },
    });
    expect(openai.responsesTool).toEqual({
      type: 'function',
      name: 'A2A',
      description: A2A_TOOL_DESCRIPTION,
      parameters: schema,
      strict: true,
    });
  });

  it('runs strict-mode calls: every field present, null for absent, data as a JSON string', async () => {
    const { lead, researcher, tokens } = await twoAgents();
    const asker = toOpenAITool(lead);
    const worker = toOpenAITool(researcher);
    const none: Omit<A2AToolStrictInput, 'action'> = {
      to: null,
      taskId: null,
      text: null,
      data: null,
      outcome: null,
      artifact: null,
      timeoutSeconds: null,
      historyLength: null,
    };
    const call = (input: Partial<A2AToolStrictInput>) => {
      const args = { ...none, ...input };
      expect(A2AToolStrictInputSchema.safeParse(args).success).toBe(true);
      return JSON.stringify(args);
    };
    const sent = await asker.handleToolCall({
      id: 'call_1',
      function: { name: 'A2A', arguments: call({ action: 'send', to: 'researcher', text: 'Paris?', data: '{"q":1}' }) },
    });
    expect(sent?.role).toBe('tool');
    expect(sent?.tool_call_id).toBe('call_1');
    const sentResult = JSON.parse(sent?.content ?? '{}');
    expect(sentResult).toMatchObject({ ok: true, action: 'send', task: { state: 'submitted' } });
    const taskId = sentResult.task.taskId as string;

    const got = await worker.execute(call({ action: 'get', taskId, historyLength: 5 }));
    expect(got).toMatchObject({ ok: true, task: { history: [{ text: 'Paris?', data: [{ q: 1 }] }] } });
    const done = await worker.handleFunctionCall({
      call_id: 'fc_1',
      name: 'A2A',
      arguments: call({
        action: 'complete',
        taskId,
        text: 'Yes.',
        artifact: { name: null, text: null, data: '{"city":"Paris"}' },
      }),
    });
    expect(done?.type).toBe('function_call_output');
    expect(JSON.parse(done?.output ?? '{}')).toMatchObject({ ok: true, task: { state: 'completed' } });
    const woken = await asker.execute(call({ action: 'wait', taskId, timeoutSeconds: 5 }));
    expect(woken).toMatchObject({
      ok: true,
      events: expect.arrayContaining([
        expect.objectContaining({
          type: 'artifact',
          artifact: { artifactId: 'result', name: 'result', data: [{ city: 'Paris' }] },
        }),
      ]),
    });

    // Bad strict arguments come back as results saying what to fix.
    for (const [args, text] of [
      ['{not json', 'not valid JSON'],
      ['[1]', 'one JSON object'],
      [call({ action: 'send', to: 'researcher', data: '[1,2]' }), 'data field must be a JSON object'],
      [call({ action: 'complete', taskId, artifact: { name: null, text: null, data: 'x' } }), 'artifact.data field'],
    ] as const) {
      const result = await asker.execute(args);
      expect(result).toMatchObject({ ok: false, errorCode: 'INVALID_INPUT', message: expect.stringContaining(text) });
      if (!result.ok) expect(result.message).toMatch(/^[A-Z].*[.]$/s);
    }
    expect(await asker.handleToolCall({ id: 'x', function: { name: 'other', arguments: '{}' } })).toBeUndefined();
    for (const token of tokens) expect(JSON.stringify([sent, done, woken])).not.toContain(token);
  });
});

describe('the Anthropic adapter', () => {
  it('is name, description and input_schema, and answers tool_use blocks with tool_result (is_error on failure)', async () => {
    const { lead, researcher } = await twoAgents();
    const anthropic = toAnthropicTool(lead);
    const { $schema: _dialect, ...inputSchema } = lead.jsonSchema;
    expect(anthropic.tool).toEqual({ name: 'A2A', description: A2A_TOOL_DESCRIPTION, input_schema: inputSchema });
    expect(anthropic.tool.input_schema.type).toBe('object');

    const sent = await anthropic.handleToolUse({
      type: 'tool_use',
      id: 'toolu_1',
      name: 'A2A',
      input: { action: 'send', to: 'researcher', text: 'hello' },
    });
    expect(sent).toEqual({ type: 'tool_result', tool_use_id: 'toolu_1', content: expect.any(String) });
    expect(JSON.parse(sent?.content ?? '{}')).toMatchObject({ ok: true, task: { worker: 'researcher' } });
    const bad = await anthropic.handleToolUse({
      type: 'tool_use',
      id: 'toolu_2',
      name: 'A2A',
      input: { action: 'get' },
    });
    expect(bad).toMatchObject({ type: 'tool_result', tool_use_id: 'toolu_2', is_error: true });
    expect(JSON.parse(bad?.content ?? '{}')).toMatchObject({ ok: false, errorCode: 'INVALID_INPUT' });
    expect(await anthropic.handleToolUse({ type: 'tool_use', id: 'x', name: 'Bash', input: {} })).toBeUndefined();
    expect(await toAnthropicTool(researcher).execute({ action: 'discover' })).toMatchObject({ ok: true });
  });
});
