import fc from 'fast-check';

/** Every object's keys in order, by path: two values with the same list have the same key order. */
export function keyOrder(value: unknown, path = '$', out: string[] = []): string[] {
  if (value !== null && typeof value === 'object') {
    out.push(`${path}: ${Object.keys(value).join(',')}`);
    for (const [key, item] of Object.entries(value)) keyOrder(item, `${path}.${key}`, out);
  }
  return out;
}

/** Objects nested `depth` levels deep (`{deeper: {deeper: ... 'leaf'}}`). */
export function nested(depth: number): unknown {
  let value: unknown = 'leaf';
  for (let i = 0; i < depth; i++) value = { deeper: value };
  return value;
}

/**
 * Values of `base` with one field (at one of `paths`) set to a value of
 * `odd` (`undefined`: the key present and unset); a missing object on the way
 * is made. Reaches each check of a fast path far more often than values
 * drawn whole.
 */
export function oneChange<T extends object>(
  base: fc.Arbitrary<T>,
  paths: readonly (readonly (string | number)[])[],
  odd: fc.Arbitrary<unknown>,
): fc.Arbitrary<Record<string | number, unknown>> {
  return fc.tuple(base, fc.constantFrom(...paths), odd).map(([value, path, to]) => {
    const copy = structuredClone(value) as Record<string | number, unknown>;
    let node: Record<string | number, unknown> = copy;
    for (const key of path.slice(0, -1)) {
      if (node[key] === null || typeof node[key] !== 'object') node[key] = {};
      node = node[key] as Record<string | number, unknown>;
    }
    node[path[path.length - 1] as string | number] = to;
    return copy;
  });
}

/** A JSON object of a few keys (no `__proto__` at any depth: the shape check refuses it). */
export function jsonRecord(maxDepth: number, maxKeys: number): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.jsonValue({ maxDepth }), { maxKeys })
    .filter((value) => !JSON.stringify(value).includes('"__proto__"'));
}

/** The same value with the keys of every plain object in another order (drawn from `seed`). */
export function shuffleKeys(value: unknown, seed: number): unknown {
  let state = seed >>> 0 || 1;
  const next = () => {
    state = (state * 1103515245 + 12345) >>> 0;
    return state;
  };
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (node === null || typeof node !== 'object' || Object.getPrototypeOf(node) !== Object.prototype) return node;
    const entries = Object.entries(node);
    for (let i = entries.length - 1; i > 0; i--) {
      const j = next() % (i + 1);
      [entries[i], entries[j]] = [entries[j] as [string, unknown], entries[i] as [string, unknown]];
    }
    const out: Record<string, unknown> = {};
    for (const [key, item] of entries) out[key] = walk(item);
    return out;
  };
  return walk(value);
}

/** `arb`'s values with their keys in shuffled orders. */
export function shuffled<T>(arb: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  return fc.tuple(arb, fc.nat()).map(([value, seed]) => shuffleKeys(value, seed));
}

/**
 * Values built in process that JSON cannot make: properties not enumerable,
 * inherited or behind getters, proxies, arrays with their own iterator,
 * metadata whose `toJSON` gives nothing or whose `constructor` is a function.
 * `base` is a well-formed value; `paths` name an object inside it to bend.
 */
export function inProcessOddities(base: Record<string, unknown>): unknown[] {
  const copy = () => structuredClone(base);
  const out: unknown[] = [];
  const hidden = (target: object, key: string, value: unknown) =>
    Object.defineProperty(target, key, { value, enumerable: false, configurable: true, writable: true });
  for (const key of Object.keys(base)) {
    const hiddenKey = copy();
    const value = hiddenKey[key];
    delete hiddenKey[key];
    hidden(hiddenKey, key, value);
    out.push(hiddenKey);
    const inherited = Object.create({ [key]: base[key] }) as Record<string, unknown>;
    for (const other of Object.keys(base)) if (other !== key) inherited[other] = base[other];
    out.push(inherited);
    const flipping = copy();
    let reads = 0;
    Object.defineProperty(flipping, key, { enumerable: true, get: () => (reads++ === 0 ? base[key] : 42) });
    out.push(flipping);
  }
  out.push(new Proxy(copy(), {}));
  out.push(
    new Proxy(copy(), {
      getPrototypeOf() {
        throw new Error('no prototype');
      },
    }),
  );
  out.push(
    new Proxy(copy(), {
      has: (target, key) => key === 'metadata' || key in target,
      get: (target, key) => (key === 'metadata' ? 7 : (target as Record<string | symbol, unknown>)[key]),
    }),
  );
  out.push({ ...copy(), metadata: { toJSON: () => undefined } });
  out.push({ ...copy(), metadata: { constructor: function f() {} } });
  return out;
}

/** The object at `path` inside `value`. */
export function at(value: unknown, path: readonly (string | number)[]): Record<string, unknown> {
  let node = value as Record<string | number, unknown>;
  for (const key of path) node = node[key] as Record<string | number, unknown>;
  return node as Record<string, unknown>;
}

/** A copy of `base` with the object at `path` replaced by `replacement` (the whole value when `path` is empty). */
export function replacedAt(base: object, path: readonly (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const copy = structuredClone(base) as Record<string | number, unknown>;
  at(copy, path.slice(0, -1))[path[path.length - 1] as string] = replacement;
  return copy;
}
