import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { LineSplitter, isBlankLine } from '../../src/transport/ndjson.js';

function collect(maxLineBytes?: number) {
  const lines: string[] = [];
  const oversized: number[] = [];
  const splitter = new LineSplitter(
    { line: (text) => lines.push(text), oversized: (bytes) => oversized.push(bytes) },
    maxLineBytes === undefined ? {} : { maxLineBytes },
  );
  return { splitter, lines, oversized };
}

/** Cuts a buffer at the given offsets. */
function cut(buffer: Buffer, offsets: number[]): Buffer[] {
  const points = [...new Set(offsets.map((o) => o % (buffer.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let start = 0;
  for (const point of points) {
    chunks.push(buffer.subarray(start, point));
    start = point;
  }
  chunks.push(buffer.subarray(start));
  return chunks;
}

describe('LineSplitter', () => {
  it('splits complete lines and keeps a partial one until its newline', () => {
    const { splitter, lines } = collect();
    splitter.push(Buffer.from('{"a":1}\n{"b":'));
    expect(lines).toEqual(['{"a":1}']);
    splitter.push(Buffer.from('2}\n'));
    expect(lines).toEqual(['{"a":1}', '{"b":2}']);
  });

  it('reports empty lines as empty strings (the server ignores them)', () => {
    const { splitter, lines } = collect();
    splitter.push(Buffer.from('\n\nx\n'));
    expect(lines).toEqual(['', '', 'x']);
  });

  it('treats a last line without newline as a line at end of stream', () => {
    const { splitter, lines } = collect();
    splitter.push(Buffer.from('a\nb'));
    expect(lines).toEqual(['a']);
    splitter.end();
    expect(lines).toEqual(['a', 'b']);
  });

  it('decodes a multi-byte character split between chunks', () => {
    const { splitter, lines } = collect();
    const bytes = Buffer.from('é😀\n', 'utf8');
    for (let i = 0; i < bytes.length; i++) splitter.push(bytes.subarray(i, i + 1));
    expect(lines).toEqual(['é😀']);
  });

  fcTest.prop(
    [fc.array(fc.string({ unit: 'binary', maxLength: 40 }), { maxLength: 12 }), fc.array(fc.nat(), { maxLength: 20 })],
    {
      numRuns: 200,
    },
  )('yields the same lines however the bytes are chunked', (texts, offsets) => {
    const lines = texts.map((t) => t.replaceAll('\n', ' '));
    const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
    const { splitter, lines: got } = collect();
    for (const chunk of cut(bytes, offsets)) splitter.push(chunk);
    splitter.end();
    expect(got).toEqual(lines);
  });

  it('discards a line over the bound, reports its size and goes on with the next line', () => {
    const { splitter, lines, oversized } = collect(16);
    splitter.push(Buffer.from('short\n'));
    splitter.push(Buffer.from('x'.repeat(10)));
    splitter.push(Buffer.from('y'.repeat(10)));
    splitter.push(Buffer.from(`${'z'.repeat(5)}\nafter\n`));
    expect(lines).toEqual(['short', 'after']);
    expect(oversized).toEqual([25]);
  });

  it('accepts a line of exactly the bound', () => {
    const { splitter, lines, oversized } = collect(16);
    splitter.push(Buffer.from(`${'a'.repeat(8)}`));
    splitter.push(Buffer.from(`${'b'.repeat(8)}\n`));
    expect(lines).toEqual(['a'.repeat(8) + 'b'.repeat(8)]);
    expect(oversized).toEqual([]);
  });

  it('does not hold an oversized line in memory while it streams in', () => {
    const { splitter, oversized } = collect(1024 * 1024);
    const chunk = Buffer.alloc(256 * 1024, 0x61);
    for (let i = 0; i < 64; i++) {
      splitter.push(chunk);
      expect(splitter.bufferedBytes).toBeLessThanOrEqual(1024 * 1024);
    }
    expect(splitter.bufferedBytes).toBe(0);
    splitter.push(Buffer.from('\n'));
    expect(oversized).toEqual([64 * 256 * 1024]);
  });

  it('reports an oversized last line at end of stream', () => {
    const { splitter, oversized } = collect(4);
    splitter.push(Buffer.from('abcdefgh'));
    splitter.end();
    expect(oversized).toEqual([8]);
  });
});

describe('isBlankLine', () => {
  it('is true for whitespace only', () => {
    expect(isBlankLine('')).toBe(true);
    expect(isBlankLine(' \t\r ')).toBe(true);
    expect(isBlankLine(' x ')).toBe(false);
    expect(isBlankLine('\u00a0')).toBe(false);
  });
});
