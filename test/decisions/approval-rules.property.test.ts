import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import type { Decision, StartBody } from '../../src/decisions/coordinator-decisions.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { PolicyEntry } from '../../src/workflow/governance.js';
import { ChildTree, TREE_ROLES } from './child-tree.js';

/**
 * The rules of an approval and a denial as `decide` writes them, at a
 * stage's gate and at governance's require-approval alike: an approver the
 * wait names (anyone, when it names none) is taken; the run is sent their
 * word, one `approval` audit entry records it (the hop and stage waited at,
 * who, and the denial's reason as given), one event says so, and the item
 * no longer waits. An approval dispatches the hop it waited at; a denial
 * fails the item `APPROVAL_DENIED` (an empty reason is no reason). Anyone
 * else, an item that does not wait, an ended item and an unknown one are
 * refused with their codes, and nothing changes. A row that keeps no record
 * of its wait is still approved or denied, its audit entry naming the
 * item's hop.
 */

/** A tree whose governance adds `policies` after the built-ins. */
class GovernedTree extends ChildTree {
  override readonly governance: CoordinatorGovernance;
  constructor(policies: readonly PolicyEntry[]) {
    super();
    this.governance = new CoordinatorGovernance({ knownRoles: TREE_ROLES, maxHops: 100, policies });
  }
}

interface Case {
  /** Hops that succeed before the stage that waits (`s<done>`). */
  done: number;
  /** Whether a stage follows the one that waits. */
  after: boolean;
  /** Who waits for it: the stage's gate, or a policy that requires approval for its role `x`. */
  source: 'gate' | 'governance';
  /** The approvers the wait names (a gate always names some; a policy may name none: anyone). */
  approvers: string[] | null;
  /** The gate's or the policy's reason (a gate without one has a default). */
  reason: string | null;
}

const nameArb = fc.stringMatching(/^[a-z]{1,5}$/);

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    done: fc.integer({ min: 0, max: 2 }),
    after: fc.boolean(),
    source: fc.constantFrom('gate' as const, 'governance' as const),
    approvers: fc.option(fc.uniqueArray(nameArb, { minLength: 1, maxLength: 3 }), { nil: null }),
    reason: fc.option(fc.stringMatching(/^[a-z][a-z ]{0,10}$/), { nil: null }),
  })
  .map((c) => (c.source === 'gate' && c.approvers === null ? { ...c, approvers: ['boss'] } : c));

/** Stages s0 … s<done> (the one that waits, role `x`), then s<done+1> when `after`. */
function definition(c: Case): WorkflowDefinition {
  const stages: Record<string, object> = {};
  const last = c.after ? c.done + 1 : c.done;
  for (let i = 0; i <= last; i++) {
    const waits = i === c.done;
    const gate =
      waits && c.source === 'gate'
        ? { approval: { approvers: c.approvers, ...(c.reason === null ? {} : { reason: c.reason }) } }
        : {};
    stages[`s${i}`] = {
      role: waits ? 'x' : 'w',
      ...gate,
      ...(i < last ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}),
    };
  }
  return parseWorkflowDefinition({ id: 'approvals', version: 1, start: 's0', stages });
}

/** A policy that requires an approval of every hop to role `x`, from the case's approvers. */
function policies(c: Case): PolicyEntry[] {
  if (c.source === 'gate') return [];
  return [
    {
      name: 'sign-off',
      check: (ctx) =>
        ctx.role === 'x'
          ? {
              decision: 'require-approval',
              reason: c.reason ?? 'x needs a sign-off',
              ...(c.approvers === null ? {} : { approvers: c.approvers }),
            }
          : { decision: 'allow' },
    },
  ];
}

/** The item created and its first `done` hops succeeded: it waits at hop `done + 1`, at the decision's time. */
function waiting(c: Case): { tree: ChildTree; id: string; hop: number; stage: string } {
  const tree = new GovernedTree(policies(c));
  const id = 'item';
  tree.create(id, definition(c));
  for (let i = 0; i < c.done; i++) {
    tree.now += 10;
    tree.answer(id, { parts: [{ kind: 'text', text: `hop ${i}` }] });
  }
  tree.now += 7;
  const view = tree.views.get(id)!;
  const hop = c.done + 1;
  const stage = `s${c.done}`;
  // The wait as the item's row has it (the premise of every rule below).
  expect(view.item.state).toBe('awaiting-approval');
  expect(view.item.approval).toMatchObject({ stage, hop, source: c.source, approvers: c.approvers });
  expect(view.item.hop).toBe(hop);
  return { tree, id, hop, stage };
}

