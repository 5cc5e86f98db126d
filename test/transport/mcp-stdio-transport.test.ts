import { PassThrough } from 'node:stream';
import { fc, test } from '@fast-check/vitest';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { McpStdioTransport, idFromEdges } from '../../src/transport/mcp-stdio-transport.js';
import { LineSplitter } from '../../src/transport/ndjson.js';

/** A transport on in-memory pipes: what it passes on, what it writes back, how it closed. */
async function wired(maxLineBytes = 256) {
  const input = new PassThrough();
  const output = new PassThrough();
  const transport = new McpStdioTransport({ input, output, maxLineBytes });
  const received: JSONRPCMessage[] = [];
  const written: Record<string, unknown>[] = [];
  let closes = 0;
  transport.onmessage = (message) => received.push(message);
  transport.onclose = () => {
    closes++;
  };
  let buffered = '';
  output.setEncoding('utf8');
  output.on('data', (text: string) => {
    buffered += text;
    for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
      written.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
    }
  });
  await transport.start();
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  return { input, output, transport, received, written, closes: () => closes, settle };
}

describe('McpStdioTransport', () => {
  it('passes messages on, refuses what is not one with an error line, and keeps reading', async () => {
    const t = await wired();
    t.input.write('{"jsonrpc":"2.0","id":1,"method":"ping"}\n');
    t.input.write(`{"jsonrpc":"2.0","id":2,"method":"x","params":{"p":"${'a'.repeat(400)}"}}\n`);
    t.input.write('nonsense\n\n   \n');
    t.input.write('[{"jsonrpc":"2.0","id":3,"method":"ping"}]\n');
    t.input.write(Buffer.from([0xff, 0xfe, 0x0a]));
    t.input.write('{"jsonrpc":"2.0","id":4,"method":"ping"}\n');
    await t.settle();
    await t.settle();
    expect(t.received).toEqual([
      { jsonrpc: '2.0', id: 1, method: 'ping' },
      { jsonrpc: '2.0', id: 4, method: 'ping' },
    ]);
    expect(t.written.map((line) => [line.id, (line.error as { code: number }).code])).toEqual([
      [2, -32600],
      [null, -32700],
      [null, -32600],
      [null, -32700],
    ]);
    expect(t.closes()).toBe(0);
    await t.transport.send({ jsonrpc: '2.0', id: 1, result: {} });
    await t.settle();
    expect(t.written.at(-1)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it('closes once when its input ends, saying why, after the last line', async () => {
    const t = await wired();
    t.input.end('{"jsonrpc":"2.0","id":9,"method":"ping"}');
    await t.settle();
    expect(t.received).toEqual([{ jsonrpc: '2.0', id: 9, method: 'ping' }]);
    expect(t.transport.closeReason).toEqual({ kind: 'input-ended' });
    expect(t.closes()).toBe(1);
    await t.transport.close();
    expect(t.closes()).toBe(1);
    await expect(t.transport.send({ jsonrpc: '2.0', id: 9, result: {} })).rejects.toThrow(/closed/);
  });

  it('closes when its output fails', async () => {
    const t = await wired();
    t.output.destroy(new Error('EPIPE'));
    await t.settle();
    expect(t.transport.closeReason).toEqual({ kind: 'output-failed', message: 'EPIPE' });
    expect(t.closes()).toBe(1);
  });

  const id = fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), fc.string({ maxLength: 40 }));
  test.prop([id, fc.boolean(), fc.integer({ min: 300, max: 5000 }), fc.integer({ min: 1, max: 997 })])(
    'a message over the bound is answered with its id, first or last, however the chunks fall',
    async (requestId, idFirst, size, chunk) => {
      const t = await wired(256);
      const params = JSON.stringify({ name: 'A2A', arguments: { text: 'z'.repeat(size) } });
      const idText = JSON.stringify(requestId);
      const line = idFirst
        ? `{"jsonrpc":"2.0","id":${idText},"method":"tools/call","params":${params}}\n`
        : `{"method":"tools/call","params":${params},"jsonrpc":"2.0","id":${idText}}\n`;
      const bytes = Buffer.from(line);
      for (let at = 0; at < bytes.length; at += chunk) t.input.write(bytes.subarray(at, at + chunk));
      await t.settle();
      expect(t.received).toEqual([]);
      expect(t.written).toEqual([
        {
          jsonrpc: '2.0',
          id: requestId,
          error: expect.objectContaining({ code: -32600, data: { limit: 'MAX_LINE_BYTES', max: 256 } }),
        },
      ]);
    },
  );
});

describe('idFromEdges', () => {
  const edges = (head: string, tail: string) => ({ head: Buffer.from(head), tail: Buffer.from(tail) });
  it('reads an id from the first members or the last, never from a nested object or a string', () => {
    expect(idFromEdges(edges('{"jsonrpc":"2.0","method":"a","id":"x\\"y",', ''))).toBe('x"y');
    expect(idFromEdges(edges('{"params":{"id":1},', ',"id":1}}'))).toBeNull();
    expect(idFromEdges(edges('', 'aaa","jsonrpc":"2.0","id":12}\r\n'))).toBe(12);
    expect(idFromEdges(edges('', 'text ends with \\",\\"id\\":3}"}}'))).toBeNull();
    expect(idFromEdges(edges('{"id":null,', ',"id":true}'))).toBeNull();
  });
});

describe('LineSplitter edges', () => {
  test.prop([fc.integer({ min: 1, max: 64 }), fc.integer({ min: 65, max: 2000 }), fc.integer({ min: 1, max: 300 })])(
    'an oversized line hands over its first and last edgeBytes, whatever the chunking',
    (edgeBytes, length, chunk) => {
      const text = Array.from({ length }, (_, i) => String.fromCharCode(97 + (i % 26))).join('');
      const seen: { bytes: number; head: string; tail: string }[] = [];
      const splitter = new LineSplitter(
        {
          line: () => expect.unreachable(),
          oversized: (bytes, e) => seen.push({ bytes, head: String(e?.head), tail: String(e?.tail) }),
        },
        { maxLineBytes: 64, edgeBytes },
      );
      const bytes = Buffer.from(`${text}\n`);
      for (let at = 0; at < bytes.length; at += chunk) splitter.push(bytes.subarray(at, at + chunk));
      expect(seen).toEqual([{ bytes: length, head: text.slice(0, edgeBytes), tail: text.slice(-edgeBytes) }]);
    },
  );
});
