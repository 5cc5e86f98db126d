import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { WorkflowDefinitionSchema } from '../../src/protocol/workflow.js';
import { type WorkflowProblem, checkWorkflowDefinition } from '../../src/workflow/definition.js';
import { fieldsAt, meantField, unknownFieldsMessage } from '../../src/workflow/schema-hints.js';

/**
 * A definition's field the schema does not take is named with what to write
 * instead: the fields the object at that path takes (read from the schema)
 * and, when one is close, the field probably meant.
 */

function problemsOf(value: unknown): WorkflowProblem[] {
  const check = checkWorkflowDefinition(value);
  if (check.ok) throw new Error('expected the definition to be refused');
  return check.problems;
}

/** A definition that loads, with an object of every kind the schema has at a known path. */
function whole(): Record<string, unknown> {
  return {
    id: 'hints',
    version: 1,
    start: 'plan',
    defaults: { retry: { maximumAttempts: 2 } },
    stages: {
      plan: {
        role: 'architect',
        retry: { maximumAttempts: 3 },
        next: [
          { on: 'succeeded', when: { pointer: '/ok', equals: true }, goto: 'review' },
          { on: 'succeeded', goto: 'review' },
        ],
      },
      review: {
        parallel: {
          branches: { qa: { role: 'qa', budget: { maxHops: 2 } }, sec: { role: 'security' } },
          join: { atLeast: 1 },
        },
      },
    },
  };
}

