import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { type SettleBody, type SpawnBody, childItemId } from '../../src/decisions/coordinator-decisions.js';
import type { BudgetCarve } from '../../src/protocol/child-work.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import {
  MAX_SPAWNS_LISTED,
  SPAWNS_METADATA_KEY,
  childrenReply,
  spawnsTaken,
} from '../../src/decisions/coordinator/child-suspension.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a hop that starts child work items itself (its handler's
 * `spawn`), each stated on its own: the hop stands down (its `suspend` audit
 * entry, its event), a `spawn` row per child in the order its handler gave
 * them (each with its key, id, workflow, input, the budget the run's join
 * carved for it and the parent's deadline) with their `spawn` audit entry,
 * none when the run does not wait for them or the item already ended; and
 * once the last child ended, the hop is out again with a reply addressed to
 * its worker's continuation, its `resume` audit entry and its event.
 */

const CONT = 'cont-1';

/** A hop that may start children itself (`lead`), with or without a deadline and a budget. */
function leadFlow(deadline: number | undefined): WorkflowDefinition {
  return parseWorkflowDefinition({
    id: 'lead-flow',
    version: 1,
    start: 'lead',
    stages: { lead: { role: 'lead', next: [{ on: 'succeeded', goto: 'after' }] }, after: { role: 'w' } },
    ...(deadline === undefined ? {} : { deadline }),
  });
}

/** A child as a handler asks for it: a workflow, an input, a carve or none. */
const childArb = fc.record(
  {
    workflow: fc.constantFrom('sub@1', 'other@2'),
    input: fc.array(
      fc.string({ minLength: 1, maxLength: 5 }).map((text) => ({ kind: 'text' as const, text })),
      { minLength: 1, maxLength: 2 },
    ),
    budget: fc
      .record(
        { maxTokens: fc.integer({ min: 1, max: 500 }), maxHops: fc.integer({ min: 1, max: 9 }) },
        { requiredKeys: [] },
      )
      .filter((b): b is BudgetCarve => Object.keys(b).length > 0),
  },
  { requiredKeys: ['workflow', 'input'] },
);

const caseArb = fc.record({
  children: fc.array(childArb, { minLength: 1, maxLength: 5 }),
  deadline: fc.option(fc.integer({ min: 10_000, max: 1_000_000 }), { nil: undefined }),
  budget: fc.option(fc.integer({ min: 2_000, max: 9_000 }), { nil: null }),
  tokens: fc.nat({ max: 1_000 }),
});
type Case = typeof caseArb extends fc.Arbitrary<infer T> ? T : never;

/** The parent `p` created, its `lead` hop out, and the decision on that hop's `spawn` result. */
function spawned(c: Case) {
  const t = new ChildTree();
  t.create('p', leadFlow(c.deadline), { budget: c.budget === null ? null : { maxTokens: c.budget } });
  const hop = t.views.get('p')!.hops.get(t.out('p')!.taskId)!;
  const d = t.answer('p', { tokens: c.tokens, spawn: { continuationToken: CONT, children: c.children } });
  return { t, hop, d };
}

describe('a hop that starts children itself', () => {
  test.prop([caseArb], { numRuns: 60 })(
    'stands down: its suspend audit entry (the workflows asked for), its cost, its event (how many children)',
    (c) => {
      const { hop, d } = spawned(c);
      expect(d.handling).toBe('applied');
      expect(d.changes!.created).toBe(false);
      expect(d.view!.hops.get(hop.id)!.state).toBe('suspended');
      const audit = d.changes!.audit;
      const at = audit.findIndex((e) => e.kind === 'suspend');
      expect(audit[at]).toEqual({
        kind: 'suspend',
        itemId: 'p',
        hop: hop.hop,
        actor: 'lead',
        data: { hopId: hop.id, continuation: CONT, children: c.children.map((k) => k.workflow) },
      });
      expect(audit[at + 1]).toMatchObject({ kind: 'cost', itemId: 'p', hop: hop.hop, data: { hopId: hop.id } });
      const n = c.children.length;
      const suspended = d.events.filter((e) => e.kind === 'suspended');
      expect(suspended).toEqual([
        {
          kind: 'suspended',
          itemId: 'p',
          hop: hop.hop,
          stage: 'lead',
          role: 'lead',
          detail: `started ${n} child work item${n === 1 ? '' : 's'} and stood down`,
          usage: expect.objectContaining({ inputTokens: c.tokens }),
          model: 'm',
          at: expect.any(Number),
        },
      ]);
    },
  );

  test.prop([caseArb], { numRuns: 60 })(
    "writes a spawn row per child in its handler's order, each with the budget the run's join carved for it and the parent's deadline",
    (c) => {
      const { t, hop, d } = spawned(c);
      const run = d.view!.run;
      const join = run?.context.join ?? null;
      if (join === null) {
        // Its usage took the item over its budget: the run does not wait, no child is started.
        expect(run === null || run.value === 'failed').toBe(true);
        expect(t.spawns('p')).toEqual([]);
        expect(d.changes!.audit.filter((e) => e.kind === 'spawn')).toEqual([]);
        return;
      }
      const rows = t.spawns('p');
      const budgets = join.branches.map((b) => b.budget);
      expect(rows).toEqual(
        c.children.map(
          (k, i): SpawnBody => ({
            parentId: 'p',
            childId: childItemId('p', hop.hop, `s${i}`),
            hop: hop.hop,
            branch: `s${i}`,
            stage: 'lead',
            definition: null,
            workflow: k.workflow,
            input: k.input,
            budget: budgets[i] ?? null,
            deadlineAt: c.deadline === undefined ? null : t.views.get('p')!.item.createdAt + c.deadline,
            position: i,
          }),
        ),
      );
      // Without a budget of the parent's, a child gets what its handler asked for, and nothing unasked.
      if (c.budget === null) {
        expect(rows.map((r) => r.budget)).toEqual(
          c.children.map((k) => (k.budget === undefined ? null : expect.objectContaining(k.budget))),
        );
      }
      expect(d.changes!.audit.filter((e) => e.kind === 'spawn')).toEqual([
        {
          kind: 'spawn',
          itemId: 'p',
          hop: hop.hop,
          actor: 'coordinator',
          data: {
            stage: 'lead',
            hopId: hop.id,
            children: rows.map((r) => ({
              branch: r.branch,
              childId: r.childId,
              workflow: r.workflow,
              budget: r.budget,
            })),
          },
        },
      ]);
    },
  );

  test.prop([fc.array(childArb, { minLength: 1, maxLength: 3 })], { numRuns: 20 })(
    'over its budget on its own usage, the run ends and no child is started',
    (children) => {
      const t = new ChildTree();
      t.create('p', leadFlow(undefined), { budget: { maxTokens: 10 } });
      const d = t.answer('p', { tokens: 50, spawn: { continuationToken: CONT, children } });
      expect(d.changes!.item.state).toBe('failed');
      expect(t.spawns('p')).toEqual([]);
      expect(d.changes!.audit.filter((e) => e.kind === 'spawn')).toEqual([]);
    },
  );

  it('after its item ended, its spawn is late: its cost is written down, no child is started', () => {
    const t = new ChildTree();
    t.create('p', leadFlow(undefined));
    const hopId = t.out('p')!.taskId;
    const out = t.out('p')!;
    t.decide('p', { kind: 'cancel', by: 'op', reason: 'stop' });
    expect(t.views.get('p')!.item.finishedAt).not.toBeNull();
    // The hop's result arrives after the cancel: answer it by its start row.
    const d = t.decide('p', {
      kind: 'result',
      result: {
        kind: 'result',
        headers: {
          taskId: out.taskId,
          runId: out.runId,
          hop: out.hop,
          attempt: out.attempt,
          idempotencyKey: out.idempotencyKey,
        },
        role: out.role,
        outcome: 'suspended',
        parts: [],
        artifacts: [],
        usage: { inputTokens: 3, outputTokens: 0, costUsd: 0, model: 'm' },
        spawn: { continuationToken: CONT, children: [{ workflow: 'sub@1', input: [{ kind: 'text', text: 'x' }] }] },
      },
    });
    if (d.view!.hops.get(hopId)!.state === 'dispatched' || d.changes === null) {
      throw new Error('the canceled item still had its hop out: this case is not reached');
    }
    expect(d.handling).toBe('late');
    expect(t.spawns('p')).toEqual([]);
    expect(d.events.map((e) => e.kind)).toEqual(['suspended', 'late-result']);
    expect(d.changes.usage.map((u) => u.inputTokens)).toEqual([3]);
  });
});

/** A child's end, as its settle row tells it. */
function settle(row: SpawnBody, outcome: SettleBody['outcome']): SettleBody {
  return {
    parentId: 'p',
    childId: row.childId,
    hop: row.hop,
    branch: row.branch,
    outcome,
    output: outcome === 'completed' ? { from: row.branch } : null,
    error: outcome === 'failed' ? { type: 'Boom', message: row.branch } : null,
    usage: { inputTokens: 1, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
  };
}

describe('the last child of a hop that started them itself', () => {
  test.prop([
    fc.array(fc.constantFrom<SettleBody['outcome']>('completed', 'failed', 'canceled'), { minLength: 1, maxLength: 4 }),
    fc.integer({ min: 1, max: 50_000 }),
  ])(
    "puts the hop out again: a completed reply to its worker's continuation, its resume audit entry and event",
    (outcomes, later) => {
      const t = new ChildTree();
      t.create('p', leadFlow(undefined));
      const hop = t.views.get('p')!.hops.get(t.out('p')!.taskId)!;
      t.answer('p', {
        spawn: {
          continuationToken: CONT,
          children: outcomes.map(() => ({ workflow: 'sub@1', input: [{ kind: 'text' as const, text: 'x' }] })),
        },
      });
      const rows = t.spawns('p');
      let last = null;
      t.now += later;
      for (const [i, row] of rows.entries()) last = t.decide('p', { kind: 'child', settle: settle(row, outcomes[i]!) });
      const d = last!;
      const n = outcomes.length;
      expect(d.view!.hops.get(hop.id)).toMatchObject({ state: 'dispatched', activeSince: t.now });
      const signals = d.changes!.outbox.filter((o) => o.kind === 'signal');
      expect(signals).toHaveLength(1);
      expect(signals[0]!.body).toEqual({
        kind: 'result',
        headers: {
          taskId: hop.id,
          runId: 'p',
          hop: hop.hop,
          attempt: 1,
          idempotencyKey: `${CONT}:children`,
          askedBy: { role: 'lead', continuationToken: CONT, taskId: hop.id, hop: hop.hop },
        },
        role: 'lead',
        outcome: 'completed',
        parts: [{ kind: 'data', data: { children: expect.any(Array) } }],
        artifacts: [],
        metadata: { [SPAWNS_METADATA_KEY]: [CONT] },
      });
      expect(d.changes!.audit.filter((e) => e.kind === 'resume')).toEqual([
        {
          kind: 'resume',
          itemId: 'p',
          hop: hop.hop,
          actor: 'coordinator',
          data: { hopId: hop.id, continuation: CONT, children: n },
        },
      ]);
      expect(d.events.filter((e) => e.kind === 'resumed')).toEqual([
        {
          kind: 'resumed',
          itemId: 'p',
          hop: hop.hop,
          stage: 'lead',
          role: 'lead',
          detail: `resumed: its ${n} child work items ended`,
          at: t.now,
        },
      ]);
    },
  );
});

describe('a hop that starts children again after they resumed it', () => {
  /** `p`'s lead hop spawns `n` times (one child each, under `cont-0` … ), each child completing and resuming it. */
  function spawnedTimes(n: number) {
    const t = new ChildTree();
    t.create('p', leadFlow(undefined));
    const results = [];
    for (let i = 0; i < n; i++) {
      const r = t.resultOf('p', {
        spawn: {
          continuationToken: `cont-${i}`,
          children: [{ workflow: 'sub@1', input: [{ kind: 'text', text: 'x' }] }],
        },
      });
      results.push(r);
      expect(t.decide('p', { kind: 'result', result: r }).handling).toBe('applied');
      const row = t.spawns('p').at(-1)!;
      expect(t.decide('p', { kind: 'child', settle: settle(row, 'completed') }).handling).toBe('applied');
    }
    return { t, results };
  }

  test.prop([fc.integer({ min: 1, max: 5 }), fc.nat()], { numRuns: 40 })(
    'takes each spawn once: an earlier one delivered again, however many spawns later, is a duplicate and changes nothing',
    (n, pick) => {
      const { t, results } = spawnedTimes(n);
      const hopId = results[0]!.headers.taskId;
      expect(t.views.get('p')!.hops.get(hopId)!.state).toBe('dispatched');
      expect(spawnsTaken(t.views.get('p')!.hops.get(hopId)!.reply)).toEqual(results.map((_, i) => `cont-${i}`));
      const again = results[pick % n]!;
      const d = t.decide('p', { kind: 'result', result: again });
      expect(d.handling).toBe('duplicate');
      expect(d.changes).toBeNull();
      expect(t.spawns('p')).toHaveLength(n);
      // A spawn under a continuation not taken yet is taken.
      const fresh = t.resultOf('p', {
        spawn: {
          continuationToken: 'cont-new',
          children: [{ workflow: 'sub@1', input: [{ kind: 'text', text: 'y' }] }],
        },
      });
      expect(t.decide('p', { kind: 'result', result: fresh }).handling).toBe('applied');
      expect(t.spawns('p')).toHaveLength(n + 1);
    },
  );

  it(`lists the newest ${MAX_SPAWNS_LISTED} spawns on its reply; a reply written before the list names its one`, () => {
    const { t } = spawnedTimes(1);
    const view = t.views.get('p')!;
    const hop = [...view.hops.values()].find((h) => h.kind === 'stage' && h.role === 'lead')!;
    const listed = Array.from({ length: MAX_SPAWNS_LISTED }, (_, i) => `old-${i}`);
    const reply = childrenReply(
      { item: view.item } as never,
      { ...hop, reply: { metadata: { [SPAWNS_METADATA_KEY]: listed } } },
      'next',
      { kind: 'spawn', branches: [] } as never,
    );
    expect(spawnsTaken(reply)).toEqual([...listed.slice(1), 'next']);
    const { metadata: _m, ...older } = hop.reply as { metadata: unknown };
    expect(spawnsTaken(older)).toEqual(['cont-0']);
    expect(spawnsTaken(null)).toEqual([]);
    // What is not a continuation on a stored list is not one.
    expect(spawnsTaken({ metadata: { [SPAWNS_METADATA_KEY]: ['a', 7, null, { t: 'b' }, 'c'] } })).toEqual(['a', 'c']);
    // Stored replies keep the list under this name: another would lose the lists already written.
    expect(SPAWNS_METADATA_KEY).toBe('switchboardSpawns');
  });
});
