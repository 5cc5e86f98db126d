import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import type { ItemView, StartBody } from '../../src/decisions/coordinator-decisions.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree } from './child-tree.js';

/**
 * The rules of a reconcile (the bus lost its state) as `decide` writes it:
 * the hop an item has out is published again as it first went out, under
 * its own idempotency key (a stage hop's start; for a hop resumed by
 * answers, the last answer's reply; a query's question), and one
 * `reconcile` audit entry names it with the reason. Nothing else of the
 * item changes: no hop row, no usage, no event, the same run. An item with
 * nothing out (waiting for an approval, ended with a hop still marked out,
 * a query whose question was not kept) and an unknown one are unchanged.
 */

/** What happens next to the item, from its state: its hop out asks or completes, its query is answered or fails. */
interface Step {
  ask: boolean;
  failAnswer: boolean;
}

interface Case {
  /** The stages' gates (a gate waits for `boss` before the stage's hop goes out). */
  gates: boolean[];
  steps: Step[];
  cancel: boolean;
  reason: string;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  gates: fc.array(fc.boolean(), { minLength: 1, maxLength: 4 }),
  // A hop asks three times in four, so that hops are resumed by several answers.
  steps: fc.array(fc.record({ ask: fc.constantFrom(true, true, true, false), failAnswer: fc.boolean() }), {
    maxLength: 16,
  }),
  cancel: fc.constantFrom(false, false, false, false, true),
  reason: fc.stringMatching(/^[a-z][a-z ]{0,15}$/),
});

interface Driven {
  tree: ChildTree;
  id: string;
  /** The reply each stage hop was last resumed with, by hop id. */
  lastReply: Map<string, ResultEnvelope>;
}

function out(view: ItemView): HopRecord[] {
  return [...view.hops.values()].filter((h) => h.state === 'dispatched');
}

/** The item driven through the case's steps (an approval whenever it waits for one), then canceled if asked. */
function driven(c: Case): Driven {
  const tree = new ChildTree();
  const id = 'item';
  const stages: Record<string, object> = {};
  c.gates.forEach((gate, i) => {
    stages[`s${i}`] = {
      role: i % 2 === 0 ? 'w' : 'x',
      ...(gate ? { approval: { approvers: ['boss'] } } : {}),
      ...(i + 1 < c.gates.length ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}),
    };
  });
  tree.create(id, parseWorkflowDefinition({ id: 'asks', version: 1, start: 's0', stages }));
  const lastReply = new Map<string, ResultEnvelope>();
  let n = 0;
  for (const step of c.steps) {
    const view = tree.views.get(id)!;
    if (view.item.finishedAt !== null) break;
    tree.now += 3;
    if (view.item.state === 'awaiting-approval') {
      tree.decide(id, { kind: 'approve', approver: 'boss' });
      continue;
    }
    const hop = out(view)[0]!;
    n++;
    if (hop.kind === 'query') {
      const asking = view.hops.get(hop.askedBy!)!;
      const headers = {
        taskId: asking.id,
        runId: id,
        hop: hop.hop,
        attempt: 1,
        idempotencyKey: hop.idempotencyKey,
        askedBy: { role: asking.role, continuationToken: hop.continuation!, taskId: asking.id, hop: asking.hop },
      };
      const reply: ResultEnvelope = step.failAnswer
        ? {
            kind: 'result',
            headers,
            role: hop.role,
            outcome: 'failed',
            parts: [],
            artifacts: [],
            error: { type: 'NoIdea', message: `no answer ${n}` },
            deliveries: 1,
          }
        : {
            kind: 'result',
            headers,
            role: hop.role,
            outcome: 'completed',
            parts: [{ kind: 'text', text: `answer ${n}` }],
            artifacts: [],
          };
      tree.decide(id, { kind: 'result', result: reply });
      lastReply.set(asking.id, reply);
    } else if (step.ask) {
      const s = tree.out(id)!;
      tree.decide(id, {
        kind: 'result',
        result: {
          kind: 'result',
          headers: {
            taskId: s.taskId,
            runId: s.runId,
            hop: s.hop,
            attempt: s.attempt,
            idempotencyKey: s.idempotencyKey,
          },
          role: s.role,
          outcome: 'suspended',
          parts: [],
          artifacts: [],
          ask: {
            role: n % 2 === 0 ? 'y' : 'z',
            continuationToken: `cont-${n}`,
            message: { role: 'user', parts: [{ kind: 'text', text: `question ${n}` }] },
          },
        },
      });
    } else {
      tree.answer(id, { parts: [{ kind: 'text', text: `done ${n}` }] });
    }
  }
  if (c.cancel) tree.decide(id, { kind: 'cancel', by: null, reason: null });
  tree.now += 11;
  return { tree, id, lastReply };
}

