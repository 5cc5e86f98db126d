import type { RuleCondition } from '../protocol/workflow.js';

/**
 * A `next` rule's condition over a stage's output: a JSON pointer (RFC 6901)
 * read from the output and compared with one operator. Pure; the run machine
 * decides with it and the audit records the value it read.
 */

/** The tokens of a JSON pointer (`""` is the whole value: no tokens). The pointer is well formed (the schema checks it). */
export function pointerTokens(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** What a pointer reads: `found: false` when the path is not there. */
export type PointerRead = { found: true; value: unknown } | { found: false };

/** Reads `pointer` from `value`: object members by name, array elements by index (`0`, `1`, ... without leading zeros). */
export function readPointer(value: unknown, pointer: string): PointerRead {
  let at: unknown = value;
  for (const token of pointerTokens(pointer)) {
    if (Array.isArray(at)) {
      if (!/^(0|[1-9][0-9]*)$/.test(token)) return { found: false };
      const index = Number(token);
      if (index >= at.length) return { found: false };
      at = at[index];
    } else if (at !== null && typeof at === 'object') {
      if (!Object.hasOwn(at, token)) return { found: false };
      at = (at as Record<string, unknown>)[token];
    } else {
      return { found: false };
    }
  }
  return at === undefined ? { found: false } : { found: true, value: at };
}

/** Structural equality of two JSON values (key order ignored). */
export function jsonEquals(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bs = b as unknown[];
    return a.length === bs.length && a.every((v, i) => jsonEquals(v, bs[i]));
  }
  const ka = Object.keys(a).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every(
    (k) => Object.hasOwn(b, k) && jsonEquals((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
  );
}

/** A condition checked against an output: whether it holds, and the value it read (`undefined`: nothing there). */
export interface ConditionCheck {
  holds: boolean;
  read: unknown;
}

/** Whether `condition` holds over `output` (a missing value meets only `exists: false`). */
export function checkCondition(condition: RuleCondition, output: unknown): ConditionCheck {
  const at = readPointer(output ?? null, condition.pointer);
  const read = at.found ? at.value : undefined;
  if (condition.exists !== undefined) return { holds: at.found === condition.exists, read };
  if (!at.found) return { holds: false, read };
  if (condition.equals !== undefined) return { holds: jsonEquals(read, condition.equals), read };
  if (condition.in !== undefined) return { holds: condition.in.some((v) => jsonEquals(read, v)), read };
  if (typeof read !== 'number') return { holds: false, read };
  if (condition.gt !== undefined) return { holds: read > condition.gt, read };
  if (condition.gte !== undefined) return { holds: read >= condition.gte, read };
  if (condition.lt !== undefined) return { holds: read < condition.lt, read };
  if (condition.lte !== undefined) return { holds: read <= condition.lte, read };
  return { holds: false, read };
}
