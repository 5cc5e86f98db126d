import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  BRANCH_ATTRIBUTE,
  PARENT_ATTRIBUTE,
  type SpawnBody,
  childItemId,
} from '../../src/decisions/coordinator-decisions.js';
import { dataPart, outputValue } from '../../src/decisions/coordinator/child-spawn.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import type { ItemOutput } from '../../src/protocol/item-output.js';
import type { Part } from '../../src/protocol/parts.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { branchDefinition } from '../../src/workflow/stage-checks.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a fan-out's children as the decisions write them, each stated
 * on its own: what a child's output gives its parent, a value as a data part,
 * the `spawn` rows of a parallel, map or workflow stage (one per branch
 * started, each with its id, its definition or workflow, its input, its
 * carve and its deadline), their audit entry and event, the stage's hop
 * taken once, and the `settle` row a child's end writes for its parent.
 */

const jsonArb: fc.Arbitrary<JsonValue> = fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<JsonValue>;
const textArb = fc.string({ minLength: 1, maxLength: 12 });
const dataArb = fc.dictionary(fc.string({ minLength: 1, maxLength: 4 }), jsonArb, { maxKeys: 3 });

/** A text, data or file part (a file is neither data nor text: it gives the parent nothing). */
const partArb: fc.Arbitrary<Part> = fc.oneof(
  textArb.map((text): Part => ({ kind: 'text', text })),
  dataArb.map((data): Part => ({ kind: 'data', data })),
  fc.webUrl().map((uri): Part => ({ kind: 'file', file: { uri } })),
);

/** A completed item's output with these parts. */
const completed = (parts: Part[]): ItemOutput => ({
  state: 'completed',
  stage: 's',
  hop: 1,
  role: 'w',
  parts,
  artifacts: [],
});

describe("what a child's output gives its parent", () => {
  test.prop([fc.array(partArb, { maxLength: 5 })])(
    'its first data part, else its text parts a line each, else null',
    (parts) => {
      const data = parts.find((p) => p.kind === 'data');
      const texts = parts.flatMap((p) => (p.kind === 'text' ? [p.text] : []));
      const want = data?.kind === 'data' ? data.data : texts.length > 0 ? texts.join('\n') : null;
      expect(outputValue(completed(parts))).toEqual(want);
    },
  );

  it('a file part gives nothing: the texts beside it, a line each', () => {
    const file: Part = { kind: 'file', file: { uri: 'https://x.test/f' } };
    expect(outputValue(completed([file]))).toBeNull();
    expect(outputValue(completed([{ kind: 'text', text: 'a' }, file, { kind: 'text', text: 'b' }]))).toBe('a\nb');
  });

  it('a child that did not complete gives nothing, nor does an empty text', () => {
    expect(outputValue(null)).toBeNull();
    const failed: ItemOutput = { state: 'failed', stage: 's', hop: 1, code: 'X', message: 'm', error: null };
    expect(outputValue(failed)).toBeNull();
    const canceled: ItemOutput = { state: 'canceled', stage: 's', hop: 1, by: null, reason: null };
    expect(outputValue(canceled)).toBeNull();
    expect(outputValue(completed([{ kind: 'text', text: '' }]))).toBeNull();
    expect(
      outputValue(
        completed([
          { kind: 'text', text: 'a' },
          { kind: 'text', text: 'b' },
        ]),
      ),
    ).toBe('a\nb');
  });
});

describe('a JSON value as a data part', () => {
  test.prop([jsonArb])('an object as it is, anything else (a list, a scalar, null) under `value`', (value) => {
    const part = dataPart(value);
    expect(part.kind).toBe('data');
    const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
    expect(part.kind === 'data' ? part.data : undefined).toEqual(isObject ? value : { value });
  });

  it('a list and null go under `value`', () => {
    expect(dataPart([1, 2])).toEqual({ kind: 'data', data: { value: [1, 2] } });
    expect(dataPart(null)).toEqual({ kind: 'data', data: { value: null } });
    expect(dataPart({ a: 1 })).toEqual({ kind: 'data', data: { a: 1 } });
  });
});

