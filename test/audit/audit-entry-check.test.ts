import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import canonicalize from 'canonicalize';
import { canonicalJson, isPlainAuditEntry } from '../../src/persistence/audit/chain.js';
import { AUDIT_KINDS, AuditEntryInputSchema, jsonProblem } from '../../src/protocol/audit.js';

/**
 * The audit's zod-free check of an entry (its fast path) never accepts what
 * `AuditEntryInputSchema` refuses, and accepts the entries the Coordinator
 * writes (plain JSON data, kinds, ids, actors, hops) so that they skip zod.
 */

const text = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ minLength: 0, maxLength: 3 }),
  fc.constantFrom('', '\ud800', 'a\udc00', 'coordinator', 'x'.repeat(256), 'x'.repeat(257), 'y'.repeat(65)),
);
const anyValue = fc.oneof(
  fc.anything(),
  fc.jsonValue(),
  text,
  fc.constantFrom(undefined, null, -1, 0, 1.5, Number.NaN, 2 ** 53, new Date(0), [1], {}),
);
const entryLike = fc.record(
  {
    kind: fc.oneof(fc.constantFrom(...AUDIT_KINDS), text),
    itemId: fc.oneof(text, anyValue),
    hop: fc.oneof(fc.nat(), anyValue),
    actor: fc.oneof(text, anyValue),
    data: fc.oneof(
      fc.dictionary(fc.string(), fc.jsonValue()),
      fc.dictionary(fc.string({ unit: 'binary' }), fc.anything()),
      anyValue,
    ),
    at: fc.oneof(text, anyValue),
    extra: anyValue,
  },
  { requiredKeys: [] },
);

describe('the audit entry check without zod', () => {
  test.prop([entryLike], { numRuns: 400 })('never accepts what the schema refuses', (entry) => {
    if (isPlainAuditEntry(entry)) expect(AuditEntryInputSchema.safeParse(entry).success).toBe(true);
  });

  test.prop(
    [
      fc.record(
        {
          kind: fc.constantFrom(...AUDIT_KINDS),
          itemId: fc.string({ minLength: 1, maxLength: 256 }),
          hop: fc.nat(),
          actor: fc.string({ minLength: 1, maxLength: 256 }),
          data: fc.dictionary(fc.string(), fc.jsonValue()),
          at: fc.string({ minLength: 1, maxLength: 64 }),
        },
        { requiredKeys: ['kind', 'itemId', 'actor', 'data'] },
      ),
    ],
    { numRuns: 200 },
  )('accepts every well-formed entry the schema accepts', (entry) => {
    expect(AuditEntryInputSchema.safeParse(entry).success).toBe(true);
    expect(isPlainAuditEntry(entry)).toBe(true);
  });

  it('leaves bad entries to the schema (which names the problem)', () => {
    for (const bad of [
      { kind: 'gossip', itemId: 'w', actor: 'a', data: {} },
      { kind: 'dispatch', itemId: '', actor: 'a', data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { cost: Number.NaN } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { when: new Date() } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: [1, 2] },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { s: '\ud800' } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', hop: -1, data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', hop: 1.5, data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: {}, extra: 1 },
      { kind: 'dispatch', itemId: 'w', actor: 'x'.repeat(257), data: {} },
    ]) {
      expect(isPlainAuditEntry(bad)).toBe(false);
      expect(AuditEntryInputSchema.safeParse(bad).success).toBe(false);
    }
  });
});

describe('the canonical JSON of checked data', () => {
  const data = fc.dictionary(fc.string({ unit: 'binary' }), fc.jsonValue());
  test.prop([fc.oneof(data, fc.dictionary(fc.string({ unit: 'grapheme' }), fc.jsonValue({ maxDepth: 3 })))], {
    numRuns: 300,
  })('is exactly what canonicalize writes', (value) => {
    fc.pre(jsonProblem(value) === null);
    expect(canonicalJson(value)).toBe(canonicalize(value));
  });

  it('orders keys by code unit and writes numbers as RFC 8785 does', () => {
    const value = { b: [1e21, -0, 0.1, 1e-7], a: { '\u00e9': 'x', e\u0301: 'y', '\ud83d\ude00': null, z: true } };
    expect(canonicalJson(value)).toBe(canonicalize(value));
    expect(canonicalJson(value)).toBe('{"a":{"e\u0301":"y","z":true,"\u00e9":"x","😀":null},"b":[1e+21,0,0.1,1e-7]}');
  });
});
