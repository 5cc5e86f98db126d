import type { z } from 'zod';
import { checkRetryPolicy, resolveRetryPolicy } from '../protocol/retry-policy.js';
import { WorkflowError } from '../protocol/workflow-error.js';
import type { WorkflowProblem } from './workflow-problems.js';
import type { RetryPolicy } from '../protocol/work-envelope.js';
import { fieldsAt, unknownFieldsMessage } from './schema-hints.js';
import {
  DERIVED_ID_SEPARATOR,
  carveProblems,
  conditionProblems,
  derivedIdProblems,
  stageKindProblems,
  stageRolePaths,
} from './stage-checks.js';
import {
  type NextRule,
  type Stage,
  type WorkflowDefinition,
  WorkflowDefinitionSchema,
  type WorkflowRef,
} from '../protocol/workflow.js';

export {
  WORKFLOW_PROBLEM_CODES,
  type WorkflowProblemCode,
  type WorkflowProblem,
} from './workflow-problems.js';

/**
 * Parsing and checking workflow definitions. Pure: the caller reads the file
 * (see `src/actors/coordinator/workflow-loader.ts`) and passes text or a value.
 */

/**
 * A definition refused at load time: a `WorkflowError` (`WORKFLOW_INVALID`)
 * whose `details.problems` lists every problem found, each with its path.
 */
export function invalidWorkflow(problems: readonly WorkflowProblem[], source?: string): WorkflowError {
  const head = `workflow definition${source ? ` ${source}` : ''} is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'})`;
  return new WorkflowError(
    'WORKFLOW_INVALID',
    [head, ...problems.map((p) => `  - ${formatPath(p.path)}: ${p.message} [${p.code}]`)].join('\n'),
    { details: source === undefined ? { problems } : { problems, source } },
  );
}

/** The problems of a `WORKFLOW_INVALID` error (none for any other error). */
export function workflowProblems(error: unknown): readonly WorkflowProblem[] {
  if (!(error instanceof WorkflowError) || error.code !== 'WORKFLOW_INVALID') return [];
  return (error.details?.problems as readonly WorkflowProblem[] | undefined) ?? [];
}

export function formatPath(path: readonly (string | number)[]): string {
  if (path.length === 0) return '(root)';
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out === '' ? segment : `.${segment}`;
  }
  return out;
}

/** Options of the workflow definition checks: the roles that exist, and the source named in messages. */
export interface WorkflowCheckOptions {
  /** Roles that exist; when given, a stage with any other role is refused. */
  knownRoles?: Iterable<string>;
  /** Named in error messages (a file path, say). */
  source?: string;
}

/** What `checkWorkflowDefinition` answers: the checked definition, or every problem found. */
export type WorkflowCheck = { ok: true; definition: WorkflowDefinition } | { ok: false; problems: WorkflowProblem[] };

/** Checks a value as a workflow definition without throwing. */
export function checkWorkflowDefinition(value: unknown, options: WorkflowCheckOptions = {}): WorkflowCheck {
  const parsed = WorkflowDefinitionSchema.safeParse(value);
  if (!parsed.success) return { ok: false, problems: schemaProblems(parsed.error) };
  const problems = graphProblems(parsed.data, options);
  if (problems.length > 0) return { ok: false, problems };
  const definition = deepFreeze(parsed.data);
  CHECKED.add(definition);
  return { ok: true, definition };
}

/** Parses and checks a definition; throws `WorkflowError` (`WORKFLOW_INVALID`) listing every problem. */
export function parseWorkflowDefinition(value: unknown, options: WorkflowCheckOptions = {}): WorkflowDefinition {
  const check = checkWorkflowDefinition(value, options);
  if (!check.ok) throw invalidWorkflow(check.problems, options.source);
  return check.definition;
}

/** Parses JSON text as a definition; throws `WorkflowError` (`WORKFLOW_INVALID`). */
export function parseWorkflowDefinitionJson(text: string, options: WorkflowCheckOptions = {}): WorkflowDefinition {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidWorkflow(
      [{ code: 'INVALID_JSON', path: [], message: `not JSON: ${(error as Error).message}` }],
      options.source,
    );
  }
  return parseWorkflowDefinition(value, options);
}

function schemaProblems(error: z.ZodError): WorkflowProblem[] {
  return error.issues.map((issue) => ({
    code: 'SCHEMA' as const,
    // A value built in code may have a symbol key (JSON has none): named as text.
    path: issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p)),
    // A field the object does not take: the fields it does, and the one probably meant.
    message:
      issue.code === 'unrecognized_keys'
        ? unknownFieldsMessage(issue.keys, fieldsAt(WorkflowDefinitionSchema, issue.path))
        : issue.message,
  }));
}