/** Every object of `whole()`, by path, with the fields its schema takes (written out: the list is what users read). */
const OBJECTS: { path: (string | number)[]; fields: string[] }[] = [
  { path: [], fields: ['id', 'version', 'title', 'description', 'start', 'defaults', 'deadline', 'stages'] },
  { path: ['defaults'], fields: ['retry'] },
  {
    path: ['defaults', 'retry'],
    fields: ['initialInterval', 'backoffCoefficient', 'maximumInterval', 'maximumAttempts', 'nonRetryableErrorTypes'],
  },
  {
    path: ['stages', 'plan'],
    fields: [
      'role',
      'parallel',
      'workflow',
      'forEach',
      'maxConcurrency',
      'maxItems',
      'budget',
      'description',
      'approval',
      'retry',
      'maxVisits',
      'timeout',
      'next',
    ],
  },
  {
    path: ['stages', 'plan', 'next', 0],
    fields: ['on', 'errorType', 'when', 'goto', 'end', 'maxTraversals', 'reason'],
  },
  {
    path: ['stages', 'plan', 'next', 0, 'when'],
    fields: ['pointer', 'equals', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'],
  },
  { path: ['stages', 'review', 'parallel'], fields: ['branches', 'join', 'onBranchFailure'] },
  { path: ['stages', 'review', 'parallel', 'branches', 'qa'], fields: ['role', 'sequence', 'workflow', 'budget'] },
  {
    path: ['stages', 'review', 'parallel', 'branches', 'qa', 'budget'],
    fields: ['maxTokens', 'maxCostUsd', 'maxHops', 'deadline'],
  },
  { path: ['stages', 'review', 'parallel', 'join'], fields: ['atLeast'] },
];

function objectAt(value: Record<string, unknown>, path: readonly (string | number)[]): Record<string, unknown> {
  let current: unknown = value;
  for (const segment of path) current = (current as Record<string | number, unknown>)[segment];
  return current as Record<string, unknown>;
}

describe('fieldsAt', () => {
  it('loads the definition every case below starts from', () => {
    expect(checkWorkflowDefinition(whole()).ok).toBe(true);
  });

  it.each(OBJECTS)('names the fields of the object at $path, in the schema order', ({ path, fields }) => {
    expect(fieldsAt(WorkflowDefinitionSchema, path)).toEqual(fields);
  });

  it('answers undefined where the path leads to no object', () => {
    expect(fieldsAt(WorkflowDefinitionSchema, ['id'])).toBeUndefined();
    expect(fieldsAt(WorkflowDefinitionSchema, ['stages', 'plan', 'next'])).toBeUndefined();
    expect(fieldsAt(WorkflowDefinitionSchema, ['stages', 'plan', 'role'])).toBeUndefined();
    expect(fieldsAt(WorkflowDefinitionSchema, ['nothing', 'here'])).toBeUndefined();
  });

  it('reads through optional, default, pipe, lazy and union wrappers', () => {
    const inner = z.strictObject({ a: z.string(), b: z.number() });
    const schema = z.strictObject({
      opt: inner.optional(),
      def: inner.default({ a: '', b: 0 }),
      piped: inner.pipe(z.any()),
      lazy: z.lazy(() => inner),
      either: z.union([z.literal('x'), inner, z.strictObject({ c: z.boolean() })]),
      list: z.array(inner),
      map: z.record(z.string(), inner),
    });
    for (const key of ['opt', 'def', 'piped', 'lazy', 'list', 'map']) {
      const path = key === 'list' ? [key, 0] : key === 'map' ? [key, 'k'] : [key];
      expect(fieldsAt(schema, path)).toEqual(['a', 'b']);
    }
    expect(fieldsAt(schema, ['either'])).toEqual(['a', 'b', 'c']);
    expect(fieldsAt(schema, ['either', 'c'])).toBeUndefined();
  });
});

describe('meantField', () => {
  const fields = ['role', 'parallel', 'workflow', 'forEach', 'maxConcurrency', 'timeout', 'next'];

  it.each([
    ['rol', 'role'],
    ['roles', 'role'],
    ['timout', 'timeout'],
    ['timeOut', 'timeout'],
    ['ForEach', 'forEach'],
    ['paralel', 'parallel'],
    ['maxConcurency', 'maxConcurrency'],
    ['agent', 'role'],
    ['then', 'next'],
    ['concurrency', 'maxConcurrency'],
  ])('"%s" → "%s"', (key, meant) => {
    expect(meantField(key, fields)).toBe(meant);
  });

  it.each(['x', 'on', 'parallelism', 'steps', 'budget'])('"%s": nothing close', (key) => {
    expect(meantField(key, fields)).toBeUndefined();
  });

  it('suggests a word of another engine only where its field is taken', () => {
    expect(meantField('if', ['on', 'when', 'goto'])).toBe('when');
    expect(meantField('if', ['on', 'goto'])).toBeUndefined();
    expect(meantField('eq', ['pointer', 'equals'])).toBe('equals');
    expect(meantField('maxAttempts', ['maximumAttempts'])).toBe('maximumAttempts');
  });

  it('allows one edit in a word under four letters, two from four on', () => {
    expect(meantField('ab', ['abc'])).toBe('abc');
    expect(meantField('ab', ['abcd'])).toBeUndefined();
    expect(meantField('abcd', ['abcdef'])).toBe('abcdef');
    expect(meantField('abcd', ['abcdefg'])).toBeUndefined();
  });

  it('takes the closest field, the first of equally close ones', () => {
    expect(meantField('gte', ['gt', 'gte', 'lte'])).toBe('gte');
    expect(meantField('gtx', ['lte', 'gte', 'gt'])).toBe('gte');
  });

  test.prop([fc.string({ minLength: 1, maxLength: 12 }), fc.array(fc.string({ minLength: 1, maxLength: 12 }))])(
    'suggests only a field that is there',
    (key, candidates) => {
      const meant = meantField(key, candidates);
      if (meant !== undefined) expect(candidates).toContain(meant);
    },
  );
});

describe('unknownFieldsMessage', () => {
  it('names each field, the one meant, and the fields there are', () => {
    expect(unknownFieldsMessage(['rol'], ['role', 'next'])).toBe(
      'unknown field "rol" (did you mean "role"?); the fields here are role, next',
    );
    expect(unknownFieldsMessage(['zzz', 'nxt'], ['role', 'next'])).toBe(
      'unknown fields "zzz", "nxt" (did you mean "next"?); the fields here are role, next',
    );
    expect(unknownFieldsMessage(['rol'], undefined)).toBe('unknown field "rol"');
  });
});

describe('a definition with a field its object does not take', () => {
  it.each([
    [['stages', 'plan'], 'rol', 'role'],
    [['stages', 'plan', 'next', 0], 'if', 'when'],
    [['stages', 'plan', 'next', 0, 'when'], 'eq', 'equals'],
    [['stages', 'plan', 'retry'], 'maxAttempts', 'maximumAttempts'],
    [['stages', 'review', 'parallel', 'branches', 'qa', 'budget'], 'dollars', 'maxCostUsd'],
    [[], 'stage', 'stages'],
  ] as const)('at %j, "%s" is refused with "%s" suggested', (path, key, meant) => {
    const value = whole();
    objectAt(value, path)[key] = 1;
    const problem = problemsOf(value).find((p) => p.message.startsWith('unknown field'));
    expect(problem?.path).toEqual(path);
    expect(problem?.code).toBe('SCHEMA');
    expect(problem?.message).toContain(`"${key}" (did you mean "${meant}"?)`);
  });

  test.prop([fc.constantFrom(...OBJECTS), fc.stringMatching(/^[a-z][A-Za-z]{0,11}$/)])(
    'is one problem at its path that lists the fields of its object',
    ({ path, fields }, key) => {
      fc.pre(!fields.includes(key));
      const value = whole();
      const target = objectAt(value, path);
      target[key] = 'x';
      const found = problemsOf(value).filter((p) => p.message.startsWith('unknown field'));
      expect(found).toHaveLength(1);
      expect(found[0]!.path).toEqual(path);
      expect(found[0]!.message.endsWith(`the fields here are ${fields.join(', ')}`)).toBe(true);
      const meant = /did you mean "([^"]+)"/.exec(found[0]!.message)?.[1];
      if (meant !== undefined) expect(fields).toContain(meant);
    },
  );
});

describe('a join written wrong', () => {
  it('says what a join is', () => {
    const value = whole();
    objectAt(value, ['stages', 'review', 'parallel']).join = 'most';
    const [problem] = problemsOf(value);
    expect(problem!.path).toEqual(['stages', 'review', 'parallel', 'join']);
    expect(problem!.message).toBe(
      'a join is "all" (every branch), "any" (the first success) or { "atLeast": n } with n from 1 to 64',
    );
  });

  it('names the bound of atLeast', () => {
    const value = whole();
    objectAt(value, ['stages', 'review', 'parallel']).join = { atLeast: 0 };
    const [problem] = problemsOf(value);
    expect(problem!.path).toEqual(['stages', 'review', 'parallel', 'join', 'atLeast']);
  });
});
