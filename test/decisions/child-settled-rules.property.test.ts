import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { type SettleBody, type SpawnBody, childItemId } from '../../src/decisions/coordinator-decisions.js';
import type { JsonValue } from '../../src/protocol/audit.js';
import type { RunUsage } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a parent taking a child's end (`kind: 'child'`), each stated
 * on its own: an end for an item that is gone or ended is late, one for a
 * branch not running is a duplicate (nothing changes either way); an end
 * taken adds the child's usage and hops to the parent, gives the join the
 * child's outcome, output and error, writes its audit entry and event, and
 * notes a budget it overran; the last child of a hop that started them
 * itself resumes that hop with every child's outcome.
 */

const ZERO: RunUsage = { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 };

const usageArb: fc.Arbitrary<RunUsage> = fc.record({
  inputTokens: fc.nat({ max: 400 }),
  outputTokens: fc.nat({ max: 400 }),
  costUsd: fc.integer({ min: 0, max: 10_000 }).map((n) => n / 1e6),
  elapsedMs: fc.nat({ max: 10_000 }),
});

/** A child's end as its settle row tells it (hop and branch given by the caller). */
const endArb = fc.record({
  outcome: fc.constantFrom('completed', 'completed', 'failed', 'canceled') as fc.Arbitrary<
    'completed' | 'failed' | 'canceled'
  >,
  output: fc.option(fc.dictionary(fc.stringMatching(/^[a-z]{1,3}$/), fc.integer(), { maxKeys: 2 }), { nil: null }),
  error: fc.option(fc.record({ type: fc.constantFrom('Boom', 'Bad'), message: fc.string({ maxLength: 8 }) }), {
    nil: null,
  }),
  usage: usageArb,
  hops: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
});
type End = typeof endArb extends fc.Arbitrary<infer T> ? T : never;

const BRANCHES = ['a', 'b', 'c', 'd'];

/** A parallel stage over `n` role branches (failures collected, or failing the join), then a last stage when `/a/y` exists. */
function fanOut(n: number, collect: boolean) {
  const branches: Record<string, { role: string }> = {};
  for (const name of BRANCHES.slice(0, n)) branches[name] = { role: 'w' };
  return parseWorkflowDefinition({
    id: 'fan',
    version: 1,
    start: 'fan',
    stages: {
      fan: {
        parallel: { branches, join: 'all', onBranchFailure: collect ? 'collect' : 'fail' },
        next: [
          { on: 'succeeded', when: { pointer: '/a/y', exists: true }, goto: 'last' },
          { on: 'succeeded', end: 'completed' },
        ],
      },
      last: { role: 'lead' },
    },
  });
}

function settleOf(branch: string, end: End, hop = 1): SettleBody {
  return {
    parentId: 'p',
    childId: childItemId('p', hop, branch),
    hop,
    branch,
    ...end,
    ...(end.hops === undefined ? {} : { hops: end.hops }),
  };
}

const sum = (a: RunUsage, b: RunUsage): RunUsage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  costUsd: Math.round((a.costUsd + b.costUsd) * 1e9) / 1e9,
  elapsedMs: a.elapsedMs + b.elapsedMs,
});

