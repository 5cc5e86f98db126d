import type { z } from 'zod';
import { type SchemaIssue, a2aError, invalidParams } from './broker-error.js';
import { jsonShapeIssue } from './json-shape.js';
import type { BoundIssueParams } from './parts.js';

function boundParams(issue: z.core.$ZodIssue): BoundIssueParams | undefined {
  if (issue.code !== 'custom') return undefined;
  const params = (issue as { params?: Partial<BoundIssueParams> }).params;
  if (params?.errorCode === 'A2A_PAYLOAD_TOO_LARGE' && params.limit !== undefined && params.max !== undefined) {
    return params as BoundIssueParams;
  }
  return undefined;
}

export function toSchemaIssues(error: z.ZodError): SchemaIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    message: issue.message,
    code: issue.code,
  }));
}

/**
 * Parses untrusted params. Nesting deeper than `MAX_JSON_DEPTH` and a
 * `__proto__` key anywhere are `INVALID_PARAMS` naming the path. A crossed
 * bound is `A2A_PAYLOAD_TOO_LARGE` (with `details.limit` and `details.max`);
 * any other problem is `INVALID_PARAMS` with `details.issues`.
 */
export function parseParams<S extends z.ZodType>(schema: S, value: unknown, what = 'params'): z.infer<S> {
  // Before the schema: it recurses, and it would drop a __proto__ key silently.
  const shape = jsonShapeIssue(value);
  if (shape !== undefined) throw invalidParams(`Invalid ${what}: ${shape.message}`, [shape]);
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  // A crossed bound is reported as such only when it is the sole problem: a
  // request that is also malformed is -32602 (the bound issue is listed too).
  const bounds = result.error.issues.map(boundParams);
  const first = bounds[0];
  if (first !== undefined && bounds.every((b) => b !== undefined)) {
    return throwBound(first, result.error.issues[0]?.message ?? 'payload too large');
  }
  throw invalidParams(`Invalid ${what}`, toSchemaIssues(result.error));
}

function throwBound(bound: BoundIssueParams, message: string): never {
  throw a2aError(bound.errorCode, message, { limit: bound.limit, max: bound.max });
}
