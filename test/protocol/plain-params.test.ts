import fc from 'fast-check';
import { test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { A2A_MAX_METADATA_BYTES, A2A_MAX_TEXT_CHARS, MAX_ID_CHARS, MAX_JSON_DEPTH } from '../../src/protocol/bounds.js';
import { METHODS } from '../../src/protocol/methods.js';
import { parseParams } from '../../src/protocol/parse.js';
import {
  at,
  inProcessOddities,
  jsonRecord,
  keyOrder,
  nested,
  oneChange,
  replacedAt,
  shuffled,
} from './plain-shape-helpers.js';
import { plainParams } from '../../src/protocol/plain-params.js';
import { TASK_STATES } from '../../src/protocol/task.js';

type Method = 'a2a.message.send' | 'a2a.tasks.status';

/** What `parseParams` makes of the value with the method's schema: its value, or that it refused. */
function bySchema(method: Method, value: unknown): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: parseParams(METHODS[method].params, value) };
  } catch {
    return { ok: false };
  }
}

/** The property: a value the fast path accepts is exactly what the schema makes of it. */
function agrees(method: Method, value: unknown): boolean {
  const fast = plainParams(method, value);
  if (fast === undefined) return false;
  const slow = bySchema(method, value);
  expect(slow.ok, 'the schema refuses a value the fast path accepted').toBe(true);
  if (!slow.ok) return true;
  expect(fast).toStrictEqual(slow.value);
  expect(keyOrder(fast)).toEqual(keyOrder(slow.value));
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow.value));
  return true;
}

const withSymbol = { [Symbol('s')]: 1, a: 1 };
const nullProto = Object.assign(Object.create(null) as object, { source: 'bench' });

// Values near the accepted shapes, right and wrong, so that both sides are reached.
const id = fc.oneof(
  fc.string({ minLength: 1, maxLength: 40 }),
  fc.constant(''),
  fc.constant('i'.repeat(MAX_ID_CHARS)),
  fc.constant('i'.repeat(MAX_ID_CHARS + 1)),
  fc.integer(),
  fc.constant(null),
  fc.constant(undefined),
);
const metadata = fc.oneof(
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
  fc.constant({}),
  fc.constant(JSON.parse('{"__proto__":{"x":1}}') as unknown),
  fc.constant({ deep: nested(MAX_JSON_DEPTH) }),
  fc.constant({ deep: nested(MAX_JSON_DEPTH - 8) }),
  fc.constant({ big: 'm'.repeat(A2A_MAX_METADATA_BYTES) }),
  fc.constant({ kept: undefined, n: 1 }),
  fc.constant({ 2: 'two', 1: 'one', b: 'b' }),
  fc.constant(withSymbol),
  fc.constant(nullProto),
  fc.constant([1, 2]),
  fc.constant(new Date(0)),
  fc.constant(null),
  fc.constant(undefined),
);
const text = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.constant('t'.repeat(A2A_MAX_TEXT_CHARS)),
  fc.constant('t'.repeat(A2A_MAX_TEXT_CHARS + 1)),
  fc.constant('😀'.repeat(A2A_MAX_TEXT_CHARS)),
  fc.integer(),
);
const part = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('text'), text, metadata }, { requiredKeys: ['kind', 'text'] }),
  },
  fc.record({
    kind: fc.constant('data'),
    data: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
  }),
  fc.record({ kind: fc.constant('file'), file: fc.record({ uri: fc.constant('https://example.com/f') }) }),
  fc.record({ kind: fc.constant('text'), text: fc.string(), extra: fc.integer() }),
  fc.constant({ kind: 'texts', text: 'x' }),
  fc.constant(null),
);
const message = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record(
      { messageId: id, parts: fc.array(part, { minLength: 0, maxLength: 3 }), metadata },
      { requiredKeys: ['parts'] },
    ),
  },
  fc.record({ parts: fc.array(part, { minLength: 1, maxLength: 2 }), role: fc.constant('user') }),
  fc.constant({ parts: 'text' }),
  fc.constant(undefined),
);
const historyLength = fc.oneof(
  fc.nat(1000),
  fc.constant(-1),
  fc.constant(1.5),
  fc.constant(2 ** 60),
  fc.constant(Number.NaN),
  fc.constant('3'),
  fc.constant(undefined),
);
const token = fc.oneof(fc.string({ minLength: 1, maxLength: 50 }), fc.constant(''), fc.constant('k'.repeat(257)));
const extra = fc.oneof(fc.constant(undefined), fc.constant(1));

const sendArb = fc
  .record(
    {
      token,
      message,
      to: id,
      taskId: id,
      historyLength,
      blocking: fc.oneof(fc.boolean(), fc.constant('true'), fc.constant(undefined)),
      other: extra,
    },
    { requiredKeys: [] },
  )
  .map(({ other, ...params }) => (other === undefined ? params : { ...params, other }));