describe("a parent takes its children's ends", () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 4 }),
      fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 1_500 }), { nil: null }),
      fc.array(fc.tuple(fc.nat({ max: 5 }), endArb), { minLength: 1, maxLength: 8 }),
    ],
    { numRuns: 150 },
  )(
    'each end once: its usage and hops added, its outcome, output and error in the join, its audit entry and event',
    (n, collect, maxTokens, ends) => {
      const t = new ChildTree();
      t.create('p', fanOut(n, collect), { budget: maxTokens === null ? null : { maxTokens } });
      const keys = BRANCHES.slice(0, n);
      let usage = t.views.get('p')!.item.usage;
      let childHops = 0;
      const taken = new Map<string, End>();
      for (const [pick, end] of ends) {
        // A branch of the join, or one it does not have.
        const branch = keys[pick] ?? 'zz';
        const before = t.views.get('p')!;
        const running =
          before.run?.context.join?.branches.find((b) => b.key === branch)?.state === 'running' &&
          before.item.finishedAt === null;
        const d = t.decide('p', { kind: 'child', settle: settleOf(branch, end) });
        if (before.item.finishedAt !== null) {
          expect(d.handling).toBe('late');
          expect(d.changes).toBeNull();
          continue;
        }
        if (!running) {
          // Not waited for (settled before, never a branch): nothing changes.
          expect(d.handling).toBe('duplicate');
          expect(d.changes).toBeNull();
          expect(d.events).toEqual([]);
          expect(t.views.get('p')).toBe(before);
          continue;
        }
        expect(d.handling).toBe('applied');
        // The event the run took (what an inspector is shown): an output and a hops count only when the end has them.
        expect(d.runEvents[0]).toStrictEqual({
          type: 'CHILD_SETTLED',
          hop: 1,
          branch,
          outcome: end.outcome,
          ...(end.output === null ? {} : { output: end.output }),
          ...(end.error === null ? {} : { error: end.error }),
          usage: end.usage,
          ...(end.hops === undefined ? {} : { hops: end.hops }),
        });
        taken.set(branch, end);
        usage = sum(usage, end.usage);
        childHops += end.hops ?? 0;
        const view = d.view!;
        expect(view.item.usage).toEqual(usage);
        expect(d.changes!.audit.filter((a) => a.kind === 'child-settled')).toEqual([
          {
            kind: 'child-settled',
            itemId: 'p',
            hop: 1,
            actor: 'coordinator',
            data: {
              childId: childItemId('p', 1, branch),
              branch,
              outcome: end.outcome,
              ...(end.error === null ? {} : { error: end.error }),
              usage: end.usage,
            },
          },
        ]);
        const events = d.events.filter((e) => e.kind === 'child-settled');
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({
          itemId: 'p',
          hop: 1,
          detail: `child ${branch} ${end.outcome}${end.error === null ? '' : `: ${end.error.type}`}`,
          usage: end.usage,
        });
        const spent = maxTokens !== null && usage.inputTokens + usage.outputTokens > maxTokens;
        if (spent) {
          // The end that overran the budget fails the run, and says so once.
          expect(view.item.state).toBe('failed');
          const overrun = d.events.filter((e) => e.kind === 'budget-exceeded');
          expect(overrun).toHaveLength(1);
          expect(overrun[0]!.hop).toBe(1);
          expect(overrun[0]!.detail).toContain(`of ${maxTokens} tokens`);
          continue;
        }
        expect(d.events.some((e) => e.kind === 'budget-exceeded')).toBe(false);
        const run = view.run;
        if (run === null) continue;
        expect(run.context.childHops ?? 0).toBe(childHops);
        const join = run.context.join ?? null;
        if (join !== null) {
          const b = join.branches.find((x) => x.key === branch)!;
          const state = end.outcome === 'completed' ? 'succeeded' : end.outcome;
          expect(b.state).toBe(state);
          expect(b.output).toEqual(end.output);
          if (state !== 'succeeded') {
            expect(b.error).toEqual(end.error ?? { type: 'ChildCanceled', message: `branch ${branch} was canceled` });
          }
        } else if (collect && run.context.output !== undefined && run.context.output !== null) {
          // The join decided: every child's output under its branch, its error where it failed.
          const output = run.context.output as Record<string, JsonValue>;
          for (const [key, e] of taken) {
            expect(output[key]).toEqual(
              e.outcome === 'completed'
                ? e.output
                : { error: e.error ?? { type: 'ChildCanceled', message: `branch ${key} was canceled` } },
            );
          }
        }
      }
    },
  );

  test.prop([fc.boolean()])("the join's route by a condition is audited when the last end decides it", (withA) => {
    const t = new ChildTree();
    t.create('p', fanOut(2, true));
    t.decide('p', { kind: 'child', settle: settleOf('b', { ...end0, output: { x: 1 } }) });
    const d = t.decide('p', { kind: 'child', settle: settleOf('a', { ...end0, output: withA ? { y: 2 } : { z: 1 } }) });
    const routes = d.changes!.audit.filter((a) => a.kind === 'route');
    if (withA) {
      expect(routes).toEqual([
        {
          kind: 'route',
          itemId: 'p',
          hop: 1,
          actor: 'coordinator',
          data: { stage: 'fan', pointer: '/a/y', read: 2, to: 'last' },
        },
      ]);
      expect(d.view!.run!.context.stage).toBe('last');
    } else {
      expect(routes).toEqual([]);
      expect(d.view!.item.state).toBe('completed');
    }
  });

  it('an end that brings no hops count adds none; one that does adds them', () => {
    const t = new ChildTree();
    t.create('p', fanOut(3, true));
    const a = t.decide('p', { kind: 'child', settle: settleOf('a', { ...end0, hops: undefined }) });
    expect(a.view!.run!.context.childHops ?? 0).toBe(0);
    const b = t.decide('p', { kind: 'child', settle: settleOf('b', { ...end0, hops: 3 }) });
    expect(b.view!.run!.context.childHops).toBe(3);
  });
});

const end0: End = { outcome: 'completed', output: null, error: null, usage: ZERO, hops: 1 };

