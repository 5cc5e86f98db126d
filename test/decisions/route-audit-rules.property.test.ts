import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { auditRoute } from '../../src/decisions/coordinator/route-audit.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import type { RunState } from '../../src/machines/workflow-run-machine.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a route's audit as `decide` writes it: a success (a hop's,
 * or a join's decided by a child's end) that a `next` rule's condition
 * routes writes one `route` audit entry, by the Coordinator, at the hop
 * that ended, with the stage left, the condition's pointer, the value it
 * read and where the run went (the stage entered, gated or not, or
 * `completed`). A route taken by a rule without a condition, a run that
 * ends over its budget instead, and a child's end that leaves its join
 * open write none.
 */

const T = 50;

/**
 * judge: `/verdict` "again" loops to judge, "next" goes to other (gated or
 * not), a `/score` of T or more completes; anything else goes to plain, by
 * a rule without a condition. other and plain complete.
 */
function definition(gated: boolean) {
  return parseWorkflowDefinition({
    id: 'routes',
    version: 1,
    start: 'judge',
    stages: {
      judge: {
        role: 'w',
        next: [
          { on: 'succeeded', when: { pointer: '/verdict', equals: 'again' }, goto: 'judge', maxTraversals: 20 },
          { on: 'succeeded', when: { pointer: '/verdict', in: ['next', 'onward'] }, goto: 'other' },
          { on: 'succeeded', when: { pointer: '/score', gte: T }, end: 'completed' },
          { on: 'succeeded', goto: 'plain' },
        ],
      },
      other: { role: 'x', ...(gated ? { approval: { approvers: ['boss'] } } : {}) },
      plain: { role: 'y' },
    },
  });
}

interface Output {
  verdict: string;
  score: number;
}

const outputArb: fc.Arbitrary<Output> = fc.record({
  verdict: fc.constantFrom('again', 'again', 'next', 'onward', 'other'),
  score: fc.integer({ min: 0, max: 100 }),
});

/** Where judge's rules lead for an output: the audit data a conditional route writes, or null for plain. */
function expected(o: Output): { pointer: string; read: unknown; to: string } | null {
  if (o.verdict === 'again') return { pointer: '/verdict', read: 'again', to: 'judge' };
  if (o.verdict === 'next' || o.verdict === 'onward') return { pointer: '/verdict', read: o.verdict, to: 'other' };
  if (o.score >= T) return { pointer: '/score', read: o.score, to: 'completed' };
  return null;
}