/** Someone the wait takes: one of its approvers (any name when it names none). */
function approverOf(c: Case, pick: number, anyone: string): string {
  return c.approvers === null ? anyone : c.approvers[pick % c.approvers.length]!;
}

/** The decision refused with `code` and `message`: no changes, no events, the view as it was. */
function expectRefused(d: Decision, before: unknown, code: string, message?: string): void {
  expect(d.refusal?.code).toBe(code);
  if (message !== undefined) expect(d.refusal?.message).toBe(message);
  expect(d.handling).toBe('applied');
  expect(d.changes).toBeNull();
  expect(d.events).toEqual([]);
  expect(d.view).toBe(before);
}

describe('an approval', () => {
  test.prop([caseArb, fc.nat(), nameArb])(
    'an approver the wait names is taken: recorded once, the wait cleared, the hop it waited at dispatched',
    (c, pick, anyone) => {
      const { tree, id, hop, stage } = waiting(c);
      const by = approverOf(c, pick, anyone);
      const d = tree.decide(id, { kind: 'approve', approver: by });
      expect(d.refusal).toBeUndefined();
      expect(d.handling).toBe('applied');
      expect(d.runEvents[0]).toStrictEqual({ type: 'APPROVED', by });
      const changes = d.changes!;
      // The item's row is updated, not made again.
      expect(changes.created).toBe(false);
      // The approval is the decision's first audit entry and its only one of that kind.
      expect(changes.audit[0]).toEqual({
        kind: 'approval',
        itemId: id,
        hop,
        actor: by,
        data: { decision: 'approved', by, stage },
      });
      expect(changes.audit.filter((a) => a.kind === 'approval')).toHaveLength(1);
      expect(changes.audit.filter((a) => a.kind === 'approval-requested')).toEqual([]);
      expect(d.events[0]).toMatchObject({ kind: 'approved', itemId: id, hop, stage, detail: `approved by ${by}` });
      expect(d.events.filter((e) => e.kind === 'approved')).toHaveLength(1);
      // The item no longer waits: the hop it waited at is out, to its stage's role.
      const item = d.view!.item;
      expect(item.state).toBe('running');
      expect(item.approval).toBeNull();
      expect(changes.item.approval).toBeNull();
      expect(item.finishedAt).toBeNull();
      expect(item.hop).toBe(hop);
      expect(item.stage).toBe(stage);
      const starts = changes.outbox.filter((o) => o.kind === 'start').map((o) => o.body as StartBody);
      expect(starts.map((s) => [s.role, s.hop, s.attempt])).toEqual([['x', hop, 1]]);
      expect(d.view!.hops.get(starts[0]!.taskId)?.state).toBe('dispatched');
      // Governance is asked again with the approver's name, and allows the hop.
      expect(d.governed.map((g) => [g.ctx.hop, g.ctx.approvedBy, g.decision.decision])).toEqual([[hop, by, 'allow']]);
    },
  );

  test.prop([caseArb, fc.nat(), nameArb, fc.option(fc.stringMatching(/^[a-z ]{0,8}$/), { nil: undefined })])(
    'an approver the wait names denies: recorded once with the reason given, the item failed APPROVAL_DENIED',
    (c, pick, anyone, reason) => {
      const { tree, id, hop, stage } = waiting(c);
      const by = approverOf(c, pick, anyone);
      const d = tree.decide(id, { kind: 'deny', approver: by, ...(reason === undefined ? {} : { reason }) });
      expect(d.refusal).toBeUndefined();
      expect(d.handling).toBe('applied');
      // An empty reason is no reason: the run is not sent one.
      const given = reason === undefined || reason === '' ? undefined : reason;
      expect(d.runEvents[0]).toStrictEqual({ type: 'DENIED', by, ...(given === undefined ? {} : { reason: given }) });
      const changes = d.changes!;
      expect(changes.created).toBe(false);
      // The audit keeps the reason as the denier gave it (an empty one too).
      expect(changes.audit[0]).toEqual({
        kind: 'approval',
        itemId: id,
        hop,
        actor: by,
        data: { decision: 'denied', by, ...(reason === undefined ? {} : { reason }), stage },
      });
      expect(changes.audit.map((a) => a.kind)).toEqual(['approval', 'item-failed']);
      const suffix = given === undefined ? '' : `: ${given}`;
      expect(d.events.map((e) => [e.kind, e.hop, e.detail])).toEqual([
        ['approval-denied', hop, `denied by ${by}${suffix}`],
        ['failed', hop, `work item failed: APPROVAL_DENIED: approval denied by ${by}${suffix}`],
      ]);
      const item = d.view!.item;
      expect(item.state).toBe('failed');
      expect(item.approval).toBeNull();
      expect(item.finishedAt).toBe(tree.now);
      expect(item.failure).toMatchObject({ code: 'APPROVAL_DENIED', reason: `approval denied by ${by}${suffix}` });
      expect(changes.outbox.filter((o) => o.kind === 'start')).toEqual([]);
      expect(d.governed).toEqual([]);
    },
  );

  test.prop([caseArb, fc.nat(), nameArb, fc.boolean()])(
    "a row that keeps no record of the wait (written before waits were recorded): the audit names the item's hop",
    (c, pick, anyone, approve) => {
      const { tree, id, hop } = waiting(c);
      const kept = tree.views.get(id)!;
      tree.views.set(id, { ...kept, item: { ...kept.item, approval: null } });
      const by = approverOf(c, pick, anyone);
      const d = tree.decide(id, approve ? { kind: 'approve', approver: by } : { kind: 'deny', approver: by });
      expect(d.refusal).toBeUndefined();
      expect(d.changes!.audit[0]).toStrictEqual({
        kind: 'approval',
        itemId: id,
        hop,
        actor: by,
        data: { decision: approve ? 'approved' : 'denied', by },
      });
      expect(d.view!.item.state).toBe(approve ? 'running' : 'failed');
      expect(d.view!.item.approval).toBeNull();
    },
  );

  test.prop([caseArb, nameArb, fc.boolean()])(
    'anyone the wait does not name is refused COORD_APPROVAL_REFUSED, and nothing changes',
    (c, stranger, approve) => {
      fc.pre(c.approvers !== null && !c.approvers.includes(stranger));
      const { tree, id } = waiting(c);
      const before = tree.views.get(id);
      const d = tree.decide(
        id,
        approve ? { kind: 'approve', approver: stranger } : { kind: 'deny', approver: stranger, reason: 'no' },
      );
      expectRefused(
        d,
        before,
        'COORD_APPROVAL_REFUSED',
        `${approve ? 'APPROVED' : 'DENIED'} refused in state awaiting-approval: not-an-approver`,
      );
      expect(d.refused).toEqual([]);
    },
  );

  test.prop([fc.integer({ min: 0, max: 2 }), nameArb, fc.boolean()])(
    'an item that waits for no approval refuses one COORD_APPROVAL_REFUSED, and nothing changes',
    (done, by, approve) => {
      const tree = new ChildTree();
      const id = 'item';
      const stages: Record<string, object> = {};
      for (let i = 0; i <= done; i++) {
        stages[`s${i}`] = { role: 'w', ...(i < done ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}) };
      }
      tree.create(id, parseWorkflowDefinition({ id: 'plain', version: 1, start: 's0', stages }));
      for (let i = 0; i < done; i++) tree.answer(id, { parts: [{ kind: 'text', text: 'ok' }] });
      const before = tree.views.get(id);
      expect(before?.item.state).toBe('running');
      const d = tree.decide(id, approve ? { kind: 'approve', approver: by } : { kind: 'deny', approver: by });
      expectRefused(
        d,
        before,
        'COORD_APPROVAL_REFUSED',
        `${approve ? 'APPROVED' : 'DENIED'} refused in state running: not-in-state`,
      );
    },
  );

  test.prop([caseArb, fc.nat(), nameArb, fc.boolean(), fc.constantFrom('canceled', 'denied', 'approved')])(
    'an ended item refuses an approval COORD_ITEM_FINAL, and an unknown one COORD_UNKNOWN_ITEM',
    (c, pick, anyone, approve, ending) => {
      const { tree, id } = waiting({ ...c, after: false });
      const by = approverOf(c, pick, anyone);
      if (ending === 'canceled') tree.decide(id, { kind: 'cancel', by: null, reason: null });
      else if (ending === 'denied') tree.decide(id, { kind: 'deny', approver: by });
      else {
        tree.decide(id, { kind: 'approve', approver: by });
        tree.answer(id, { parts: [{ kind: 'text', text: 'done' }] });
      }
      const ended = tree.views.get(id);
      expect(ended?.item.finishedAt).not.toBeNull();
      const input = approve ? { kind: 'approve' as const, approver: by } : { kind: 'deny' as const, approver: by };
      const state = ending === 'canceled' ? 'canceled' : ending === 'denied' ? 'failed' : 'completed';
      expectRefused(tree.decide(id, input), ended, 'COORD_ITEM_FINAL', `work item ${id} is ${state}`);
      expectRefused(tree.decide('nobody', input), undefined, 'COORD_UNKNOWN_ITEM', 'no such work item');
    },
  );
});