/** Every stage a rule of `stage` can go to, with the rule's index. */
function gotoRules(stage: Stage): { index: number; rule: NextRule & { goto: string } }[] {
  const out: { index: number; rule: NextRule & { goto: string } }[] = [];
  stage.next.forEach((rule, index) => {
    if (rule.goto !== undefined) out.push({ index, rule: rule as NextRule & { goto: string } });
  });
  return out;
}

function graphProblems(def: WorkflowDefinition, options: WorkflowCheckOptions): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  const names = Object.keys(def.stages);
  const has = (name: string) => Object.hasOwn(def.stages, name);
  const list = names.join(', ');

  if (!has(def.start)) {
    problems.push({ code: 'MISSING_START', path: ['start'], message: `start "${def.start}" is not a stage (${list})` });
  }

  const known = options.knownRoles === undefined ? undefined : new Set(options.knownRoles);
  for (const name of names) {
    const stage = def.stages[name]!;
    for (const { role, path } of stageRolePaths(name, stage)) {
      if (known && !known.has(role)) {
        problems.push({
          code: 'UNKNOWN_ROLE',
          path,
          message: `unknown role "${role}" (known: ${[...known].sort().join(', ') || 'none'})`,
        });
      }
    }
    problems.push(
      ...stageKindProblems(name, stage),
      ...conditionProblems(name, stage),
      ...carveProblems(def, name, stage),
    );
    for (const { index, rule } of gotoRules(stage)) {
      if (!has(rule.goto)) {
        problems.push({
          code: 'UNKNOWN_TARGET',
          path: ['stages', name, 'next', index, 'goto'],
          message: `goto "${rule.goto}" is not a stage (${list})`,
        });
      }
    }
    problems.push(...shadowedRules(def, name));
    const retry = checkRetryPolicy(def.defaults?.retry, stage.retry);
    if (!retry.ok) {
      problems.push({
        code: 'INVALID_RETRY_POLICY',
        path: ['stages', name, 'retry', ...retry.path],
        message: retry.message,
      });
    }
  }

  if (has(def.start)) {
    const reached = new Set<string>([def.start]);
    const queue = [def.start];
    while (queue.length > 0) {
      const at = queue.shift()!;
      for (const { rule } of gotoRules(def.stages[at]!)) {
        if (has(rule.goto) && !reached.has(rule.goto)) {
          reached.add(rule.goto);
          queue.push(rule.goto);
        }
      }
    }
    for (const name of names) {
      if (!reached.has(name)) {
        problems.push({
          code: 'UNREACHABLE_STAGE',
          path: ['stages', name],
          message: `stage "${name}" cannot be reached from start "${def.start}"`,
        });
      }
    }
  }

  problems.push(...derivedIdProblems(def));
  for (const cycle of unboundedCycles(def)) {
    problems.push({
      code: 'UNBOUNDED_CYCLE',
      path: ['stages', cycle[0]!],
      message: `stages ${[...cycle, cycle[0]].join(' -> ')} form a loop with no bound: set maxVisits on one of these stages or maxTraversals on one of the rules between them`,
    });
  }
  return problems;
}

/** A rule that always matches first and can never be used up hides every later rule it covers. */
function shadowedRules(def: WorkflowDefinition, name: string): WorkflowProblem[] {
  const stage = def.stages[name]!;
  const problems: WorkflowProblem[] = [];
  stage.next.forEach((rule, index) => {
    for (let earlier = 0; earlier < index; earlier++) {
      const first = stage.next[earlier]!;
      const covers =
        first.on === rule.on &&
        first.when === undefined &&
        (first.errorType === undefined || first.errorType === rule.errorType);
      if (covers && !canBeExhausted(def, first)) {
        problems.push({
          code: 'UNREACHABLE_RULE',
          path: ['stages', name, 'next', index],
          message: `rule ${index} is never used: rule ${earlier} always matches "${rule.on}${rule.errorType ? `/${rule.errorType}` : ''}" first`,
        });
        return;
      }
    }
  });
  return problems;
}

function canBeExhausted(def: WorkflowDefinition, rule: NextRule): boolean {
  if (rule.goto === undefined) return false;
  if (rule.maxTraversals !== undefined) return true;
  return def.stages[rule.goto]?.maxVisits !== undefined;
}

/**
 * The strongly connected groups of stages joined by unbounded rules among
 * unbounded stages (Tarjan). Each group with a loop is an unbounded cycle,
 * returned as a cycle through it in definition order.
 */