describe('a reconcile', () => {
  test.prop([caseArb])(
    'the hop out is published again as it first went out, named in one audit entry; nothing else changes',
    (c) => {
      const { tree, id, lastReply } = driven(c);
      const before = tree.views.get(id)!;
      const live = before.item.finishedAt === null;
      const hops = live ? out(before) : [];
      // At most one hop of an item is out at a time.
      expect(hops.length).toBeLessThanOrEqual(1);
      const rowsBefore = tree.rows.length;
      const d = tree.decide(id, { kind: 'reconcile', reason: c.reason });
      expect(d.refusal).toBeUndefined();
      expect(d.handling).toBe('applied');
      if (hops.length === 0) {
        // Waiting for an approval, or ended (a canceled item's hop may still be marked out): unchanged.
        expect(before.item.finishedAt !== null || before.item.state === 'awaiting-approval').toBe(true);
        expect(d.changes).toBeNull();
        expect(d.view).toBe(before);
        expect(d.events).toEqual([]);
        return;
      }
      const hop = hops[0]!;
      const reply = hop.kind === 'stage' ? lastReply.get(hop.id) : undefined;
      const first =
        hop.kind === 'query'
          ? tree.rows.find((r) => r.kind === 'start' && (r.body as StartBody).idempotencyKey === hop.idempotencyKey)
          : reply === undefined
            ? tree.rows.find((r) => r.kind === 'start' && (r.body as StartBody).taskId === hop.id)
            : tree.rows.filter((r) => r.kind === 'signal').at(-1);
      expect(first).toBeDefined();
      if (reply !== undefined) expect(first!.body).toBe(reply);
      const changes = d.changes!;
      expect(changes.outbox).toEqual([{ kind: first!.kind, body: first!.body }]);
      expect(tree.rows.slice(rowsBefore)).toEqual([{ itemId: id, kind: first!.kind, body: first!.body }]);
      expect(changes.audit).toEqual([
        {
          kind: 'reconcile',
          itemId: id,
          hop: before.item.hop,
          actor: 'coordinator',
          data: {
            reason: c.reason,
            republished: [{ hopId: hop.id, kind: hop.kind, role: hop.role, idempotencyKey: hop.idempotencyKey }],
          },
        },
      ]);
      // Nothing of the item changes but its row's time.
      expect(changes.hops).toEqual([]);
      expect(changes.usage).toEqual([]);
      expect(changes.created).toBe(false);
      expect(changes.ended).toBe(false);
      expect(d.events).toEqual([]);
      expect(d.runEvents).toEqual([]);
      expect(d.view!.hops).toEqual(before.hops);
      expect(d.view!.run).toEqual(before.run);
      expect(d.view!.item).toEqual({ ...before.item, updatedAt: tree.now });
    },
  );

  test.prop([caseArb])('a query whose question was not kept is not asked again: the item is unchanged', (c) => {
    const { tree, id } = driven({ ...c, cancel: false });
    const kept = tree.views.get(id)!;
    const query = out(kept).find((h) => h.kind === 'query');
    fc.pre(query !== undefined);
    const hops = new Map(kept.hops);
    hops.set(query!.id, { ...query!, question: null });
    const before: ItemView = { ...kept, hops };
    tree.views.set(id, before);
    const d = tree.decide(id, { kind: 'reconcile', reason: c.reason });
    expect(d.refusal).toBeUndefined();
    expect(d.handling).toBe('applied');
    expect(d.changes).toBeNull();
    expect(d.view).toBe(before);
  });

  test.prop([fc.stringMatching(/^[a-z]{1,8}$/)])('an unknown item is unchanged, not refused', (reason) => {
    const tree = new ChildTree();
    const d = tree.decide('nobody', { kind: 'reconcile', reason });
    expect(d.refusal).toBeUndefined();
    expect(d.handling).toBe('applied');
    expect(d.changes).toBeNull();
    expect(d.view).toBeUndefined();
  });
});
