import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { BRANCH_ATTRIBUTE, PARENT_ATTRIBUTE } from '../../src/decisions/coordinator-decisions.js';
import type { Part } from '../../src/protocol/parts.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { end } from '../../src/decisions/coordinator/item-end.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import { ChildTree, roleChain } from './child-tree.js';

/**
 * The rules of an item's end as `decide` writes it (a cancel, the last
 * hop's success, a failure), each stated on its own: the item's row ends
 * at the decision's time with the output of its final state, one audit
 * entry of that state's kind with what ended it, one event saying so, and
 * a child's end told to its parent in one `settle` row (a root writes
 * none). An ended item takes no cancel. The output: a completed item keeps
 * the parts and role of the hop result that completed it (a run completed
 * by its join, or by a timed-out hop's failure rule, has no result of its
 * own and keeps the run's last output as one data part of its stage, or no
 * part when the run has none); a
 * failed one its failure and the failing hop's error; a canceled one who
 * canceled it and why.
 */

const chain = (length: number): WorkflowDefinition => roleChain('ends', length, 1);

interface Case {
  length: number;
  /** Hops that succeed before the end (fewer than `length` for a cancel or a failure). */
  done: number;
  child: { parent: string; hop: number; branch: string } | null;
  by: string | null;
  reason: string | null;
  tokens: number;
}

const caseArb: fc.Arbitrary<Case> = fc.integer({ min: 1, max: 4 }).chain((length) =>
  fc.record({
    length: fc.constant(length),
    done: fc.integer({ min: 0, max: length - 1 }),
    child: fc.option(
      fc.record({
        parent: fc.stringMatching(/^p[a-z]{0,3}$/),
        hop: fc.integer({ min: 1, max: 9 }),
        branch: fc.stringMatching(/^[a-z0-9]{1,4}$/),
      }),
      { nil: null },
    ),
    by: fc.option(fc.stringMatching(/^[a-z]{1,6}$/), { nil: null }),
    reason: fc.option(fc.stringMatching(/^[a-z ]{1,12}$/), { nil: null }),
    tokens: fc.integer({ min: 0, max: 50 }),
  }),
);

/** The item created and its first `done` hops succeeded, at a clock that moves. */
function started(c: Case): { tree: ChildTree; id: string } {
  const tree = new ChildTree();
  const id = 'item';
  tree.create(id, chain(c.length), {
    attributes:
      c.child === null
        ? null
        : { [PARENT_ATTRIBUTE]: c.child.parent, [BRANCH_ATTRIBUTE]: `${c.child.hop}:${c.child.branch}` },
  });
  for (let i = 0; i < c.done; i++) {
    tree.now += 10;
    tree.answer(id, { parts: [{ kind: 'text', text: `hop ${i}` }], tokens: c.tokens });
  }
  tree.now += 7;
  return { tree, id };
}

function settleRows(tree: ChildTree, id: string) {
  return tree.rows.filter((r) => r.itemId === id && r.kind === 'settle').map((r) => r.body);
}

