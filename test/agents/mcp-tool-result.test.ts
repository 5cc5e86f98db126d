import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { mcpToolOutput } from '../../src/agents/mcp/tool-result.js';

// What an MCP tool's result (CallToolResult) becomes for the model.

describe('mcpToolOutput', () => {
  it('gives structured content as JSON, before the content', () => {
    expect(
      mcpToolOutput({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } }, 's__t'),
    ).toEqual({ type: 'json', value: { n: 1 } });
  });

  it('gives content of text only as its text, parts joined by lines', () => {
    expect(
      mcpToolOutput(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        's__t',
      ),
    ).toEqual({ type: 'text', value: 'a\nb' });
    expect(mcpToolOutput({ content: [] }, 's__t')).toEqual({ type: 'text', value: '' });
  });

  it('gives other content (an image, a resource) as JSON { content }', () => {
    const content = [
      { type: 'text', text: 'the chart' },
      { type: 'image', data: 'iVBORw0', mimeType: 'image/png' },
    ];
    expect(mcpToolOutput({ content }, 's__t')).toEqual({ type: 'json', value: { content } });
  });

  it('gives a failed call (isError) as an error with its text, or naming the tool when it has none', () => {
    expect(mcpToolOutput({ content: [{ type: 'text', text: 'no such file' }], isError: true }, 'fs__read')).toEqual({
      type: 'error-text',
      value: 'no such file',
    });
    expect(mcpToolOutput({ content: [], isError: true }, 'fs__read')).toEqual({
      type: 'error-text',
      value: 'the tool fs__read failed',
    });
  });

  it("gives a 2024-10-07 server's toolResult as JSON", () => {
    expect(mcpToolOutput({ toolResult: { ok: true } }, 's__t')).toEqual({ type: 'json', value: { ok: true } });
  });

  const part = fc.oneof(
    fc.record({ type: fc.constant('text'), text: fc.string() }),
    fc.record({ type: fc.constant('image'), data: fc.base64String(), mimeType: fc.constant('image/png') }),
    fc.record({ type: fc.constant('resource_link'), uri: fc.webUrl(), name: fc.string() }),
  );
  const result = fc.record(
    {
      content: fc.array(part, { maxLength: 4 }),
      // A result arrives as JSON text, so its values are what JSON.parse gives (never -0).
      structuredContent: fc
        .dictionary(fc.string(), fc.jsonValue())
        .map((v) => JSON.parse(JSON.stringify(v)) as Record<string, unknown>),
      isError: fc.boolean(),
    },
    { requiredKeys: ['content'] },
  );

  test.prop([result])(
    'every result becomes one tool output of JSON: an error exactly when isError, the text when all is text',
    (r) => {
      const output = mcpToolOutput(r, 's__t');
      expect(JSON.parse(JSON.stringify(output))).toEqual(output);
      expect(output.type === 'error-text').toBe(r.isError === true);
      const allText = r.content.every((p) => p.type === 'text');
      if (r.isError !== true && r.structuredContent === undefined && allText) {
        expect(output).toEqual({ type: 'text', value: r.content.map((p) => (p as { text: string }).text).join('\n') });
      }
      if (r.isError === true) expect((output.value as string).length).toBeGreaterThan(0);
    },
  );
});
