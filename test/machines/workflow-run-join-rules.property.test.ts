import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  type BranchState,
  DEFAULT_MAP_CONCURRENCY,
  DEFAULT_MAP_MAX_ITEMS,
  type JoinBranch,
  type RunJoin,
  branchInput,
  branchRunning,
  carve,
  carveAll,
  isFanOutStage,
  joinOutcome,
  joinOutput,
  openJoin,
  settleBranch,
  spawnJoin,
} from '../../src/machines/workflow-run-join.js';
import { joinSettledBy, settledOf } from '../../src/machines/workflow-run-routing.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import type { BudgetCarve, WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { ItemBudget } from '../../src/workflow/records.js';

/**
 * The rules of a stage's join, each stated on its own, on the join functions
 * themselves: which stages fan out, the join each opens (its need, its mode,
 * its concurrency, each branch's carve of what the parent has left), a map
 * refused at once, a hop's own children, each child's share, the joined
 * output, how a join fails and what its failure says, and what a child is
 * given as input.
 */

const NO_USE = { inputTokens: 0, outputTokens: 0, costUsd: 0 };

function def(stages: Record<string, object>, start = Object.keys(stages)[0]!): WorkflowDefinition {
  return parseWorkflowDefinition({ id: 'j', version: 1, start, stages });
}

describe('which stages fan out', () => {
  it('a parallel stage, a map, a stage running another workflow; not a role stage nor no stage', () => {
    const d = def({
      role: { role: 'w', next: [{ on: 'succeeded', goto: 'par' }] },
      par: { parallel: { branches: { a: { role: 'w' } } }, next: [{ on: 'succeeded', goto: 'map' }] },
      map: { role: 'w', forEach: '/xs', next: [{ on: 'succeeded', goto: 'call' }] },
      call: { workflow: 'sub@1' },
    });
    expect(isFanOutStage(d.stages.role)).toBe(false);
    expect(isFanOutStage(undefined)).toBe(false);
    expect(isFanOutStage(d.stages.par)).toBe(true);
    expect(isFanOutStage(d.stages.map)).toBe(true);
    expect(isFanOutStage(d.stages.call)).toBe(true);
  });
});

const usedArb = fc.record({
  inputTokens: fc.nat({ max: 3_000 }),
  outputTokens: fc.nat({ max: 3_000 }),
  costUsd: fc.integer({ min: 0, max: 3_000_000 }).map((n) => n / 1e6),
  hops: fc.option(fc.nat({ max: 40 }), { nil: undefined }),
});

const budgetArb: fc.Arbitrary<ItemBudget> = fc.record(
  {
    maxTokens: fc.integer({ min: 1, max: 10_000 }),
    maxCostUsd: fc.integer({ min: 1, max: 10_000_000 }).map((n) => n / 1e6),
    maxHops: fc.integer({ min: 1, max: 60 }),
  },
  { requiredKeys: [] },
);

describe("a workflow stage's one child", () => {
  test.prop([fc.option(budgetArb, { nil: null }), usedArb, fc.integer({ min: 1, max: 50 })])(
    'needs its one child; its carve is what the parent has left past what it used, at least one unit',
    (budget, used, hop) => {
      const d = def({ call: { workflow: 'sub@1' } });
      const opening = openJoin(d, 'call', hop, null, budget, used);
      expect(opening.kind).toBe('open');
      const join = (opening as { join: RunJoin }).join;
      expect(join).toMatchObject({
        stage: 'call',
        hop,
        kind: 'workflow',
        need: 1,
        all: true,
        collect: false,
        maxConcurrency: 1,
      });
      expect(join.branches.map((b) => [b.key, b.state])).toEqual([['child', 'waiting']]);
      const want: ItemBudget = {};
      if (budget?.maxTokens !== undefined) {
        want.maxTokens = Math.max(1, budget.maxTokens - used.inputTokens - used.outputTokens);
      }
      if (budget?.maxCostUsd !== undefined) {
        want.maxCostUsd = Math.max(1e-9, Math.round((budget.maxCostUsd - used.costUsd) * 1e9) / 1e9);
      }
      if (budget?.maxHops !== undefined) want.maxHops = Math.max(1, budget.maxHops - (used.hops ?? 0));
      const got = join.branches[0]!.budget;
      if (budget === null || Object.keys(want).length === 0) expect(got).toBeNull();
      else {
        expect(got).not.toBeNull();
        expect(got!.maxTokens).toBe(want.maxTokens);
        expect(got!.maxHops).toBe(want.maxHops);
        if (want.maxCostUsd === undefined) expect(got!.maxCostUsd).toBeUndefined();
        else expect(got!.maxCostUsd).toBeCloseTo(want.maxCostUsd, 8);
      }
    },
  );
});

