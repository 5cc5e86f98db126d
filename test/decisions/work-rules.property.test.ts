import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { addTreeUsage } from '../../src/decisions/coordinator/tree-rollup.js';
import { Work, unchanged } from '../../src/decisions/coordinator/work.js';
import type { CancelChildBody } from '../../src/decisions/coordinator-decisions.js';
import { WORKFLOW_RUN_MACHINE_VERSION, restoreRun } from '../../src/machines/workflow-run-machine.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { ChildTree, completedSettle, roleChain } from './child-tree.js';

/**
 * What every decision's working copy (`Work`) writes, whatever the input:
 * the run record a store keeps (restoring to the run the decision left, its
 * definition kept apart), the item's live subtree usage moved by exactly
 * what the decision charged, a `cancel-child` row for each child a decided
 * join leaves running, and an event the run refuses recorded with the
 * state that refused it and why. A decision that changes nothing writes
 * nothing and refuses nothing.
 */

const anyOf = (branches: number) =>
  parseWorkflowDefinition({
    id: 'first-wins',
    version: 1,
    start: 'fan',
    stages: {
      fan: {
        parallel: {
          branches: Object.fromEntries(Array.from({ length: branches }, (_, i) => [`b${i}`, { role: 'w' }])),
          join: 'any',
        },
      },
    },
  });

describe('a decided join', () => {
  test.prop([fc.integer({ min: 2, max: 5 }), fc.nat()])(
    'cancels each child it leaves running, once, naming the parent and why: the others are not touched',
    (n, pick) => {
      const t = new ChildTree();
      t.create('p', anyOf(n));
      const spawns = t.spawns('p');
      expect(spawns).toHaveLength(n);
      const winner = spawns[pick % n]!;
      const settle = completedSettle(winner, { won: winner.branch });
      const d = t.decide('p', { kind: 'child', settle });
      expect(d.view!.item.state).toBe('completed');
      const cancels = d.changes!.outbox.filter((o) => o.kind === 'cancel-child').map((o) => o.body as CancelChildBody);
      expect(cancels.map((c) => c.childId).sort()).toEqual(
        spawns
          .filter((s) => s !== winner)
          .map((s) => s.childId)
          .sort(),
      );
      for (const c of cancels) {
        expect(c.parentId).toBe('p');
        expect(c.reason).toContain('its parent p no longer waits for it');
      }
      // A settled join cancels nothing more: a late child's end changes nothing.
      const late = spawns.find((s) => s !== winner)!;
      const again = t.decide('p', {
        kind: 'child',
        settle: { ...settle, childId: late.childId, branch: late.branch },
      });
      expect(again.changes?.outbox.filter((o) => o.kind === 'cancel-child') ?? []).toEqual([]);
    },
  );

  test.prop([fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 })])(
    'a chain cancels no child: no decision of an item without children writes a cancel-child row',
    (length, done) => {
      const t = new ChildTree();
      t.create('c', roleChain('plain', length));
      for (let i = 0; i < Math.min(done, length); i++) {
        const d = t.answer('c', { parts: [{ kind: 'text', text: `${i}` }] });
        expect(d.changes!.outbox.filter((o) => o.kind === 'cancel-child')).toEqual([]);
      }
    },
  );
});

describe("a decision's writes", () => {
  test.prop([fc.integer({ min: 1, max: 4 }), fc.integer({ min: 0, max: 3 })])(
    'keep the run as a record that restores to the run the decision left, its definition kept apart',
    (length, done) => {
      const t = new ChildTree();
      let d = t.create('c', roleChain('kept', length + 1));
      for (let i = 0; i <= Math.min(done, length - 1); i++) {
        const run = d.view!.run!;
        const record = d.changes!.run!;
        expect(record.machineVersion).toBe(WORKFLOW_RUN_MACHINE_VERSION);
        const snapshot = record.snapshot as { context: { definition: unknown } };
        expect(snapshot.context.definition).toBeNull();
        const restored = restoreRun({
          ...snapshot,
          context: { ...snapshot.context, definition: run.context.definition },
        });
        expect(restored.value).toBe(run.value);
        expect(restored.context).toEqual(run.context);
        d = t.answer('c', { parts: [{ kind: 'text', text: `${i}` }] });
      }
    },
  );

  test.prop([
    fc.integer({ min: 1, max: 1_000 }),
    fc.record({
      inputTokens: fc.nat(1_000),
      outputTokens: fc.nat(1_000),
      costUsd: fc.integer({ min: 0, max: 1_000 }).map((c) => c / 1_000),
      hops: fc.nat(50),
    }),
  ])("move the item's live subtree usage by exactly what they charged", (tokens, before) => {
    const t = new ChildTree();
    t.create('c', roleChain('charged', 2));
    const view = t.views.get('c')!;
    const tree = {
      usage: {
        inputTokens: before.inputTokens,
        outputTokens: before.outputTokens,
        costUsd: before.costUsd,
        elapsedMs: 0,
      },
      hops: before.hops,
    };
    t.views.set('c', { ...view, tree });
    const d = t.answer('c', { parts: [{ kind: 'text', text: 'done' }], tokens });
    const rollup = d.changes!.rollup!;
    expect(rollup.usage.inputTokens).toBe(tokens);
    expect(d.view!.tree).toEqual(addTreeUsage(tree, rollup));
    expect(d.view!.tree!.usage.inputTokens).toBe(before.inputTokens + tokens);
  });

  test.prop([fc.integer({ min: 1, max: 3 })])(
    'record an event the run refuses, with the state that refused it and why, and send nothing else for it',
    (length) => {
      const t = new ChildTree();
      t.create('c', roleChain('refusing', length));
      const work = new Work(t.views.get('c')!, t.env());
      const hop = work.run!.context.hop;
      // A success of a hop the run is not at.
      const took = work.send({
        type: 'HOP_SUCCEEDED',
        hop: hop + 7,
        attempt: 1,
        usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
      });
      expect(took).toBe(false);
      expect(work.refused).toHaveLength(1);
      const refusal = work.refused[0]!;
      expect(refusal.event).toBe('HOP_SUCCEEDED');
      expect(refusal.state).toBe('running');
      expect(typeof refusal.reason === 'string' && refusal.reason.length > 0).toBe(true);
      expect(work.outbox).toEqual([]);
    },
  );

  test.prop([fc.constantFrom('duplicate', 'late', 'unknown', 'applied') as fc.Arbitrary<'duplicate'>])(
    'are none for a decision that changes nothing: no changes, events, run events, checks or refusals',
    (handling) => {
      const t = new ChildTree();
      t.create('c', roleChain('still', 1));
      const view = t.views.get('c')!;
      expect(unchanged(view, handling)).toEqual({
        handling,
        view,
        changes: null,
        events: [],
        runEvents: [],
        governed: [],
        refused: [],
      });
    },
  );
});
