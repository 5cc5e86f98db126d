import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkflowError } from '../../src/protocol/workflow-error.js';
import {
  DEV_SDLC_WORKFLOW_PATH,
  SHIPPED_WORKFLOWS_DIR,
  loadWorkflowDirectory,
  loadWorkflowFile,
} from '../../src/actors/coordinator/workflow-loader.js';
import {
  workflowProblems,
  type WorkflowProblem,
  WorkflowRegistry,
  checkWorkflowDefinition,
  parseWorkflowDefinition,
  parseWorkflowDefinitionJson,
  stageRetryPolicy,
} from '../../src/workflow/definition.js';
import type { WorkflowDefinitionInput } from '../../src/protocol/workflow.js';
import { DEV_ROLES, DEV_SDLC, devSdlcJson } from './fixtures.js';

function problemsOf(value: unknown, knownRoles?: readonly string[]): WorkflowProblem[] {
  const check = checkWorkflowDefinition(value, knownRoles ? { knownRoles } : {});
  if (check.ok) throw new Error('expected the definition to be refused');
  return check.problems;
}

function base(stages: WorkflowDefinitionInput['stages'], start = 'a'): WorkflowDefinitionInput {
  return { id: 'wf', version: 1, start, stages };
}

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'sb-workflow-'));
  dirs.push(d);
  return d;
}

describe('the shipped dev SDLC definition', () => {
  it('is architect -> coding -> testing -> devops with a gate before devops and a bounded way back', () => {
    const def = loadWorkflowFile(DEV_SDLC_WORKFLOW_PATH, { knownRoles: DEV_ROLES });
    expect(def).toEqual(DEV_SDLC);
    expect({ id: def.id, version: def.version, start: def.start }).toEqual({
      id: 'dev-sdlc',
      version: 1,
      start: 'architect',
    });
    expect(Object.keys(def.stages)).toEqual(['architect', 'coding', 'testing', 'devops']);
    expect(Object.values(def.stages).map((s) => s.role)).toEqual(['architect', 'coding', 'testing', 'devops']);
    expect(def.stages.devops?.approval?.approvers).toEqual(['release-manager']);
    expect(def.stages.testing?.next).toContainEqual({
      on: 'failed',
      errorType: 'TestsFailed',
      goto: 'coding',
      maxTraversals: 3,
    });
    expect(def.stages.coding?.maxVisits).toBe(4);
    expect(stageRetryPolicy(def, 'testing')).toEqual({
      initialInterval: 1_000,
      backoffCoefficient: 2,
      maximumInterval: 30_000,
      maximumAttempts: 3,
      nonRetryableErrorTypes: ['TestsFailed'],
    });
    expect(Object.isFrozen(def.stages.testing?.next)).toBe(true);
  });

  it('loads from the shipped folder into a registry', () => {
    // The shipped folder holds review-fanout too: its security and QA reviewers are roles of their own.
    const registry = loadWorkflowDirectory(SHIPPED_WORKFLOWS_DIR, { knownRoles: [...DEV_ROLES, 'security', 'qa'] });
    expect(registry.get({ id: 'review-fanout', version: 1 })?.start).toBe('plan');
    expect(registry.get({ id: 'dev-sdlc', version: 1 })).toEqual(DEV_SDLC);
    expect(registry.latest('dev-sdlc')?.version).toBe(1);
  });

  it('is refused when its roles are not known', () => {
    const problems = problemsOf(devSdlcJson(), ['architect', 'coding', 'testing']);
    expect(problems).toEqual([
      {
        code: 'UNKNOWN_ROLE',
        path: ['stages', 'devops', 'role'],
        message: 'unknown role "devops" (known: architect, coding, testing)',
      },
    ]);
  });
});

