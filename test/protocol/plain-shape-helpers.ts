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
