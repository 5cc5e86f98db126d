import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  type Decision,
  type SettleBody,
  type SpawnBody,
  childItemId,
} from '../../src/decisions/coordinator-decisions.js';
import type { RunUsage } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { ChildTree } from './child-tree.js';

/**
 * A parent takes several children's ends in one decision (`siblings`), as
 * the Coordinator settles a batch's ends: the parent ends as a decision per
 * end leaves it (the same join, usage, output and failure; the same
 * children asked for, in the same order, and the same ones canceled), with
 * one `spawn` entry for what the ends started where a decision per end
 * writes one each.
 */

type End = {
  outcome: 'completed' | 'failed' | 'canceled';
  tokens: number;
};

const endArb: fc.Arbitrary<End> = fc.record({
  outcome: fc.constantFrom('completed', 'completed', 'completed', 'failed', 'canceled') as fc.Arbitrary<End['outcome']>,
  tokens: fc.nat({ max: 60 }),
});

/** A plan, a map over its list (`maxConcurrency` at once), then a last stage; a map's failure ends the run. */
function mapFlow(maxConcurrency: number) {
  return parseWorkflowDefinition({
    id: 'batch',
    version: 1,
    start: 'plan',
    stages: {
      plan: { role: 'lead', next: [{ on: 'succeeded', goto: 'map' }] },
      map: { role: 'w', forEach: '/list', maxConcurrency, maxItems: 20, next: [{ on: 'succeeded', goto: 'last' }] },
      last: { role: 'lead' },
    },
  });
}

const usageOf = (tokens: number): RunUsage => ({ inputTokens: tokens, outputTokens: 0, costUsd: 0, elapsedMs: 1 });

function settleOf(index: number, end: End): SettleBody {
  const branch = String(index);
  return {
    parentId: 'p',
    childId: childItemId('p', 2, branch),
    hop: 2,
    branch,
    outcome: end.outcome,
    output: end.outcome === 'completed' ? { i: index } : null,
    error: end.outcome === 'failed' ? { type: 'Boom', message: 'no' } : null,
    usage: usageOf(end.tokens),
    hops: 1,
  };
}

/** A parent whose map has opened over `n` elements. */
function opened(n: number, maxConcurrency: number, maxTokens: number | null): ChildTree {
  const t = new ChildTree();
  t.create('p', mapFlow(maxConcurrency), { budget: maxTokens === null ? null : { maxTokens } });
  t.answer('p', { parts: [{ kind: 'data', data: { list: Array.from({ length: n }, (_, i) => i) } }] });
  return t;
}

/** What the parent's state and rows say, for comparing two ways of taking the same ends. */
function outcomeOf(t: ChildTree, decisions: Decision[]) {
  const view = t.views.get('p')!;
  const ctx = view.run?.context;
  const audit = decisions.flatMap((d) => d.changes?.audit ?? []);
  return {
    state: view.item.state,
    usage: view.item.usage,
    hop: view.item.hop,
    failure: view.item.failure?.code ?? null,
    runValue: view.run?.value ?? null,
    stage: ctx?.stage ?? null,
    output: ctx?.output ?? null,
    childHops: ctx?.childHops ?? 0,
    join: ctx?.join?.branches.map((b) => [b.key, b.state, b.output, b.error]) ?? null,
    directive: ctx?.directive.kind ?? null,
    asked: t.rows.filter((r) => r.kind === 'spawn').map((r) => (r.body as SpawnBody).childId),
    canceled: t.rows
      .filter((r) => r.kind === 'cancel-child')
      .map((r) => (r.body as { childId: string }).childId)
      .sort(),
    settled: audit.filter((a) => a.kind === 'child-settled').map((a) => a.data),
    routes: audit.filter((a) => a.kind === 'route').map((a) => a.data),
    ended: audit.filter((a) => a.kind === 'item-completed' || a.kind === 'item-failed').length,
  };
}