describe('the join of a parallel stage', () => {
  const modeArb = fc.oneof(
    fc.constant('all' as const),
    fc.constant('any' as const),
    fc.integer({ min: 1, max: 8 }).map((atLeast) => ({ atLeast })),
  );
  test.prop([
    fc.integer({ min: 1, max: 6 }),
    modeArb,
    fc.boolean(),
    fc.array(fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined }), { minLength: 6, maxLength: 6 }),
    fc.option(fc.integer({ min: 1, max: 300 }), { nil: undefined }),
  ])(
    'needs every branch, one, or at least k of them; all its branches at once; each carve its own or the stage`s',
    (n, mode, collect, own, stageCarve) => {
      const names = ['p', 'q', 'r', 's', 't', 'u'].slice(0, n);
      const branches: Record<string, object> = {};
      names.forEach((name, i) => {
        branches[name] = { role: 'w', ...(own[i] === undefined ? {} : { budget: { maxTokens: own[i] } }) };
      });
      const parsed = def({
        fan: {
          parallel: {
            branches,
            join: typeof mode === 'object' ? { atLeast: 1 } : mode,
            onBranchFailure: collect ? 'collect' : 'fail',
          },
          ...(stageCarve === undefined ? {} : { budget: { maxTokens: stageCarve } }),
        },
      });
      // An `atLeast` past the branches (which a definition refuses) needs them all, not more.
      const d = structuredClone(parsed);
      d.stages.fan!.parallel!.join = mode;
      const opening = openJoin(d, 'fan', 4, null, null, NO_USE);
      expect(opening.kind).toBe('open');
      const join = (opening as { join: RunJoin }).join;
      const need = mode === 'all' ? n : mode === 'any' ? 1 : Math.min(mode.atLeast, n);
      expect(join).toMatchObject({
        stage: 'fan',
        hop: 4,
        kind: 'parallel',
        need,
        all: mode === 'all',
        collect,
        maxConcurrency: n,
      });
      expect(join.branches.map((b) => b.key)).toEqual(names);
      expect(join.branches.every((b) => b.state === 'waiting' && b.output === null && b.error === null)).toBe(true);
      names.forEach((_, i) => {
        const tokens = own[i] ?? stageCarve;
        expect(join.branches[i]!.budget).toEqual(tokens === undefined ? null : { maxTokens: tokens });
      });
    },
  );
});

