import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import type { Decision, DecisionEnv, StartBody } from '../../src/decisions/coordinator-decisions.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import type { PolicyEntry } from '../../src/workflow/governance.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree, TREE_ROLES } from './child-tree.js';

/**
 * The rules of following a run's directive (what a decision does after the
 * run moved), each stated on its own: a created item's run is started and
 * its first hop governed (audited with the stage, role, attempt, who
 * approved, not a query) and dispatched; a hop governance denies is not dispatched, the run is told
 * (`GOVERNANCE_DENIED` with the policy, `BUDGET_EXCEEDED` for a spent
 * `maxHops`), with a `denied` event (and a `budget-exceeded` one) and the
 * item ends failed; a hop that needs an approval (governance's or a gate's)
 * waits: the run told (`APPROVAL_REQUIRED`, its reason cut at 2,000
 * characters, its approvers), the item's approval, one `approval-requested`
 * audit entry and event naming who may approve; the approval then dispatches
 * it as approved by them. A map with nothing to start reports its stage's
 * outcome at once (an empty list succeeds, something not a list fails
 * non-retryable, told in a `hop-failed` event); a hop out again after a
 * timeout is not dispatched twice.
 */

/** A tree whose decisions are governed by `policies` (and `maxHops`). */
class GovernedTree extends ChildTree {
  readonly cascade: CoordinatorGovernance;
  constructor(
    policies: PolicyEntry[] = [],
    maxHops = 100,
    readonly hopTimeoutMs?: number,
  ) {
    super();
    this.cascade = new CoordinatorGovernance({ knownRoles: TREE_ROLES, maxHops, policies });
  }
  override env(): DecisionEnv {
    return {
      ...super.env(),
      governance: this.cascade,
      ...(this.hopTimeoutMs === undefined ? {} : { hopTimeoutMs: this.hopTimeoutMs }),
    };
  }
}

const ROLES = ['w', 'x', 'y'] as const;

/** A chain of stages s0 → s1 → … with these roles (and, on stage `gated`, an approval gate). */
function chain(
  roles: readonly string[],
  opts: { gated?: number; gate?: { approvers: string[]; reason?: string }; retry?: object } = {},
): WorkflowDefinition {
  const stages: Record<string, object> = {};
  for (const [i, role] of roles.entries()) {
    stages[`s${i}`] = {
      role,
      ...(i + 1 < roles.length ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}),
      ...(i === opts.gated ? { approval: opts.gate } : {}),
    };
  }
  return parseWorkflowDefinition({
    id: 'driven',
    version: 2,
    start: 's0',
    ...(opts.retry === undefined ? {} : { defaults: { retry: opts.retry } }),
    stages,
  });
}

/** The stage hops of `id` in order. */
/** Creates the item over the chain `all` and completes its hops up to the first `y` stage, entered by the last decision. */
function untilFirstY(t: ChildTree, all: string[]): { d: Decision; at: number } {
  let d = t.create('item', chain(all));
  const at = all.indexOf('y');
  for (let i = 0; i < at; i++) {
    t.now += 3;
    d = t.answer('item', { parts: [] });
  }
  return { d, at };
}

function stageHops(t: ChildTree, id: string): HopRecord[] {
  return [...t.views.get(id)!.hops.values()].filter((h) => h.kind === 'stage');
}

const rolesArb = fc.array(fc.constantFrom(...ROLES), { minLength: 1, maxLength: 4 });
const reasonArb = fc.stringMatching(/^[a-z][a-z ]{0,30}$/);
const approversArb = fc.option(fc.uniqueArray(fc.stringMatching(/^[a-z]{2,6}$/), { minLength: 1, maxLength: 3 }), {
  nil: null,
});

/** The governance audit entries of a decision, as written. */
function governed(d: Decision) {
  return d.changes!.audit.filter((a) => a.kind === 'governance').map((a) => a.data);
}

