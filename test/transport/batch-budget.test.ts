import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES } from '../../src/protocol/bounds.js';
import { type Dispatch, JsonRpcServer } from '../../src/transport/jsonrpc-server.js';

// The budget of a batch's answers, through the real server over in-memory pipes.

/** Runs `dispatch` behind a server, sends one line, resolves with the first line it writes. */
async function answerTo(dispatch: Dispatch, line: string): Promise<{ text: string; server: JsonRpcServer }> {
  const input = new PassThrough();
  const output = new PassThrough();
  const server = new JsonRpcServer({ input, output, dispatch });
  const chunks: Buffer[] = [];
  const text = await new Promise<string>((resolve) => {
    output.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (chunk.includes(10)) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    input.write(line);
  });
  return { text: text.slice(0, text.indexOf('\n')), server };
}

type Entry = {
  id: number;
  result?: unknown;
  error?: { code: number; message: string; data?: Record<string, unknown> };
};

describe('a batch over its answer budget', () => {
  it('runs only the calls whose answers can fit, and answers the rest at once without running them', async () => {
    let runs = 0;
    let running = 0;
    let mostAtOnce = 0;
    // Each answer is 3 MiB: eleven fit a 32 MiB line.
    const dispatch: Dispatch = async (method) => {
      runs++;
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      await new Promise((resolve) => setImmediate(resolve));
      running--;
      return { method, blob: 'b'.repeat(3 * 1024 * 1024) };
    };
    const batch = Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'big' }));
    const { text, server } = await answerTo(dispatch, `${JSON.stringify(batch)}\n`);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(MAX_LINE_BYTES);
    const entries = JSON.parse(text) as Entry[];
    expect(entries.map((e) => e.id)).toEqual(batch.map((c) => c.id));
    const kept = entries.filter((e) => e.result !== undefined);
    expect(kept.length).toBe(10);
    // Only a few calls past those were run; the rest were answered without being dispatched.
    expect(runs).toBeLessThan(40);
    expect(mostAtOnce).toBeLessThanOrEqual(16);
    const notRun = entries.filter((e) => e.error?.code === -32000 && e.error.data?.ran === false);
    expect(notRun.length).toBe(1000 - runs);
    expect(notRun[0]?.error?.message).toContain('was not run');
    expect(notRun[0]?.error?.data).toEqual({ limit: 'MAX_LINE_BYTES', max: MAX_LINE_BYTES, ran: false });
    const overLine = entries.find((e) => e.error?.code === -32603);
    expect(overLine?.error?.data).toMatchObject({ limit: 'MAX_LINE_BYTES' });
    expect(server.budget.held).toBe(0);
    await server.stop();
  });

  it('a batch of small answers is answered whole, and a later batch starts with the budget free', async () => {
    let runs = 0;
    const dispatch: Dispatch = async (_method, params) => {
      runs++;
      return params;
    };
    const batch = Array.from({ length: 1000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'echo', params: { i } }));
    const { text, server } = await answerTo(dispatch, `${JSON.stringify(batch)}\n`);
    const entries = JSON.parse(text) as Entry[];
    expect(entries.every((e, i) => (e.result as { i: number }).i === i)).toBe(true);
    expect(runs).toBe(1000);
    expect(server.budget.held).toBe(0);
    await server.stop();
  });
});
