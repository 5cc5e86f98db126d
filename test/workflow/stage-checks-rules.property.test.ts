import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { Stage, WorkflowDefinition } from '../../src/protocol/workflow.js';
import {
  DERIVED_ID_SEPARATOR,
  branchDefinition,
  carveProblems,
  childWorkflows,
  conditionProblems,
  derivedIdProblems,
  stageKindProblems,
  stageRolePaths,
  stageRoles,
} from '../../src/workflow/stage-checks.js';

/**
 * The rules of a definition's stage checks, each function over any stage
 * (not only the ones the schema lets through), every problem stated whole:
 * its code, its path and what to write instead.
 *
 * - A stage runs exactly one of a role, parallel branches or a workflow; a
 *   map (`forEach`) is not of parallel branches; `maxConcurrency` and
 *   `maxItems` need a map; `retry` and `timeout` belong to a role's hop (a
 *   map over a role included), `budget` to a stage of children; `atLeast`
 *   must be reachable by the branches.
 * - A carve's deadline is never later than the definition's.
 * - Conditional success rules need a fallback after the first of them.
 * - A role, sequence or map-over-a-role branch runs as a derived definition
 *   (`<id>--<stage>[--<branch>]`, one stage per role, a map's own retry and
 *   timeout); a derived id longer than 128 characters is a problem.
 */

const ROLES = ['coder', 'qa', 'sec'];

const branchArb = fc.oneof(
  fc.record({ role: fc.constantFrom(...ROLES) }),
  fc.record({ sequence: fc.array(fc.constantFrom(...ROLES), { minLength: 1, maxLength: 3 }) }),
  fc.record({ workflow: fc.constantFrom('sub@1', 'other@2') }),
  // Not a branch the schema allows: nothing to run.
  fc.constant({}),
);

const budgetArb = fc.record({ deadline: fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined }) });

const parallelArb = fc.record({
  branches: fc
    .uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), branchArb, fc.option(budgetArb, { nil: undefined })), {
      minLength: 1,
      maxLength: 4,
      selector: ([k]) => k,
    })
    .map((entries) =>
      Object.fromEntries(
        entries.map(([k, b, budget]) => [k, budget === undefined ? b : { ...b, budget: strip(budget) }]),
      ),
    ),
  join: fc.oneof(
    fc.constantFrom('all' as const, 'any' as const),
    fc.record({ atLeast: fc.integer({ min: 1, max: 6 }) }),
  ),
  onBranchFailure: fc.constantFrom('fail' as const, 'collect' as const),
});

/** A budget without its undefined fields. */
function strip<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

const stageArb: fc.Arbitrary<Stage> = fc
  .record(
    {
      role: fc.constantFrom(...ROLES),
      parallel: parallelArb,
      workflow: fc.constantFrom('sub@1', 'other@2'),
      forEach: fc.constantFrom('/list', '/tasks'),
      maxConcurrency: fc.integer({ min: 1, max: 9 }),
      maxItems: fc.integer({ min: 1, max: 99 }),
      retry: fc.constant({ maximumAttempts: 2 }),
      timeout: fc.integer({ min: 1, max: 9_000 }),
      budget: budgetArb.map(strip),
    },
    { requiredKeys: [] },
  )
  .map((s) => ({ ...s, next: [] }) as unknown as Stage);

/** The problems a stage's kind has, by the rules above. */
function kindProblems(name: string, s: Stage) {
  const at = ['stages', name];
  const out: { code: string; path: (string | number)[]; message: string }[] = [];
  const kinds = (['role', 'parallel', 'workflow'] as const).filter((k) => s[k] !== undefined);
  if (kinds.length === 0) {
    out.push({
      code: 'STAGE_KIND',
      path: at,
      message:
        'a stage runs something: give it "role" (one hop), "parallel" (branches at once) or "workflow" ("id@version", a child work item)',
    });
  } else if (kinds.length > 1) {
    out.push({
      code: 'STAGE_KIND',
      path: at,
      message: `a stage has exactly one of "role", "parallel" or "workflow" (found ${kinds.join(' and ')}): split it into stages joined by a next rule`,
    });
  }
  if (s.forEach !== undefined && s.parallel !== undefined) {
    out.push({
      code: 'STAGE_KIND',
      path: [...at, 'forEach'],
      message: '"forEach" maps a "role" or a "workflow" over a list, not "parallel": make each branch its own stage',
    });
  }
  for (const f of ['maxConcurrency', 'maxItems'] as const) {
    if (s[f] !== undefined && s.forEach === undefined) {
      out.push({
        code: 'STAGE_KIND',
        path: [...at, f],
        message: `"${f}" applies only to a map: add "forEach" (a JSON pointer to a list) or remove "${f}"`,
      });
    }
  }
  const ofChildren = s.parallel !== undefined || s.forEach !== undefined || s.workflow !== undefined;
  const mapOfRole = s.forEach !== undefined && s.role !== undefined;
  for (const f of ['retry', 'timeout'] as const) {
    if (s[f] !== undefined && ofChildren && !mapOfRole) {
      out.push({
        code: 'STAGE_KIND',
        path: [...at, f],
        message: `"${f}" applies to a role's hop: a stage of children retries and times out in its children's own workflows (set it there, or on the branch's role stage)`,
      });
    }
  }
  if (s.budget !== undefined && !ofChildren) {
    out.push({
      code: 'STAGE_KIND',
      path: [...at, 'budget'],
      message:
        '"budget" carves what a child work item may spend: it applies to a "parallel", "forEach" or "workflow" stage',
    });
  }
  const join = s.parallel?.join;
  if (typeof join === 'object') {
    const n = Object.keys(s.parallel!.branches).length;
    if (join.atLeast > n) {
      out.push({
        code: 'STAGE_KIND',
        path: [...at, 'parallel', 'join', 'atLeast'],
        message: `atLeast ${join.atLeast} can never be met by ${n} branch${n === 1 ? '' : 'es'}: lower it or add branches`,
      });
    }
  }
  return out;
}