// ---------------------------------------------------------------------------------------------
// The spawn rows of a fan-out stage.

const ROLES = ['w', 'x', 'y', 'z'] as const;

/** One parallel branch: a role or another workflow, with or without a carve (and its deadline). */
const branchArb = fc.record({
  role: fc.option(fc.constantFrom(...ROLES), { nil: undefined }),
  // A carve sets one limit or more: an empty one is none.
  carve: fc
    .record(
      { maxTokens: fc.integer({ min: 1, max: 500 }), deadline: fc.integer({ min: 1_000, max: 1_000_000 }) },
      { requiredKeys: [] },
    )
    .map((c) => (Object.keys(c).length === 0 ? undefined : c)),
});

const parallelArb = fc.record({
  branches: fc.uniqueArray(fc.tuple(fc.stringMatching(/^[a-z]{1,6}$/), branchArb), {
    minLength: 1,
    maxLength: 11,
    selector: (b) => b[0],
  }),
  texts: fc.array(textArb, { maxLength: 2 }),
  withData: fc.boolean(),
  budget: fc.option(fc.integer({ min: 10, max: 5_000 }), { nil: null }),
  deadline: fc.option(fc.integer({ min: 1_000, max: 2_000_000 }), { nil: null }),
});

function parallelDefinition(p: ParallelCase): WorkflowDefinition {
  const branches: Record<string, object> = {};
  for (const [name, b] of p.branches) {
    branches[name] = {
      ...(b.role === undefined ? { workflow: 'sub@1' } : { role: b.role }),
      ...(b.carve === undefined ? {} : { budget: b.carve }),
    };
  }
  return parseWorkflowDefinition({
    id: 'par',
    version: 1,
    start: 'fan',
    stages: { fan: { parallel: { branches, join: 'all' } } },
  });
}
type ParallelCase = {
  branches: [string, { role: string | undefined; carve: { maxTokens?: number; deadline?: number } | undefined }][];
  texts: string[];
  withData: boolean;
  budget: number | null;
  deadline: number | null;
};

/** The `spawned` event's line: how many children, the first eight named. */
function spawnedLine(keys: readonly string[]): string {
  const n = keys.length;
  return `started ${n} child work item${n === 1 ? '' : 's'}: ${keys.slice(0, 8).join(', ')}${n > 8 ? ', ...' : ''}`;
}

/** A child's deadline: its carve's from now, never later than its parent's; its parent's when the carve sets none. */
function deadlineOf(parentAt: number | null, carveMs: number | undefined, now: number): number | null {
  if (carveMs === undefined) return parentAt;
  return parentAt === null ? now + carveMs : Math.min(parentAt, now + carveMs);
}

