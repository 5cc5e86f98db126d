import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { WorkflowError } from '../../src/protocol/workflow-error.js';
import type { WorkflowDefinitionInput } from '../../src/protocol/workflow.js';
import {
  WORKFLOW_PROBLEM_CODES,
  type WorkflowProblem,
  WorkflowRegistry,
  checkWorkflowDefinition,
  formatPath,
  invalidWorkflow,
  parseWorkflowDefinition,
  parseWorkflowDefinitionJson,
  stageRetryPolicy,
  workflowKey,
  workflowProblems,
  workflowRef,
} from '../../src/workflow/definition.js';

/**
 * What loading a definition tells its author and keeps: the path and message
 * of each problem, the error that lists them, the codes they carry, and the
 * registry's rules for versions (the same content again is accepted, other
 * content under a used version is refused, the latest version wins).
 */

function problemsOf(value: unknown, knownRoles?: readonly string[]): WorkflowProblem[] {
  const check = checkWorkflowDefinition(value, knownRoles === undefined ? {} : { knownRoles });
  if (check.ok) throw new Error('expected the definition to be refused');
  return check.problems;
}

const def = (id: string, version: number, extra: Record<string, unknown> = {}): WorkflowDefinitionInput => ({
  id,
  version,
  start: 'a',
  stages: { a: { role: 'r', next: [{ on: 'succeeded', goto: 'b' }] }, b: { role: 's' } },
  ...extra,
});

const segmentArb = fc.oneof(
  fc.string({ minLength: 1, maxLength: 6 }).filter((s) => !s.includes('.') && !s.includes('[')),
  fc.nat(20),
);