describe('following the run: dispatch', () => {
  test.prop([rolesArb], { numRuns: 40 })(
    'each stage entered is governed (its stage, role, attempt, no approver, not a query) and dispatched once',
    (roles) => {
      const t = new GovernedTree();
      const d0 = t.create('item', chain(roles));
      expect(d0.runEvents.map((e) => e.type)).toEqual(['START']);
      let d = d0;
      for (const [i, role] of roles.entries()) {
        const stage = `s${i}`;
        expect(governed(d)).toEqual([
          { stage, role, attempt: 1, query: false, decision: 'allow', approvedBy: null, verdicts: expect.any(Array) },
        ]);
        expect(d.governed.map((g) => g.ctx)).toEqual([
          expect.objectContaining({ stage, role, hop: i + 1, attempt: 1, approvedBy: null }),
        ]);
        const hops = stageHops(t, 'item');
        expect(hops.map((h) => h.stage)).toEqual(roles.slice(0, i + 1).map((_, k) => `s${k}`));
        expect(hops.at(-1)).toMatchObject({ stage, role, hop: i + 1, attempt: 1, state: 'dispatched' });
        const starts = d.changes!.outbox.filter((o) => o.kind === 'start').map((o) => o.body as StartBody);
        expect(starts).toEqual([expect.objectContaining({ role, hop: i + 1, attempt: 1 })]);
        expect(d.view!.item.state).toBe('running');
        t.now += 10;
        d = t.answer('item', { parts: [{ kind: 'text', text: `done ${i}` }] });
      }
      expect(d.view!.item.state).toBe('completed');
      expect(d.changes!.ended).toBe(true);
      expect(governed(d)).toEqual([]);
    },
  );

  test.prop([fc.integer({ min: 2, max: 4 }), fc.integer({ min: 50, max: 500 })], { numRuns: 20 })(
    'a hop out again after its timeout is published again, not dispatched again',
    (maximumAttempts, timeout) => {
      const t = new GovernedTree([], 100, timeout);
      t.create('item', chain(['w', 'x'], { retry: { maximumAttempts, initialInterval: 0 } }));
      const [hop] = stageHops(t, 'item');
      t.now += timeout;
      const d = t.decide('item', { kind: 'timer' });
      expect(d.runEvents.map((e) => e.type)).toEqual(['HOP_TIMED_OUT']);
      expect(stageHops(t, 'item')).toEqual([{ ...hop, timeouts: 1 }]);
      expect(governed(d)).toEqual([]);
      expect(d.changes!.outbox).toEqual([{ kind: 'start', body: t.bodies<StartBody>('item', 'start')[0] }]);
      expect(d.changes!.audit.map((a) => a.kind)).toEqual(['timeout']);
    },
  );
});

describe('following the run: a hop governance denies', () => {
  test.prop([rolesArb, reasonArb, fc.constantFrom('no-y', 'deny-y')], { numRuns: 40 })(
    'is not dispatched: the run is told, a denied event names the policy and why, and the item fails',
    (roles, reason, policy) => {
      const t = new GovernedTree([
        { name: policy, check: (ctx) => (ctx.role === 'y' ? { decision: 'deny', reason } : { decision: 'allow' }) },
      ]);
      const all = [...roles, 'y'];
      const { d, at } = untilFirstY(t, all);
      const hop = at + 1;
      expect(stageHops(t, 'item').map((h) => h.stage)).toEqual(all.slice(0, at).map((_, k) => `s${k}`));
      expect(d.runEvents.filter((e) => e.type === 'GOVERNANCE_DENIED')).toEqual([
        { type: 'GOVERNANCE_DENIED', hop, reason, policy },
      ]);
      expect(d.events.filter((e) => e.kind === 'denied')).toEqual([
        expect.objectContaining({ hop, stage: `s${at}`, role: 'y', detail: `${policy}: ${reason}` }),
      ]);
      expect(d.events.filter((e) => e.kind === 'budget-exceeded')).toEqual([]);
      expect(governed(d)).toEqual([expect.objectContaining({ stage: `s${at}`, role: 'y', decision: 'deny', reason })]);
      expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'GOVERNANCE_DENIED' } });
      expect(d.changes!.audit.filter((a) => a.kind === 'item-failed')).toHaveLength(1);
      expect(d.changes!.outbox.filter((o) => o.kind === 'start')).toEqual([]);
    },
  );

  test.prop([fc.integer({ min: 1, max: 4 })], { numRuns: 20 })(
    "a hop past the item's maxHops: the run is told BUDGET_EXCEEDED, with a budget-exceeded event",
    (maxHops) => {
      const t = new GovernedTree();
      const roles = Array.from({ length: maxHops + 1 }, () => 'w');
      let d = t.create('item', chain(roles), { budget: { maxHops } });
      for (let i = 0; i < maxHops; i++) {
        t.now += 3;
        d = t.answer('item', { parts: [] });
      }
      const hop = maxHops + 1;
      expect(stageHops(t, 'item')).toHaveLength(maxHops);
      expect(d.runEvents.filter((e) => e.type === 'GOVERNANCE_DENIED')).toEqual([
        expect.objectContaining({ hop, policy: 'budget', code: 'BUDGET_EXCEEDED' }),
      ]);
      const events = d.events.filter((e) => e.kind === 'denied' || e.kind === 'budget-exceeded');
      expect(events.map((e) => [e.kind, e.hop, e.stage, e.role])).toEqual([
        ['denied', hop, `s${maxHops}`, 'w'],
        ['budget-exceeded', hop, `s${maxHops}`, 'w'],
      ]);
      expect(events[0]!.detail).toMatch(/^budget: /);
      expect(events[1]!.detail).toBe(`budget exceeded: ${maxHops} of ${maxHops} hops`);
      expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'BUDGET_EXCEEDED' } });
    },
  );
});