describe('the children a parallel stage starts', () => {
  test.prop([parallelArb as fc.Arbitrary<ParallelCase>])(
    'a spawn row per branch in order, each its id, definition or workflow, input, carve and deadline',
    (p) => {
      const t = new ChildTree();
      const def = parallelDefinition(p);
      const input: Part[] = [
        ...p.texts.map((text): Part => ({ kind: 'text', text })),
        ...(p.withData ? [{ kind: 'data' as const, data: { ignored: true } }] : []),
      ];
      // The parent's deadline (as a child's, inherited): a carve may reach past it.
      const d = t.create('p', def, {
        input,
        budget: p.budget === null ? null : { maxTokens: p.budget },
        deadline: p.deadline === null ? null : { at: t.now + p.deadline, ms: p.deadline },
      });
      const keys = p.branches.map(([name]) => name);
      const rows = t.spawns('p');
      expect(rows.map((r) => r.branch)).toEqual(keys);
      const join = d.view!.run!.context.join!;
      const parentAt = p.deadline === null ? null : t.now + p.deadline;
      const texts = input.filter((x) => x.kind === 'text');
      for (const [i, [name, b]] of p.branches.entries()) {
        const row = rows[i]!;
        expect(row.parentId).toBe('p');
        expect(row.childId).toBe(childItemId('p', 1, name));
        expect(row.hop).toBe(1);
        expect(row.stage).toBe('fan');
        expect(row.workflow).toBe(b.role === undefined ? 'sub@1' : null);
        expect(row.definition).toEqual(b.role === undefined ? null : branchDefinition(def, 'fan', name));
        // The parent's request (its text parts); the first stage has no previous output to add.
        expect(row.input).toEqual(texts.length > 0 ? texts : [{ kind: 'text', text: '(no input)' }]);
        expect(row.budget).toEqual(join.branches[i]!.budget);
        if (p.budget === null && b.carve?.maxTokens === undefined) expect(row.budget).toBeNull();
        expect(row.deadlineAt).toBe(deadlineOf(parentAt, b.carve?.deadline, t.now));
      }
      // Every branch is running once its rows are written.
      expect(join.branches.every((b) => b.state === 'running')).toBe(true);
      expect(d.runEvents).toContainEqual({ type: 'CHILDREN_SPAWNED', hop: 1 });
      // The fan-out stage's hop is taken, once.
      expect(d.changes!.rollup?.hops).toBe(1);
      expect(d.view!.item.hop).toBe(1);
      const audit = d.changes!.audit.filter((a) => a.kind === 'spawn');
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ itemId: 'p', hop: 1 });
      expect(audit[0]!.data).toEqual({
        stage: 'fan',
        children: rows.map((r) => ({
          branch: r.branch,
          childId: r.childId,
          budget: r.budget,
          ...(r.deadlineAt === null ? { deadlineAt: null } : { deadlineAt: r.deadlineAt }),
        })),
      });
      const spawned = d.events.filter((e) => e.kind === 'spawned');
      expect(spawned).toHaveLength(1);
      expect(spawned[0]).toMatchObject({ itemId: 'p', hop: 1, stage: 'fan', detail: spawnedLine(keys) });
    },
  );
});

const lead = { role: 'lead', next: [{ on: 'succeeded', goto: 'map' }] };

describe('the children a map starts, a few at a time, under one hop', () => {
  test.prop([
    fc.array(jsonArb, { minLength: 1, maxLength: 9 }),
    fc.integer({ min: 1, max: 4 }),
    fc.array(textArb, { maxLength: 2 }),
  ])(
    "each element's child with the element as its data part; later children start under the stage's hop, taking none",
    (list, maxConcurrency, texts) => {
      const t = new ChildTree();
      const def = parseWorkflowDefinition({
        id: 'mapper',
        version: 1,
        start: 'lead',
        stages: { lead, map: { role: 'w', forEach: '/list', maxConcurrency } },
      });
      const input: Part[] = texts.map((text) => ({ kind: 'text', text }));
      t.create('p', def, { input });
      const d = t.answer('p', { parts: [{ kind: 'data', data: { list } }] });
      // The map's hop is the second: taken by the decision that entered the stage.
      expect(d.changes!.rollup?.hops).toBe(1);
      expect(t.spawns('p')).toHaveLength(Math.min(maxConcurrency, list.length));
      for (let k = 0; k < list.length; k++) {
        const row = t.spawns('p')[k]!;
        expect(row.branch).toBe(String(k));
        expect(row.hop).toBe(2);
        expect(row.stage).toBe('map');
        expect(row.workflow).toBeNull();
        expect(row.definition).toEqual(branchDefinition(def, 'map', null));
        const element = list[k]!;
        const parts = [...input, ...(element === null ? [] : [dataPart(element)])];
        expect(row.input).toEqual(parts.length > 0 ? parts : [{ kind: 'text', text: '(no input)' }]);
        // Its end starts the next waiting element's child under the same hop: no hop taken.
        const settled = t.decide('p', {
          kind: 'child',
          settle: {
            parentId: 'p',
            childId: row.childId,
            hop: 2,
            branch: row.branch,
            outcome: 'completed',
            output: k,
            error: null,
            usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
            hops: 1,
          },
        });
        expect(settled.handling).toBe('applied');
        expect(settled.changes!.rollup).toBeUndefined();
        expect(settled.view!.item.hop).toBe(2);
        expect(t.spawns('p')).toHaveLength(Math.min(maxConcurrency + k + 1, list.length));
      }
      expect(t.views.get('p')!.item.state).toBe('completed');
      expect(t.views.get('p')!.run?.context.output ?? t.views.get('p')!.item.output).toBeTruthy();
    },
  );
});