describe("a route's audit", () => {
  test.prop(
    [
      fc.array(fc.record({ output: outputArb, tokens: fc.integer({ min: 0, max: 30 }) }), {
        minLength: 1,
        maxLength: 8,
      }),
      fc.boolean(),
      fc.option(fc.integer({ min: 1, max: 120 }), { nil: null }),
    ],
    { numRuns: 200 },
  )(
    'a hop success routed by a condition writes one route entry; no condition, or a run over its budget, none',
    (results, gated, maxTokens) => {
      const tree = new ChildTree();
      const id = 'item';
      tree.create(id, definition(gated), { budget: maxTokens === null ? null : { maxTokens } });
      for (const { output, tokens } of results) {
        const before = tree.views.get(id)!;
        if (before.item.finishedAt !== null || before.item.state !== 'running') break;
        const stage = before.item.stage!;
        const hop = before.item.hop;
        tree.now += 5;
        const d = tree.answer(id, { parts: [{ kind: 'data', data: { ...output } }], tokens });
        const after = d.view!.item;
        const routes = d.changes!.audit.filter((a) => a.kind === 'route');
        // Over its budget, the run ends on the result itself (a budget only spent ends it at the next hop).
        const overBudget = maxTokens !== null && after.usage.inputTokens > maxTokens;
        if (overBudget) expect(after.failure?.code).toBe('BUDGET_EXCEEDED');
        const want = stage === 'judge' && !overBudget ? expected(output) : null;
        if (want === null) {
          expect(routes).toEqual([]);
        } else {
          expect(routes).toStrictEqual([
            {
              kind: 'route',
              itemId: id,
              hop,
              actor: 'coordinator',
              data: { stage: 'judge', pointer: want.pointer, read: want.read, to: want.to },
            },
          ]);
          // The run went where the entry says.
          if (want.to === 'completed') expect(after.state).toBe('completed');
          else {
            expect(after.stage).toBe(want.to);
            expect(after.hop).toBe(hop + 1);
            if (after.failure === null) {
              expect(after.state).toBe(want.to === 'other' && gated ? 'awaiting-approval' : 'running');
            }
          }
        }
      }
    },
  );

  test.prop([fc.array(fc.boolean(), { minLength: 1, maxLength: 3 }), fc.nat({ max: 2 })])(
    "a join decided by a child's end and routed by a condition writes one route entry; a join left open, none",
    (oks, pick) => {
      const tree = new ChildTree();
      const id = 'item';
      const branches: Record<string, { role: string }> = {};
      oks.forEach((_, i) => {
        branches[`b${i}`] = { role: 'w' };
      });
      const watched = `b${pick % oks.length}`;
      tree.create(
        id,
        parseWorkflowDefinition({
          id: 'joins',
          version: 1,
          start: 'fan',
          stages: {
            fan: {
              parallel: { branches },
              next: [
                { on: 'succeeded', when: { pointer: `/${watched}/ok`, equals: true }, goto: 'after' },
                { on: 'succeeded', end: 'completed' },
              ],
            },
            after: { role: 'x' },
          },
        }),
      );
      const spawns = tree.spawns(id);
      expect(spawns).toHaveLength(oks.length);
      for (const [i, b] of spawns.entries()) {
        tree.now += 5;
        const d = tree.decide(id, {
          kind: 'child',
          settle: {
            parentId: id,
            childId: b.childId,
            hop: b.hop,
            branch: b.branch,
            outcome: 'completed',
            output: { ok: oks[i]! },
            error: null,
            usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
            hops: 1,
          },
        });
        const routes = d.changes!.audit.filter((a) => a.kind === 'route');
        const last = i === spawns.length - 1;
        const ok = oks[Number(watched.slice(1))];
        if (!last || !ok) {
          expect(routes).toEqual([]);
          expect(d.view!.item.state).toBe(last ? 'completed' : 'running');
        } else {
          expect(routes).toStrictEqual([
            {
              kind: 'route',
              itemId: id,
              hop: 1,
              actor: 'coordinator',
              data: { stage: 'fan', pointer: `/${watched}/ok`, read: true, to: 'after' },
            },
          ]);
          expect(d.view!.item.stage).toBe('after');
        }
      }
    },
  );
});

describe("a route's audit, called on its own", () => {
  /** The working copy of the item at judge, hop out, and the success that routes it to other. */
  function atJudge() {
    const t = new ChildTree();
    t.create('item', definition(false));
    const work = new Work(t.views.get('item')!, t.env());
    const run = work.run!;
    expect(run.value).toBe('running');
    const event: WorkflowRunEvent = {
      type: 'HOP_SUCCEEDED',
      hop: run.context.hop,
      attempt: 1,
      output: { verdict: 'next', score: 0 },
    };
    /** The run as if it took the event: the next hop, at `stage`. */
    const moved = (stage: string): RunState => ({
      value: 'running',
      context: { ...run.context, hop: run.context.hop + 1, stage },
    });
    return { work, run, event, moved };
  }

  it('writes the row once the run went the routed way (the next hop, at the routed stage)', () => {
    const { work, run, event, moved } = atJudge();
    const written = auditRoute(work, event);
    work.run = moved('other');
    written();
    expect(work.audit).toEqual([
      {
        kind: 'route',
        itemId: 'item',
        hop: run.context.hop,
        actor: 'coordinator',
        data: { stage: 'judge', pointer: '/verdict', read: 'next', to: 'other' },
      },
    ]);
  });

  it('writes nothing when the run went elsewhere: the next hop at another stage, the same hop, or no run left', () => {
    for (const after of ['plain', 'same hop', 'none'] as const) {
      const { work, run, event, moved } = atJudge();
      const written = auditRoute(work, event);
      work.run = after === 'plain' ? moved('plain') : after === 'same hop' ? { ...run, value: 'running' } : null;
      written();
      expect(work.audit).toEqual([]);
    }
  });

  it('writes nothing for a run not running when the event came, or no run at all, whatever follows', () => {
    for (const value of ['pending', 'suspended', 'awaiting-approval', 'none'] as const) {
      const { work, run, event, moved } = atJudge();
      work.run = value === 'none' ? null : { ...run, value: value as RunState['value'] };
      const written = auditRoute(work, event);
      work.run = moved('other');
      written();
      expect(work.audit).toEqual([]);
    }
  });
});
