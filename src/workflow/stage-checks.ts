import type { Stage, WorkflowDefinition } from '../protocol/workflow.js';
import type { WorkflowProblem } from './workflow-problems.js';

/**
 * The checks of a definition's stage kinds (a role's hop, parallel branches,
 * a map, another workflow) and of its `next` conditions, each problem with
 * its path and what to write instead. Pure; `checkWorkflowDefinition` runs
 * them after the schema.
 */

/** Every role a stage names: its own, and its parallel branches' (roles and sequences). */
export function stageRoles(stage: Stage): string[] {
  const roles: string[] = [];
  if (stage.role !== undefined) roles.push(stage.role);
  for (const branch of Object.values(stage.parallel?.branches ?? {})) {
    if (branch.role !== undefined) roles.push(branch.role);
    if (branch.sequence !== undefined) roles.push(...branch.sequence);
  }
  return roles;
}

/** Every role a stage names, with its path in the definition. */
export function stageRolePaths(name: string, stage: Stage): { role: string; path: (string | number)[] }[] {
  const out: { role: string; path: (string | number)[] }[] = [];
  if (stage.role !== undefined) out.push({ role: stage.role, path: ['stages', name, 'role'] });
  for (const [branchName, branch] of Object.entries(stage.parallel?.branches ?? {})) {
    const at = ['stages', name, 'parallel', 'branches', branchName];
    if (branch.role !== undefined) out.push({ role: branch.role, path: [...at, 'role'] });
    for (const [i, role] of (branch.sequence ?? []).entries()) out.push({ role, path: [...at, 'sequence', i] });
  }
  return out;
}

/** The workflows (`id@version`) a definition's stages run as children. */
export function childWorkflows(def: WorkflowDefinition): { ref: string; path: (string | number)[] }[] {
  const out: { ref: string; path: (string | number)[] }[] = [];
  for (const [name, stage] of Object.entries(def.stages)) {
    if (stage.workflow !== undefined) out.push({ ref: stage.workflow, path: ['stages', name, 'workflow'] });
    for (const [branchName, branch] of Object.entries(stage.parallel?.branches ?? {})) {
      if (branch.workflow !== undefined) {
        out.push({ ref: branch.workflow, path: ['stages', name, 'parallel', 'branches', branchName, 'workflow'] });
      }
    }
  }
  return out;
}

/** The problems of one stage's kind: exactly one of `role`, `parallel` or `workflow`, and the fields each allows. */
export function stageKindProblems(name: string, stage: Stage): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  const at = ['stages', name];
  const kinds = (['role', 'parallel', 'workflow'] as const).filter((k) => stage[k] !== undefined);
  if (kinds.length !== 1) {
    problems.push({
      code: 'STAGE_KIND',
      path: at,
      message:
        kinds.length === 0
          ? 'a stage runs something: give it "role" (one hop), "parallel" (branches at once) or "workflow" ("id@version", a child work item)'
          : `a stage has exactly one of "role", "parallel" or "workflow" (found ${kinds.join(' and ')}): split it into stages joined by a next rule`,
    });
  }
  if (stage.forEach !== undefined && stage.parallel !== undefined) {
    problems.push({
      code: 'STAGE_KIND',
      path: [...at, 'forEach'],
      message: '"forEach" maps a "role" or a "workflow" over a list, not "parallel": make each branch its own stage',
    });
  }
  for (const field of ['maxConcurrency', 'maxItems'] as const) {
    if (stage[field] !== undefined && stage.forEach === undefined) {
      problems.push({
        code: 'STAGE_KIND',
        path: [...at, field],
        message: `"${field}" applies only to a map: add "forEach" (a JSON pointer to a list) or remove "${field}"`,
      });
    }
  }
  const fanOut = stage.parallel !== undefined || stage.forEach !== undefined || stage.workflow !== undefined;
  for (const field of ['retry', 'timeout'] as const) {
    if (stage[field] !== undefined && fanOut && !(stage.forEach !== undefined && stage.role !== undefined)) {
      problems.push({
        code: 'STAGE_KIND',
        path: [...at, field],
        message: `"${field}" applies to a role's hop: a stage of children retries and times out in its children's own workflows (set it there, or on the branch's role stage)`,
      });
    }
  }
  if (stage.budget !== undefined && !fanOut) {
    problems.push({
      code: 'STAGE_KIND',
      path: [...at, 'budget'],
      message:
        '"budget" carves what a child work item may spend: it applies to a "parallel", "forEach" or "workflow" stage',
    });
  }
  const parallel = stage.parallel;
  if (parallel !== undefined && typeof parallel.join === 'object') {
    const n = Object.keys(parallel.branches).length;
    if (parallel.join.atLeast > n) {
      problems.push({
        code: 'STAGE_KIND',
        path: [...at, 'parallel', 'join', 'atLeast'],
        message: `atLeast ${parallel.join.atLeast} can never be met by ${n} branch${n === 1 ? '' : 'es'}: lower it or add branches`,
      });
    }
  }
  return problems;
}

/**
 * The problems of one stage's carves (its `budget`, its branches'): a carve's
 * `deadline` is never later than the definition's own `deadline`.
 */