describe('the join of a map', () => {
  test.prop([
    fc.array(fc.jsonValue({ maxDepth: 1 }), { minLength: 1, maxLength: 12 }),
    fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
    fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }),
    fc.option(fc.integer({ min: 2, max: 400 }), { nil: undefined }),
  ])(
    'a child per element (keyed by index), all needed, a failure failing it; at most maxItems, maxConcurrency at once',
    (list, maxItems, maxConcurrency, stageCarve) => {
      const d = def({
        map: {
          role: 'w',
          forEach: '/xs',
          ...(maxItems === undefined ? {} : { maxItems }),
          ...(maxConcurrency === undefined ? {} : { maxConcurrency }),
          ...(stageCarve === undefined ? {} : { budget: { maxTokens: stageCarve } }),
        },
      });
      const opening = openJoin(d, 'map', 2, { xs: list }, null, NO_USE);
      const max = maxItems ?? DEFAULT_MAP_MAX_ITEMS;
      if (list.length > max) {
        expect(opening).toEqual({
          kind: 'invalid',
          errorType: 'MapTooLarge',
          message: `stage map: forEach "/xs" has ${list.length} elements, over its maxItems of ${max}: raise maxItems or split the list`,
        });
        return;
      }
      expect(opening.kind).toBe('open');
      const join = (opening as { join: RunJoin }).join;
      expect(join).toMatchObject({
        stage: 'map',
        hop: 2,
        kind: 'map',
        need: list.length,
        all: true,
        collect: false,
        maxConcurrency: maxConcurrency ?? DEFAULT_MAP_CONCURRENCY,
      });
      expect(join.branches.map((b) => b.key)).toEqual(list.map((_, i) => String(i)));
      expect(join.branches.every((b) => b.state === 'waiting')).toBe(true);
      for (const b of join.branches) {
        expect(b.budget).toEqual(stageCarve === undefined ? null : { maxTokens: stageCarve });
        // Each child is given its element.
        expect(branchInput(join, d, b.key, { xs: list })).toEqual(list[Number(b.key)] ?? null);
      }
    },
  );

  it('an empty list succeeds at once with an empty list; exactly maxItems elements open', () => {
    const d = def({ map: { role: 'w', forEach: '/xs', maxItems: 3 } });
    expect(openJoin(d, 'map', 1, { xs: [] }, null, NO_USE)).toEqual({ kind: 'empty', output: [] });
    expect(openJoin(d, 'map', 1, { xs: [1, 2, 3] }, null, NO_USE).kind).toBe('open');
    const dflt = def({ map: { role: 'w', forEach: '/xs' } });
    expect(DEFAULT_MAP_MAX_ITEMS).toBe(1_000);
    expect(DEFAULT_MAP_CONCURRENCY).toBe(8);
    expect(openJoin(dflt, 'map', 1, { xs: new Array(1_000).fill(0) }, null, NO_USE).kind).toBe('open');
    expect(openJoin(dflt, 'map', 1, { xs: new Array(1_001).fill(0) }, null, NO_USE)).toMatchObject({
      kind: 'invalid',
      errorType: 'MapTooLarge',
    });
  });

  it('a map over something not a list, or over nothing, fails the stage saying which', () => {
    const d = def({ map: { role: 'w', forEach: '/xs' } });
    expect(openJoin(d, 'map', 1, { xs: 'nope' }, null, NO_USE)).toEqual({
      kind: 'invalid',
      errorType: 'MapInputInvalid',
      message: `stage map: forEach "/xs" is not a list: the data part of the stage run just before this one must hold a list there`,
    });
    // What the previous output holds instead is named: a map entered again from a later stage reads that stage's.
    const tail = 'the data part of the stage run just before this one must hold a list there';
    const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    for (const [output, shape] of [
      [{ ys: [1], qa: { verdict: 'ok' } }, 'an object with ys, qa'],
      // Eight fields are all named; past eight, the rest are left out.
      [keys(8), 'an object with k0, k1, k2, k3, k4, k5, k6, k7'],
      [keys(9), 'an object with k0, k1, k2, k3, k4, k5, k6, k7, ...'],
      [{}, 'an empty object'],
      [[1, 2], 'a list'],
      ['text', 'a text'],
      [3, 'a number'],
      [true, 'a boolean'],
      [null, 'there is none'],
      [undefined, 'there is none'],
    ] as const) {
      expect(openJoin(d, 'map', 1, output, null, NO_USE)).toEqual({
        kind: 'invalid',
        errorType: 'MapInputInvalid',
        message: `stage map: forEach "/xs" is not in the previous output (${shape}): ${tail}`,
      });
    }
  });
});

describe("the join of a hop's own children", () => {
  test.prop([
    fc.array(
      fc.record({
        // A carve sets one limit or more: an empty one is none.
        budget: fc
          .record(
            { maxTokens: fc.integer({ min: 1, max: 200 }), deadline: fc.integer({ min: 1, max: 1e6 }) },
            { requiredKeys: [] },
          )
          .map((c) => (Object.keys(c).length === 0 ? undefined : c)),
      }),
      { minLength: 1, maxLength: 8 },
    ),
    fc.option(budgetArb, { nil: null }),
    usedArb,
  ])(
    'every child running at once, every outcome kept; carves as for any join, deadlines as carved',
    (children, budget, used) => {
      const keyed = children.map((c, i) => ({ key: `s${i}`, budget: c.budget as BudgetCarve | undefined }));
      const join = spawnJoin('lead', 3, keyed, budget, used);
      const n = children.length;
      expect(join).toMatchObject({
        stage: 'lead',
        hop: 3,
        kind: 'spawn',
        need: n,
        all: true,
        collect: true,
        maxConcurrency: n,
      });
      expect(join.branches.map((b) => [b.key, b.state])).toEqual(keyed.map((c) => [c.key, 'running']));
      // The same carves a stage's join gives (the parent's budget less what it used).
      const d = def({
        call: {
          parallel: {
            branches: Object.fromEntries(
              keyed.map((c) => [c.key, { workflow: 'sub@1', ...(c.budget === undefined ? {} : { budget: c.budget }) }]),
            ),
          },
        },
      });
      const opened = (openJoin(d, 'call', 3, null, budget, used) as { join: RunJoin }).join;
      expect(join.branches.map((b) => b.budget)).toEqual(opened.branches.map((b) => b.budget));
      keyed.forEach((c, i) => {
        const b = join.branches[i]!;
        if (c.budget?.deadline === undefined) expect('deadlineMs' in b).toBe(false);
        else expect(b.deadlineMs).toBe(c.budget.deadline);
        expect(opened.branches[i]!.deadlineMs).toBe(b.deadlineMs);
      });
    },
  );
});