describe('following the run: a hop that needs an approval', () => {
  test.prop([rolesArb, fc.oneof(reasonArb, fc.constant('r'.repeat(2_100))), approversArb], { numRuns: 40 })(
    "governance's: the run is told, the item waits with who may approve, audited and told once; the approval dispatches it",
    (roles, reason, approvers) => {
      const asked: PolicyEntry = {
        name: 'ask',
        check: (ctx) =>
          ctx.role === 'y'
            ? { decision: 'require-approval', reason, ...(approvers === null ? {} : { approvers }) }
            : { decision: 'allow' },
      };
      const t = new GovernedTree([asked]);
      const all = [...roles, 'y'];
      const { d, at } = untilFirstY(t, all);
      const hop = at + 1;
      const stage = `s${at}`;
      const told = `ask: ${reason}`.slice(0, 2_000);
      expect(d.runEvents.filter((e) => e.type === 'APPROVAL_REQUIRED')).toEqual([
        { type: 'APPROVAL_REQUIRED', hop, reason: told, ...(approvers === null ? {} : { approvers }) },
      ]);
      const item = d.view!.item;
      expect(item.state).toBe('awaiting-approval');
      expect(item.approval).toEqual({ stage, hop, source: 'governance', approvers, reason: told });
      expect(d.changes!.audit.filter((a) => a.kind === 'approval-requested')).toEqual([
        {
          kind: 'approval-requested',
          itemId: 'item',
          hop,
          actor: 'coordinator',
          data: { stage, source: 'governance', approvers, reason: told },
        },
      ]);
      expect(d.events.filter((e) => e.kind === 'approval-requested')).toEqual([
        expect.objectContaining({
          hop,
          stage,
          role: 'y',
          detail: `waits for ${approvers === null ? 'an approver' : approvers.join(' or ')}: ${told}`,
        }),
      ]);
      expect(stageHops(t, 'item').filter((h) => h.stage === stage)).toEqual([]);
      expect(d.changes!.outbox.filter((o) => o.kind === 'start')).toEqual([]);
      // The approval: the hop goes out, as approved by them.
      const by = approvers?.at(-1) ?? 'anyone';
      t.now += 7;
      const a = t.decide('item', { kind: 'approve', approver: by });
      expect(a.view!.item.approval).toBeNull();
      expect(governed(a)).toEqual([expect.objectContaining({ stage, role: 'y', decision: 'allow', approvedBy: by })]);
      expect(stageHops(t, 'item').at(-1)).toMatchObject({ stage, role: 'y', hop, attempt: 1, state: 'dispatched' });
      expect(a.changes!.audit.filter((x) => x.kind === 'approval-requested')).toEqual([]);
    },
  );

  test.prop(
    [
      fc.integer({ min: 0, max: 3 }),
      fc.uniqueArray(fc.stringMatching(/^[a-z]{2,6}$/), { minLength: 1, maxLength: 3 }),
      fc.option(reasonArb, { nil: undefined }),
    ],
    { numRuns: 30 },
  )("a stage's gate: the item waits for one of its approvers, for its reason", (gated, approvers, reason) => {
    const t = new GovernedTree();
    const roles = ['w', 'x', 'y', 'w'].slice(0, gated + 1);
    let d = t.create('item', chain(roles, { gated, gate: { approvers, ...(reason === undefined ? {} : { reason }) } }));
    for (let i = 0; i < gated; i++) {
      t.now += 3;
      d = t.answer('item', { parts: [] });
    }
    const stage = `s${gated}`;
    const why = reason ?? `stage ${stage} has an approval gate`;
    const item = d.view!.item;
    expect(item.state).toBe('awaiting-approval');
    expect(item.approval).toEqual({ stage, hop: gated + 1, source: 'gate', approvers, reason: why });
    expect(d.changes!.audit.filter((a) => a.kind === 'approval-requested').map((a) => a.data)).toEqual([
      { stage, source: 'gate', approvers, reason: why },
    ]);
    expect(d.events.filter((e) => e.kind === 'approval-requested')).toEqual([
      expect.objectContaining({ stage, role: roles[gated], detail: `waits for ${approvers.join(' or ')}: ${why}` }),
    ]);
    expect(governed(d)).toEqual([]);
    t.now += 7;
    const a = t.decide('item', { kind: 'approve', approver: approvers[0]! });
    expect(governed(a)).toEqual([expect.objectContaining({ stage, approvedBy: approvers[0], decision: 'allow' })]);
    expect(stageHops(t, 'item').at(-1)).toMatchObject({ stage, state: 'dispatched' });
  });
});

