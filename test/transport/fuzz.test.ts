import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LINE_NESTING } from '../../src/protocol/bounds.js';
import { JsonRpcResponseSchema } from '../../src/protocol/jsonrpc.js';
import { METHOD_NAMES } from '../../src/protocol/methods.js';
import { LEAD_LOOK_ALIKES } from '../broker/look-alike-names.js';
import { RawServe, isObject, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** The codes a well-behaved broker answers with; -32603 would be a bug that reached the wire. */
const EXPECTED_CODES = new Set([-32700, -32600, -32601, -32602, 1400]);

type Op =
  | { kind: 'bytes'; bytes: Uint8Array }
  | { kind: 'json'; value: unknown }
  | { kind: 'call'; method: string; params: unknown; notification: boolean }
  | { kind: 'batch'; calls: { method: string; params: unknown; notification: boolean }[] }
  | { kind: 'valid' }
  | { kind: 'deep'; levels: number; inData: boolean }
  | { kind: 'badUtf8'; bytes: readonly number[] }
  | { kind: 'proto'; where: 'data' | 'metadata' | 'config' }
  | { kind: 'hugeId'; digits: string };

function opArbitrary(tokens: string[]): fc.Arbitrary<Op> {
  const method = fc.oneof(fc.constantFrom(...METHOD_NAMES, 'a2a.', 'rpc.discover', ''), fc.string({ maxLength: 30 }));
  const token = fc.oneof(fc.constantFrom(...tokens), fc.string({ maxLength: 50 }));
  const params = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record(
      {
        token,
        id: fc.string({ maxLength: 40 }),
        to: fc.constantFrom('fuzz-worker', 'fuzz-requester', 'nobody'),
        taskId: fc.string({ maxLength: 40 }),
        state: fc.constantFrom('working', 'completed', 'canceled', 'submitted', 'bogus'),
        message: fc.oneof(fc.constant(text('fuzz')), fc.jsonValue({ maxDepth: 2 })),
        after: fc.oneof(fc.integer(), fc.double()),
        limit: fc.integer({ min: -5, max: 5000 }),
        name: fc.string({ maxLength: 20 }),
        contextId: fc.constantFrom('fuzz', 'other', ''),
      },
      { requiredKeys: [] },
    ),
  );
  const call = fc.record({ method, params, notification: fc.boolean() });
  return fc.oneof(
    fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 200 }) }),
    fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 4 }) }),
    call.map((c) => ({ kind: 'call' as const, ...c })),
    fc.record({ kind: fc.constant('batch' as const), calls: fc.array(call, { maxLength: 4 }) }),
    fc.constant({ kind: 'valid' as const }),
    fc.record({ kind: fc.constant('deep' as const), levels: fc.integer({ min: 65, max: 6000 }), inData: fc.boolean() }),
    fc.record({
      kind: fc.constant('badUtf8' as const),
      bytes: fc.constantFrom([0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xf8, 0x88, 0x80, 0x80, 0x80]),
    }),
    fc.record({
      kind: fc.constant('proto' as const),
      where: fc.constantFrom('data' as const, 'metadata' as const, 'config' as const),
    }),
    fc.record({
      kind: fc.constant('hugeId' as const),
      digits: fc.bigInt({ min: 2n ** 53n + 1n, max: 10n ** 30n }).map((n) => n.toString()),
    }),
  );
}