describe("a parent takes several children's ends in one decision", () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 8 }),
      fc.integer({ min: 1, max: 4 }),
      fc.option(fc.integer({ min: 20, max: 300 }), { nil: null }),
      fc.array(fc.tuple(fc.nat({ max: 9 }), endArb), { minLength: 1, maxLength: 16 }),
      fc.array(fc.boolean(), { minLength: 16, maxLength: 16 }),
    ],
    { numRuns: 300 },
  )('as a decision per end leaves it, with one spawn entry per decision', (n, c, maxTokens, ends, cuts) => {
    const one = opened(n, c, maxTokens);
    const grouped = opened(n, c, maxTokens);
    const bodies = ends.map(([i, end]) => settleOf(i, end));
    const each = bodies.map((settle) => one.decide('p', { kind: 'child', settle }));
    // The same ends, cut into runs of consecutive ones, each run one decision.
    const groups: SettleBody[][] = [];
    for (const [i, body] of bodies.entries()) {
      if (i === 0 || cuts[i]) groups.push([body]);
      else groups[groups.length - 1]!.push(body);
    }
    const batched = groups.map(([settle, ...siblings]) =>
      grouped.decide('p', { kind: 'child', settle: settle!, ...(siblings.length === 0 ? {} : { siblings }) }),
    );
    expect(outcomeOf(grouped, batched)).toEqual(outcomeOf(one, each));
    // A decision writes at most one spawn entry while its run waits on the join (two: one before an end decides it).
    for (const d of batched) {
      expect(d.changes?.audit.filter((a) => a.kind === 'spawn').length ?? 0).toBeLessThanOrEqual(2);
    }
    const spawnEntries = (ds: Decision[]) =>
      ds.flatMap((d) => d.changes?.audit ?? []).filter((a) => a.kind === 'spawn');
    expect(spawnEntries(batched).length).toBeLessThanOrEqual(spawnEntries(each).length);
    // Nothing taken: nothing written. An end refused beside others is not a refusal of the decision's (as it
    // is none when decided alone): nothing is logged for it.
    for (const d of batched) {
      if (d.handling !== 'applied') expect(d.changes).toBeNull();
      expect(d.refused).toEqual([]);
    }
  });

  it('writes what three ends start as one spawn entry, and the children in the order they were started', () => {
    const t = opened(6, 2, null);
    const d = t.decide('p', {
      kind: 'child',
      settle: settleOf(0, { outcome: 'completed', tokens: 1 }),
      siblings: [settleOf(1, { outcome: 'completed', tokens: 1 }), settleOf(2, { outcome: 'completed', tokens: 1 })],
    });
    // Each end starts the next waiting element (2, 3, then 4: branch 2 was started by the first end).
    expect(d.handling).toBe('applied');
    expect(d.changes!.audit.filter((a) => a.kind === 'child-settled')).toHaveLength(3);
    const spawns = d.changes!.audit.filter((a) => a.kind === 'spawn');
    expect(spawns).toHaveLength(1);
    const children = (spawns[0]!.data as { children: { branch: string }[] }).children.map((c) => c.branch);
    expect(children).toEqual(['2', '3', '4']);
    expect(d.changes!.outbox.filter((o) => o.kind === 'spawn').map((o) => (o.body as SpawnBody).branch)).toEqual(
      children,
    );
    expect(d.runEvents.map((e) => e.type)).toEqual([
      'CHILD_SETTLED',
      'CHILD_SETTLED',
      'CHILD_SETTLED',
      'CHILDREN_SPAWNED',
    ]);
    expect(d.refused).toEqual([]);
    expect(d.view!.run!.context.directive).toEqual({ kind: 'await-children', stage: 'map', hop: 2 });
  });

  it('writes what earlier ends started before an end that decides the join', () => {
    // Two at once over three: 0 ends (starting 2), then 1 fails the map; 2 was asked for first, then canceled.
    const t = opened(3, 2, null);
    const d = t.decide('p', {
      kind: 'child',
      settle: settleOf(0, { outcome: 'completed', tokens: 1 }),
      siblings: [settleOf(1, { outcome: 'failed', tokens: 1 })],
    });
    expect(d.view!.item.state).toBe('failed');
    const spawned = d.changes!.outbox.filter((o) => o.kind === 'spawn').map((o) => (o.body as SpawnBody).branch);
    expect(spawned).toEqual(['2']);
    const canceled = d.changes!.outbox.filter((o) => o.kind === 'cancel-child');
    expect(canceled.map((o) => (o.body as { childId: string }).childId)).toEqual([childItemId('p', 2, '2')]);
  });

  it('takes nothing from ends that all come late or twice', () => {
    const t = opened(3, 1, null);
    const d = t.decide('p', {
      kind: 'child',
      settle: settleOf(2, { outcome: 'completed', tokens: 1 }),
      siblings: [settleOf(7, { outcome: 'completed', tokens: 1 })],
    });
    expect(d).toMatchObject({ handling: 'duplicate', changes: null, events: [], refused: [] });
  });
});
