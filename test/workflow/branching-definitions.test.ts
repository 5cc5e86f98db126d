import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { checkCondition, jsonEquals, pointerTokens, readPointer } from '../../src/workflow/conditions.js';
import { WorkflowRegistry, checkWorkflowDefinition, parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { branchDefinition } from '../../src/workflow/stage-checks.js';

/** Load-time checks of the branching fields, and the conditions' pointer reads. */

function problems(value: unknown, knownRoles?: string[]) {
  const check = checkWorkflowDefinition(value, knownRoles === undefined ? {} : { knownRoles });
  return check.ok ? [] : check.problems.map((p) => ({ code: p.code, path: p.path.join('.'), message: p.message }));
}

const base = (stages: Record<string, unknown>, start = 'a') => ({ id: 'w', version: 1, start, stages });

describe('branching definitions at load time', () => {
  it('takes parallel, map and workflow stages', () => {
    expect(
      problems(
        base({
          a: { role: 'lead', next: [{ on: 'succeeded', goto: 'b' }] },
          b: {
            parallel: {
              branches: { x: { role: 'rx' }, y: { sequence: ['r1', 'r2'] }, z: { workflow: 'other@2' } },
              join: { atLeast: 2 },
              onBranchFailure: 'collect',
            },
            budget: { maxTokens: 100 },
            next: [{ on: 'succeeded', goto: 'c' }],
          },
          c: {
            role: 'worker',
            forEach: '/items',
            maxConcurrency: 4,
            maxItems: 10,
            timeout: '5s',
            next: [{ on: 'succeeded', goto: 'd' }],
          },
          d: { workflow: 'sub@1' },
        }),
        ['lead', 'rx', 'r1', 'r2', 'worker'],
      ),
    ).toEqual([]);
  });

  it('names the path and what to write for each bad branching field', () => {
    const found = problems(
      base({
        a: { next: [{ on: 'succeeded', goto: 'b' }] },
        b: { role: 'r', workflow: 'x@1', next: [{ on: 'succeeded', goto: 'c' }] },
        c: { role: 'r', maxConcurrency: 3, budget: { maxTokens: 5 }, next: [{ on: 'succeeded', goto: 'd' }] },
        d: {
          parallel: { branches: { p: { role: 'r' } }, join: { atLeast: 3 } },
          timeout: 10,
          next: [{ on: 'succeeded', goto: 'e' }],
        },
        e: {
          role: 'r',
          next: [
            { on: 'succeeded', when: { pointer: '/v', equals: 1 }, goto: 'a', maxTraversals: 1 },
            { on: 'succeeded', when: { pointer: '/v', gt: 3 }, end: 'completed' },
          ],
        },
      }),
      ['r'],
    );
    expect(found.map((p) => `${p.code} ${p.path}`)).toEqual([
      'STAGE_KIND stages.a',
      'STAGE_KIND stages.b',
      'STAGE_KIND stages.c.maxConcurrency',
      'STAGE_KIND stages.c.budget',
      'STAGE_KIND stages.d.timeout',
      'STAGE_KIND stages.d.parallel.join.atLeast',
      'NO_FALLBACK_RULE stages.e.next',
    ]);
    expect(found[0]!.message).toContain('give it "role"');
    expect(found.at(-1)!.message).toContain('add a rule without "when"');
  });

  it('refuses malformed pointers, unknown operators and two operators in the schema, at their paths', () => {
    const found = problems(
      base({
        a: {
          role: 'r',
          next: [
            { on: 'succeeded', when: { pointer: 'v', equals: 1 }, end: 'completed' },
            { on: 'succeeded', when: { pointer: '/v', matches: 'x' }, end: 'completed' },
            { on: 'succeeded', when: { pointer: '/v', gt: 1, lt: 2 }, end: 'completed' },
            { on: 'failed', when: { pointer: '/v', exists: true }, end: 'failed' },
            { on: 'succeeded', end: 'completed' },
          ],
        },
      }),
    );
    expect(found.map((p) => `${p.code} ${p.path}`)).toEqual([
      'SCHEMA stages.a.next.0.when.pointer',
      // An unknown operator: the key refused, and no operator found.
      'SCHEMA stages.a.next.1.when',
      'SCHEMA stages.a.next.1.when',
      'SCHEMA stages.a.next.2.when',
      'SCHEMA stages.a.next.3.when',
    ]);
    expect(found[0]!.message).toContain('JSON pointer');
    expect(found[1]!.message).toContain('matches');
    expect(found[2]!.message).toContain('exactly one operator');
  });

  it('checks the roles of branches and sequences against the known roles', () => {
    const found = problems(
      base({ a: { parallel: { branches: { x: { role: 'ghost' }, y: { sequence: ['r', 'phantom'] } } } } }),
      ['r'],
    );
    expect(found.map((p) => `${p.code} ${p.path}`)).toEqual([
      'UNKNOWN_ROLE stages.a.parallel.branches.x.role',
      'UNKNOWN_ROLE stages.a.parallel.branches.y.sequence.1',
    ]);
  });

  it('keeps ids with -- for the workflows branches run as', () => {
    const registry = new WorkflowRegistry();
    expect(() =>
      registry.add(
        parseWorkflowDefinition(
          base({ a: { role: 'r' } }, 'a') && { id: 'a--b', version: 1, start: 'a', stages: { a: { role: 'r' } } },
        ),
      ),
    ).toThrow(/RESERVED_ID/);
  });

  it('derives a branch workflow per role, sequence and map that itself passes the checks', () => {
    const def = parseWorkflowDefinition(
      base({
        a: {
          parallel: { branches: { x: { role: 'rx' }, y: { sequence: ['r1', 'r2'] } } },
          next: [{ on: 'succeeded', goto: 'm' }],
        },
        m: { role: 'w', forEach: '', retry: { maximumAttempts: 5 } },
      }),
    );
    const y = branchDefinition(def, 'a', 'y')!;
    expect(y.id).toBe('w--a--y');
    expect(Object.values(y.stages).map((s) => s.role)).toEqual(['r1', 'r2']);
    expect(checkWorkflowDefinition(y).ok).toBe(true);
    const m = branchDefinition(def, 'm', '3')!;
    expect(m.id).toBe('w--m');
    expect(m.stages['step-1']!.retry).toEqual({ maximumAttempts: 5 });
    // Made once per definition, stage and branch: a map's elements share one (the Coordinator checks it once).
    expect(branchDefinition(def, 'm', '4')).toBe(m);
    expect(branchDefinition(def, 'a', 'y')).toBe(y);
    expect(branchDefinition(def, 'a', 'x')).not.toBe(y);
    const copy = parseWorkflowDefinition(JSON.parse(JSON.stringify(def)));
    expect(branchDefinition(copy, 'm', '3')).not.toBe(m);
    expect(branchDefinition(copy, 'm', '3')).toEqual(m);
    // Shared, so frozen through and through, as the definitions it is derived from are.
    for (const d of [m, y]) {
      expect(Object.isFrozen(d)).toBe(true);
      expect(Object.isFrozen(d.stages)).toBe(true);
      for (const stage of Object.values(d.stages)) {
        expect(Object.isFrozen(stage)).toBe(true);
        expect(Object.isFrozen(stage.next)).toBe(true);
        for (const rule of stage.next) expect(Object.isFrozen(rule)).toBe(true);
      }
    }
    expect(y.stages['step-1']!.next).toHaveLength(1);
    // No such stage, or no such branch: nothing to derive.
    expect(branchDefinition(def, 'nope', 'x')).toBeNull();
    expect(branchDefinition(def, 'nope', null)).toBeNull();
    expect(branchDefinition(def, 'a', 'nope')).toBeNull();
  });
});

describe('conditions', () => {
  it('reads pointers with escapes, array indexes and missing paths', () => {
    const value = { 'a/b': { '~x': [10, 20] }, list: [{ v: 1 }] };
    expect(pointerTokens('/a~1b/~0x/1')).toEqual(['a/b', '~x', '1']);
    expect(readPointer(value, '/a~1b/~0x/1')).toEqual({ found: true, value: 20 });
    expect(readPointer(value, '/list/0/v')).toEqual({ found: true, value: 1 });
    expect(readPointer(value, '/list/01')).toEqual({ found: false });
    expect(readPointer(value, '/list/2')).toEqual({ found: false });
    expect(readPointer(value, '/missing')).toEqual({ found: false });
    expect(readPointer(value, '')).toEqual({ found: true, value });
    expect(readPointer(null, '/x')).toEqual({ found: false });
  });

  it('compares with each operator; a missing value meets only exists: false', () => {
    const out = { verdict: 'ok', score: 7, tags: ['a'] };
    const holds = (when: object) => checkCondition({ pointer: '/score', ...when } as never, out).holds;
    expect(holds({ gt: 6 })).toBe(true);
    expect(holds({ gt: 7 })).toBe(false);
    expect(holds({ gte: 7 })).toBe(true);
    expect(holds({ lt: 7 })).toBe(false);
    expect(holds({ lte: 7 })).toBe(true);
    expect(holds({ equals: 7 })).toBe(true);
    expect(holds({ in: [1, 7] })).toBe(true);
    expect(holds({ exists: true })).toBe(true);
    expect(checkCondition({ pointer: '/verdict', gt: 1 }, out).holds).toBe(false);
    expect(checkCondition({ pointer: '/nope', exists: false }, out)).toEqual({ holds: true, read: undefined });
    expect(checkCondition({ pointer: '/nope', equals: null }, out).holds).toBe(false);
    expect(checkCondition({ pointer: '/tags', equals: ['a'] }, out)).toEqual({ holds: true, read: ['a'] });
  });

  test.prop([fc.jsonValue(), fc.jsonValue()])('equality is structural and symmetric', (a, b) => {
    expect(jsonEquals(a, JSON.parse(JSON.stringify(a)))).toBe(true);
    expect(jsonEquals(a, b)).toBe(jsonEquals(b, a));
  });
});