describe('following the run: a map with nothing to start', () => {
  /** A lead hop whose data part a map over `pointer` reads, then a last stage `after` on success or failure. */
  function mapFlow(pointer: string): WorkflowDefinition {
    return parseWorkflowDefinition({
      id: 'mapped',
      version: 1,
      start: 'lead',
      stages: {
        lead: { role: 'lead', next: [{ on: 'succeeded', goto: 'map' }] },
        map: {
          role: 'w',
          forEach: pointer,
          next: [
            { on: 'succeeded', goto: 'after' },
            { on: 'failed', end: 'failed' },
          ],
        },
        after: { role: 'x' },
      },
    });
  }

  test.prop([fc.stringMatching(/^[a-z]{1,8}$/)], { numRuns: 20 })(
    'an empty list: the stage succeeds at once with an empty output, and the next stage is dispatched',
    (key) => {
      const t = new GovernedTree();
      t.create('item', mapFlow(`/${key}`));
      const d = t.answer('item', { parts: [{ kind: 'data', data: { [key]: [] } }] });
      expect(d.runEvents.map((e) => e.type)).toEqual(['HOP_SUCCEEDED', 'HOP_SUCCEEDED']);
      expect(d.runEvents[1]).toEqual({ type: 'HOP_SUCCEEDED', hop: 2, attempt: 1, output: [] });
      expect(t.spawns('item')).toEqual([]);
      expect(stageHops(t, 'item').at(-1)).toMatchObject({ stage: 'after', hop: 3, state: 'dispatched' });
      expect(d.view!.run!.context.output).toEqual([]);
    },
  );

  test.prop([fc.stringMatching(/^[a-z]{1,8}$/), fc.integer({ min: 0, max: 300 }), fc.boolean()], { numRuns: 20 })(
    'something not a list: the stage fails at once, non-retryable, told in a hop-failed event',
    (key, pad, present) => {
      const pointer = `/${key}${'p'.repeat(pad)}`;
      const t = new GovernedTree();
      t.create('item', mapFlow(pointer));
      const d = t.answer('item', { parts: [{ kind: 'data', data: present ? { [pointer.slice(1)]: 'x' } : {} }] });
      const failed = d.runEvents.filter((e) => e.type === 'HOP_FAILED');
      expect(failed).toEqual([
        {
          type: 'HOP_FAILED',
          hop: 2,
          attempt: 1,
          errorType: 'MapInputInvalid',
          message: expect.stringContaining(`stage map: forEach "${pointer}"`),
          final: 'non-retryable',
        },
      ]);
      const message = (failed[0] as { message: string }).message;
      expect(message).toContain(present ? 'is not a list' : 'is not in the previous output');
      expect(d.events.filter((e) => e.kind === 'hop-failed')).toEqual([
        expect.objectContaining({ hop: 2, stage: 'map', detail: `failed: MapInputInvalid: ${message.slice(0, 200)}` }),
      ]);
      expect(t.spawns('item')).toEqual([]);
      expect(d.view!.item).toMatchObject({ state: 'failed' });
      expect(d.changes!.ended).toBe(true);
    },
  );
});

/** The result of the hop out of `id` that asks `x` a question under `token`. */
function asking(t: ChildTree, id: string, token: string): ResultEnvelope {
  const s = t.out(id)!;
  return {
    kind: 'result',
    headers: { taskId: s.taskId, runId: s.runId, hop: s.hop, attempt: s.attempt, idempotencyKey: s.idempotencyKey },
    role: s.role,
    outcome: 'suspended',
    parts: [],
    artifacts: [],
    ask: { role: 'x', continuationToken: token, message: { parts: [{ kind: 'text', text: '?' }] } },
  };
}

