import type { z } from 'zod';

/**
 * What to write instead of a field a definition's schema does not take: the
 * fields the object at that path takes (read from the schema itself, so the
 * list is never out of date), and the one the author probably meant (a
 * misspelling, a different case, or a word other workflow engines use).
 */

/** The zod 4 definition of a schema (`_zod.def`): its kind and, per kind, what it wraps. */
interface SchemaDef {
  type: string;
  innerType?: z.ZodType;
  in?: z.ZodType;
  getter?: () => z.ZodType;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  element?: z.ZodType;
  options?: z.ZodType[];
}

function defOf(schema: z.ZodType | undefined): SchemaDef | undefined {
  return (schema as { _zod?: { def?: SchemaDef } } | undefined)?._zod?.def;
}

/** Wrappers that hold one schema: the value is checked by the one inside. */
const WRAPPERS: ReadonlySet<string> = new Set([
  'optional',
  'default',
  'prefault',
  'nullable',
  'nonoptional',
  'readonly',
  'catch',
]);

/** The schema a wrapper (optional, default, a pipe's input, a lazy one) checks its value with. */
function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let current = schema;
  // Bounded: a lazy schema may lead back to itself.
  for (let i = 0; i < 16; i++) {
    const def = defOf(current);
    if (def === undefined) return current;
    if (WRAPPERS.has(def.type)) current = def.innerType;
    else if (def.type === 'pipe') current = def.in;
    else if (def.type === 'lazy' && def.getter !== undefined) current = def.getter();
    else return current;
  }
  return current;
}

/** The object schemas a value here may be: the object, or a union's object options. */
function objectsOf(schema: z.ZodType | undefined): Record<string, z.ZodType>[] {
  const def = defOf(schema);
  if (def?.type === 'object' && def.shape !== undefined) return [def.shape];
  if (def?.type === 'union' && def.options !== undefined) {
    return def.options.flatMap((option) => objectsOf(unwrap(option)));
  }
  return [];
}

/**
 * The fields an object at `path` in values of `schema` takes, in the
 * schema's order; undefined when the path leads to no object schema.
 */
export function fieldsAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let current = unwrap(schema);
  for (const segment of path) {
    const def = defOf(current);
    if (def === undefined) return undefined;
    if (def.type === 'record') current = def.valueType;
    else if (def.type === 'array') current = def.element;
    else {
      const key = String(segment);
      current = objectsOf(current).find((shape) => Object.hasOwn(shape, key))?.[key];
    }
    current = unwrap(current);
  }
  const shapes = objectsOf(current);
  if (shapes.length === 0) return undefined;
  return [...new Set(shapes.flatMap((shape) => Object.keys(shape)))];
}

/** Words other workflow engines (and plain English) use for a field, and the field they mean here. */
const MEANT: ReadonlyMap<string, string> = new Map([
  ['if', 'when'],
  ['condition', 'when'],
  ['where', 'when'],
  ['eq', 'equals'],
  ['equal', 'equals'],
  ['is', 'equals'],
  ['oneOf', 'in'],
  ['then', 'next'],
  ['steps', 'stages'],
  ['agent', 'role'],
  ['maxAttempts', 'maximumAttempts'],
  ['retries', 'retry'],
  ['concurrency', 'maxConcurrency'],
  ['each', 'forEach'],
  ['dollars', 'maxCostUsd'],
  ['cost', 'maxCostUsd'],
  ['tokens', 'maxTokens'],
  ['hops', 'maxHops'],
]);

/** Levenshtein distance of two short strings. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length]!;
}

/** The field among `fields` that `key` most likely meant, if one is close enough. */
export function meantField(key: string, fields: readonly string[]): string | undefined {
  const synonym = MEANT.get(key);
  if (synonym !== undefined && fields.includes(synonym)) return synonym;
  const lower = key.toLowerCase();
  const sameCase = fields.find((f) => f.toLowerCase() === lower);
  if (sameCase !== undefined) return sameCase;
  // One edit for short words, two for longer ones: "rol" for "role", "stage" for "stages", "timout" for "timeout".
  const allowed = key.length < 4 ? 1 : 2;
  let best: string | undefined;
  let bestDistance = allowed + 1;
  for (const field of fields) {
    const d = distance(lower, field.toLowerCase());
    if (d < bestDistance) {
      best = field;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * The message for fields a schema's object does not take: each named, with
 * the field it probably meant, and the fields the object takes.
 */
export function unknownFieldsMessage(keys: readonly string[], fields: readonly string[] | undefined): string {
  const named = keys.map((key) => {
    const meant = fields === undefined ? undefined : meantField(key, fields);
    return meant === undefined ? `"${key}"` : `"${key}" (did you mean "${meant}"?)`;
  });
  const head = `unknown field${keys.length === 1 ? '' : 's'} ${named.join(', ')}`;
  return fields === undefined ? head : `${head}; the fields here are ${fields.join(', ')}`;
}