describe('a problem as its author reads it', () => {
  test.prop([fc.array(segmentArb, { maxLength: 6 })])(
    'its path: names joined by dots, indexes in brackets, "(root)" for none',
    (path) => {
      const expected =
        path.length === 0
          ? '(root)'
          : path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('');
      expect(formatPath(path)).toBe(expected);
    },
  );

  test.prop([
    fc.array(
      fc.record({
        code: fc.constantFrom(...WORKFLOW_PROBLEM_CODES),
        path: fc.array(segmentArb, { maxLength: 3 }),
        message: fc.string({ minLength: 1, maxLength: 20 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    fc.option(fc.string({ minLength: 1, maxLength: 12 }), { nil: undefined }),
  ])('the error lists every problem under a head that counts them and names the source', (problems, source) => {
    const error = invalidWorkflow(problems, source);
    expect(error).toBeInstanceOf(WorkflowError);
    expect(error.code).toBe('WORKFLOW_INVALID');
    const n = problems.length;
    const head = `workflow definition${source === undefined ? '' : ` ${source}`} is invalid (${n} problem${n === 1 ? '' : 's'})`;
    expect(error.message.split('\n')).toEqual([
      head,
      ...problems.map((p) => `  - ${formatPath(p.path)}: ${p.message} [${p.code}]`),
    ]);
    expect(error.details).toStrictEqual(source === undefined ? { problems } : { problems, source });
    expect(workflowProblems(error)).toEqual(problems);
  });

  it('a key that is a symbol (a value built in code) is named as text in its path', () => {
    const problems = problemsOf({ ...def('w', 1), stages: { a: { role: 'r' }, [Symbol('x')]: 1 } });
    expect(problems.map((p) => p.path)).toEqual([['stages', 'Symbol(x)']]);
    expect(invalidWorkflow(problems).message).toContain('  - stages.Symbol(x): ');
    // An index stays a number.
    const indexed = problemsOf(
      def('w', 1, { stages: { a: { role: 'r', next: [{ on: 'maybe', end: 'completed' }] } } }),
    );
    expect(indexed.map((p) => p.path)).toEqual([['stages', 'a', 'next', 0, 'on']]);
  });

  it('no other error has problems, nor one that lists none', () => {
    const problems = [{ code: 'SCHEMA', path: [], message: 'x' }];
    expect(workflowProblems(new Error('x'))).toEqual([]);
    expect(
      workflowProblems(new WorkflowError('RETRY_POLICY_INVALID', 'bad policy', { details: { problems } })),
    ).toEqual([]);
    expect(workflowProblems(new WorkflowError('WORKFLOW_INVALID', 'invalid'))).toEqual([]);
    expect(workflowProblems(new WorkflowError('WORKFLOW_INVALID', 'invalid', { details: { problems } }))).toEqual(
      problems,
    );
    expect(workflowProblems(undefined)).toEqual([]);
  });

  it('text that is not JSON is one problem at the root, naming the parser’s complaint and the source', () => {
    let caught: unknown;
    try {
      parseWorkflowDefinitionJson('{"id": ', { source: 'flow.json' });
    } catch (error) {
      caught = error;
    }
    const problems = workflowProblems(caught);
    expect(problems).toHaveLength(1);
    expect(problems[0]!.code).toBe('INVALID_JSON');
    expect(problems[0]!.path).toEqual([]);
    expect(problems[0]!.message).toMatch(/^not JSON: \S/);
    expect((caught as WorkflowError).details?.source).toBe('flow.json');
    expect(parseWorkflowDefinitionJson(JSON.stringify(def('w', 1))).id).toBe('w');
  });

  it('says which roles are known, sorted, or that none are', () => {
    const unknown = (roles: string[]) => problemsOf(def('w', 1), roles).find((p) => p.code === 'UNKNOWN_ROLE');
    expect(unknown([])?.message).toBe('unknown role "r" (known: none)');
    expect(unknown(['z', 's', 'a'])?.message).toBe('unknown role "r" (known: a, s, z)');
    expect(checkWorkflowDefinition(def('w', 1), { knownRoles: ['s', 'r'] }).ok).toBe(true);
  });

  it('names the stages there are when a start or a target names none', () => {
    const problems = problemsOf({ ...def('w', 1), start: 'x' });
    expect(problems.find((p) => p.code === 'MISSING_START')?.message).toBe('start "x" is not a stage (a, b)');
    const target = problemsOf(def('w', 1, { stages: { a: { role: 'r', next: [{ on: 'failed', goto: 'q' }] } } }));
    expect(target).toEqual([
      { code: 'UNKNOWN_TARGET', path: ['stages', 'a', 'next', 0, 'goto'], message: 'goto "q" is not a stage (a)' },
    ]);
  });

  it('says which rule hides which, and for what outcome', () => {
    const hidden = problemsOf(
      def('w', 1, {
        stages: {
          a: {
            role: 'r',
            next: [
              { on: 'failed', errorType: 'E', end: 'failed' },
              { on: 'failed', errorType: 'E', goto: 'a', maxTraversals: 1 },
              { on: 'succeeded', end: 'completed' },
              { on: 'succeeded', goto: 'a', maxTraversals: 2 },
            ],
          },
        },
      }),
    );
    expect(hidden).toEqual([
      {
        code: 'UNREACHABLE_RULE',
        path: ['stages', 'a', 'next', 1],
        message: 'rule 1 is never used: rule 0 always matches "failed/E" first',
      },
      {
        code: 'UNREACHABLE_RULE',
        path: ['stages', 'a', 'next', 3],
        message: 'rule 3 is never used: rule 2 always matches "succeeded" first',
      },
    ]);
  });

  it('a rule with a condition hides nothing: the rule after it is its fallback', () => {
    const check = checkWorkflowDefinition(
      def('w', 1, {
        stages: {
          a: {
            role: 'r',
            next: [
              { on: 'succeeded', when: { pointer: '/ok', equals: true }, goto: 'b' },
              { on: 'succeeded', goto: 'c' },
            ],
          },
          b: { role: 's' },
          c: { role: 's' },
        },
      }),
    );
    expect(check.ok).toBe(true);
  });

  it('a rule that ends the run is never used up, even beside a stage named "undefined" that is bounded', () => {
    const problems = problemsOf(
      def('w', 1, {
        stages: {
          a: {
            role: 'r',
            next: [
              { on: 'failed', end: 'failed' },
              { on: 'failed', goto: 'undefined' },
              { on: 'succeeded', goto: 'undefined' },
            ],
          },
          undefined: { role: 's', maxVisits: 2 },
        },
      }),
    );
    expect(problems.map((p) => [p.code, p.path])).toEqual([['UNREACHABLE_RULE', ['stages', 'a', 'next', 1]]]);
  });

  it('names the shortest unbounded loop through the first of its stages', () => {
    const problems = problemsOf(
      def('w', 1, {
        stages: {
          a: {
            role: 'r',
            next: [
              { on: 'succeeded', goto: 'b' },
              { on: 'failed', goto: 'c' },
            ],
          },
          b: { role: 'r', next: [{ on: 'succeeded', goto: 'c' }] },
          c: { role: 'r', next: [{ on: 'succeeded', goto: 'a' }] },
        },
      }),
    );
    expect(problems.map((p) => p.message)).toEqual([
      'stages a -> c -> a form a loop with no bound: set maxVisits on one of these stages or maxTraversals on one of the rules between them',
    ]);
  });

  it('a stage no rule reaches is named with the start it cannot be reached from', () => {
    const problems = problemsOf(def('w', 1, { stages: { a: { role: 'r' }, b: { role: 's' } } }));
    expect(problems).toEqual([
      { code: 'UNREACHABLE_STAGE', path: ['stages', 'b'], message: 'stage "b" cannot be reached from start "a"' },
    ]);
  });
});

describe('the codes a problem carries', () => {
  // One bad definition for each code the checks of a value report (the others: a file's, the registry's).
  const bad: Record<string, () => WorkflowProblem[]> = {
    SCHEMA: () => problemsOf({ id: 'w' }),
    MISSING_START: () => problemsOf({ ...def('w', 1), start: 'x' }),
    UNKNOWN_ROLE: () => problemsOf(def('w', 1), ['s']),
    UNKNOWN_TARGET: () =>
      problemsOf(def('w', 1, { stages: { a: { role: 'r', next: [{ on: 'failed', goto: 'q' }] } } })),
    UNREACHABLE_STAGE: () => problemsOf(def('w', 1, { stages: { a: { role: 'r' }, b: { role: 's' } } })),
    UNBOUNDED_CYCLE: () =>
      problemsOf(def('w', 1, { stages: { a: { role: 'r', next: [{ on: 'succeeded', goto: 'a' }] } } })),
    UNREACHABLE_RULE: () =>
      problemsOf(
        def('w', 1, {
          stages: {
            a: {
              role: 'r',
              next: [
                { on: 'succeeded', end: 'completed' },
                { on: 'succeeded', end: 'failed' },
              ],
            },
          },
        }),
      ),
    INVALID_RETRY_POLICY: () =>
      problemsOf(
        def('w', 1, { stages: { a: { role: 'r', retry: { initialInterval: 5_000, maximumInterval: 1_000 } } } }),
      ),
    STAGE_KIND: () => problemsOf(def('w', 1, { stages: { a: { description: 'runs nothing' } } })),
    NO_FALLBACK_RULE: () =>
      problemsOf(
        def('w', 1, {
          stages: {
            a: { role: 'r', next: [{ on: 'succeeded', when: { pointer: '/v', equals: 1 }, goto: 'b' }] },
            b: { role: 's' },
          },
        }),
      ),
  };

  it('each is one of the published codes, and each code a check of a value reports is reported by one', () => {
    for (const [code, problems] of Object.entries(bad)) {
      const codes = problems().map((p) => p.code);
      expect(codes, code).toContain(code);
      for (const c of codes) expect(WORKFLOW_PROBLEM_CODES).toContain(c);
    }
    // The rest are reported elsewhere: bad text, an unreadable file, the registry.
    const elsewhere = ['INVALID_JSON', 'UNREADABLE', 'DUPLICATE_VERSION', 'RESERVED_ID'];
    expect([...WORKFLOW_PROBLEM_CODES].sort()).toEqual([...Object.keys(bad), ...elsewhere].sort());
  });
});

describe('a checked definition', () => {
  it('is frozen all the way down, and its retry policy is the stage’s fields over the defaults', () => {
    const checked = parseWorkflowDefinition(
      def('w', 1, {
        defaults: { retry: { maximumAttempts: 5, initialInterval: 100 } },
        stages: {
          a: { role: 'r', retry: { maximumAttempts: 2 }, next: [{ on: 'succeeded', goto: 'b' }] },
          b: { role: 's', approval: { approvers: ['x'] } },
        },
      }),
    );
    expect(Object.isFrozen(checked)).toBe(true);
    expect(Object.isFrozen(checked.stages.a!.next[0])).toBe(true);
    expect(Object.isFrozen(checked.stages.b!.approval!.approvers)).toBe(true);
    expect(stageRetryPolicy(checked, 'a')).toMatchObject({ maximumAttempts: 2, initialInterval: 100 });
    expect(stageRetryPolicy(checked, 'b')).toMatchObject({ maximumAttempts: 5, initialInterval: 100 });
    // Without defaults, and for a stage it does not have: the built-in policy.
    const plain = parseWorkflowDefinition(def('w', 1));
    expect(stageRetryPolicy(plain, 'a')).toEqual(stageRetryPolicy(plain, 'nowhere'));
    expect(stageRetryPolicy(plain, 'nowhere')).toEqual(
      stageRetryPolicy(parseWorkflowDefinition(def('w', 1, { defaults: {} })), 'b'),
    );
    expect(workflowKey(workflowRef(checked))).toBe('w@1');
    expect(workflowRef(checked)).toEqual({ id: 'w', version: 1 });
  });
});

describe('the registry of definitions', () => {
  /** A copy of a JSON value with every object's keys in reverse order. */
  const reordered = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reordered);
    if (value === null || typeof value !== 'object') return value;
    return Object.fromEntries(
      Object.entries(value)
        .reverse()
        .map(([k, v]) => [k, reordered(v)]),
    );
  };

  it('keeps a checked definition as it was given, not a copy', () => {
    const registry = new WorkflowRegistry();
    const checked = parseWorkflowDefinition(def('w', 1));
    registry.add(checked);
    expect(registry.get({ id: 'w', version: 1 })).toBe(checked);
  });

  it('takes the same content again, whatever its keys’ order and its undefined fields', () => {
    const registry = new WorkflowRegistry();
    const first = parseWorkflowDefinition(def('w', 1, { description: 'd' }));
    registry.add(first);
    registry.add(parseWorkflowDefinition(reordered(def('w', 1, { description: 'd' }))));
    registry.add(parseWorkflowDefinition(def('w', 1, { description: 'd', title: undefined })));
    expect(registry.list()).toEqual([first]);
    // And the other way round: held with an undefined field, given without it.
    const other = new WorkflowRegistry();
    other.add(parseWorkflowDefinition(def('w', 1, { description: 'd', title: undefined })));
    other.add(parseWorkflowDefinition(def('w', 1, { description: 'd' })));
    expect(other.list()).toHaveLength(1);
  });

  it('refuses an id with "--" at its path, saying what to write instead', () => {
    let caught: unknown;
    try {
      new WorkflowRegistry().add(parseWorkflowDefinition(def('a--b', 1)));
    } catch (error) {
      caught = error;
    }
    expect(workflowProblems(caught)).toEqual([
      {
        code: 'RESERVED_ID',
        path: ['id'],
        message: `"--" in an id is kept for the child workflows of a stage's branches: use "-" or "." instead`,
      },
    ]);
  });

  /** A definition whose first rule's condition compares with `value` (a fallback rule after it). */
  const comparing = (value: unknown) =>
    parseWorkflowDefinition(
      def('w', 4, {
        stages: {
          a: {
            role: 'r',
            next: [
              { on: 'succeeded', when: { pointer: '/v', equals: value }, goto: 'b' },
              { on: 'succeeded', end: 'completed' },
            ],
          },
          b: { role: 's' },
        },
      }),
    );

  // JSON values that are alike but not the same: a text and the object of its characters, null and
  // an object, a list and an object, either way round.
  const unlike: [unknown, unknown][] = [
    ['ab', { 0: 'a', 1: 'b' }],
    [{ 0: 'a', 1: 'b' }, 'ab'],
    [null, {}],
    [{}, null],
    [[], {}],
    [{}, []],
    [['x'], { 0: 'x' }],
  ];
  for (const [held, given] of unlike) {
    it(`tells ${JSON.stringify(held)} and ${JSON.stringify(given)} apart in a condition`, () => {
      const registry = new WorkflowRegistry();
      registry.add(comparing(held));
      registry.add(comparing(held));
      expect(() => registry.add(comparing(given))).toThrow(/already registered with different content/);
    });
  }

  const changes: Record<string, Record<string, unknown>> = {
    'a field added': { title: 't' },
    'a field removed': { description: undefined },
    'a value changed': { description: 'e' },
    'a rule added': {
      stages: {
        a: {
          role: 'r',
          next: [
            { on: 'succeeded', goto: 'b' },
            { on: 'failed', end: 'failed' },
          ],
        },
        b: { role: 's' },
      },
    },
    'a number changed': {
      stages: { a: { role: 'r', maxVisits: 2, next: [{ on: 'succeeded', goto: 'b' }] }, b: { role: 's' } },
    },
  };
  for (const [name, change] of Object.entries(changes)) {
    it(`refuses other content under a version it holds: ${name}`, () => {
      const registry = new WorkflowRegistry();
      registry.add(parseWorkflowDefinition(def('w', 3, { description: 'd' })));
      let caught: unknown;
      try {
        registry.add(parseWorkflowDefinition(def('w', 3, { description: 'd', ...change })));
      } catch (error) {
        caught = error;
      }
      expect(workflowProblems(caught)).toEqual([
        {
          code: 'DUPLICATE_VERSION',
          path: ['version'],
          message: 'w@3 is already registered with different content; bump "version"',
        },
      ]);
      expect((caught as WorkflowError).details?.source).toBe('w@3');
      expect(registry.list()).toHaveLength(1);
    });
  }

  test.prop([
    fc.uniqueArray(fc.tuple(fc.constantFrom('alpha', 'beta', 'gamma'), fc.integer({ min: 1, max: 30 })), {
      minLength: 1,
      maxLength: 12,
      selector: ([id, v]) => `${id}@${v}`,
    }),
  ])('serves the latest version of each id, and lists them by id, then version', (refs) => {
    const registry = new WorkflowRegistry();
    for (const [id, version] of refs) registry.add(parseWorkflowDefinition(def(id, version)));
    for (const id of ['alpha', 'beta', 'gamma', 'delta']) {
      const versions = refs.filter(([i]) => i === id).map(([, v]) => v);
      expect(registry.latest(id)?.version).toBe(versions.length === 0 ? undefined : Math.max(...versions));
    }
    const sorted = [...refs].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x - y));
    expect(registry.list().map((d) => [d.id, d.version])).toEqual(sorted);
    for (const [id, version] of refs) expect(registry.get({ id, version })?.id).toBe(id);
  });
});