describe('fuzz: switchboard serve under random input', () => {
  it('answers every request exactly once, well-formed, keeps serving valid traffic and keeps its database consistent', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new RawServe(tmp.db);
    cleanups.push(async () => {
      if (server.child.exitCode === null) await server.kill();
    });
    const fuzzWorker = (await server.call('a2a.agents.register', { name: 'fuzz-worker', contextId: 'fuzz' })) as {
      token: string;
    };
    const fuzzRequester = (await server.call('a2a.agents.register', { name: 'fuzz-requester', contextId: 'fuzz' })) as {
      token: string;
    };

    const sent = new Set<string>();
    /** Ids beyond 2^53, as written: each must come back with the same digits. */
    const hugeIds: string[] = [];
    let nextFuzzId = 0;
    let run = 0;
    let validTasks = 0;
    let hasDeep = false;
    let hasBadUtf8 = false;
    const request = (c: { method: string; params: unknown; notification: boolean }) => {
      if (c.notification) return { jsonrpc: '2.0', method: c.method, params: c.params };
      const id = `f-${nextFuzzId++}`;
      // Params that are neither object nor array make it no request object: -32600 with id null.
      if (c.params !== null && typeof c.params === 'object') sent.add(id);
      return { jsonrpc: '2.0', id, method: c.method, params: c.params };
    };

    await fc.assert(
      fc.asyncProperty(
        fc.array(opArbitrary([fuzzWorker.token, fuzzRequester.token]), { minLength: 1, maxLength: 8 }),
        async (ops) => {
          run++;
          for (const op of ops) {
            if (op.kind === 'deep') hasDeep = true;
            if (op.kind === 'badUtf8') hasBadUtf8 = true;
            switch (op.kind) {
              case 'bytes':
                server.write(Buffer.concat([Buffer.from(op.bytes.filter((b) => b !== 0x0a)), Buffer.from('\n')]));
                break;
              case 'json':
                server.write(`${JSON.stringify(op.value)}\n`);
                break;
              case 'call':
                server.write(`${JSON.stringify(request(op))}\n`);
                break;
              case 'batch':
                server.write(`${JSON.stringify(op.calls.map(request))}\n`);
                break;
              case 'deep': {
                const id = `f-${nextFuzzId++}`;
                // A line nested past MAX_LINE_NESTING is refused whole before parsing (id null): its id is not counted.
                if (op.levels + (op.inData ? 5 : 3) <= MAX_LINE_NESTING) sent.add(id);
                const deep = `${'{"a":'.repeat(op.levels - 1)}{}${'}'.repeat(op.levels - 1)}`;
                const message = op.inData
                  ? `{"parts":[{"kind":"data","data":${deep}}]}`
                  : `{"parts":[{"kind":"text","text":"x"}],"metadata":${deep}}`;
                server.write(
                  `{"jsonrpc":"2.0","id":"${id}","method":"a2a.message.send","params":{"token":"${fuzzRequester.token}","to":"fuzz-worker","message":${message}}}\n`,
                );
                break;
              }
              case 'badUtf8':
                // Answered -32700 with id null: the id is not counted as sent.
                server.write(
                  Buffer.concat([
                    Buffer.from(
                      `{"jsonrpc":"2.0","id":"bad-${run}","method":"app.handshake","params":{"protocolVersion":10,"client":{"name":"`,
                    ),
                    Buffer.from(op.bytes),
                    Buffer.from('","version":"1"}}}\n'),
                  ]),
                );
                break;
              case 'proto': {
                const id = `f-${nextFuzzId++}`;
                sent.add(id);
                const params =
                  op.where === 'config'
                    ? `{"token":"${fuzzRequester.token}","id":"t","config":{"__proto__":{"token":"x"}}}`
                    : op.where === 'data'
                      ? `{"token":"${fuzzRequester.token}","to":"fuzz-worker","message":{"parts":[{"kind":"data","data":{"__proto__":{"x":1}}}]}}`
                      : `{"token":"${fuzzRequester.token}","to":"fuzz-worker","message":{"parts":[{"kind":"text","text":"x"}],"metadata":{"__proto__":{}}}}`;
                const method = op.where === 'config' ? 'a2a.tasks.pushNotificationConfig.set' : 'a2a.message.send';
                server.write(`{"jsonrpc":"2.0","id":"${id}","method":"${method}","params":${params}}\n`);
                break;
              }
              case 'hugeId':
                hugeIds.push(op.digits);
                server.write(
                  `{"jsonrpc":"2.0","id":${op.digits},"method":"app.handshake","params":{"protocolVersion":10}}\n`,
                );
                break;
              case 'valid': {
                const contextId = `valid-${run}-${validTasks}`;
                const w = (await server.call('a2a.agents.register', { name: 'w', contextId })) as { token: string };
                const r = (await server.call('a2a.agents.register', { name: 'r', contextId })) as { token: string };
                const { task } = (await server.call('a2a.message.send', {
                  token: r.token,
                  to: 'w',
                  message: text('v'),
                })) as {
                  task: { id: string };
                };
                const done = (await server.call('a2a.tasks.status', {
                  token: w.token,
                  id: task.id,
                  state: 'completed',
                })) as {
                  task: { status: { state: string } };
                };
                expect(done.task.status.state).toBe('completed');
                validTasks++;
                break;
              }
            }
          }
          // A sentinel: once it is answered, everything written before it has been read.
          const sentinel = await server.call('app.handshake', { protocolVersion: 10 });
          expect(sentinel.protocolVersion).toBe(10);
          expect(server.child.exitCode).toBeNull();
        },
      ),
      { numRuns: 150 },
    );

    // The process stops cleanly (answering what it read: batches may still be in flight past the last
    // sentinel, since answers go out as they settle) and its database is consistent.
    expect(await server.end()).toEqual({ code: 0, signal: null });
    // Every line on stdout is JSON-RPC; every request with an id was answered exactly once.
    const answered = new Map<string, number>();
    const check = (message: unknown) => {
      expect(isObject(message)).toBe(true);
      if (isObject(message) && 'method' in message) {
        expect(['a2a.task.event', 'a2a.push']).toContain(message.method);
        return;
      }
      expect(JsonRpcResponseSchema.safeParse(message).success).toBe(true);
      const response = message as { id: unknown; error?: { code: number } };
      if (response.error) expect(EXPECTED_CODES.has(response.error.code), JSON.stringify(response)).toBe(true);
      if (typeof response.id === 'string' && response.id.startsWith('f-')) {
        answered.set(response.id, (answered.get(response.id) ?? 0) + 1);
      }
    };
    for (const line of server.lines) {
      if (Array.isArray(line)) {
        expect(line.length).toBeGreaterThan(0);
        for (const entry of line) check(entry);
      } else {
        check(line);
      }
    }
    for (const id of sent) expect(answered.get(id), id).toBe(1);
    for (const digits of hugeIds) {
      expect(
        server.rawStdout.some((line) => line.startsWith(`{"jsonrpc":"2.0","id":${digits},"result":`)),
        digits,
      ).toBe(true);
    }
    // The deep, __proto__ and invalid UTF-8 cases were refused as such, never as internal errors.
    expect(server.rawStdout.some((line) => line.includes('MAX_JSON_DEPTH'))).toBe(hasDeep);
    expect(server.rawStdout.some((line) => line.includes('not valid UTF-8'))).toBe(hasBadUtf8);
    expect([...answered.keys()].every((id) => sent.has(id))).toBe(true);
    expect(server.stderr).not.toContain('internal error');

    const db = new Database(tmp.db, { readonly: true });
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(db.pragma('foreign_key_check')).toEqual([]);
      const parties = db
        .prepare('SELECT COUNT(*) AS n, MAX(seq) AS last FROM a2a_events GROUP BY party_context_id, party_name')
        .all() as { n: number; last: number }[];
      for (const party of parties) expect(party.n).toBe(party.last);
    } finally {
      db.close();
    }
    const again = new RawServe(tmp.db);
    cleanups.push(async () => {
      if (again.child.exitCode === null) await again.kill();
    });
    let completed = 0;
    // Each valid round used its own context: its worker registers again and finds its completed task.
    const runs = new Set<string>();
    for (const line of server.rawStdout) {
      const match = /"contextId":"(valid-[0-9]+-[0-9]+)"/.exec(line);
      if (match?.[1]) runs.add(match[1]);
    }
    for (const contextId of runs) {
      const w = (await again.call('a2a.agents.register', { name: 'w', contextId })) as { token: string };
      const { tasks } = (await again.call('a2a.tasks.list', { token: w.token, role: 'worker' })) as {
        tasks: { status: { state: string } }[];
      };
      completed += tasks.filter((t) => t.status.state === 'completed').length;
    }
    expect(completed).toBe(validTasks);
    expect(await again.end()).toEqual({ code: 0, signal: null });
  });
});

