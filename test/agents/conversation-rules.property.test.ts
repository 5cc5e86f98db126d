import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { HopInput, HopResume } from '../../src/actors/worker/handler.js';
import {
  firstPrompt,
  jsonInText,
  partsText,
  resumeOutput,
  toolMessage,
  toolOutput,
  userMessage,
} from '../../src/agents/conversation.js';
import type { Part } from '../../src/protocol/parts.js';

/**
 * The rules of a model agent's conversation, each stated on its own:
 * - parts read as text: a text part as it is, a data part as its JSON, a
 *   file by its name, one line each;
 * - the first prompt is the hop's input, after the outputs of the item's
 *   earlier hops (role, hop and text of each) when there are any;
 * - a tool's value is text when a string, else JSON (undefined as null);
 * - a resumed `ask` reads its answer as text, a resumed `delegate` its first
 *   data part as JSON (else its text), and a failed reply is an error that
 *   names the role and why;
 * - a model's final text is JSON as a whole or in a fenced block, else an
 *   error that says so.
 */

const textArb = fc.string({ maxLength: 12 });
const dataArb = fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.oneof(fc.integer(), fc.string({ maxLength: 4 })), {
  maxKeys: 3,
});
const partArb: fc.Arbitrary<Part> = fc.oneof(
  textArb.map((text) => ({ kind: 'text' as const, text })),
  dataArb.map((data) => ({ kind: 'data' as const, data })),
  fc
    .option(fc.stringMatching(/^[a-z]{1,8}\.txt$/), { nil: undefined })
    .map((name) => ({ kind: 'file' as const, file: { uri: 'file:///x', ...(name === undefined ? {} : { name }) } })),
);

function lineOf(part: Part): string {
  if (part.kind === 'text') return part.text;
  if (part.kind === 'data') return JSON.stringify(part.data);
  return `[file ${part.file.name ?? ''}]`;
}

function hopInput(hop: number, input: Part[], outputs: { role: string; hop: number; parts: Part[] }[]): HopInput {
  return {
    headers: { hop },
    message: { parts: input },
    context: { outputs },
  } as unknown as HopInput;
}

function resume(parts: Part[], from: HopResume['from']): HopResume {
  return { state: null, reply: { parts }, from } as unknown as HopResume;
}

describe("a model agent's conversation", () => {
  test.prop([fc.array(partArb, { maxLength: 5 })])('parts read as one line each, by kind', (parts) => {
    expect(partsText(parts)).toBe(parts.map(lineOf).join('\n'));
  });

  test.prop([
    fc.integer({ min: 1, max: 6 }),
    fc.array(partArb, { minLength: 1, maxLength: 3 }),
    fc.array(
      fc.record({
        role: fc.stringMatching(/^[a-z]{1,6}$/),
        hop: fc.integer({ min: 1, max: 8 }),
        parts: fc.array(partArb, { maxLength: 2 }),
      }),
      { maxLength: 5 },
    ),
  ])('the first prompt is the input, after the earlier hops that produced something', (hop, input, outputs) => {
    const prompt = firstPrompt(hopInput(hop, input, outputs));
    const earlier = outputs.filter((o) => o.hop < hop && o.parts.length > 0);
    if (earlier.length === 0) expect(prompt).toBe(partsText(input));
    else {
      const lines = earlier.map((o) => `[${o.role}, hop ${o.hop}]\n${partsText(o.parts)}`).join('\n\n');
      expect(prompt).toBe(`Earlier work on this item:\n\n${lines}\n\nYour task:\n${partsText(input)}`);
    }
  });

  test.prop([textArb])('a user message carries its text', (text) => {
    expect(userMessage(text)).toEqual({ role: 'user', content: text });
  });

  test.prop([
    fc.array(fc.record({ toolCallId: fc.stringMatching(/^c[0-9]{1,3}$/), toolName: fc.constantFrom('a', 'b') }), {
      maxLength: 4,
    }),
    fc.jsonValue(),
  ])('a tool message carries each result in order', (calls, value) => {
    const results = calls.map((c) => ({ ...c, output: toolOutput(value) }));
    expect(toolMessage(results)).toEqual({
      role: 'tool',
      content: results.map((r) => ({ type: 'tool-result', ...r })),
    });
  });

  test.prop([fc.oneof(fc.string(), fc.jsonValue(), fc.constant(undefined))])(
    "a tool's value is text when a string, else JSON, undefined as null",
    (value) => {
      if (typeof value === 'string') expect(toolOutput(value)).toEqual({ type: 'text', value });
      else expect(toolOutput(value)).toEqual({ type: 'json', value: value === undefined ? null : value });
    },
  );
});

describe('a resumed call', () => {
  const fromArb = fc.option(
    fc.record({
      role: fc.stringMatching(/^[a-z]{1,6}$/),
      outcome: fc.constantFrom('completed', 'failed'),
      error: fc.option(fc.record({ type: fc.constant('E'), message: fc.string({ minLength: 1, maxLength: 8 }) }), {
        nil: undefined,
      }),
    }),
    { nil: undefined },
  );

  test.prop([fc.array(partArb, { maxLength: 4 }), fromArb, fc.constantFrom('ask' as const, 'delegate' as const)])(
    'reads its answer by the tool that asked, and a failed reply as an error naming the role and why',
    (parts, from, tool) => {
      const out = resumeOutput(resume(parts, from as HopResume['from']), tool);
      if (from?.outcome === 'failed') {
        const why = from.error?.message ?? partsText(parts);
        expect(out).toEqual({ type: 'error-text', value: `the ${from.role} role could not answer: ${why}` });
        return;
      }
      const data = parts.find((p) => p.kind === 'data');
      if (tool === 'delegate' && data?.kind === 'data') expect(out).toEqual({ type: 'json', value: data.data });
      else expect(out).toEqual({ type: 'text', value: partsText(parts) });
    },
  );
});

describe("a model's final text", () => {
  test.prop([fc.jsonValue(), fc.constantFrom('', ' ', '\n'), fc.constantFrom('', 'Here it is:\n')])(
    'is JSON as a whole, or as the body of a fenced block',
    (value, pad, before) => {
      const json = JSON.stringify(value);
      fc.pre(!json.includes('```'));
      expect(jsonInText(`${pad}${json}${pad}`)).toEqual({ ok: true, value: JSON.parse(json) });
      for (const fence of ['```json\n', '```\n', '```json  \n']) {
        expect(jsonInText(`${before}${fence}${json}\n\`\`\`\nThat is all.`)).toEqual({
          ok: true,
          value: JSON.parse(json),
        });
      }
    },
  );

  test.prop([fc.stringMatching(/^[a-z ]{1,20}$/).filter((t) => !['null', 'true', 'false'].includes(t.trim()))])(
    'that is not JSON is an error that says so',
    (text) => {
      const r = jsonInText(text);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(/^the answer is not JSON: \S/);
      const fenced = jsonInText(`\`\`\`json\n${text}\n\`\`\``);
      expect(fenced.ok).toBe(false);
    },
  );
});