function unboundedCycles(def: WorkflowDefinition): string[][] {
  const free = Object.keys(def.stages).filter((n) => def.stages[n]!.maxVisits === undefined);
  const isFree = new Set(free);
  const edges = new Map<string, string[]>();
  for (const name of free) {
    edges.set(
      name,
      gotoRules(def.stages[name]!)
        .filter(({ rule }) => rule.maxTraversals === undefined && isFree.has(rule.goto))
        .map(({ rule }) => rule.goto),
    );
  }
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v)!, index.get(w)!));
      }
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      // A group of one is a loop only through a rule back to itself.
      if (group.length > 1 || edges.get(v)!.includes(v)) groups.push(group);
    }
  };
  for (const v of free) if (!index.has(v)) visit(v);
  return groups.map((group) => cycleThrough(group, edges, free));
}

/** One simple cycle inside a strongly connected group, starting at its first stage in definition order. */
function cycleThrough(group: string[], edges: Map<string, string[]>, order: string[]): string[] {
  const members = new Set(group);
  const startAt = order.find((n) => members.has(n))!;
  // Breadth-first search for the shortest way back to the start inside the group.
  const parent = new Map<string, string>();
  const queue = [startAt];
  const seen = new Set([startAt]);
  while (queue.length > 0) {
    const at = queue.shift()!;
    for (const next of edges.get(at)!) {
      if (!members.has(next)) continue;
      if (next === startAt) {
        const path = [at];
        let p = at;
        while (p !== startAt) {
          p = parent.get(p)!;
          path.push(p);
        }
        return path.reverse();
      }
      if (!seen.has(next)) {
        seen.add(next);
        parent.set(next, at);
        queue.push(next);
      }
    }
  }
  return [startAt];
}

/** The retry policy a stage's hops run under: the stage's fields over the definition's defaults over the built-in defaults. */
export function stageRetryPolicy(def: WorkflowDefinition, stageName: string): RetryPolicy {
  return resolveRetryPolicy(def.defaults?.retry, def.stages[stageName]?.retry);
}

export function workflowRef(def: WorkflowDefinition): WorkflowRef {
  return { id: def.id, version: def.version };
}

export function workflowKey(ref: WorkflowRef): string {
  return `${ref.id}@${ref.version}`;
}

/** Structural equality of two JSON values (key order ignored). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object).filter((k) => (a as Record<string, unknown>)[k] !== undefined);
  const kb = Object.keys(b as object).filter((k) => (b as Record<string, unknown>)[k] !== undefined);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

/** Definitions that `checkWorkflowDefinition` returned (frozen): not checked again. */
const CHECKED = new WeakSet<object>();

function isChecked(value: WorkflowDefinition): boolean {
  return CHECKED.has(value);
}

function deepFreeze<T>(value: T): T {
  // Primitives (and null) count as frozen.
  if (!Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value as Record<string, unknown>)) deepFreeze(child);
  }
  return value;
}

/**
 * The definitions a Coordinator knows, by id and version. Runs keep the
 * version they started on; `latest(id)` is what new work items use.
 */
export class WorkflowRegistry {
  readonly #byKey = new Map<string, WorkflowDefinition>();

  /**
   * Adds a definition, checked here whatever its origin (one built in code,
   * or parsed JSON that was never checked, is refused as a file would be:
   * `WorkflowError`, `WORKFLOW_INVALID`, listing every problem). The same id
   * and version twice must be the same definition.
   */
  add(def: WorkflowDefinition): void {
    const checked = isChecked(def) ? def : parseWorkflowDefinition(def);
    if (checked.id.includes(DERIVED_ID_SEPARATOR)) {
      throw invalidWorkflow(
        [
          {
            code: 'RESERVED_ID',
            path: ['id'],
            message: `"${DERIVED_ID_SEPARATOR}" in an id is kept for the child workflows of a stage's branches: use "-" or "." instead`,
          },
        ],
        checked.id,
      );
    }
    const key = workflowKey(checked);
    const existing = this.#byKey.get(key);
    if (existing !== undefined) {
      if (sameJson(existing, checked)) return;
      throw invalidWorkflow(
        [
          {
            code: 'DUPLICATE_VERSION',
            path: ['version'],
            message: `${key} is already registered with different content; bump "version"`,
          },
        ],
        key,
      );
    }
    this.#byKey.set(key, checked);
  }

  /** A definition by exact reference (id and version). */
  get(ref: WorkflowRef): WorkflowDefinition | undefined {
    return this.#byKey.get(workflowKey(ref));
  }

  /** The latest version of a workflow. */
  latest(id: string): WorkflowDefinition | undefined {
    let best: WorkflowDefinition | undefined;
    for (const def of this.#byKey.values()) {
      if (def.id === id && (best === undefined || def.version > best.version)) best = def;
    }
    return best;
  }

  /** Every definition held. */
  list(): WorkflowDefinition[] {
    return [...this.#byKey.values()].sort((a, b) => a.id.localeCompare(b.id) || a.version - b.version);
  }
}
