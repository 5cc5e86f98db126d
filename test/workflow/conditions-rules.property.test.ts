import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { checkCondition, jsonEquals, pointerTokens, readPointer } from '../../src/workflow/conditions.js';

/** The rules of a `next` condition: pointer reads, JSON equality and the operators, as properties. */

const escapeToken = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');
const key = fc.string({ unit: fc.constantFrom('a', 'b', '~', '/', '0', '1'), maxLength: 4 });
const json = fc.jsonValue({ maxDepth: 3 });
const canonical = (v: unknown): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : x,
  );

describe('pointer reads', () => {
  test.prop([fc.array(key, { maxLength: 4 }), json])('a value placed under escaped keys is read back', (keys, leaf) => {
    const value = keys.reduceRight<unknown>((inner, k) => ({ [k]: inner }), leaf);
    const pointer = keys.map((k) => `/${escapeToken(k)}`).join('');
    expect(pointerTokens(pointer)).toEqual(keys);
    expect(readPointer(value, pointer)).toEqual({ found: true, value: leaf });
  });

  test.prop([fc.array(json, { maxLength: 5 }), fc.nat(8)])(
    'an array index reads its element, past the end nothing',
    (list, i) => {
      const read = readPointer({ l: list }, `/l/${i}`);
      expect(read).toEqual(i < list.length ? { found: true, value: list[i] } : { found: false });
      expect(readPointer(list, `/0${i}`)).toEqual({ found: false });
      expect(readPointer(list, '/length')).toEqual({ found: false });
    },
  );

  it('reads no inherited member, nothing below a scalar, and no undefined member', () => {
    expect(readPointer({}, '/toString')).toEqual({ found: false });
    expect(readPointer({ a: 1 }, '/a/b')).toEqual({ found: false });
    expect(readPointer({ a: 'xy' }, '/a/0')).toEqual({ found: false });
    expect(readPointer({ a: undefined }, '/a')).toEqual({ found: false });
    expect(readPointer(undefined, '')).toEqual({ found: false });
    expect(readPointer([[5]], '/0/0')).toEqual({ found: true, value: 5 });
    expect(
      readPointer(
        Array.from({ length: 12 }, (_, i) => i),
        '/10',
      ),
    ).toEqual({ found: true, value: 10 });
    expect(pointerTokens('/~01')).toEqual(['~1']);
    expect(pointerTokens('/a~1~1b')).toEqual(['a//b']);
    expect(pointerTokens('/~0~0')).toEqual(['~~']);
  });
});

describe('JSON equality', () => {
  test.prop([json, json])('equal exactly when their canonical forms are', (a, b) => {
    expect(jsonEquals(a, b)).toBe(canonical(a) === canonical(b));
    expect(jsonEquals(a, JSON.parse(JSON.stringify(a)))).toBe(true);
  });

  it('tells arrays from objects and ignores undefined members', () => {
    expect(jsonEquals([1], { 0: 1 })).toBe(false);
    expect(jsonEquals({ 0: 1 }, [1])).toBe(false);
    expect(jsonEquals({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(jsonEquals({ a: 1 }, { a: 1, b: undefined })).toBe(true);
    expect(jsonEquals({ a: undefined }, { b: undefined })).toBe(true);
    expect(jsonEquals({ a: 1, b: undefined }, { a: 1, c: 2 })).toBe(false);
    expect(jsonEquals({ a: 1 }, { a: 2 })).toBe(false);
    expect(jsonEquals([1, 2], [1])).toBe(false);
    expect(jsonEquals([1], [1, 2])).toBe(false);
    expect(jsonEquals(null, {})).toBe(false);
    expect(jsonEquals({}, null)).toBe(false);
    expect(jsonEquals(1, '1')).toBe(false);
  });
});

describe('conditions', () => {
  const ops = ['gt', 'gte', 'lt', 'lte'] as const;
  const compare = {
    gt: (a: number, b: number) => a > b,
    gte: (a: number, b: number) => a >= b,
    lt: (a: number, b: number) => a < b,
    lte: (a: number, b: number) => a <= b,
  };

  test.prop([fc.constantFrom(...ops), fc.integer({ min: -3, max: 3 }), fc.integer({ min: -3, max: 3 })])(
    'a comparison holds as the numbers compare, and never for a non-number or a missing value',
    (op, n, bound) => {
      expect(checkCondition({ pointer: '/n', [op]: bound } as never, { n })).toEqual({
        holds: compare[op](n, bound),
        read: n,
      });
      expect(checkCondition({ pointer: '/n', [op]: bound } as never, { n: String(n) }).holds).toBe(false);
      expect(checkCondition({ pointer: '/m', [op]: bound } as never, { n }).holds).toBe(false);
    },
  );

  test.prop([json, fc.array(json, { maxLength: 3 })])('equals and in hold as JSON equality says', (v, list) => {
    expect(checkCondition({ pointer: '/v', equals: list[0] ?? 0 } as never, { v }).holds).toBe(
      jsonEquals(v, list[0] ?? 0),
    );
    expect(checkCondition({ pointer: '/v', in: list } as never, { v }).holds).toBe(list.some((x) => jsonEquals(v, x)));
  });

  test.prop([fc.boolean(), fc.option(json, { nil: undefined })])(
    'exists holds when the value is there as asked',
    (exists, v) => {
      const output = v === undefined ? {} : { v };
      expect(checkCondition({ pointer: '/v', exists } as never, output)).toEqual({
        holds: (v !== undefined) === exists,
        read: v,
      });
    },
  );

  it('reads a missing output as null, and holds for no operator', () => {
    expect(checkCondition({ pointer: '', equals: null } as never, undefined)).toEqual({ holds: true, read: null });
    expect(checkCondition({ pointer: '/n' } as never, { n: 1 })).toEqual({ holds: false, read: 1 });
  });
});
