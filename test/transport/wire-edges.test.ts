import { afterEach, describe, expect, it } from 'vitest';
import {
  A2A_MAX_DATA_BYTES,
  A2A_MAX_METADATA_BYTES,
  MAX_BATCH_REQUESTS,
  MAX_JSON_DEPTH,
  MAX_LINE_NESTING,
} from '../../src/protocol/bounds.js';
import { LeanServe, type Line, RawServe, isObject, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function serve(): RawServe {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  const server = new RawServe(tmp.db);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
  });
  return server;
}

async function pair(server: RawServe, contextId: string) {
  const worker = (await server.call('a2a.agents.register', { name: 'w', contextId })) as { token: string };
  const requester = (await server.call('a2a.agents.register', { name: 'r', contextId })) as { token: string };
  return { worker, requester };
}

/** A value nested `levels` deep: {"a":{"a":...{}}}. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < levels; i++) value = { a: value };
  return value;
}

function errorOf(answer: Line): { code: number; message: string; data?: Record<string, unknown> } {
  expect(answer.error, JSON.stringify(answer)).toBeDefined();
  return answer.error as { code: number; message: string; data?: Record<string, unknown> };
}

async function taskCount(server: RawServe, token: string): Promise<number> {
  const { tasks } = (await server.call('a2a.tasks.list', { token })) as { tasks: unknown[] };
  return tasks.length;
}

describe('serve: edge cases of the wire', () => {
  it('refuses params nested deeper than MAX_JSON_DEPTH with -32602 naming the bound and the path', async () => {
    const server = serve();
    const { requester } = await pair(server, 'deep');
    // Written as text: JSON.stringify itself overflows the stack on the deepest of these.
    const call = (id: string, message: string) =>
      `{"jsonrpc":"2.0","id":"${id}","method":"a2a.message.send","params":{"token":"${requester.token}","to":"w","message":${message}}}\n`;
    for (const levels of [MAX_JSON_DEPTH + 1, MAX_LINE_NESTING - 8]) {
      const deep = `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
      server.write(call(`m${levels}`, `{"parts":[{"kind":"text","text":"x"}],"metadata":${deep}}`));
      const error = errorOf((await server.waitFor((l) => isObject(l) && l.id === `m${levels}`)) as Line);
      expect(error.code).toBe(-32602);
      expect(error.message).toContain('MAX_JSON_DEPTH');
      const issues = error.data?.issues as { path: (string | number)[]; code: string }[];
      expect(issues[0]?.code).toBe('too_deep');
      expect(issues[0]?.path.slice(0, 3)).toEqual(['message', 'metadata', 'a']);
      server.write(call(`d${levels}`, `{"parts":[{"kind":"data","data":${deep}}]}`));
      expect(errorOf((await server.waitFor((l) => isObject(l) && l.id === `d${levels}`)) as Line).code).toBe(-32602);
    }
    // Past MAX_LINE_NESTING the whole line is refused before it is parsed (id null: it is never read).
    for (const levels of [5000, 100_000]) {
      const deep = `${'{"a":'.repeat(levels - 1)}{}${'}'.repeat(levels - 1)}`;
      const before = server.lines.length;
      server.write(call(`n${levels}`, `{"parts":[{"kind":"data","data":${deep}}]}`));
      const refused = (await server.waitFor(
        (l) => server.lines.indexOf(l) >= before && isObject(l) && isObject(l.error),
      )) as Line;
      expect(refused.id).toBeNull();
      expect(errorOf(refused).code).toBe(-32600);
      expect(errorOf(refused).data).toEqual({ limit: 'MAX_LINE_NESTING', max: MAX_LINE_NESTING });
    }
    expect(await taskCount(server, requester.token)).toBe(0);
    // At the bound (params, message, metadata and the rest make MAX_JSON_DEPTH levels) a call is accepted.
    const atBound = await server.request('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: { ...text('x'), metadata: nested(MAX_JSON_DEPTH - 2) },
    });
    expect(atBound.error, JSON.stringify(atBound.error)).toBeUndefined();
    expect(server.stderr).not.toContain('internal error');
  });

  it('refuses a line with invalid UTF-8 inside a JSON string with -32700 and keeps serving', async () => {
    const server = serve();
    const { requester } = await pair(server, 'utf8');
    const head = Buffer.from(
      `{"jsonrpc":"2.0","id":7,"method":"a2a.message.send","params":{"token":"${requester.token}","to":"w","message":{"parts":[{"kind":"text","text":"bad `,
    );
    for (const bad of [[0xff], [0xc3], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const before = server.lines.length;
      server.write(Buffer.concat([head, Buffer.from(bad), Buffer.from(' byte"}]}}}\n')]));
      const answer = (await server.waitFor(
        (l) => server.lines.indexOf(l) >= before && isObject(l) && isObject(l.error),
      )) as Line;
      expect(answer.id).toBeNull();
      expect(errorOf(answer).code).toBe(-32700);
      expect(errorOf(answer).message).toContain('UTF-8');
    }
    expect(await taskCount(server, requester.token)).toBe(0);
    // Valid multi-byte text is taken as is.
    const good = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: text('é 😀'),
    })) as {
      task: { history: { parts: { text: string }[] }[] };
    };
    expect(good.task.history[0]?.parts[0]?.text).toBe('é 😀');
  });

  it('refuses __proto__ keys in data, metadata and push configs with -32602 naming the path, storing nothing', async () => {
    const server = serve();
    const { requester } = await pair(server, 'proto');
    const send = (message: string) =>
      `{"jsonrpc":"2.0","id":"p","method":"a2a.message.send","params":{"token":"${requester.token}","to":"w","message":${message}}}\n`;
    const cases: [string, (string | number)[]][] = [
      ['{"parts":[{"kind":"data","data":{"__proto__":{"x":1}}}]}', ['message', 'parts', 0, 'data', '__proto__']],
      [
        '{"parts":[{"kind":"text","text":"t"}],"metadata":{"a":{"__proto__":{}}}}',
        ['message', 'metadata', 'a', '__proto__'],
      ],
      [
        '{"parts":[{"kind":"text","text":"t","metadata":{"__proto__":1}}]}',
        ['message', 'parts', 0, 'metadata', '__proto__'],
      ],
    ];
    for (const [message, path] of cases) {
      const before = server.lines.length;
      server.write(send(message));
      const answer = (await server.waitFor(
        (l) => server.lines.indexOf(l) >= before && isObject(l) && l.id === 'p',
      )) as Line;
      const error = errorOf(answer);
      expect(error.code).toBe(-32602);
      expect(error.message).toContain('__proto__');
      expect((error.data?.issues as { path: unknown[] }[] | undefined)?.[0]?.path).toEqual(path);
    }
    expect(await taskCount(server, requester.token)).toBe(0);
    const { task } = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: text('t'),
    })) as {
      task: { id: string };
    };
    server.write(
      `{"jsonrpc":"2.0","id":"c","method":"a2a.tasks.pushNotificationConfig.set","params":{"token":"${requester.token}","id":"${task.id}","config":{"__proto__":{"token":"x"}}}}\n`,
    );
    const answer = (await server.waitFor((l) => isObject(l) && l.id === 'c')) as Line;
    expect(errorOf(answer).code).toBe(-32602);
    expect((errorOf(answer).data?.issues as { path: unknown[] }[] | undefined)?.[0]?.path).toEqual([
      'config',
      '__proto__',
    ]);
    const config = await server.call('a2a.tasks.pushNotificationConfig.get', { token: requester.token, id: task.id });
    expect(config).toEqual({ config: null });
  });

  it('echoes ids beyond 2^53 exactly as written, alone and in a batch', async () => {
    const server = serve();
    const ids = ['12345678901234567890', '-98765432109876543210', '9007199254740993', '1.5e300'];
    for (const id of ids) {
      const before = server.rawStdout.length;
      server.write(`{"jsonrpc":"2.0","id":${id},"method":"app.handshake","params":{"protocolVersion":10}}\n`);
      await server.waitFor((l) => server.lines.indexOf(l) >= before && isObject(l) && 'result' in l);
      expect(server.rawStdout.at(-1)?.startsWith(`{"jsonrpc":"2.0","id":${id},"result":`)).toBe(true);
    }
    const before = server.rawStdout.length;
    server.write(
      `[ {"id" : 1, "jsonrpc":"2.0","method":"app.handshake","params":{"protocolVersion":10}}, {"method":"nope","jsonrpc":"2.0","params":{"s":"}\\"]"},"id":12345678901234567891} ]\n`,
    );
    await server.waitFor((l) => server.lines.indexOf(l) >= before && Array.isArray(l));
    const line = server.rawStdout.at(-1) as string;
    expect(line).toContain('"id":1,"result"');
    expect(line).toContain('"id":12345678901234567891,"error":{"code":-32601');
  });

  it('bounds data parts and metadata: A2A_MAX_DATA_BYTES, A2A_MAX_METADATA_BYTES', async () => {
    const server = serve();
    const { requester } = await pair(server, 'sizes');
    const tenMb = 'x'.repeat(10 * 1024 * 1024);
    const cases: [unknown, string, number][] = [
      [{ parts: [{ kind: 'data', data: { blob: tenMb } }] }, 'A2A_MAX_DATA_BYTES', A2A_MAX_DATA_BYTES],
      [{ ...text('t'), metadata: { blob: tenMb } }, 'A2A_MAX_METADATA_BYTES', A2A_MAX_METADATA_BYTES],
      [
        { parts: [{ kind: 'text', text: 't', metadata: { blob: 'é'.repeat(40_000) } }] },
        'A2A_MAX_METADATA_BYTES',
        A2A_MAX_METADATA_BYTES,
      ],
    ];
    for (const [message, limit, max] of cases) {
      const answer = await server.request('a2a.message.send', { token: requester.token, to: 'w', message });
      const error = errorOf(answer);
      expect(error.code).toBe(1400);
      expect(error.data).toMatchObject({ errorCode: 'A2A_PAYLOAD_TOO_LARGE', limit, max });
    }
    expect(await taskCount(server, requester.token)).toBe(0);
    // Just under the bounds is accepted.
    const fits = await server.request('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: {
        parts: [{ kind: 'data', data: { blob: 'x'.repeat(A2A_MAX_DATA_BYTES - 100) } }],
        metadata: { m: 'x'.repeat(60_000) },
      },
    });
    expect(fits.error, JSON.stringify(fits.error)).toBeUndefined();
  });

  it('refuses a batch over MAX_BATCH_REQUESTS whole with -32600 naming the bound, with RSS bounded', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new LeanServe(tmp.db);
    cleanups.push(async () => {
      if (server.child.exitCode === null) await server.kill();
    });
    await server.request('app.handshake', { protocolVersion: 10 });
    const baseline = server.rss();
    const batch = Array.from({ length: 50_000 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'a2a.agents.list',
      params: { token: 'no-such-token-but-a-long-one-to-make-the-input-about-eight-megabytes-in-all-x' },
    }));
    server.write(`${JSON.stringify(batch)}\n`);
    const answer = await server.waitFor((s) => s.id === null && s.error !== undefined);
    expect(answer.error?.code).toBe(-32600);
    expect(answer.error?.message).toContain(`${MAX_BATCH_REQUESTS}`);
    expect(answer.error?.data).toEqual({ limit: 'MAX_BATCH_REQUESTS', max: MAX_BATCH_REQUESTS });
    // A batch at the bound is answered whole.
    server.write(`${JSON.stringify(batch.slice(0, MAX_BATCH_REQUESTS))}\n`);
    const array = await server.waitFor((s) => s.entries !== undefined);
    expect(array.entries).toHaveLength(MAX_BATCH_REQUESTS);
    expect(array.entries?.every((e) => e.error?.data?.errorCode === 'A2A_UNKNOWN_TOKEN')).toBe(true);
    expect(server.maxRss - baseline).toBeLessThan(150 * 1024 * 1024);
    expect(await server.end()).toEqual({ code: 0, signal: null });
  });
});
