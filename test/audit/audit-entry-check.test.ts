import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import canonicalize from 'canonicalize';
import { AuditError, checkAuditEntry } from '../../src/persistence/audit/sqlite-chain.js';
import { AUDIT_KINDS, AuditEntryInputSchema, jsonProblem } from '../../src/protocol/audit.js';

/**
 * The audit's check of an entry is `AuditEntryInputSchema`: it accepts
 * exactly what the schema accepts, refuses the rest as `AUDIT_INVALID_ENTRY`
 * naming the path, and writes the data's canonical JSON as `canonicalize`
 * does.
 */
const NOW = () => '2026-01-01T00:00:00.000Z';

/** The check's verdict: the AuditError's code and path, or 'accepted'. */
function verdict(entry: unknown): 'accepted' | { code: string; path: unknown[] } {
  try {
    checkAuditEntry(entry, NOW);
    return 'accepted';
  } catch (error) {
    expect(error).toBeInstanceOf(AuditError);
    return { code: (error as AuditError).code, path: (error as AuditError).path };
  }
}

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

describe('the audit entry check', () => {
  test.prop([entryLike], { numRuns: 400 })(
    'accepts exactly what the schema accepts, and names the path of a refusal',
    (entry) => {
      const parsed = AuditEntryInputSchema.safeParse(entry);
      const got = verdict(entry);
      if (parsed.success) expect(got).toBe('accepted');
      else expect(got).toEqual({ code: 'AUDIT_INVALID_ENTRY', path: parsed.error.issues[0]!.path });
    },
  );

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
    const checked = checkAuditEntry(entry, NOW);
    expect(checked).toMatchObject({ kind: entry.kind, itemId: entry.itemId, actor: entry.actor, data: entry.data });
    expect(checked.at).toBe(entry.at ?? NOW());
    expect(checked.hop).toBe(entry.hop ?? null);
  });

  test.prop(
    [
      fc.record(
        {
          kind: fc.constantFrom(...AUDIT_KINDS),
          itemId: fc.oneof(
            fc.string({ minLength: 0, maxLength: 2 }),
            fc.constantFrom('x'.repeat(256), 'x'.repeat(257)),
          ),
          hop: fc.oneof(fc.nat(), fc.constantFrom(2 ** 53, 2 ** 53 - 1, -0, 0.5, null, undefined)),
          actor: fc.oneof(fc.string({ maxLength: 2 }), fc.constantFrom('a'.repeat(256), 'a'.repeat(257), 'a\udc00')),
          data: fc.oneof(
            fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 2 })),
            fc.constantFrom(Object.create(null), { d: new Date(0) }, { u: undefined }, { n: Number.NaN }, [1]),
          ),
          at: fc.oneof(fc.string({ maxLength: 2 }), fc.constantFrom('t'.repeat(64), 't'.repeat(65), undefined)),
        },
        { requiredKeys: ['kind', 'itemId', 'actor', 'data'] },
      ),
      fc.constantFrom('plain', 'no prototype', 'symbol key', 'class'),
    ],
    { numRuns: 400 },
  )("entries near the bounds, of any prototype: the verdict is the schema's", (fields, shape) => {
    class Entry {}
    const entry: Record<string | symbol, unknown> =
      shape === 'no prototype' ? Object.create(null) : shape === 'class' ? new Entry() : {};
    Object.assign(entry, fields);
    if (shape === 'symbol key') entry[Symbol('s')] = 1;
    const parsed = AuditEntryInputSchema.safeParse(entry);
    const got = verdict(entry);
    if (parsed.success) expect(got).toBe('accepted');
    else expect(got).toEqual({ code: 'AUDIT_INVALID_ENTRY', path: parsed.error.issues[0]!.path });
  });

  it('refuses bad entries as AUDIT_INVALID_ENTRY, as the schema does', () => {
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
      expect(verdict(bad)).toMatchObject({ code: 'AUDIT_INVALID_ENTRY' });
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
    const { dataText } = checkAuditEntry({ kind: AUDIT_KINDS[0], itemId: 'w', actor: 'a', data: value }, NOW);
    expect(dataText).toBe(canonicalize(value));
    expect(JSON.parse(dataText)).toEqual(JSON.parse(JSON.stringify(value)));
  });

  it('orders keys by code unit and writes numbers as RFC 8785 does', () => {
    const value = { b: [1e21, -0, 0.1, 1e-7], a: { '\u00e9': 'x', e\u0301: 'y', '\ud83d\ude00': null, z: true } };
    const { dataText } = checkAuditEntry({ kind: AUDIT_KINDS[0], itemId: 'w', actor: 'a', data: value }, NOW);
    expect(dataText).toBe(canonicalize(value));
    expect(dataText).toBe('{"a":{"e\u0301":"y","z":true,"\u00e9":"x","😀":null},"b":[1e+21,0,0.1,1e-7]}');
  });
});