function defOf(stages: Record<string, Stage>, extra: Partial<WorkflowDefinition> = {}): WorkflowDefinition {
  return { id: 'flow', version: 3, start: Object.keys(stages)[0]!, stages, ...extra } as WorkflowDefinition;
}

describe("a stage's checks", () => {
  test.prop([fc.constantFrom('s', 'build'), stageArb], { numRuns: 400 })(
    'its kind: every problem the rules give, in order, with its path and what to write instead',
    (name, stage) => {
      expect(stageKindProblems(name, stage)).toEqual(kindProblems(name, stage));
    },
  );

  test.prop([stageArb])(
    'the roles it names, with their paths: its own, then each branch’s role or sequence',
    (stage) => {
      const expected: { role: string; path: (string | number)[] }[] = [];
      if (stage.role !== undefined) expected.push({ role: stage.role, path: ['stages', 's', 'role'] });
      for (const [k, b] of Object.entries(stage.parallel?.branches ?? {})) {
        const at = ['stages', 's', 'parallel', 'branches', k];
        if (b.role !== undefined) expected.push({ role: b.role, path: [...at, 'role'] });
        for (const [i, r] of (b.sequence ?? []).entries()) expected.push({ role: r, path: [...at, 'sequence', i] });
      }
      expect(stageRolePaths('s', stage)).toEqual(expected);
      expect(stageRoles(stage)).toEqual(expected.map((e) => e.role));
    },
  );

  test.prop([fc.dictionary(fc.constantFrom('p', 'q', 'r'), stageArb, { minKeys: 1 })])(
    'the workflows its stages run as children, with their paths: a stage’s own, then its branches’',
    (stages) => {
      const expected: { ref: string; path: (string | number)[] }[] = [];
      for (const [name, s] of Object.entries(stages)) {
        if (s.workflow !== undefined) expected.push({ ref: s.workflow, path: ['stages', name, 'workflow'] });
        for (const [k, b] of Object.entries(s.parallel?.branches ?? {})) {
          if (b.workflow !== undefined) {
            expected.push({ ref: b.workflow, path: ['stages', name, 'parallel', 'branches', k, 'workflow'] });
          }
        }
      }
      expect(childWorkflows(defOf(stages))).toEqual(expected);
    },
  );

  test.prop([stageArb, fc.option(fc.integer({ min: 1, max: 200 }), { nil: undefined })])(
    "its carves: a deadline later than the definition's is named with the longest allowed",
    (stage, deadline) => {
      const def = defOf({ s: stage }, deadline === undefined ? {} : { deadline });
      const carves = [
        { path: ['stages', 's', 'budget'], d: stage.budget?.deadline },
        ...Object.entries(stage.parallel?.branches ?? {}).map(([k, b]) => ({
          path: ['stages', 's', 'parallel', 'branches', k, 'budget'],
          d: b.budget?.deadline,
        })),
      ];
      const expected = carves
        .filter((c) => c.d !== undefined && deadline !== undefined && c.d > deadline)
        .map((c) => ({
          code: 'STAGE_KIND',
          path: [...c.path, 'deadline'],
          message: `a child's deadline of ${c.d} ms is later than its parent's of ${deadline} ms: write a deadline of at most ${deadline} ms, or leave it out to inherit the parent's`,
        }));
      expect(carveProblems(def, 's', stage)).toEqual(expected);
    },
  );

  test.prop([
    fc.array(
      fc.record({
        on: fc.constantFrom('succeeded' as const, 'failed' as const),
        when: fc.option(fc.constant({ pointer: '/v', exists: true }), { nil: undefined }),
      }),
      { maxLength: 5 },
    ),
  ])('its conditions: a fallback success rule after the first conditional one, else a problem naming it', (rules) => {
    const next = rules.map((r) => ({ ...(r.when === undefined ? {} : { when: r.when }), on: r.on, end: 'completed' }));
    const stage = { role: 'coder', next } as unknown as Stage;
    const first = rules.findIndex((r) => r.on === 'succeeded' && r.when !== undefined);
    const fallback = rules.some((r, i) => i > first && r.on === 'succeeded' && r.when === undefined);
    expect(conditionProblems('s', stage)).toEqual(
      first < 0 || fallback
        ? []
        : [
            {
              code: 'NO_FALLBACK_RULE',
              path: ['stages', 's', 'next'],
              message: `every success rule after rule ${first} has a "when" condition and all may miss: add a rule without "when" after them, say { "on": "succeeded", "end": "completed" } or a "goto"`,
            },
          ],
    );
  });
});