describe('validation errors', () => {
  it('lists every problem, each with its code and path, in one typed error', () => {
    const input = {
      id: 'broken',
      version: 1,
      start: 'plan',
      stages: {
        a: { role: 'r', next: [{ on: 'succeeded', goto: 'nowhere' }] },
        b: { role: 'ghost' },
      },
    };
    let caught: unknown;
    try {
      parseWorkflowDefinition(input, { knownRoles: ['r'], source: 'broken.json' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(WorkflowError);
    const error = caught as WorkflowError;
    expect(error.code).toBe('WORKFLOW_INVALID');
    expect(error.details?.source).toBe('broken.json');
    expect(workflowProblems(error).map((p) => [p.code, p.path])).toEqual([
      ['MISSING_START', ['start']],
      ['UNKNOWN_TARGET', ['stages', 'a', 'next', 0, 'goto']],
      ['UNKNOWN_ROLE', ['stages', 'b', 'role']],
    ]);
    expect(error.message).toContain('workflow definition broken.json is invalid (3 problems)');
    expect(error.message).toContain('stages.a.next[0].goto: goto "nowhere" is not a stage (a, b) [UNKNOWN_TARGET]');
  });

  it('reports schema problems with their paths', () => {
    const problems = problemsOf({
      id: 'Bad Id',
      version: 0,
      start: 'a',
      stages: {
        a: {
          role: 'r',
          approval: { approvers: [] },
          retry: { initialInterval: 'soon' },
          next: [
            { on: 'succeeded', goto: 'a', end: 'completed' },
            { on: 'succeeded', errorType: 'X', end: 'completed' },
            { on: 'maybe', goto: 'a' },
          ],
          colour: 'red',
        },
        'Bad Name': { role: 'r' },
      },
    });
    expect(problems.every((p) => p.code === 'SCHEMA')).toBe(true);
    const paths = problems.map((p) => p.path.join('.'));
    expect(paths).toEqual(
      expect.arrayContaining([
        'id',
        'version',
        'stages.a.approval.approvers',
        'stages.a.retry.initialInterval',
        'stages.a.next.0',
        'stages.a.next.1.errorType',
        'stages.a.next.2.on',
        'stages.a',
        'stages.Bad Name',
      ]),
    );
  });

  it('refuses a bad carve naming its path and what to write; takes hops and a deadline', () => {
    const fanDef = (budget: unknown, deadline?: number | string) => ({
      id: 'fan',
      version: 1,
      start: 'f',
      ...(deadline === undefined ? {} : { deadline }),
      stages: { f: { parallel: { branches: { a: { role: 'r', budget }, b: { role: 'r' } } } } },
    });
    const fan = (budget: unknown, deadline?: number | string) => problemsOf(fanDef(budget, deadline));
    const at = 'stages.f.parallel.branches.a.budget';
    const empty = fan({});
    expect(empty.map((p) => [p.code, p.path.join('.')])).toEqual([['SCHEMA', at]]);
    expect(empty[0]!.message).toContain('say { "maxTokens": 2000 }');
    expect(fan({ maxHops: 0 }).map((p) => p.path.join('.'))).toEqual([`${at}.maxHops`]);
    expect(fan({ deadline: 'soon' }).map((p) => p.path.join('.'))).toEqual([`${at}.deadline`]);
    expect(fan({ maxTokens: 10, colour: 'red' }).map((p) => p.code)).toEqual(['SCHEMA']);
    const late = fan({ deadline: '2m' }, '1m');
    expect(late.map((p) => [p.code, p.path.join('.')])).toEqual([['STAGE_KIND', `${at}.deadline`]]);
    expect(late[0]!.message).toContain('write a deadline of at most 60000 ms');
    expect(checkWorkflowDefinition(fanDef({ maxHops: 3, deadline: '30s' }, '1m')).ok).toBe(true);
    expect(checkWorkflowDefinition(fanDef({ deadline: '30s' })).ok).toBe(true);
    const def = parseWorkflowDefinition({
      id: 'fan',
      version: 1,
      start: 'f',
      stages: { f: { parallel: { branches: { a: { role: 'r', budget: { maxHops: 3, deadline: '30s' } } } } } },
    });
    expect(def.stages.f!.parallel!.branches.a!.budget).toEqual({ maxHops: 3, deadline: 30_000 });
  });

  it('refuses a definition without stages and bad JSON text', () => {
    expect(problemsOf({ id: 'x', version: 1, start: 'a', stages: {} })).toEqual([
      { code: 'SCHEMA', path: ['stages'], message: 'a workflow has at least one stage' },
    ]);
    expect(() => parseWorkflowDefinitionJson('{ "id": ', { source: 'x.json' })).toThrow(
      expect.objectContaining({
        code: 'WORKFLOW_INVALID',
        details: expect.objectContaining({ problems: [expect.objectContaining({ code: 'INVALID_JSON' })] }),
      }),
    );
    expect(problemsOf(null)[0]?.code).toBe('SCHEMA');
  });

  it('finds unreachable stages', () => {
    const problems = problemsOf(
      base({
        a: { role: 'r', next: [{ on: 'succeeded', goto: 'b' }] },
        b: { role: 'r' },
        c: { role: 'r', next: [{ on: 'succeeded', goto: 'b' }] },
      }),
    );
    expect(problems).toEqual([
      { code: 'UNREACHABLE_STAGE', path: ['stages', 'c'], message: 'stage "c" cannot be reached from start "a"' },
    ]);
  });

  it('finds cycles without a bound, and accepts each way of bounding them', () => {
    const loop = (bound: 'none' | 'stage' | 'edge' | 'other-stage') =>
      base({
        a: { role: 'r', next: [{ on: 'succeeded', goto: 'b' }] },
        b: {
          role: 'r',
          ...(bound === 'stage' ? { maxVisits: 3 } : {}),
          next: [{ on: 'succeeded', goto: 'c' }],
        },
        c: {
          role: 'r',
          ...(bound === 'other-stage' ? { maxVisits: 2 } : {}),
          next: [
            { on: 'failed', goto: 'b', ...(bound === 'edge' ? { maxTraversals: 2 } : {}) },
            { on: 'succeeded', end: 'completed' },
          ],
        },
      });
    const problems = problemsOf(loop('none'));
    expect(problems).toEqual([
      {
        code: 'UNBOUNDED_CYCLE',
        path: ['stages', 'b'],
        message:
          'stages b -> c -> b form a loop with no bound: set maxVisits on one of these stages or maxTraversals on one of the rules between them',
      },
    ]);
    for (const bound of ['stage', 'edge', 'other-stage'] as const) {
      expect(checkWorkflowDefinition(loop(bound)).ok).toBe(true);
    }
  });

  it('finds a self-loop without a bound, and a loop bounded only on one of its two paths', () => {
    expect(problemsOf(base({ a: { role: 'r', next: [{ on: 'failed', goto: 'a' }] } }))[0]).toMatchObject({
      code: 'UNBOUNDED_CYCLE',
      message: expect.stringContaining('stages a -> a form a loop'),
    });
    // b -> a is bounded, but a -> c -> a is not.
    const problems = problemsOf(
      base({
        a: {
          role: 'r',
          next: [
            { on: 'succeeded', goto: 'b' },
            { on: 'failed', goto: 'c' },
          ],
        },
        b: { role: 'r', next: [{ on: 'failed', goto: 'a', maxTraversals: 1 }] },
        c: { role: 'r', next: [{ on: 'succeeded', goto: 'a' }] },
      }),
    );
    expect(problems.map((p) => p.message)).toEqual([expect.stringContaining('stages a -> c -> a form a loop')]);
  });

  it('finds rules hidden behind a rule that always matches first', () => {
    const problems = problemsOf(
      base({
        a: {
          role: 'r',
          next: [
            { on: 'failed', end: 'failed' },
            { on: 'failed', errorType: 'Timeout', goto: 'b' },
            { on: 'succeeded', goto: 'b', maxTraversals: 1 },
            { on: 'succeeded', end: 'completed' },
          ],
        },
        b: { role: 'r' },
      }),
    );
    expect(problems).toEqual([
      {
        code: 'UNREACHABLE_RULE',
        path: ['stages', 'a', 'next', 1],
        message: 'rule 1 is never used: rule 0 always matches "failed/Timeout" first',
      },
    ]);
  });

  it('checks the merged retry policy of each stage', () => {
    const problems = problemsOf({
      ...base({ a: { role: 'r', retry: { maximumInterval: 5 } } }),
      defaults: { retry: { initialInterval: '1s' } },
    });
    expect(problems).toEqual([
      {
        code: 'INVALID_RETRY_POLICY',
        path: ['stages', 'a', 'retry', 'maximumInterval'],
        message: 'maximumInterval (5 ms) is below initialInterval (1000 ms)',
      },
    ]);
  });
});

describe('loading files', () => {
  it('names the file in its errors and refuses other formats', () => {
    const dir = tempDir();
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify(base({ a: { role: 'r', next: [{ on: 'succeeded', goto: 'z' }] } })));
    expect(() => loadWorkflowFile(bad)).toThrow(`workflow definition ${bad} is invalid (1 problem)`);
    const yaml = join(dir, 'flow.yaml');
    writeFileSync(yaml, 'id: x\n');
    expect(() => loadWorkflowFile(yaml)).toThrow(
      expect.objectContaining({
        details: expect.objectContaining({ problems: [expect.objectContaining({ code: 'UNREADABLE' })] }),
      }),
    );
    expect(() => loadWorkflowFile(join(dir, 'missing.json'))).toThrow(/cannot read/);
    expect(() => loadWorkflowDirectory(join(dir, 'no-such-dir'))).toThrow(/cannot list/);
  });

  it('keeps versions apart and refuses two different definitions under one version', () => {
    const dir = tempDir();
    const v1 = base({ a: { role: 'r' } });
    writeFileSync(join(dir, 'v1.json'), JSON.stringify(v1));
    writeFileSync(join(dir, 'v2.json'), JSON.stringify({ ...v1, version: 2 }));
    const registry = loadWorkflowDirectory(dir);
    expect(registry.list().map((d) => d.version)).toEqual([1, 2]);
    expect(registry.latest('wf')?.version).toBe(2);
    expect(registry.latest('other')).toBeUndefined();
    // The same content again (keys in another order) is accepted.
    registry.add(parseWorkflowDefinition({ stages: { a: { role: 'r' } }, start: 'a', version: 1, id: 'wf' }));
    expect(() => registry.add(parseWorkflowDefinition(base({ a: { role: 'other' } })))).toThrow(
      expect.objectContaining({
        details: expect.objectContaining({ problems: [expect.objectContaining({ code: 'DUPLICATE_VERSION' })] }),
      }),
    );
    expect(new WorkflowRegistry().get({ id: 'wf', version: 1 })).toBeUndefined();
  });

  it('checks what it is given: a definition never parsed is refused with every problem, or kept checked', () => {
    const registry = new WorkflowRegistry();
    const unchecked = base({ a: { role: 'r', next: [{ on: 'succeeded', goto: 'nowhere' }] } });
    let refusal: unknown;
    try {
      registry.add(unchecked as never);
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(WorkflowError);
    expect(refusal).toMatchObject({ code: 'WORKFLOW_INVALID' });
    expect((refusal as WorkflowError).message).toContain('nowhere');
    expect(() => registry.add({ id: 'x' } as never)).toThrow(expect.objectContaining({ code: 'WORKFLOW_INVALID' }));
    expect(registry.list()).toEqual([]);
    // A valid one built in code is kept as checked: frozen, defaults filled.
    registry.add(base({ a: { role: 'r' } }) as never);
    const kept = registry.get({ id: 'wf', version: 1 });
    expect(Object.isFrozen(kept)).toBe(true);
    expect(kept).toEqual(parseWorkflowDefinition(base({ a: { role: 'r' } })));
  });
});