describe('following the run: waiting', () => {
  test.prop([rolesArb], { numRuns: 20 })(
    'a hop that asked waits for the reply: nothing else is dispatched, the item stays live',
    (roles) => {
      const t = new GovernedTree();
      t.create('item', chain(roles));
      const d = t.decide('item', { kind: 'result', result: asking(t, 'item', 'tok') });
      expect(d.view!.item.state).toBe('suspended');
      expect(stageHops(t, 'item').map((h) => h.state)).toEqual(['suspended']);
      expect(d.changes!.ended).toBe(false);
    },
  );

  test.prop([rolesArb, fc.boolean()], { numRuns: 20 })(
    'the answer resumes the hop that asked: governed again, out again with the answer as its reply, no hop made',
    (roles, failed) => {
      const t = new GovernedTree();
      t.create('item', chain(roles));
      t.decide('item', { kind: 'result', result: asking(t, 'item', 'tok') });
      const view = t.views.get('item')!;
      const query = [...view.hops.values()].find((h) => h.kind === 'query')!;
      const hop = view.hops.get(query.askedBy!)!;
      t.now += 9;
      const reply: ResultEnvelope = {
        kind: 'result',
        headers: {
          taskId: hop.id,
          runId: 'item',
          hop: hop.hop,
          attempt: 1,
          idempotencyKey: query.idempotencyKey,
          askedBy: { role: hop.role, continuationToken: 'tok', taskId: hop.id, hop: hop.hop },
        },
        role: 'x',
        outcome: failed ? 'failed' : 'completed',
        parts: [{ kind: 'text', text: 'yes' }],
        artifacts: [],
        ...(failed ? { error: { type: 'Nope', message: 'no' } } : {}),
      };
      const d = t.decide('item', { kind: 'result', result: reply });
      expect(d.runEvents.map((e) => e.type)).toEqual(['HOP_RESUMED']);
      expect(governed(d)).toEqual([
        expect.objectContaining({ stage: 's0', role: roles[0], attempt: 1, query: false, approvedBy: null }),
      ]);
      expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: reply }]);
      expect(d.view!.hops.get(hop.id)).toMatchObject({ state: 'dispatched', activeSince: t.now });
      expect(stageHops(t, 'item')).toHaveLength(1);
      expect(d.events.map((e) => e.kind)).toEqual(['answered', 'resumed']);
      expect(d.view!.item.state).toBe('running');
    },
  );
});

describe("a verdict the run's wait could not hold", () => {
  test.prop([fc.integer({ min: 129, max: 400 })])(
    'a deny by a policy with a very long name fails the item, naming the policy by its first 128 characters',
    (length) => {
      const name = 'p'.repeat(length);
      const t = new GovernedTree([{ name, check: () => ({ decision: 'deny', reason: 'no' }) }]);
      const d = t.create('item', chain(['w']));
      expect(d.view!.item.state).toBe('failed');
      expect(d.runEvents.filter((e) => e.type === 'GOVERNANCE_DENIED')).toEqual([
        expect.objectContaining({ policy: name.slice(0, 128) }),
      ]);
      // And a deny's very long reason: the run takes its first 2,000 characters.
      const why = 'r'.repeat(length * 10);
      const long = new GovernedTree([{ name: 'p', check: () => ({ decision: 'deny', reason: why }) }]);
      const denied = long.create('item', chain(['w']));
      expect(denied.runEvents.filter((e) => e.type === 'GOVERNANCE_DENIED')).toEqual([
        expect.objectContaining({ reason: why.slice(0, 2_000) }),
      ]);
    },
  );

  test.prop([
    fc.oneof(
      fc.integer({ min: 33, max: 60 }).map((n) => Array.from({ length: n }, (_, i) => `a${i}`)),
      fc.integer({ min: 129, max: 300 }).map((n) => ['ok', 'a'.repeat(n)]),
    ),
  ])('approvers past what a wait holds deny the hop, saying what approvers may be', (approvers) => {
    const t = new GovernedTree([
      { name: 'gate', check: () => ({ decision: 'require-approval', reason: 'ask', approvers }) },
    ]);
    const d = t.create('item', chain(['w']));
    expect(d.view!.item.state).toBe('failed');
    expect(d.view!.item.failure?.reason).toContain("approvers must be names a run's approval can wait for: Too big");
  });
});