describe('an end that comes too late, or for a branch not waited for, changes nothing', () => {
  it('an item that is gone, has no run, or ended', () => {
    const t = new ChildTree();
    expect(t.decide('p', { kind: 'child', settle: settleOf('a', end0) })).toMatchObject({
      handling: 'late',
      changes: null,
    });
    t.create('p', fanOut(2, true));
    const live = t.views.get('p')!;
    const settle = { kind: 'child' as const, settle: settleOf('a', end0) };
    // A view without its run, or with an end written, is an ended item's: the end is late.
    t.views.set('p', { ...live, run: null });
    expect(t.decide('p', settle)).toMatchObject({ handling: 'late', changes: null, events: [] });
    t.views.set('p', { ...live, item: { ...live.item, finishedAt: t.now } });
    expect(t.decide('p', settle)).toMatchObject({ handling: 'late', changes: null, events: [] });
    t.views.set('p', live);
    t.decide('p', { kind: 'cancel', by: 'op', reason: 'stop' });
    expect(t.views.get('p')!.item.state).toBe('canceled');
    expect(t.decide('p', settle)).toMatchObject({ handling: 'late', changes: null });
  });

  it('an end of another hop, or a second end of a branch', () => {
    const t = new ChildTree();
    t.create('p', fanOut(2, true));
    expect(t.decide('p', { kind: 'child', settle: settleOf('a', end0, 7) })).toMatchObject({
      handling: 'duplicate',
      changes: null,
    });
    expect(t.decide('p', { kind: 'child', settle: settleOf('a', end0) }).handling).toBe('applied');
    expect(t.decide('p', { kind: 'child', settle: settleOf('a', end0) })).toMatchObject({
      handling: 'duplicate',
      changes: null,
    });
  });
});

// ---------------------------------------------------------------------------------------------
// A hop that started children itself (its handler's `spawn`).

/** A hop that may start children itself (`lead`); a stage before it when `prep`. */
function leadFlow(prep: boolean) {
  return parseWorkflowDefinition({
    id: 'lead-flow',
    version: 1,
    start: prep ? 'prep' : 'lead',
    stages: {
      ...(prep ? { prep: { role: 'w', next: [{ on: 'succeeded', goto: 'lead' }] } } : {}),
      lead: {
        role: 'lead',
        next: [{ on: 'succeeded', goto: 'after' }],
      },
      after: { role: 'w' },
    },
  });
}

describe('the last child of a hop that started them itself resumes the hop', () => {
  test.prop(
    [
      fc.array(endArb, { minLength: 1, maxLength: 5 }),
      fc.array(fc.nat(), { minLength: 5, maxLength: 5 }),
      fc.boolean(),
    ],
    { numRuns: 60 },
  )('with every child outcome, output and error in the order its handler gave them', (ends, order, prep) => {
    const t = new ChildTree();
    t.create('p', leadFlow(prep));
    // Another hop of the item before it: a stage's before it.
    if (prep) t.answer('p', { parts: [] });
    const hopId = t.out('p')!.taskId;
    t.answer('p', {
      spawn: {
        continuationToken: 'cont-1',
        children: ends.map(() => ({ workflow: 'sub@1', input: [{ kind: 'text' as const, text: 'x' }] })),
      },
    });
    const rows = t.spawns('p');
    expect(rows).toHaveLength(ends.length);
    expect(t.views.get('p')!.hops.get(hopId)!.state).toBe('suspended');
    // The children end in any order.
    const pending = rows.map((r: SpawnBody, i) => ({ row: r, end: ends[i]! }));
    const ordered: typeof pending = [];
    for (const k of order) if (pending.length > 0) ordered.push(...pending.splice(k % pending.length, 1));
    ordered.push(...pending);
    for (const [i, { row, end }] of ordered.entries()) {
      const d = t.decide('p', { kind: 'child', settle: settleOf(row.branch, end, row.hop) });
      expect(d.handling).toBe('applied');
      expect(d.changes!.created).toBe(false);
      const signals = d.changes!.outbox.filter((o) => o.kind === 'signal');
      const resumed = d.events.filter((e) => e.kind === 'resumed');
      if (i < ordered.length - 1) {
        expect(signals).toEqual([]);
        expect(resumed).toEqual([]);
        expect(d.view!.hops.get(hopId)!.state).toBe('suspended');
        continue;
      }
      // The last: the hop is out again (it alone), its reply every child's end.
      expect(d.view!.hops.get(hopId)!.state).toBe('dispatched');
      const others = [...d.view!.hops.values()].filter((h) => h.id !== hopId);
      expect(others.map((h) => h.state)).toEqual(
        [...t.views.get('p')!.hops.values()].filter((h) => h.id !== hopId).map((h) => h.state),
      );
      expect(others.some((h) => h.state === 'dispatched')).toBe(false);
      expect(resumed).toHaveLength(1);
      expect(signals).toHaveLength(1);
      const reply = signals[0]!.body as { parts: { kind: string; data: { children: unknown[] } }[] };
      expect(reply.parts[0]!.data.children).toEqual(
        rows.map((r, k) => {
          const e = ends[k]!;
          const state = e.outcome === 'completed' ? 'succeeded' : e.outcome;
          return {
            key: r.branch,
            outcome: e.outcome,
            output: e.output,
            error:
              state === 'succeeded'
                ? null
                : (e.error ?? { type: 'ChildCanceled', message: `branch ${r.branch} was canceled` }),
          };
        }),
      );
    }
  });

  it('a parallel stage that was waiting on its children is not a hop to resume', () => {
    const t = new ChildTree();
    t.create('p', fanOut(1, true));
    const d = t.decide('p', { kind: 'child', settle: settleOf('a', { ...end0, output: { a: 1 } }) });
    expect(d.changes!.outbox.filter((o) => o.kind === 'signal')).toEqual([]);
    expect(d.events.filter((e) => e.kind === 'resumed')).toEqual([]);
  });
});