describe('the definition a branch runs as', () => {
  test.prop([stageArb, fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'zz'), { nil: null }), fc.boolean()])(
    'a role, a sequence or a map over a role: one stage per role, a derived id, the map’s own retry and timeout',
    (stage, branch, withDefaults) => {
      const defaults = { retry: { maximumAttempts: 4 } };
      const def = defOf({ s: stage }, withDefaults ? ({ defaults } as never) : {});
      const got = branchDefinition(def, 's', branch);
      const map = stage.forEach !== undefined;
      let roles: string[] | null;
      if (branch === null || map) roles = stage.role === undefined ? null : [stage.role];
      else {
        const b = stage.parallel?.branches[branch];
        roles = b?.role !== undefined ? [b.role] : (b?.sequence ?? null);
      }
      if (roles === null) {
        expect(got).toBeNull();
        return;
      }
      const own = map
        ? {
            ...(stage.retry === undefined ? {} : { retry: stage.retry }),
            ...(stage.timeout === undefined ? {} : { timeout: stage.timeout }),
          }
        : {};
      const stages: Record<string, unknown> = {};
      roles.forEach((role, i) => {
        stages[`step-${i + 1}`] = {
          role,
          ...own,
          next: i + 1 < roles.length ? [{ on: 'succeeded', goto: `step-${i + 2}` }] : [],
        };
      });
      expect(got).toStrictEqual({
        id: branch === null || map ? 'flow--s' : `flow--s--${branch}`,
        version: 3,
        start: 'step-1',
        ...(withDefaults ? { defaults } : {}),
        stages,
      });
    },
  );

  it("a carve's deadline at the definition's own is fine, one later a problem", () => {
    const stage = { workflow: 'sub@1', budget: { deadline: 100 }, next: [] } as unknown as Stage;
    expect(carveProblems(defOf({ s: stage }, { deadline: 100 }), 's', stage)).toEqual([]);
    expect(carveProblems(defOf({ s: stage }, { deadline: 99 }), 's', stage)).toHaveLength(1);
  });

  it('a derived id of 128 characters is fine, of 129 a problem', () => {
    const stage = { role: 'coder', next: [] } as unknown as Stage;
    expect(derivedIdProblems({ ...defOf({ s: stage }), id: 'f'.repeat(125) })).toEqual([]);
    expect(derivedIdProblems({ ...defOf({ s: stage }), id: 'f'.repeat(126) })).toHaveLength(1);
  });

  it('a stage the definition does not have runs nothing; the separator is "--"', () => {
    expect(branchDefinition(defOf({ s: { role: 'coder', next: [] } as unknown as Stage }), 'other', null)).toBeNull();
    expect(DERIVED_ID_SEPARATOR).toBe('--');
  });

  test.prop([fc.integer({ min: 1, max: 80 }), fc.integer({ min: 1, max: 60 }), fc.boolean()])(
    'a derived id over 128 characters is a problem of its stage',
    (idLength, branchLength, parallel) => {
      const id = 'f'.repeat(idLength);
      const branch = 'b'.repeat(branchLength);
      const stage = (parallel
        ? { parallel: { branches: { [branch]: { role: 'coder' } } }, next: [] }
        : { role: 'coder', next: [] }) as unknown as Stage;
      const def = { ...defOf({ s: stage }), id };
      const derived = parallel ? `${id}--s--${branch}` : `${id}--s`;
      expect(derivedIdProblems(def)).toEqual(
        derived.length > 128
          ? [
              {
                code: 'STAGE_KIND',
                path: ['stages', 's'],
                message: `the child workflow id "${derived.slice(0, 60)}..." is over 128 characters: shorten the workflow id, stage or branch names`,
              },
            ]
          : [],
      );
    },
  );
});