describe("each child's share of what the parent has left", () => {
  test.prop([
    fc.option(
      fc.record(
        {
          maxTokens: fc.integer({ min: 1, max: 5_000 }),
          maxCostUsd: fc.integer({ min: 1, max: 5_000_000 }).map((n) => n / 1e6),
          maxHops: fc.integer({ min: 1, max: 50 }),
        },
        { requiredKeys: [] },
      ),
      { nil: undefined },
    ),
    fc.option(
      fc.record(
        {
          maxTokens: fc.integer({ min: 0, max: 10_000 }),
          maxCostUsd: fc.integer({ min: 0, max: 10_000_000 }).map((n) => n / 1e6),
          maxHops: fc.integer({ min: 0, max: 100 }),
        },
        { requiredKeys: [] },
      ),
      { nil: null },
    ),
    fc.integer({ min: 1, max: 9 }),
  ])(
    'an explicit carve capped at what is left, else an nth of what is left (floored); never under one unit',
    (explicit, left, n) => {
      const got = carve(explicit, left, n);
      if (explicit === undefined && left === null) {
        expect(got).toBeNull();
        return;
      }
      const want: ItemBudget = {};
      const tokens =
        explicit?.maxTokens ?? (left?.maxTokens === undefined ? undefined : Math.floor(left.maxTokens / n));
      if (tokens !== undefined) want.maxTokens = Math.max(1, Math.min(tokens, left?.maxTokens ?? tokens));
      const hops = explicit?.maxHops ?? (left?.maxHops === undefined ? undefined : Math.floor(left.maxHops / n));
      if (hops !== undefined) want.maxHops = Math.max(1, Math.min(hops, left?.maxHops ?? hops));
      const cost =
        explicit?.maxCostUsd ??
        (left?.maxCostUsd === undefined ? undefined : Math.floor((left.maxCostUsd / n) * 1e9) / 1e9);
      if (cost !== undefined) want.maxCostUsd = Math.max(1e-9, Math.min(cost, left?.maxCostUsd ?? cost));
      if (Object.keys(want).length === 0) expect(got).toBeNull();
      else expect(got).toEqual(want);
    },
  );

  it('an nth of what is left, rounded down; a carve past what is left is cut to it', () => {
    expect(carve(undefined, { maxTokens: 10, maxHops: 7, maxCostUsd: 1 }, 3)).toEqual({
      maxTokens: 3,
      maxHops: 2,
      maxCostUsd: 0.333333333,
    });
    expect(carve({ maxTokens: 50, maxCostUsd: 2 }, { maxTokens: 20, maxCostUsd: 0.5 }, 1)).toEqual({
      maxTokens: 20,
      maxCostUsd: 0.5,
    });
    expect(carve({ maxTokens: 5 }, null, 4)).toEqual({ maxTokens: 5 });
    expect(carve({}, {}, 2)).toBeNull();
    expect(carve(undefined, { maxTokens: 0 }, 2)).toEqual({ maxTokens: 1 });
  });

  test.prop([
    fc.integer({ min: 1, max: 10 }),
    fc.integer({ min: 0, max: 10_000 }),
    fc.integer({ min: 0, max: 10_000_000 }).map((c) => c / 1e6),
    fc.integer({ min: 0, max: 100 }),
  ])(
    'children without a carve share what is left equally, rounded down (a nano-dollar for cost)',
    (n, tokens, cost, hops) => {
      const carves = carveAll(new Array<undefined>(n).fill(undefined), {
        maxTokens: tokens,
        maxCostUsd: cost,
        maxHops: hops,
      });
      const share = (total: number) => Math.max(1, Math.floor(total / n));
      // Every child gets the same share, but once what is left runs out each gets the least unit.
      for (const [i, c] of carves.entries()) {
        const enough = (total: number, s: number) => total - i * s >= s;
        expect(c!.maxTokens).toBe(enough(tokens, share(tokens)) ? share(tokens) : 1);
        expect(c!.maxHops).toBe(enough(hops, share(hops)) ? share(hops) : 1);
        const costShare = Math.floor((cost / n) * 1e9) / 1e9;
        if (costShare >= 1e-9 && cost - i * costShare >= costShare - 1e-9) {
          expect(c!.maxCostUsd).toBeCloseTo(costShare, 9);
        }
      }
    },
  );

  test.prop([
    fc.array(fc.option(fc.record({ maxTokens: fc.integer({ min: 1, max: 400 }) }), { nil: undefined }), {
      minLength: 1,
      maxLength: 8,
    }),
    fc.integer({ min: 0, max: 3_000 }),
  ])('explicit carves first, the rest shared; each capped at what the ones before it left', (explicit, tokens) => {
    const carves = carveAll(explicit, { maxTokens: tokens });
    const given = explicit.reduce((s, e) => s + (e?.maxTokens ?? 0), 0);
    const sharers = explicit.filter((e) => e === undefined).length;
    const share = sharers === 0 ? 0 : Math.floor(Math.max(0, tokens - given) / sharers);
    let rest = tokens;
    for (const [i, c] of carves.entries()) {
      const wanted = explicit[i]?.maxTokens ?? share;
      expect(c!.maxTokens).toBe(Math.max(1, Math.min(wanted, rest)));
      rest -= c!.maxTokens!;
    }
  });

  test.prop([
    fc.array(
      fc.option(fc.record({ maxCostUsd: fc.integer({ min: 1, max: 400_000 }).map((n) => n / 1e6) }), {
        nil: undefined,
      }),
      { minLength: 1, maxLength: 8 },
    ),
    fc.integer({ min: 0, max: 3_000_000 }).map((n) => n / 1e6),
  ])('a cost carve is capped at what the ones before it left, to the nano-dollar', (explicit, cost) => {
    const carves = carveAll(explicit, { maxCostUsd: cost });
    const given = explicit.reduce((s, e) => s + (e?.maxCostUsd ?? 0), 0);
    const sharers = explicit.filter((e) => e === undefined).length;
    const share = sharers === 0 ? 0 : Math.floor((Math.max(0, cost - given) / sharers) * 1e9) / 1e9;
    let rest = cost;
    for (const [i, c] of carves.entries()) {
      const wanted = explicit[i]?.maxCostUsd ?? share;
      expect(c!.maxCostUsd).toBeCloseTo(Math.max(1e-9, Math.min(wanted, rest)), 9);
      rest = Math.round((rest - c!.maxCostUsd!) * 1e9) / 1e9;
    }
  });

  it('with no budget left to share, a child without a carve has no bound, one with a carve has its carve', () => {
    expect(carveAll([undefined, { maxTokens: 7 }], null)).toEqual([null, { maxTokens: 7 }]);
    expect(carveAll([{ deadline: 5 }], null)).toEqual([null]);
    expect(carveAll([undefined, undefined], {})).toEqual([null, null]);
  });
});