export function carveProblems(def: WorkflowDefinition, name: string, stage: Stage): WorkflowProblem[] {
  const carves: { path: (string | number)[]; deadline: number | undefined }[] = [
    { path: ['stages', name, 'budget'], deadline: stage.budget?.deadline },
    ...Object.entries(stage.parallel?.branches ?? {}).map(([branch, b]) => ({
      path: ['stages', name, 'parallel', 'branches', branch, 'budget'],
      deadline: b.budget?.deadline,
    })),
  ];
  const problems: WorkflowProblem[] = [];
  for (const c of carves) {
    if (c.deadline === undefined || def.deadline === undefined || c.deadline <= def.deadline) continue;
    problems.push({
      code: 'STAGE_KIND',
      path: [...c.path, 'deadline'],
      message: `a child's deadline of ${c.deadline} ms is later than its parent's of ${def.deadline} ms: write a deadline of at most ${def.deadline} ms, or leave it out to inherit the parent's`,
    });
  }
  return problems;
}

/**
 * The problems of one stage's conditions: a stage whose conditional success
 * rules may all miss needs a fallback (a success rule without `when`) after
 * them.
 */
export function conditionProblems(name: string, stage: Stage): WorkflowProblem[] {
  const rules = stage.next;
  const conditional = rules.findIndex((r) => r.on === 'succeeded' && r.when !== undefined);
  if (conditional < 0) return [];
  const fallback = rules.findIndex((r, i) => i > conditional && r.on === 'succeeded' && r.when === undefined);
  if (fallback >= 0) return [];
  return [
    {
      code: 'NO_FALLBACK_RULE',
      path: ['stages', name, 'next'],
      message: `every success rule after rule ${conditional} has a "when" condition and all may miss: add a rule without "when" after them, say { "on": "succeeded", "end": "completed" } or a "goto"`,
    },
  ];
}

/** Definition ids with `--` are kept for the child workflows a stage's branches run as. */
export const DERIVED_ID_SEPARATOR = '--';

/**
 * The definition a role branch, a sequence branch or a map over a role runs
 * as, derived from its parent's definition: id `<parent>--<stage>[--<branch>]`,
 * the parent's version, one stage per role (a sequence's in order).
 */
export function branchDefinition(
  def: WorkflowDefinition,
  stageName: string,
  branch: string | null,
): WorkflowDefinition | null {
  let byStage = derivedDefinitions.get(def);
  if (byStage === undefined) {
    byStage = new Map();
    derivedDefinitions.set(def, byStage);
  }
  let byBranch = byStage.get(stageName);
  if (byBranch === undefined) {
    byBranch = new Map();
    byStage.set(stageName, byBranch);
  }
  // A map's elements all run the stage's role: one definition for the stage, whichever element asks.
  const key = def.stages[stageName]?.forEach === undefined ? branch : null;
  let derived = byBranch.get(key);
  if (derived === undefined) {
    derived = deriveBranchDefinition(def, stageName, key);
    byBranch.set(key, derived);
  }
  return derived;
}

/**
 * The definitions derived from a parent definition, by stage and branch: made
 * once, so that a map's children carry one object (checked once by the
 * Coordinator, by identity). Callers never change what they are given.
 */
const derivedDefinitions = new WeakMap<
  WorkflowDefinition,
  Map<string, Map<string | null, WorkflowDefinition | null>>
>();

function deriveBranchDefinition(
  def: WorkflowDefinition,
  stageName: string,
  branch: string | null,
): WorkflowDefinition | null {
  const stage = def.stages[stageName];
  if (stage === undefined) return null;
  let roles: string[];
  // `branch` is null for a map (its elements share the stage's definition).
  if (branch === null) {
    if (stage.role === undefined) return null;
    roles = [stage.role];
  } else {
    const b = stage.parallel?.branches[branch];
    if (b === undefined) return null;
    if (b.role !== undefined) roles = [b.role];
    else if (b.sequence !== undefined) roles = b.sequence;
    else return null;
  }
  const id = [def.id, stageName, ...(branch === null ? [] : [branch])].join(DERIVED_ID_SEPARATOR);
  // A map over a role runs each element's hop under the stage's own retry and timeout.
  const own =
    stage.forEach === undefined
      ? {}
      : {
          ...(stage.retry === undefined ? {} : { retry: stage.retry }),
          ...(stage.timeout === undefined ? {} : { timeout: stage.timeout }),
        };
  const stages: WorkflowDefinition['stages'] = {};
  roles.forEach((role, i) => {
    const next = i + 1 < roles.length ? [{ on: 'succeeded' as const, goto: `step-${i + 2}` }] : [];
    stages[`step-${i + 1}`] = { role, ...own, next };
  });
  // Frozen, as the definitions it is derived from are: one object serves every child that asks for it.
  for (const stage of Object.values(stages)) {
    for (const rule of stage.next) Object.freeze(rule);
    Object.freeze(stage.next);
    Object.freeze(stage);
  }
  Object.freeze(stages);
  return Object.freeze({
    id,
    version: def.version,
    start: 'step-1',
    ...(def.defaults === undefined ? {} : { defaults: def.defaults }),
    stages,
  });
}

/** The problems of a definition's derived child ids: too long for an id. */
export function derivedIdProblems(def: WorkflowDefinition): WorkflowProblem[] {
  const problems: WorkflowProblem[] = [];
  for (const [name, stage] of Object.entries(def.stages)) {
    const branches = stage.parallel === undefined ? [null] : Object.keys(stage.parallel.branches);
    for (const branch of branches) {
      const derived = branchDefinition(def, name, branch);
      if (derived !== null && derived.id.length > 128) {
        problems.push({
          code: 'STAGE_KIND',
          path: ['stages', name],
          message: `the child workflow id "${derived.id.slice(0, 60)}..." is over 128 characters: shorten the workflow id, stage or branch names`,
        });
      }
    }
  }
  return problems;
}
