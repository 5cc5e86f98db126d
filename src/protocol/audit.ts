import { z } from 'zod';
import { IdSchema } from './task.js';

/**
 * The rows of the hash-chained audit (`src/persistence/audit/sqlite-chain.ts`,
 * `postgres-chain.ts`): one per thing that happened to a work item, in the
 * order it happened.
 */

export const AUDIT_KINDS = [
  /** A work item was created (its workflow and version in `data`). */
  'item-created',
  /** The governance cascade decided a hop (every policy's verdict in `data`). */
  'governance',
  /** A hop was dispatched to a role. */
  'dispatch',
  /** A hop's result arrived. */
  'result',
  /** A failed hop attempt is retried. */
  'retry',
  /** A hop suspended (asked another role and stood down). */
  'suspend',
  /** A suspended hop was resumed. */
  'resume',
  /** The run waits for an approval (a gate, or governance). */
  'approval-requested',
  /** An approver approved or denied. */
  'approval',
  /** Cost accrued to a hop and its work item. */
  'cost',
  /** A hop or the work item failed (the reason in `data`). */
  'failure',
  /** Time ran out: a hop past its stage's timeout (re-published or failed) or an item past its deadline. */
  'timeout',
  /** The bus lost its state: the hops the item had out were published again under their own keys (in `data`). */
  'reconcile',
  /** A `next` rule's condition decided where the run went (the pointer and the value it read in `data`). */
  'route',
  /** A parallel, map or workflow stage started child work items (their ids and budgets in `data`). */
  'spawn',
  /** A child work item ended and its parent took its outcome (its usage rolls up). */
  'child-settled',
  'item-completed',
  'item-failed',
  'item-canceled',
] as const;
export const AuditKindSchema = z.enum(AUDIT_KINDS);
export type AuditKind = z.infer<typeof AuditKindSchema>;

/** Bytes of one row's canonical `data`: an audit row records decisions and sizes, never payload bodies. */
export const MAX_AUDIT_DATA_BYTES = 64 * 1024;
/** Nesting depth of one row's `data`. */
export const MAX_AUDIT_DATA_DEPTH = 32;

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
function isWellFormed(text: string): boolean {
  return !LONE_SURROGATE.test(text);
}
/** Whether a string has no lone surrogate (RFC 8785 refuses one). */
export const isWellFormedText = isWellFormed;

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

/**
 * Where a value stops being plain JSON that RFC 8785 can canonicalize (a
 * non-finite number, `undefined`, a function, a class instance, a lone
 * surrogate, a cycle or too deep a nesting), or null if it is plain JSON.
 */
export function jsonProblem(
  value: unknown,
  path: (string | number)[] = [],
  depth = 0,
): { path: (string | number)[]; message: string } | null {
  const problem = problemIn(value, depth);
  if (problem === null) return null;
  // The path is gathered innermost first while unwinding (nothing is allocated for plain JSON).
  return { path: [...path, ...problem.path.reverse()], message: problem.message };
}

function problemIn(value: unknown, depth: number): { path: (string | number)[]; message: string } | null {
  if (depth > MAX_AUDIT_DATA_DEPTH) return { path: [], message: `nested deeper than ${MAX_AUDIT_DATA_DEPTH}` };
  if (value === null || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : { path: [], message: `${value} is not JSON` };
  if (typeof value === 'string') {
    return isWellFormed(value) ? null : { path: [], message: 'a lone surrogate is not JSON' };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = problemIn(value[i], depth + 1);
      if (problem) {
        problem.path.push(i);
        return problem;
      }
    }
    return null;
  }
  if (typeof value === 'object') {
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) return { path: [], message: 'not a plain object' };
    for (const key of Object.keys(value)) {
      if (!isWellFormed(key)) return { path: [], message: 'a key with a lone surrogate is not JSON' };
      const problem = problemIn((value as Record<string, unknown>)[key], depth + 1);
      if (problem) {
        problem.path.push(key);
        return problem;
      }
    }
    return null;
  }
  return { path: [], message: `a ${typeof value} is not JSON` };
}

export const AuditDataSchema = z.custom<JsonObject>(
  (value) => value !== null && typeof value === 'object' && !Array.isArray(value) && jsonProblem(value) === null,
  { message: 'data is a plain JSON object' },
);

/** What a caller appends; the audit adds `seq`, `at` (unless given) and the hashes. */
export const AuditEntryInputSchema = z.strictObject({
  kind: AuditKindSchema,
  /** The work item (top-level task id). */
  itemId: IdSchema.refine(isWellFormed, 'a lone surrogate is not JSON'),
  /** The hop number, for hop events. */
  hop: z.number().int().nonnegative().optional(),
  /** Who acted: `coordinator`, a policy, an approver, an agent. */
  actor: z.string().min(1).max(256).refine(isWellFormed, 'a lone surrogate is not JSON'),
  data: AuditDataSchema,
  /** An ISO 8601 time; the audit's clock when left out. */
  at: z.string().min(1).max(64).refine(isWellFormed, 'a lone surrogate is not JSON').optional(),
});
export type AuditEntryInput = z.input<typeof AuditEntryInputSchema>;

/** A stored row. `hash` chains it to the row before (`prevHash`). */
export interface AuditRow {
  seq: number;
  at: string;
  kind: AuditKind;
  itemId: string;
  hop: number | null;
  actor: string;
  data: JsonObject;
  prevHash: string;
  hash: string;
  /**
   * PostgreSQL rows whose hash covers their committing epoch (appended from
   * audit schema version 4 on): the leader lease's epoch, null for a commit
   * with no lease. Absent on SQLite rows and on older rows.
   */
  epoch?: number | null;
}

/** The end of the chain: its last row's `seq` and `hash` (`seq` 0 and the genesis hash when empty). */
export interface AuditHead {
  seq: number;
  hash: string;
}