// ---------------------------------------------------------------------------------------------
// A join's branches settled: the output, the outcome, the failure.

const branch = (key: string, state: BranchState, extra: Partial<JoinBranch> = {}): JoinBranch => ({
  key,
  state,
  output: null,
  error: null,
  budget: null,
  ...extra,
});

function joinOf(kind: RunJoin['kind'], branches: JoinBranch[], over: Partial<RunJoin> = {}): RunJoin {
  return {
    stage: 'fan',
    hop: 2,
    kind,
    need: branches.length,
    all: true,
    collect: false,
    maxConcurrency: branches.length,
    branches,
    ...over,
  };
}

describe('settling a branch', () => {
  test.prop([
    fc.uniqueArray(fc.stringMatching(/^[a-z]{1,3}$/), { minLength: 1, maxLength: 6 }),
    fc.nat(),
    fc.constantFrom('completed', 'failed', 'canceled') as fc.Arbitrary<'completed' | 'failed' | 'canceled'>,
    fc.option(fc.jsonValue({ maxDepth: 1 }) as fc.Arbitrary<JsonValue>, { nil: undefined }),
    fc.option(fc.record({ type: fc.constantFrom('A', 'B'), message: fc.string({ maxLength: 5 }) }), {
      nil: undefined,
    }),
  ])(
    'takes its outcome and output; a branch that did not succeed keeps its error, else a cancel',
    (keys, pick, outcome, output, error) => {
      const join = joinOf(
        'parallel',
        keys.map((k) => branch(k, 'running')),
      );
      const key = keys[pick % keys.length]!;
      const settled = settleBranch(join, key, {
        outcome,
        ...(output === undefined ? {} : { output }),
        ...(error === undefined ? {} : { error }),
      });
      const state = outcome === 'completed' ? 'succeeded' : outcome === 'failed' ? 'failed' : 'canceled';
      for (const [i, b] of settled.branches.entries()) {
        if (b.key !== key) {
          expect(b).toBe(join.branches[i]);
          continue;
        }
        expect(b.state).toBe(state);
        expect(b.output).toEqual(output ?? null);
        expect(b.error).toEqual(
          state === 'succeeded' ? null : (error ?? { type: 'ChildCanceled', message: `branch ${key} was canceled` }),
        );
      }
      expect(branchRunning(settled, 2, key)).toBe(false);
      expect(branchRunning(join, 2, key)).toBe(true);
      expect(branchRunning(null, 2, key)).toBe(false);
    },
  );
});