describe('the child of a workflow stage', () => {
  test.prop([dataArb, fc.array(textArb, { maxLength: 2 })])(
    'one child running the workflow by reference, the previous output as its data part',
    (output, texts) => {
      const t = new ChildTree();
      const def = parseWorkflowDefinition({
        id: 'wf',
        version: 1,
        start: 'lead',
        stages: { lead: { role: 'lead', next: [{ on: 'succeeded', goto: 'call' }] }, call: { workflow: 'sub@1' } },
      });
      const input: Part[] = texts.map((text) => ({ kind: 'text', text }));
      t.create('p', def, { input });
      const d = t.answer('p', { parts: [{ kind: 'data', data: output }] });
      const [row, ...more] = t.spawns('p');
      expect(more).toHaveLength(0);
      expect(row).toMatchObject({ parentId: 'p', childId: 'p.2.child', hop: 2, branch: 'child', stage: 'call' });
      expect(row!.workflow).toBe('sub@1');
      expect(row!.definition).toBeNull();
      expect(row!.input).toEqual([...input, dataPart(d.view!.run!.context.output as JsonValue)]);
      expect(d.events.find((e) => e.kind === 'spawned')?.detail).toBe('started 1 child work item: child');
    },
  );
});

// ---------------------------------------------------------------------------------------------
// The settle row a child's end writes.

/** A child of `p` (hop, branch) running `def`, created as the Coordinator would from its spawn row. */
function childOf(t: ChildTree, def: WorkflowDefinition, hop: number, branch: string): string {
  const body: SpawnBody = {
    parentId: 'p',
    childId: childItemId('p', hop, branch),
    hop,
    branch,
    stage: 'fan',
    definition: def,
    workflow: null,
    input: [{ kind: 'text', text: 'go' }],
    budget: null,
    deadlineAt: null,
  };
  t.createChild(body);
  return body.childId;
}

const once = parseWorkflowDefinition({
  id: 'once',
  version: 1,
  start: 'only',
  defaults: { retry: { maximumAttempts: 1 } },
  stages: { only: { role: 'w' } },
});

