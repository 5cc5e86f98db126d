import { PassThrough, Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { a2aError, invalidParams, methodNotFound } from '../../src/protocol/broker-error.js';
import { type Dispatch, JsonRpcServer } from '../../src/transport/jsonrpc-server.js';

/** A server over in-memory pipes; `lines` collects every line it writes. */
function harness(dispatch: Dispatch, options: { maxLineBytes?: number } = {}) {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: unknown[] = [];
  let buffered = '';
  const arrivals: (() => void)[] = [];
  output.setEncoding('utf8');
  output.on('data', (text: string) => {
    buffered += text;
    let newline = buffered.indexOf('\n');
    while (newline >= 0) {
      lines.push(JSON.parse(buffered.slice(0, newline)));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
    for (const arrival of arrivals.splice(0)) arrival();
  });
  const server = new JsonRpcServer({ input, output, dispatch, ...options });
  const send = (text: string) => input.write(text);
  /** Resolves once `count` lines have been written. */
  const until = async (count: number) => {
    while (lines.length < count) await new Promise<void>((resolve) => arrivals.push(resolve));
    return lines;
  };
  return { server, input, output, lines, send, until };
}

const echo: Dispatch = async (method, params) => {
  if (method === 'echo') return params;
  throw methodNotFound(method);
};

describe('JsonRpcServer', () => {
  it('notifyText writes the very line notify writes for the same params', async () => {
    const written: string[] = [];
    const output = new Writable({
      write(chunk: Buffer, _encoding, done) {
        written.push(chunk.toString('utf8'));
        done();
      },
    });
    const server = new JsonRpcServer({ input: new PassThrough(), output, dispatch: echo });
    const params = { recipient: 'a', seq: 3, event: { kind: 'status-update', text: 'q"\\u2028\n' } };
    server.notify('a2a.task.event', params);
    server.notifyText('a2a.task.event', JSON.stringify(params));
    await server.writer.flush();
    const [first, second] = written.join('').trim().split('\n');
    expect(second).toBe(first);
    expect(JSON.parse(first as string)).toEqual({ jsonrpc: '2.0', method: 'a2a.task.event', params });
  });

  it('answers a request with its id', async () => {
    const h = harness(echo);
    h.send('{"jsonrpc":"2.0","id":7,"method":"echo","params":{"x":1}}\n');
    expect(await h.until(1)).toEqual([{ jsonrpc: '2.0', id: 7, result: { x: 1 } }]);
  });

  it('answers a parse error with id null and keeps going', async () => {
    const h = harness(echo);
    h.send('{not json\n{"jsonrpc":"2.0","id":"s","method":"echo","params":[]}\n');
    expect(await h.until(2)).toEqual([
      { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } },
      { jsonrpc: '2.0', id: 's', result: [] },
    ]);
  });

  it('answers anything that is not a request object with -32600 and id null', async () => {
    const h = harness(echo);
    const bad = [
      '42',
      '"text"',
      'null',
      '{"id":1,"method":"echo"}',
      '{"jsonrpc":"1.0","id":1,"method":"echo"}',
      '{"jsonrpc":"2.0","id":1}',
      '{"jsonrpc":"2.0","id":1,"method":5}',
      '{"jsonrpc":"2.0","id":{},"method":"echo"}',
      '{"jsonrpc":"2.0","id":1,"method":"echo","params":3}',
      '{"jsonrpc":"2.0","id":1,"method":"echo","params":null}',
      '[]',
    ];
    h.send(bad.map((b) => `${b}\n`).join(''));
    const lines = (await h.until(bad.length)) as { id: unknown; error: { code: number } }[];
    for (const line of lines) {
      expect(line.id).toBeNull();
      expect(line.error.code).toBe(-32600);
    }
  });

  it('ignores empty and whitespace-only lines', async () => {
    const h = harness(echo);
    h.send('\n   \n\t\r\n{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}\n');
    expect(await h.until(1)).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.lines).toHaveLength(1);
  });

  it('never answers a notification, not even an error', async () => {
    const seen: string[] = [];
    const h = harness(async (method) => {
      seen.push(method);
      throw methodNotFound(method);
    });
    h.send(
      '{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b","params":{}}\n{"jsonrpc":"2.0","id":1,"method":"c"}\n',
    );
    await h.until(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(seen).toEqual(['a', 'b', 'c']);
    expect(h.lines).toEqual([
      { jsonrpc: '2.0', id: 1, error: { code: -32601, message: 'Method not found: c', data: { method: 'c' } } },
    ]);
  });

  it('answers a batch with an array, without entries for notifications', async () => {
    const h = harness(echo);
    h.send(
      '[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}},{"jsonrpc":"2.0","method":"echo"},5,' +
        '{"jsonrpc":"2.0","id":2,"method":"nope"}]\n',
    );
    const [batch] = (await h.until(1)) as unknown[][];
    expect(batch).toEqual([
      { jsonrpc: '2.0', id: 1, result: { a: 1 } },
      { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: not a request object' } },
      { jsonrpc: '2.0', id: 2, error: { code: -32601, message: 'Method not found: nope', data: { method: 'nope' } } },
    ]);
  });

  it('writes nothing for a batch of notifications only', async () => {
    const h = harness(echo);
    h.send('[{"jsonrpc":"2.0","method":"echo"}]\n{"jsonrpc":"2.0","id":1,"method":"echo","params":{}}\n');
    expect(await h.until(1)).toEqual([{ jsonrpc: '2.0', id: 1, result: {} }]);
  });

  it('passes -32602 issues and A2A errors through, and hides internal errors', async () => {
    const h = harness(async (method) => {
      if (method === 'params')
        throw invalidParams('Invalid params', [{ path: ['token'], message: 'Required', code: 'invalid_type' }]);
      if (method === 'a2a') throw a2aError('A2A_UNKNOWN_TASK', 'no such task', { id: 't' });
      if (method === 'sync') throw new Error('secret /home/path');
      throw new TypeError('boom at internal.ts:12');
    });
    h.send(['params', 'a2a', 'sync', 'bug'].map((m, i) => `{"jsonrpc":"2.0","id":${i},"method":"${m}"}\n`).join(''));
    const lines = (await h.until(4)) as { id: number; error: unknown }[];
    const byId = new Map(lines.map((l) => [l.id, l.error]));
    expect(byId.get(0)).toEqual({
      code: -32602,
      message: 'Invalid params',
      data: { issues: [{ path: ['token'], message: 'Required', code: 'invalid_type' }] },
    });
    expect(byId.get(1)).toEqual({
      code: 1400,
      message: 'no such task',
      data: { id: 't', errorCode: 'A2A_UNKNOWN_TASK' },
    });
    expect(byId.get(2)).toEqual({ code: -32603, message: 'Internal error' });
    expect(byId.get(3)).toEqual({ code: -32603, message: 'Internal error' });
  });

  it('dispatches a request without waiting for the one before (answers may come out of order)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const started: number[] = [];
    const h = harness(async (_method, params) => {
      const n = (params as { n: number }).n;
      started.push(n);
      if (n === 1) await gate;
      return n;
    });
    h.send(
      '{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":1}}\n{"jsonrpc":"2.0","id":2,"method":"m","params":{"n":2}}\n',
    );
    const first = await h.until(1);
    expect(started).toEqual([1, 2]);
    expect(first[0]).toEqual({ jsonrpc: '2.0', id: 2, result: 2 });
    release();
    expect((await h.until(2))[1]).toEqual({ jsonrpc: '2.0', id: 1, result: 1 });
  });

  it('coalesces the answers of one tick into one write', async () => {
    const input = new PassThrough();
    const writes: string[] = [];
    const output = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        writes.push(chunk.toString('utf8'));
        callback();
      },
    });
    const server = new JsonRpcServer({ input, output, dispatch: async (_m, p) => p });
    const batch = Array.from({ length: 50 }, (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"m","params":[${i}]}\n`);
    input.end(batch.join(''));
    await server.closed;
    const lines = writes.join('').trim().split('\n');
    expect(lines).toHaveLength(50);
    expect(writes.length).toBeLessThan(5);
  });

  it('discards an oversized line with -32600 and goes on', async () => {
    const h = harness(echo, { maxLineBytes: 64 });
    h.send(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":"${'a'.repeat(100)}"}}\n`);
    h.send('{"jsonrpc":"2.0","id":2,"method":"echo","params":{}}\n');
    const lines = await h.until(2);
    expect(lines[0]).toEqual({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'Invalid Request: line exceeds 64 bytes' },
    });
    expect(lines[1]).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
  });

  it('answers the calls in flight before it closes when input ends', async () => {
    const h = harness(async (_m, params) => {
      await new Promise((resolve) => setTimeout(resolve, 30));
      return params;
    });
    h.input.end(
      '{"jsonrpc":"2.0","id":1,"method":"slow","params":{"v":1}}\n{"jsonrpc":"2.0","id":2,"method":"slow","params":{"v":2}}',
    );
    await h.server.closed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.lines).toHaveLength(2);
  });

  it('stops reading input while its output is congested, and resumes on drain', async () => {
    const input = new PassThrough();
    const output = new PassThrough({ highWaterMark: 1024 });
    const server = new JsonRpcServer({ input, output, dispatch: (_m, p) => p, outputHighWaterMark: 1024 });
    const big = 'x'.repeat(2000);
    for (let i = 0; i < 20; i++) input.write(`{"jsonrpc":"2.0","id":${i},"method":"m","params":["${big}"]}\n`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(input.isPaused()).toBe(true);
    // Nothing is lost: reading the output lets every answer through.
    const received: number[] = [];
    let text = '';
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      text += chunk;
      const parts = text.split('\n');
      text = parts.pop() ?? '';
      for (const part of parts) received.push((JSON.parse(part) as { id: number }).id);
    });
    input.end();
    await server.closed;
    await new Promise((resolve) => setImmediate(resolve));
    expect(received.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
  });

  it('stops reading while too many calls are in flight, and resumes as they are answered', async () => {
    const gates: (() => void)[] = [];
    const input = new PassThrough();
    const output = new PassThrough();
    const answers: number[] = [];
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      for (const line of chunk.trim().split('\n')) answers.push((JSON.parse(line) as { id: number }).id);
    });
    const server = new JsonRpcServer({
      input,
      output,
      maxInFlight: 4,
      dispatch: () => new Promise<void>((resolve) => gates.push(resolve)),
    });
    for (let i = 0; i < 20; i++) input.write(`{"jsonrpc":"2.0","id":${i},"method":"m"}\n`);
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(input.isPaused()).toBe(true);
    expect(server.pending).toBeLessThan(20);
    while (answers.length < 20) {
      for (const open of gates.splice(0)) open();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    expect(answers.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i));
    input.end();
    await server.closed;
  });
});
