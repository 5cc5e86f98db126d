import { MAX_JSON_DEPTH } from './bounds.js';
import type { SchemaIssue } from './broker-error.js';

/**
 * The first problem of shape in a parsed JSON value, found without recursion
 * (so that no nesting can overflow the stack): nesting deeper than
 * `MAX_JSON_DEPTH` levels, or a `__proto__` key (which schemas would drop
 * silently). Paths are relative to the value.
 */
export function jsonShapeIssue(value: unknown, maxDepth = MAX_JSON_DEPTH): SchemaIssue | undefined {
  if (value === null || typeof value !== 'object') return undefined;
  const stack: { value: object; path: (string | number)[] }[] = [{ value, path: [] }];
  while (stack.length > 0) {
    const { value: node, path } = stack.pop() as { value: object; path: (string | number)[] };
    if (path.length >= maxDepth) {
      return {
        path,
        message: `nested deeper than ${maxDepth} levels (MAX_JSON_DEPTH): flatten the value or carry it as a string`,
        code: 'too_deep',
      };
    }
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) {
        const item: unknown = node[i];
        if (item !== null && typeof item === 'object') stack.push({ value: item, path: [...path, i] });
      }
      continue;
    }
    const keys = Object.keys(node);
    for (let i = keys.length - 1; i >= 0; i--) {
      const key = keys[i] as string;
      if (key === '__proto__') {
        return {
          path: [...path, key],
          message: 'the key __proto__ is not accepted: rename it',
          code: 'forbidden_key',
        };
      }
      const item: unknown = (node as Record<string, unknown>)[key];
      if (item !== null && typeof item === 'object') stack.push({ value: item, path: [...path, key] });
    }
  }
  return undefined;
}