const statusArb = fc
  .record(
    {
      token,
      id,
      state: fc.oneof(fc.constantFrom(...TASK_STATES), fc.constant('done'), fc.constant(3)),
      message,
      historyLength,
      other: extra,
    },
    { requiredKeys: [] },
  )
  .map(({ other, ...params }) => (other === undefined ? params : { ...params, other }));

// Only values the fast path is meant to take: every one of them must be taken.
const plainText = fc.record(
  {
    kind: fc.constant('text' as const),
    text: fc.string({ maxLength: 30 }),
    metadata: jsonRecord(3, 3),
  },
  { requiredKeys: ['kind', 'text'] },
);
const plainMessage = fc.record(
  {
    messageId: fc.uuid(),
    parts: fc.array(plainText, { minLength: 1, maxLength: 3 }),
    metadata: jsonRecord(3, 3),
  },
  { requiredKeys: ['parts'] },
);
const plainSendArb = fc
  .tuple(
    fc.string({ minLength: 1, maxLength: 40 }),
    plainMessage,
    fc.oneof(fc.record({ to: fc.string({ minLength: 1, maxLength: 20 }) }), fc.record({ taskId: fc.uuid() })),
    fc.record({ historyLength: fc.nat(50), blocking: fc.boolean() }, { requiredKeys: [] }),
  )
  .map(([t, m, target, rest]) => ({ token: t, message: m, ...target, ...rest }));
const plainStatusArb = fc
  .tuple(
    fc.string({ minLength: 1, maxLength: 40 }),
    fc.uuid(),
    fc.constantFrom(...TASK_STATES),
    fc.record({ message: plainMessage, historyLength: fc.nat(50) }, { requiredKeys: [] }),
  )
  .map(([t, i, state, rest]) => ({ token: t, id: i, state, ...rest }));

/** Values a field may be set to by `oneChange`: of every type, right and wrong. */
const odd = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, '', 'i'.repeat(MAX_ID_CHARS + 1), 0, -1, 1.5, 2 ** 60, true, [], {}, [1]),
  fc.constantFrom<unknown>('t'.repeat(A2A_MAX_TEXT_CHARS + 1), { big: 'm'.repeat(A2A_MAX_METADATA_BYTES) }, nullProto),
  fc.constant({ deep: nested(MAX_JSON_DEPTH) }),
  fc.constant(JSON.parse('{"__proto__":1}') as unknown),
  fc.constantFrom<unknown>(...TASK_STATES, 'text', 'data'),
  fc.string({ maxLength: 5 }),
);
const SEND_PATHS = [
  ['token'],
  ['to'],
  ['taskId'],
  ['historyLength'],
  ['blocking'],
  ['other'],
  ['message'],
  ['message', 'messageId'],
  ['message', 'parts'],
  ['message', 'metadata'],
  ['message', 'role'],
  ['message', 'parts', 0],
  ['message', 'parts', 0, 'kind'],
  ['message', 'parts', 0, 'text'],
  ['message', 'parts', 0, 'metadata'],
  ['message', 'parts', 0, 'data'],
] as const;
const STATUS_PATHS = [['id'], ['state'], ...SEND_PATHS.filter((path) => path[0] !== 'to' && path[0] !== 'blocking')];