describe("a child's end, told to its parent", () => {
  test.prop([
    fc.integer({ min: 1, max: 999 }),
    fc.stringMatching(/^[a-z0-9:]{1,8}$/),
    fc.array(partArb, { maxLength: 3 }),
    fc.nat({ max: 1_000 }),
  ])(
    'a completed child: its hop and branch as its branch attribute says, its output, usage and hops',
    (hop, branch, parts, tokens) => {
      const t = new ChildTree();
      const id = childOf(t, once, hop, branch);
      t.answer(id, { parts, tokens });
      const settles = t.settles(id);
      expect(settles).toHaveLength(1);
      const view = t.views.get(id)!;
      expect(settles[0]).toEqual({
        parentId: 'p',
        childId: id,
        hop,
        branch,
        outcome: 'completed',
        output: outputValue(completed(parts)),
        error: null,
        usage: view.item.usage,
        hops: 1,
      });
      expect(settles[0]!.usage.inputTokens).toBe(tokens);
    },
  );

  test.prop([fc.integer({ min: 1, max: 3_000 }).map((n) => 'm'.repeat(n)), fc.constantFrom('Boom', 'Bad')])(
    "a failed child: its hop's error type and message (at most 2000 characters)",
    (message, type) => {
      const t = new ChildTree();
      const id = childOf(t, once, 3, 'a');
      t.answer(id, { error: { type, message } });
      const [settle] = t.settles(id);
      expect(t.views.get(id)!.item.state).toBe('failed');
      const output = t.views.get(id)!.item.output;
      expect(output?.state).toBe('failed');
      expect(settle).toMatchObject({ outcome: 'failed', output: null, hop: 3, branch: 'a' });
      expect(settle!.error!.type).toBe(type);
      expect(settle!.error!.message).toBe(output?.state === 'failed' ? output.message.slice(0, 2000) : '');
      expect(settle!.error!.message.length).toBeLessThanOrEqual(2000);
    },
  );

  it("a failed child with no hop's error (its budget spent): the failure's code as the type", () => {
    const t = new ChildTree();
    const loop = parseWorkflowDefinition({
      id: 'loop',
      version: 1,
      start: 'only',
      stages: { only: { role: 'w', maxVisits: 10, next: [{ on: 'succeeded', goto: 'only' }] } },
    });
    const body: SpawnBody = {
      parentId: 'p',
      childId: 'p.1.a',
      hop: 1,
      branch: 'a',
      stage: 'fan',
      definition: loop,
      workflow: null,
      input: [{ kind: 'text', text: 'go' }],
      budget: { maxTokens: 5 },
      deadlineAt: null,
    };
    t.createChild(body);
    t.answer('p.1.a', { tokens: 10 });
    const output = t.views.get('p.1.a')!.item.output;
    expect(output?.state === 'failed' ? output.error : 'not failed').toBeNull();
    const [settle] = t.settles('p.1.a');
    expect(settle!.outcome).toBe('failed');
    expect(settle!.error!.type).toBe(output?.state === 'failed' ? output.code : '');
    expect(settle!.error!.type).toBe('BUDGET_EXCEEDED');
    expect(settle!.hops).toBe(1);
  });

  test.prop([fc.nat({ max: 9 }), fc.option(fc.nat({ max: 9 }), { nil: undefined })])(
    'a child with children of its own: its hops count theirs in',
    (grandHops, otherHops) => {
      const t = new ChildTree();
      const mid = parseWorkflowDefinition({
        id: 'mid',
        version: 1,
        start: 'fan',
        stages: { fan: { parallel: { branches: { g: { role: 'w' }, h: { role: 'w' } }, join: 'all' } } },
      });
      const id = childOf(t, mid, 4, 'm');
      const zero = { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 };
      for (const [branch, hops] of [
        ['g', grandHops],
        ['h', otherHops],
      ] as const) {
        t.decide(id, {
          kind: 'child',
          settle: {
            parentId: id,
            childId: childItemId(id, 1, branch),
            hop: 1,
            branch,
            outcome: 'completed',
            output: null,
            error: null,
            usage: zero,
            ...(hops === undefined ? {} : { hops }),
          },
        });
      }
      expect(t.views.get(id)!.item.state).toBe('completed');
      const [settle] = t.settles(id);
      // Its own hop (the fan-out stage's) and its children's.
      expect(settle!.hops).toBe(1 + grandHops + (otherHops ?? 0));
    },
  );

  it('a canceled child: no output, no error', () => {
    const t = new ChildTree();
    const id = childOf(t, once, 2, 'b');
    t.decide(id, { kind: 'cancel', by: 'op', reason: 'stop' });
    expect(t.settles(id)).toEqual([
      {
        parentId: 'p',
        childId: id,
        hop: 2,
        branch: 'b',
        outcome: 'canceled',
        output: null,
        error: null,
        usage: t.views.get(id)!.item.usage,
        hops: 1,
      },
    ]);
  });

  it('an item with no parent, or no branch, tells no one', () => {
    const cases: (Record<string, string | number | boolean> | null)[] = [
      null,
      { [PARENT_ATTRIBUTE]: 'p' },
      { [BRANCH_ATTRIBUTE]: '1:a' },
      { other: 'x', [BRANCH_ATTRIBUTE]: '1:a' },
      { [PARENT_ATTRIBUTE]: 5, [BRANCH_ATTRIBUTE]: '1:a' },
      { [PARENT_ATTRIBUTE]: 'p', [BRANCH_ATTRIBUTE]: true },
    ];
    for (const attributes of cases) {
      const t = new ChildTree();
      t.create('c', once, { attributes });
      t.answer('c', { parts: [] });
      expect(t.views.get('c')!.item.state).toBe('completed');
      expect(t.rows.filter((r) => r.kind === 'settle')).toEqual([]);
    }
  });
});