describe('the joined output', () => {
  it('a map and a hop by position, a parallel stage by name, a workflow stage its child; a failure as its error', () => {
    const branches = [
      branch('a', 'succeeded', { output: { x: 1 } }),
      branch('b', 'failed', { error: { type: 'Boom', message: 'no' } }),
      branch('c', 'running'),
      branch('d', 'canceled', { error: { type: 'ChildCanceled', message: 'c' } }),
    ];
    const values = [
      { x: 1 },
      { error: { type: 'Boom', message: 'no' } },
      null,
      { error: { type: 'ChildCanceled', message: 'c' } },
    ];
    expect(joinOutput(joinOf('map', branches))).toEqual(values);
    expect(joinOutput(joinOf('spawn', branches))).toEqual(values);
    expect(joinOutput(joinOf('parallel', branches))).toEqual({ a: values[0], b: values[1], c: null, d: values[3] });
    expect(joinOutput(joinOf('workflow', [branches[1]!]))).toEqual(values[1]);
    expect(joinOutput(joinOf('workflow', [branches[0]!]))).toEqual({ x: 1 });
  });
});

describe('how a join fails, and what it says', () => {
  test.prop([
    fc.array(fc.constantFrom<BranchState>('succeeded', 'failed', 'canceled', 'running', 'waiting'), {
      minLength: 1,
      maxLength: 9,
    }),
    fc.integer({ min: 1, max: 9 }),
    fc.boolean(),
  ])('names the failed branches (the first five), counts the successes, says what was needed', (states, need, all) => {
    const branches = states.map((s, i) =>
      branch(`k${i}`, s, s === 'failed' ? { error: { type: `E${i}`, message: 'm' } } : {}),
    );
    const join = joinOf('parallel', branches, { need: Math.min(need, states.length), all, collect: false });
    const outcome = joinOutcome(join);
    if (outcome.status !== 'failed') return;
    const failed = branches.filter((b) => b.state === 'failed' || b.state === 'canceled');
    const succeeded = branches.filter((b) => b.state === 'succeeded').length;
    const n = branches.length;
    const named = failed.slice(0, 5).map((b) => `${b.key}: ${b.error?.type ?? b.state}`);
    expect(outcome.errorType).toBe('BranchFailed');
    expect(outcome.message).toBe(
      `stage fan: ${failed.length} of ${n} branch${n === 1 ? '' : 'es'} failed (${named.join(', ')}${
        failed.length > 5 ? ', ...' : ''
      }), ${succeeded} succeeded, ${join.need} needed`,
    );
  });

  it("a workflow stage's child: its error's type and message, or that it was canceled", () => {
    const failed = joinOf('workflow', [branch('child', 'failed', { error: { type: 'Boom', message: 'it broke' } })]);
    expect(joinOutcome(failed)).toEqual({
      status: 'failed',
      errorType: 'Boom',
      message: 'the child work item of stage fan failed: it broke',
    });
    const canceled = joinOf('workflow', [branch('child', 'canceled')]);
    expect(joinOutcome(canceled)).toEqual({
      status: 'failed',
      errorType: 'ChildFailed',
      message: 'the child work item of stage fan was canceled',
    });
    const bare = joinOf('workflow', [branch('child', 'failed')]);
    expect(joinOutcome(bare)).toEqual({
      status: 'failed',
      errorType: 'ChildFailed',
      message: 'the child work item of stage fan failed: ',
    });
  });

  it('one branch of one: "branch", not "branches"; six failed: the first five named', () => {
    const one = joinOf('parallel', [branch('a', 'canceled')]);
    expect(joinOutcome(one)).toMatchObject({
      message: 'stage fan: 1 of 1 branch failed (a: canceled), 0 succeeded, 1 needed',
    });
    const six = joinOf(
      'map',
      ['0', '1', '2', '3', '4', '5'].map((k) => branch(k, 'failed', { error: { type: 'X', message: '' } })),
    );
    expect(joinOutcome(six)).toMatchObject({
      errorType: 'BranchFailed',
      message: 'stage fan: 6 of 6 branches failed (0: X, 1: X, 2: X, 3: X, 4: X, ...), 0 succeeded, 6 needed',
    });
  });
});

