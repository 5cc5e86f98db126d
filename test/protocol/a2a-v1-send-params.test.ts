import fc from 'fast-check';
import { test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { V1SendParamsSchema, plainV1Send } from '../../src/protocol/a2a-v1/send-params.js';
import { MAX_ID_CHARS, MAX_JSON_DEPTH } from '../../src/protocol/bounds.js';
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

/** The property: a value the fast path accepts is exactly what the schema makes of it. */
function agrees(value: unknown): boolean {
  const fast = plainV1Send(value);
  if (fast === undefined) return false;
  let slow: unknown;
  expect(() => {
    slow = parseParams(V1SendParamsSchema, value);
  }, 'the schema refuses a value the fast path accepted').not.toThrow();
  expect(fast).toStrictEqual(slow);
  expect(keyOrder(fast)).toEqual(keyOrder(slow));
  expect(JSON.stringify(fast)).toBe(JSON.stringify(slow));
  return true;
}

const record = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }) },
  fc.constant(JSON.parse('{"__proto__":{"x":1}}') as unknown),
  fc.constant({ deep: nested(MAX_JSON_DEPTH) }),
  fc.constant({ kept: undefined }),
  fc.constant({ [Symbol('s')]: 1 }),
  fc.constant(Object.assign(Object.create(null) as object, { a: 1 })),
  fc.constant([1]),
  fc.constant(new Date(0)),
  fc.constant(null),
  fc.constant(undefined),
);
const str = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.constant(''),
  fc.constant('s'.repeat(257)),
  fc.integer(),
  fc.constant(undefined),
);
const part = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ text: str, filename: str, mediaType: str, metadata: record }, { requiredKeys: ['text'] }),
  },
  fc.record({ raw: fc.base64String() }),
  fc.record({ url: fc.webUrl() }),
  fc.record({ data: fc.jsonValue({ maxDepth: 2 }) }),
  fc.record({ text: fc.string(), url: fc.webUrl() }),
  fc.constant({ text: 'x', extra: 1 }),
  fc.constant(null),
);
const message = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        messageId: fc.oneof(fc.uuid(), fc.constant(''), fc.constant('i'.repeat(MAX_ID_CHARS + 1)), fc.integer()),
        contextId: str,
        taskId: str,
        role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT', 'ROLE_UNSPECIFIED', 'user'),
        parts: fc.array(part, { maxLength: 3 }),
        metadata: record,
      },
      { requiredKeys: ['messageId', 'role', 'parts'] },
    ),
  },
  fc.record({
    messageId: fc.uuid(),
    role: fc.constant('ROLE_USER'),
    parts: fc.constant([{ text: 'x' }]),
    extensions: fc.array(fc.string(), { maxLength: 1 }),
  }),
  fc.constant(undefined),
);
const configuration = fc.oneof(
  fc.constant({}),
  fc.record({ historyLength: fc.oneof(fc.nat(100), fc.constant(-1), fc.constant(1.5), fc.constant(undefined)) }),
  fc.constant({ blocking: false }),
  fc.constant({ historyLength: 2, acceptedOutputModes: ['text/plain'] }),
  fc.constant(null),
  fc.constant(undefined),
);
const sendArb = fc.record(
  {
    capability: fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constant(''), fc.constant(3)),
    to: str,
    message,
    configuration,
    metadata: record,
  },
  { requiredKeys: [] },
);

const plainText = fc.record(
  {
    text: fc.string({ maxLength: 20 }),
    filename: fc.string({ maxLength: 10 }),
    mediaType: fc.constantFrom('text/plain', 'text/markdown'),
    metadata: jsonRecord(2, 2),
  },
  { requiredKeys: ['text'] },
);
const plainSendArb = fc.record(
  {
    capability: fc.string({ minLength: 1, maxLength: 40 }),
    to: fc.string({ minLength: 1, maxLength: 20 }),
    message: fc.record(
      {
        messageId: fc.uuid(),
        contextId: fc.string({ maxLength: 10 }),
        taskId: fc.string({ maxLength: 10 }),
        role: fc.constantFrom('ROLE_USER', 'ROLE_AGENT'),
        parts: fc.array(plainText, { minLength: 1, maxLength: 3 }),
        metadata: jsonRecord(2, 2),
      },
      { requiredKeys: ['messageId', 'role', 'parts'] },
    ),
    configuration: fc.record({ historyLength: fc.nat(20) }, { requiredKeys: [] }),
    metadata: jsonRecord(2, 2),
  },
  { requiredKeys: ['capability', 'message'] },
);

/** Values a field may be set to by `oneChange`: of every type, right and wrong. */
const odd = fc.oneof(
  fc.constantFrom<unknown>(undefined, null, '', 's'.repeat(257), 0, -1, 1.5, true, [], {}, [1], new Date(0)),
  fc.constant({ deep: nested(MAX_JSON_DEPTH) }),
  fc.constant(JSON.parse('{"__proto__":1}') as unknown),
  fc.string({ maxLength: 5 }),
);
/** The paths `oneChange` may set, in a request of the common shape. */
const PATHS = [
  ['capability'],
  ['to'],
  ['message'],
  ['configuration'],
  ['metadata'],
  ['other'],
  ['message', 'messageId'],
  ['message', 'contextId'],
  ['message', 'taskId'],
  ['message', 'role'],
  ['message', 'parts'],
  ['message', 'metadata'],
  ['message', 'extensions'],
  ['message', 'parts', 0],
  ['message', 'parts', 0, 'text'],
  ['message', 'parts', 0, 'url'],
  ['message', 'parts', 0, 'filename'],
  ['message', 'parts', 0, 'mediaType'],
  ['message', 'parts', 0, 'metadata'],
  ['configuration', 'historyLength'],
  ['configuration', 'acceptedOutputModes'],
] as const;
const oneChanged = oneChange(plainSendArb, PATHS, odd);