describe('an item ends', () => {
  test.prop([caseArb])('a cancel ends the item canceled, once, with who and why, and tells its parent', (c) => {
    const { tree, id } = started(c);
    const d = tree.decide(id, { kind: 'cancel', by: c.by, reason: c.reason });
    expect(d.refusal).toBeUndefined();
    expect(d.handling).toBe('applied');
    const item = d.view!.item;
    expect(item.state).toBe('canceled');
    expect(item.finishedAt).toBe(tree.now);
    expect(item.approval).toBeNull();
    expect(item.output).toEqual({ state: 'canceled', stage: item.stage, hop: item.hop, by: c.by, reason: c.reason });
    const ends = d.changes!.audit.filter((a) => a.kind.startsWith('item-'));
    expect(ends.map((a) => a.kind)).toEqual(['item-canceled']);
    const data = JSON.parse(JSON.stringify(ends[0]!.data)) as Record<string, unknown>;
    expect(data.state).toBe('canceled');
    expect(data.cancellation).toEqual({ by: c.by, reason: c.reason });
    expect(data.usage).toEqual(item.usage);
    expect(data.hops).toBe(item.hops);
    expect(ends[0]!.hop).toBe(item.hop);
    const events = d.events.filter((e) => e.kind === 'canceled');
    expect(events.map((e) => e.detail)).toEqual([`work item canceled${c.by === null ? '' : ` by ${c.by}`}`]);
    expect(d.changes!.ended).toBe(true);
    // The item's row is updated, not made again.
    expect(d.changes!.created).toBe(false);
    const settles = settleRows(tree, id);
    if (c.child === null) expect(settles).toEqual([]);
    else {
      expect(settles).toEqual([
        expect.objectContaining({
          parentId: c.child.parent,
          childId: id,
          hop: c.child.hop,
          branch: c.child.branch,
          outcome: 'canceled',
          output: null,
          error: null,
          usage: item.usage,
        }),
      ]);
    }
    // Ended: a second cancel is refused and changes nothing.
    const again = tree.decide(id, { kind: 'cancel', by: c.by, reason: c.reason });
    expect(again.refusal?.code).toBe('COORD_ITEM_FINAL');
    expect(again.changes).toBeNull();
  });

  test.prop([caseArb, fc.array(fc.stringMatching(/^[a-z ]{0,8}$/), { maxLength: 2 })])(
    "the last hop succeeds: the item completes with its last result's parts and role, and tells its parent",
    (c, texts) => {
      const { tree, id } = started({ ...c, done: c.length - 1 });
      const parts: Part[] = [
        { kind: 'data', data: { last: c.tokens } },
        ...texts.map((text): Part => ({ kind: 'text', text })),
      ];
      const d = tree.answer(id, { parts, tokens: c.tokens });
      const item = d.view!.item;
      expect(item.state).toBe('completed');
      expect(item.finishedAt).toBe(tree.now);
      // The hop result's own parts and role, not the run's output made a data part of its stage.
      expect(item.output).toEqual({
        state: 'completed',
        stage: `s${c.length - 1}`,
        hop: c.length,
        role: 'w',
        parts,
        artifacts: [],
      });
      const ends = d.changes!.audit.filter((a) => a.kind.startsWith('item-'));
      expect(ends.map((a) => a.kind)).toEqual(['item-completed']);
      const data = JSON.parse(JSON.stringify(ends[0]!.data)) as Record<string, unknown>;
      expect(data).toMatchObject({ state: 'completed', failure: null, usage: item.usage, hops: item.hops });
      expect(d.events.filter((e) => e.kind === 'completed').map((e) => e.detail)).toEqual(['work item completed']);
      const settles = settleRows(tree, id);
      if (c.child === null) expect(settles).toEqual([]);
      else {
        expect(settles).toEqual([
          expect.objectContaining({ childId: id, outcome: 'completed', output: { last: c.tokens }, error: null }),
        ]);
      }
    },
  );

  test.prop([caseArb])('a hop fails for good: the item fails with its code and reason, and tells its parent', (c) => {
    const { tree, id } = started(c);
    const d = tree.answer(id, { error: { type: 'Broken', message: 'it broke' } });
    const item = d.view!.item;
    expect(item.state).toBe('failed');
    expect(item.finishedAt).toBe(tree.now);
    // The failure, with the error of the hop whose failure ended the run.
    expect(item.output).toEqual({
      state: 'failed',
      stage: `s${c.done}`,
      hop: c.done + 1,
      code: item.failure?.code,
      message: item.failure?.reason,
      error: { type: 'Broken', message: 'it broke' },
    });
    const ends = d.changes!.audit.filter((a) => a.kind.startsWith('item-'));
    expect(ends.map((a) => a.kind)).toEqual(['item-failed']);
    const data = JSON.parse(JSON.stringify(ends[0]!.data)) as {
      state: string;
      failure: { code: string; reason: string };
    };
    expect(data.state).toBe('failed');
    const failure = data.failure;
    expect(failure.code).toBe(item.failure?.code);
    expect(failure.reason).toContain('it broke');
    expect(d.events.filter((e) => e.kind === 'failed').map((e) => e.detail)).toEqual([
      `work item failed: ${failure.code}: ${failure.reason}`,
    ]);
    const settles = settleRows(tree, id);
    if (c.child === null) expect(settles).toEqual([]);
    else {
      expect(settles).toEqual([
        expect.objectContaining({ childId: id, outcome: 'failed', output: null, error: expect.any(Object) }),
      ]);
    }
  });

  test.prop([
    fc.uniqueArray(fc.stringMatching(/^[a-z]{1,4}$/), { minLength: 1, maxLength: 4 }),
    fc.integer({ min: 0, max: 99 }),
  ])(
    'a run completed by its join ends with the joined output as its data part, and its parent is told it',
    (names, n) => {
      const tree = new ChildTree();
      const branches: Record<string, { role: string }> = {};
      for (const name of names) branches[name] = { role: 'w' };
      const def = parseWorkflowDefinition({
        id: 'joins',
        version: 1,
        start: 'fan',
        stages: { fan: { parallel: { branches } } },
      });
      tree.create('item', def, { attributes: { [PARENT_ATTRIBUTE]: 'top', [BRANCH_ATTRIBUTE]: '2:x' } });
      const spawns = tree.spawns('item');
      expect(spawns.map((b) => b.branch)).toEqual(names);
      let d = undefined as ReturnType<ChildTree['decide']> | undefined;
      for (const [i, b] of spawns.entries()) {
        tree.now += 5;
        d = tree.decide('item', {
          kind: 'child',
          settle: {
            parentId: 'item',
            childId: b.childId,
            hop: b.hop,
            branch: b.branch,
            outcome: 'completed',
            output: { n: n + i },
            error: null,
            usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
            hops: 1,
          },
        });
      }
      const item = d!.view!.item;
      expect(item.state).toBe('completed');
      expect(item.finishedAt).toBe(tree.now);
      const joined = Object.fromEntries(names.map((name, i) => [name, { n: n + i }]));
      // The joined output as the item's one data part, from the stage the join closed.
      expect(item.output).toEqual({
        state: 'completed',
        stage: 'fan',
        hop: 1,
        role: 'fan',
        parts: [{ kind: 'data', data: joined }],
        artifacts: [],
      });
      expect(d!.events.filter((e) => e.kind === 'completed').map((e) => e.detail)).toEqual(['work item completed']);
      expect(tree.settles('item')).toEqual([
        expect.objectContaining({
          parentId: 'top',
          childId: 'item',
          hop: 2,
          branch: 'x',
          outcome: 'completed',
          output: joined,
        }),
      ]);
    },
  );

  test.prop([fc.array(fc.option(fc.integer({ min: 0, max: 99 }), { nil: null }), { maxLength: 2 })])(
    "a run completed by a timed-out hop's failure rule keeps the run's last output as its data part, or none",
    (before) => {
      // Stages s0 … s<k>: each hop before the last succeeds with a data part `{ n }`, or a text part only
      // (the run keeps the output it had); s<k>'s hop times out, and its failure rule completes the run.
      const k = before.length;
      const stages: Record<string, object> = {};
      for (let i = 0; i <= k; i++) {
        stages[`s${i}`] =
          i < k
            ? { role: 'w', next: [{ on: 'succeeded', goto: `s${i + 1}` }] }
            : { role: 'x', timeout: 100, retry: { maximumAttempts: 1 }, next: [{ on: 'failed', end: 'completed' }] };
      }
      const tree = new ChildTree();
      tree.create('item', parseWorkflowDefinition({ id: 'timeouts', version: 1, start: 's0', stages }));
      for (const n of before) {
        tree.now += 5;
        tree.answer('item', {
          parts: n === null ? [{ kind: 'text', text: 'no data' }] : [{ kind: 'data', data: { n } }],
        });
      }
      const last = before.filter((n) => n !== null).at(-1);
      const output = last === undefined ? null : { n: last };
      expect(tree.views.get('item')!.run!.context.output).toEqual(output);
      tree.now += 100;
      const d = tree.decide('item', { kind: 'timer' });
      const item = d.view!.item;
      expect(item.state).toBe('completed');
      expect(item.finishedAt).toBe(tree.now);
      expect(item.output).toEqual({
        state: 'completed',
        stage: `s${k}`,
        hop: k + 1,
        role: output === null ? null : `s${k}`,
        parts: output === null ? [] : [{ kind: 'data', data: output }],
        artifacts: [],
      });
      expect(d.changes!.audit.filter((a) => a.kind.startsWith('item-')).map((a) => a.kind)).toEqual(['item-completed']);
    },
  );
});

describe("an item's end, written by `end`", () => {
  test.prop([caseArb, fc.integer({ min: 1, max: 3 })])(
    'is written once: called again on the same decision, it writes no second row, entry, event or settle',
    (c, calls) => {
      const { tree, id } = started(c);
      const work = new Work(tree.views.get(id)!, tree.env());
      expect(work.send({ type: 'CANCEL', ...(c.by === null ? {} : { by: c.by }) })).toBe(true);
      end(work, 'canceled');
      const item = work.item;
      const written = { audit: work.audit.length, events: work.events.length, outbox: work.outbox.length };
      expect(written.audit).toBe(1);
      tree.now += 5;
      const later = new Work(tree.views.get(id)!, { ...tree.env(), now: tree.now });
      for (let i = 0; i < calls; i++) end(work, 'canceled');
      expect(work.item).toBe(item);
      expect({ audit: work.audit.length, events: work.events.length, outbox: work.outbox.length }).toEqual(written);
      // A work copy of the item still live ends it at its own time: the guard is the item's end, not the call.
      expect(later.send({ type: 'CANCEL' })).toBe(true);
      end(later, 'canceled');
      expect(later.item.finishedAt).toBe(tree.now);
    },
  );
});