describe('fuzz: look-alike agent names on switchboard serve', () => {
  it('refuses every look-alike of a live name with -32602 and lists only the real one', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const server = new RawServe(tmp.db);
    cleanups.push(async () => {
      if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
    });
    await server.call('a2a.agents.register', { name: 'bob', contextId: 'c' });
    await server.call('a2a.agents.register', { name: 'lead', contextId: 'c' });
    const lister = (await server.call('a2a.agents.register', { name: 'lister', contextId: 'c' })) as { token: string };
    const invisible = fc.constantFrom(
      '\u200b',
      '\u200c',
      '\u200d',
      '\u200e',
      '\u200f',
      '\u2060',
      '\ufeff',
      '\u00ad',
      ...['\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069'],
      '\u0000',
      '\n',
      '\r',
      '\u007f',
      '\u2028',
    );
    const lookAlike = fc.oneof(
      // `bob` with an invisible or control character somewhere in it.
      fc
        .tuple(invisible, fc.integer({ min: 0, max: 3 }))
        .map(([c, at]) => `${'bob'.slice(0, at)}${c}${'bob'.slice(at)}`),
      // `bob` with its o in Cyrillic or Greek, or in another case or width (folds to bob).
      fc.constantFrom('b\u043eb', 'b\u03bfb', 'Bob', 'BOB', 'ｂｏｂ', 'Ｂｏｂ'),
      // look-alikes by UTS #39 skeleton, or with a default-ignorable code point: of `bob` and of `lead`.
      fc.constantFrom('b0b', '\u0299\u1d0f\u0299', 'bob\u034f', 'b\ufe00ob', ...LEAD_LOOK_ALIKES.map(([name]) => name)),
      // blank names.
      fc
        .array(fc.constantFrom(' ', '\u3000', '\u00a0', '\u2003', '\t'), { minLength: 1, maxLength: 4 })
        .map((a) => a.join('')),
    );
    await fc.assert(
      fc.asyncProperty(lookAlike, async (name) => {
        const answer = await server.request('a2a.agents.register', { name, contextId: 'c' });
        expect(answer.error, JSON.stringify(name)).toMatchObject({ code: -32602 });
      }),
      { numRuns: 150 },
    );
    const listed = (await server.call('a2a.agents.list', { token: lister.token })) as { agents: { name: string }[] };
    expect(listed.agents.map((a) => a.name)).toEqual(['bob', 'lead']);
    const answer = await server.request('a2a.agents.register', { name: 'b\u043eb', contextId: 'c' });
    expect(JSON.stringify(answer.error)).toContain('mixes Latin and Cyrillic letters');
  });
});