describe('plainV1Send', () => {
  fcTest.prop([oneChanged], { numRuns: 3000 })(
    'a request one change away from the common shape: if it accepts it, exactly as the schema',
    (value) => {
      agrees(value);
    },
  );

  fcTest.prop([sendArb], { numRuns: 3000 })('a request it accepts is exactly what the schema makes of it', (value) => {
    agrees(value);
  });

  fcTest.prop([shuffled(plainSendArb)], { numRuns: 500 })('takes every request of the common shape', (value) => {
    expect(agrees(value)).toBe(true);
  });

  it("takes the gateway's request of an SDK client's SendMessage", () => {
    const request = {
      message: {
        messageId: '9289ed26-9c8a-40da-b4b9-1fb4c995b9f8',
        role: 'ROLE_USER',
        parts: [{ text: 'do the thing', mediaType: 'text/plain' }],
      },
      configuration: {},
      capability: '0mKyCYSc4dxc9gy4WLAojmJAPUDeZXsrQs_ovDzB99c',
      to: 'worker-0',
    };
    expect(agrees(request)).toBe(true);
    // Its own objects, in the schema's order of keys.
    const taken = plainV1Send(request) as { message: object };
    expect(taken.message).not.toBe(request.message);
    expect(Object.keys(taken)).toEqual(['capability', 'to', 'message', 'configuration']);
    const deepest = { ...request, message: { ...request.message, metadata: { deep: nested(MAX_JSON_DEPTH - 3) } } };
    expect(agrees(deepest)).toBe(true);
  });

  it('never throws, and agrees with the schema, on values built in process', () => {
    const request = {
      capability: 'c',
      to: 'a',
      message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x', metadata: { a: 1 } }], metadata: { b: 2 } },
      configuration: { historyLength: 3 },
      metadata: { c: 3 },
    };
    let accepted = 0;
    for (const path of [[], ['message'], ['message', 'parts', 0], ['configuration']]) {
      for (const odd of inProcessOddities(at(request, path))) {
        const value = replacedAt(request, path, odd);
        expect(() => plainV1Send(value)).not.toThrow();
        if (agrees(value)) accepted++;
      }
    }
    expect(accepted).toBeGreaterThanOrEqual(4);
  });

  it('refuses metadata one level deeper than the shape check allows, at each place', () => {
    const base = { capability: 'c', message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }] } };
    const part = (metadata: unknown) => ({ ...base, message: { ...base.message, parts: [{ text: 'x', metadata }] } });
    const request = (metadata: unknown) => ({ ...base, metadata });
    // Metadata at depth L holding `nested(d)`: its innermost object is at depth L + d, refused from MAX_JSON_DEPTH.
    expect(agrees(part({ deep: nested(MAX_JSON_DEPTH - 5) }))).toBe(true);
    expect(plainV1Send(part({ deep: nested(MAX_JSON_DEPTH - 4) }))).toBeUndefined();
    expect(agrees(request({ deep: nested(MAX_JSON_DEPTH - 2) }))).toBe(true);
    expect(plainV1Send(request({ deep: nested(MAX_JSON_DEPTH - 1) }))).toBeUndefined();
  });

  it('leaves to the schema what it refuses, would drop or would keep beside', () => {
    const base = { capability: 'c', to: 'a', message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }] } };
    const cases: unknown[] = [
      { ...base, capability: '' },
      { ...base, unknown: 1 },
      { ...base, message: { ...base.message, parts: [] } },
      { ...base, message: { ...base.message, parts: [{ text: 'x', url: 'https://example.com' }] } },
      { ...base, message: { ...base.message, parts: [{ data: { a: 1 } }] } },
      { ...base, message: { ...base.message, role: 'ROLE_UNSPECIFIED' } },
      { ...base, message: { ...base.message, extensions: ['e'] } },
      { ...base, message: { ...base.message, metadata: { deep: nested(MAX_JSON_DEPTH) } } },
      { ...base, message: { ...base.message, parts: [{ text: 'x', metadata: JSON.parse('{"__proto__":1}') }] } },
      { ...base, configuration: { historyLength: 1, acceptedOutputModes: [] } },
      { ...base, configuration: { historyLength: -1 } },
      { ...base, metadata: new Date(0) },
      { ...base, message: { ...base.message, parts: [{ text: 3 }] } },
      { ...base, message: { ...base.message, contextId: 3 } },
      // The deepest a message's metadata may nest: one level more is refused (counted from the params).
      { ...base, message: { ...base.message, metadata: { deep: nested(MAX_JSON_DEPTH - 2) } } },
      [base],
    ];
    for (const value of cases) expect(plainV1Send(value), JSON.stringify(value)).toBeUndefined();
  });
});