describe('plainParams', () => {
  fcTest.prop([oneChange(plainSendArb, SEND_PATHS, odd)], { numRuns: 3000 })(
    'a send one change away from the common shape: if it accepts it, exactly as the schema',
    (value) => {
      agrees('a2a.message.send', value);
    },
  );

  fcTest.prop([oneChange(plainStatusArb, STATUS_PATHS, odd)], { numRuns: 3000 })(
    'a status one change away from the common shape: if it accepts it, exactly as the schema',
    (value) => {
      agrees('a2a.tasks.status', value);
    },
  );

  fcTest.prop([sendArb], { numRuns: 2000 })('a send it accepts is exactly what the schema makes of it', (value) => {
    agrees('a2a.message.send', value);
  });

  fcTest.prop([statusArb], { numRuns: 2000 })('a status it accepts is exactly what the schema makes of it', (value) => {
    agrees('a2a.tasks.status', value);
  });

  fcTest.prop([shuffled(plainSendArb)], { numRuns: 500 })('takes every send of the common shape', (value) => {
    expect(agrees('a2a.message.send', value)).toBe(true);
  });

  fcTest.prop([shuffled(plainStatusArb)], { numRuns: 500 })('takes every status of the common shape', (value) => {
    expect(agrees('a2a.tasks.status', value)).toBe(true);
  });

  it("takes the gateway's send and the worker's status as they come", () => {
    const send = {
      token: 'ucl9Yc_0Q6XV8JivONUPsATt0T0eZL9ZsUnvFVqOp_4',
      to: 'worker-0',
      message: {
        messageId: '42a41541-8c91-4254-8b07-02b5f89eb496',
        parts: [
          { kind: 'text', text: 'do the thing', metadata: { 'a2a.v1': { mediaType: 'text/plain', absent: true } } },
        ],
      },
      blocking: true,
    };
    expect(agrees('a2a.message.send', send)).toBe(true);
    const sent = plainParams('a2a.message.send', send) as { message: { parts: { metadata: object }[] } };
    // A copy: the caller's objects are not the params'.
    expect(sent.message).not.toBe(send.message);
    expect(sent.message.parts[0]?.metadata).not.toBe(send.message.parts[0]?.metadata);
    const status = {
      token: 'gGqfiN0_fBuOVHmZXB8C5IY5XRYa0XBDIvEIFVBCAgo',
      id: '01a24ff1-7947-7379-9281-610ef95e7b4c',
      state: 'completed',
      message: { parts: [{ kind: 'text', text: 'done' }] },
      historyLength: 0,
    };
    expect(agrees('a2a.tasks.status', status)).toBe(true);
  });

  it('never throws, and agrees with the schema, on values built in process', () => {
    const send = {
      token: 't',
      to: 'worker',
      message: { messageId: 'm', parts: [{ kind: 'text', text: 'x', metadata: { a: 1 } }], metadata: { b: 2 } },
      blocking: true,
    };
    let accepted = 0;
    for (const path of [[], ['message'], ['message', 'parts', 0]]) {
      for (const odd of inProcessOddities(at(send, path))) {
        const value = replacedAt(send, path, odd);
        expect(() => plainParams('a2a.message.send', value)).not.toThrow();
        if (agrees('a2a.message.send', value)) accepted++;
      }
    }
    // A plain proxy at each level is taken, as the schema takes it.
    expect(accepted).toBeGreaterThanOrEqual(3);
    // Parts with an iterator of their own: read by index, as the schema reads them.
    const parts = [{ kind: 'text', text: 'x' }];
    Object.defineProperty(parts, Symbol.iterator, {
      value: function* () {
        yield { kind: 'text', text: 'other' };
      },
    });
    expect(agrees('a2a.message.send', { ...send, message: { parts } })).toBe(true);
  });

  it('refuses metadata one level deeper than the shape check allows, at each place', () => {
    const part = (metadata: unknown) => ({
      token: 't',
      to: 'a',
      message: { parts: [{ kind: 'text', text: 'x', metadata }] },
    });
    const message = (metadata: unknown) => ({
      token: 't',
      to: 'a',
      message: { parts: [{ kind: 'text', text: 'x' }], metadata },
    });
    // Metadata at depth L holding `nested(d)`: its innermost object is at depth L + d, refused from MAX_JSON_DEPTH.
    expect(agrees('a2a.message.send', part({ deep: nested(MAX_JSON_DEPTH - 5) }))).toBe(true);
    expect(plainParams('a2a.message.send', part({ deep: nested(MAX_JSON_DEPTH - 4) }))).toBeUndefined();
    expect(agrees('a2a.message.send', message({ deep: nested(MAX_JSON_DEPTH - 3) }))).toBe(true);
    expect(plainParams('a2a.message.send', message({ deep: nested(MAX_JSON_DEPTH - 2) }))).toBeUndefined();
    expect(bySchema('a2a.message.send', message({ deep: nested(MAX_JSON_DEPTH - 2) })).ok).toBe(false);
  });

  it('leaves to the schema what it refuses or would drop', () => {
    const base = { token: 't', to: 'worker', message: { parts: [{ kind: 'text', text: 'x' }] } };
    const cases: unknown[] = [
      { ...base, taskId: 'both' },
      { token: 't', message: base.message },
      { ...base, token: '' },
      { ...base, historyLength: -1 },
      { ...base, unknown: true },
      { ...base, message: { parts: [] } },
      { ...base, message: { parts: [{ kind: 'text', text: 't'.repeat(A2A_MAX_TEXT_CHARS + 1) }] } },
      {
        ...base,
        message: { parts: [{ kind: 'text', text: 'x', metadata: { big: 'm'.repeat(A2A_MAX_METADATA_BYTES) } }] },
      },
      { ...base, message: { parts: [{ kind: 'text', text: 'x' }], metadata: JSON.parse('{"__proto__":1}') } },
      { ...base, message: { parts: [{ kind: 'text', text: 'x' }], metadata: { deep: nested(MAX_JSON_DEPTH) } } },
      { ...base, message: { parts: [{ kind: 'data', data: { a: 1 } }] } },
      { ...base, message: { parts: [{ kind: 'text', text: 'x', metadata: new Date(0) }] } },
      { ...base, message: { parts: [{ kind: 'text', text: 'x' }], metadata: new Map([['a', 1]]) } },
      { ...base, message: { parts: [{ kind: 'text', text: 'x' }], metadata: withSymbol } },
      [base],
      null,
    ];
    for (const value of cases) expect(plainParams('a2a.message.send', value), JSON.stringify(value)).toBeUndefined();
    expect(plainParams('a2a.tasks.get', { token: 't', id: 'x' })).toBeUndefined();
  });
});