describe('what a child is given', () => {
  test.prop([fc.jsonValue({ maxDepth: 2 })])(
    "a parallel or workflow stage's child: the previous output as it is; none when there is none",
    (output) => {
      const d = def({ fan: { parallel: { branches: { a: { role: 'w' } } } } });
      const join = joinOf('parallel', [branch('a', 'waiting')]);
      expect(branchInput(join, d, 'a', output)).toEqual(output);
      expect(branchInput(join, d, 'a', undefined)).toBeNull();
    },
  );

  it("a map's child: its element; nothing when the list is gone or the element is not there", () => {
    const d = def({ map: { role: 'w', forEach: '/xs' } });
    const join = joinOf('map', [branch('0', 'waiting'), branch('1', 'waiting')], { stage: 'map' });
    expect(branchInput(join, d, '1', { xs: ['a', 'b'] })).toBe('b');
    expect(branchInput(join, d, '5', { xs: ['a', 'b'] })).toBeNull();
    expect(branchInput(join, d, '0', { xs: 'a' })).toBeNull();
    expect(branchInput(join, d, '0', { ys: ['a'] })).toBeNull();
    expect(branchInput(join, d, '0', undefined)).toBeNull();
  });
});

describe("a child's end settles the join once per event", () => {
  const outcomeArb = fc.constantFrom('completed' as const, 'failed' as const, 'canceled' as const);
  test.prop([
    fc.integer({ min: 1, max: 40 }),
    fc.nat(60),
    outcomeArb,
    fc.option(fc.jsonValue({ maxDepth: 1 }), { nil: undefined }),
    fc.option(fc.record({ type: fc.string({ maxLength: 6 }), message: fc.string({ maxLength: 12 }) }), {
      nil: undefined,
    }),
  ])(
    'the join an event settles is what settleBranch makes, the same join however often it is asked',
    (n, at, outcome, output, error) => {
      const join = spawnJoin(
        'fan',
        2,
        Array.from({ length: n }, (_, i) => ({ key: String(i) })),
        null,
        NO_USE,
      );
      const event = {
        type: 'CHILD_SETTLED' as const,
        hop: 2,
        branch: String(at % (n + 2)),
        outcome,
        ...(output === undefined ? {} : { output: output as JsonValue }),
        ...(error === undefined ? {} : { error }),
        usage: { ...NO_USE, elapsedMs: 0 },
      };
      const settled = joinSettledBy(join, event);
      expect(settled).toEqual(settleBranch(join, event.branch, settledOf(event)));
      expect(joinSettledBy(join, event)).toBe(settled);
      // Another event object saying the same: an equal join, made anew; another join: its own.
      const again = { ...event };
      expect(joinSettledBy(join, again)).toEqual(settled);
      expect(joinSettledBy(join, again)).not.toBe(settled);
      const other = { ...join, stage: 'other' };
      expect(joinSettledBy(other, event)).toEqual({ ...settled, stage: 'other' });
      // The join asked of is not changed.
      expect(join.branches.every((b) => b.state === 'running')).toBe(true);
    },
  );
});
