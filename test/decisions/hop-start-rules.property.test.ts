import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import {
  type Decision,
  type DecisionEnv,
  SWITCHBOARD_METADATA_KEY,
  type StartBody,
  retryPolicyOf,
} from '../../src/decisions/coordinator-decisions.js';
import { dispatch } from '../../src/decisions/coordinator/hop-start.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import { retryDelayMs } from '../../src/protocol/retry-policy.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition, stageRetryPolicy } from '../../src/workflow/definition.js';
import type { AncestorRollup, HopRecord, ItemBudget } from '../../src/workflow/records.js';
import { ChildTree, TREE_ROLES, answerHeaders } from './child-tree.js';

/**
 * The rules of starting a hop, each stated on its own: every hop is first
 * governed with what the item is (its id, workflow, attributes, usage so far
 * and its children's hops) and what the hop is (its stage, role, number,
 * attempt, who approved it), audited as a `governance` entry. Allowed, a
 * stage hop is dispatched: a new hop row (the next in the item's order, keyed
 * `<item>/<hop>/<attempt>`), one `start` row whose body carries the hop, the
 * item's input with the switchboard metadata, the stage's retry policy and
 * the item's budget in tokens or dollars with what it had spent, one
 * `dispatch` audit entry and one `dispatched` event, and one hop of the
 * tree's rollup; a later attempt (a run's retry directive) goes out after
 * its delay, audited `retry`, and counts no hop. The item's own budget
 * denies a hop once spent: in `maxHops`, failing the item `BUDGET_EXCEEDED`
 * (its audit naming the limit); in tokens exactly, `GOVERNANCE_DENIED`. A
 * hop under an ancestor whose subtree has spent its budget, or under the
 * item's own budget spent by its subtree, is denied (`tree-budget`) and
 * fails the item `BUDGET_EXCEEDED`: the first such ancestor, parent first,
 * before the item's own, with what this decision charged counted. A hop
 * answered resumes with its answer (its `resume` audit entry and `resumed`
 * event), once. A stage's retry policy is resolved once per definition
 * object.
 */

/** A tree whose governance the tests read back, with a default hop timeout when given. */
class GovernedTree extends ChildTree {
  readonly cascade = new CoordinatorGovernance({ knownRoles: TREE_ROLES, maxHops: 100 });
  constructor(readonly hopTimeoutMs?: number) {
    super();
  }
  override env(): DecisionEnv {
    return {
      ...super.env(),
      governance: this.cascade,
      ...(this.hopTimeoutMs === undefined ? {} : { hopTimeoutMs: this.hopTimeoutMs }),
    };
  }
}

interface Shape {
  workflow: { id: string; version: number };
  roles: string[];
  retry: { maximumAttempts: number; initialInterval: number; backoffCoefficient: number };
  /** A stage's own `maximumAttempts` over the defaults, or none. */
  attempts: (number | null)[];
}

const shapeArb: fc.Arbitrary<Shape> = fc
  .record({
    workflow: fc.record({ id: fc.stringMatching(/^[a-z]{1,6}$/), version: fc.integer({ min: 1, max: 9 }) }),
    roles: fc.array(fc.constantFrom('w', 'x', 'y'), { minLength: 1, maxLength: 3 }),
    retry: fc.record({
      maximumAttempts: fc.integer({ min: 1, max: 3 }),
      initialInterval: fc.integer({ min: 0, max: 500 }),
      backoffCoefficient: fc.integer({ min: 1, max: 3 }),
    }),
    attempts: fc.array(fc.option(fc.integer({ min: 1, max: 3 }), { nil: null }), { minLength: 3, maxLength: 3 }),
  })
  .map((s) => ({ ...s, attempts: s.attempts.slice(0, s.roles.length) }));

/** Stages s0 → s1 → … of the shape's roles, each with its own attempts when set. */
function definition(s: Shape): WorkflowDefinition {
  const stages: Record<string, object> = {};
  for (const [i, role] of s.roles.entries()) {
    const own = s.attempts[i] ?? null;
    stages[`s${i}`] = {
      role,
      ...(own === null ? {} : { retry: { maximumAttempts: own } }),
      ...(i + 1 < s.roles.length ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}),
    };
  }
  return parseWorkflowDefinition({ ...s.workflow, start: 's0', defaults: { retry: s.retry }, stages });
}

/** A budget no run here spends: tokens, dollars, hops, in any combination. */
const budgetArb: fc.Arbitrary<ItemBudget | null> = fc.oneof(
  fc.constant(null),
  fc.record({ maxHops: fc.integer({ min: 50, max: 90 }) }),
  fc
    .record(
      {
        maxTokens: fc.integer({ min: 100_000, max: 900_000 }),
        maxCostUsd: fc.integer({ min: 100, max: 900 }),
        maxHops: fc.integer({ min: 50, max: 90 }),
      },
      { requiredKeys: [] },
    )
    .filter((b) => Object.keys(b).length > 0),
);

const attributesArb = fc.option(
  fc.dictionary(fc.stringMatching(/^[a-z]{1,4}$/), fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.boolean()), {
    minKeys: 1,
    maxKeys: 3,
  }),
  { nil: null },
);

/** One result of the hop that is out: it succeeds or fails, with what it cost. */
const stepArb = fc.record({
  ok: fc.boolean(),
  tokens: fc.integer({ min: 0, max: 50 }),
  cents: fc.integer({ min: 0, max: 9 }),
  gap: fc.integer({ min: 1, max: 40 }),
});

/** The result of the stage hop of `id` that is out. */
function resultOf(t: ChildTree, id: string, step: { ok: boolean; tokens: number; cents: number }): ResultEnvelope {
  const usage = { inputTokens: step.tokens, outputTokens: 1, costUsd: step.cents / 100, model: 'm' };
  return t.resultOf(id, { usage, ...(step.ok ? {} : { error: { type: 'Boom', message: 'it broke' } }) });
}

/**
 * The tree's budget denied the hop `d` governed, for `reason`: after the
 * cascade's own verdicts (it allowed), and audited with `audit`'s fields.
 */
function expectTreeDenied(
  t: GovernedTree,
  d: Decision,
  budget: ItemBudget | null,
  reason: string,
  audit: Record<string, unknown>,
): void {
  const [g] = d.governed;
  const cascade = t.cascade.decide(budget, g!.ctx);
  expect(cascade.decision).toBe('allow');
  expect(g!.decision).toEqual({
    decision: 'deny',
    policy: 'tree-budget',
    reason,
    verdicts: [...cascade.verdicts, { policy: 'tree-budget', decision: 'deny', reason }],
  });
  expect(d.changes!.audit.filter((a) => a.kind === 'governance').map((a) => a.data)).toEqual([
    expect.objectContaining({ decision: 'deny', reason, ...audit }),
  ]);
}

/** The stage hops a decision made, in order. */
function made(d: Decision): HopRecord[] {
  return d.changes!.hops.filter((h) => h.created && h.hop.kind === 'stage').map((h) => h.hop);
}

/** The `start` bodies a decision wrote, in order. */
function starts(d: Decision): StartBody[] {
  return d.changes!.outbox.filter((o) => o.kind === 'start').map((o) => o.body as StartBody);
}

interface Run {
  shape: Shape;
  budget: ItemBudget | null;
  attributes: Record<string, string | number | boolean> | null;
  input: string[];
  steps: { ok: boolean; tokens: number; cents: number; gap: number }[];
}

const runArb: fc.Arbitrary<Run> = fc.record({
  shape: shapeArb,
  budget: budgetArb,
  attributes: attributesArb,
  input: fc.array(fc.string({ maxLength: 6 }), { minLength: 0, maxLength: 2 }),
  steps: fc.array(stepArb, { minLength: 0, maxLength: 8 }),
});

/**
 * Creates the item of `r` and feeds its hops the run's results, one
 * decision each, while a hop is out: `check` sees each decision with the
 * item's view before it and the time it was made at.
 */
function drive(
  r: Run,
  check: (d: Decision, before: Decision['view'], now: number, def: WorkflowDefinition, t: ChildTree) => void,
): void {
  const t = new GovernedTree();
  const def = definition(r.shape);
  const id = 'item';
  const input = r.input.map((text) => ({ kind: 'text' as const, text }));
  check(t.create(id, def, { input, budget: r.budget, attributes: r.attributes }), undefined, t.now, def, t);
  for (const step of r.steps) {
    if (t.out(id) === undefined) break;
    t.now += step.gap;
    const before = t.views.get(id);
    check(t.decide(id, { kind: 'result', result: resultOf(t, id, step) }), before, t.now, def, t);
  }
}

/** How long a hop waits before it is out: none for a first attempt, the stage's backoff for a retry. */
function delayOf(def: WorkflowDefinition, hop: HopRecord): number {
  return hop.attempt === 1 ? 0 : retryDelayMs(stageRetryPolicy(def, hop.stage), hop.attempt - 1);
}

describe('a stage hop dispatched', () => {
  test.prop([runArb], { numRuns: 60 })(
    "is the item's next hop row, keyed by its hop and attempt, out from now",
    (r) => {
      drive(r, (d, before, now, def) => {
        const hops = made(d);
        const item = d.view!.item;
        expect(item.hops).toBe((before?.item.hops ?? 0) + hops.length);
        for (const [i, hop] of hops.entries()) {
          expect(hop).toEqual({
            id: hop.id,
            itemId: item.id,
            seq: (before?.item.hops ?? 0) + i + 1,
            hop: hop.hop,
            attempt: hop.attempt,
            kind: 'stage',
            stage: hop.stage,
            role: r.shape.roles[Number(hop.stage.slice(1))],
            idempotencyKey: `${item.id}/${hop.hop}/${hop.attempt}`,
            continuation: null,
            askedBy: null,
            state: 'dispatched',
            taskId: null,
            model: null,
            usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
            error: null,
            reply: null,
            question: null,
            dispatchedAt: now,
            activeSince: now + delayOf(def, hop),
            finishedAt: null,
            timeouts: 0,
          });
          expect(before?.hops.has(hop.id) ?? false).toBe(false);
        }
      });
    },
  );

  test.prop([runArb], { numRuns: 60 })(
    "is published once: its body carries the hop, the item's input and metadata, the stage's retry policy, its delay, the item's budget",
    (r) => {
      drive(r, (d, _before, _now, def) => {
        const item = d.view!.item;
        const spent = item.usage;
        const b = r.budget;
        const header =
          b === null || (b.maxTokens === undefined && b.maxCostUsd === undefined)
            ? {}
            : {
                itemBudget: {
                  ...(b.maxTokens === undefined ? {} : { maxTokens: b.maxTokens }),
                  ...(b.maxCostUsd === undefined ? {} : { maxCostUsd: b.maxCostUsd }),
                  spentTokens: spent.inputTokens + spent.outputTokens,
                  spentCostUsd: spent.costUsd,
                },
              };
        // Strictly: a field the body does not carry is absent, not undefined.
        expect(starts(d)).toStrictEqual(
          made(d).map((hop) => {
            const delay = delayOf(def, hop);
            return {
              role: hop.role,
              taskId: hop.id,
              runId: item.id,
              hop: hop.hop,
              attempt: hop.attempt,
              idempotencyKey: `${item.id}/${hop.hop}/${hop.attempt}`,
              taskKey: item.id,
              retryPolicy: stageRetryPolicy(def, hop.stage),
              message: {
                role: 'user',
                parts: r.input.map((text) => ({ kind: 'text', text })),
                metadata: {
                  // The key is the contract (docs/coordinator.md: `metadata.switchboard`), written out here.
                  switchboard: {
                    itemId: item.id,
                    hopId: hop.id,
                    workflow: `${r.shape.workflow.id}@${r.shape.workflow.version}`,
                    stage: hop.stage,
                    hop: hop.hop,
                    attempt: hop.attempt,
                  },
                },
              },
              ...(delay > 0 ? { delayMs: delay } : {}),
              ...header,
            };
          }),
        );
        for (const body of starts(d)) expect(Object.hasOwn(body, 'delayMs')).toBe((body.delayMs ?? 0) > 0);
      });
    },
  );

  test.prop([runArb], { numRuns: 60 })(
    'is audited (`dispatch`, `retry` for a later attempt) and told (`dispatched`), and a first attempt is one hop of the rollup',
    (r) => {
      drive(r, (d, _before, now, def) => {
        const item = d.view!.item;
        const hops = made(d);
        expect(d.changes!.audit.filter((a) => a.kind === 'dispatch' || a.kind === 'retry')).toEqual(
          hops.map((hop) => ({
            kind: hop.attempt > 1 ? 'retry' : 'dispatch',
            itemId: item.id,
            hop: hop.hop,
            actor: 'coordinator',
            data: {
              hopId: hop.id,
              stage: hop.stage,
              role: hop.role,
              attempt: hop.attempt,
              idempotencyKey: hop.idempotencyKey,
              delayMs: delayOf(def, hop),
            },
          })),
        );
        expect(d.events.filter((e) => e.kind === 'dispatched')).toEqual(
          hops.map((hop) => ({
            kind: 'dispatched',
            itemId: item.id,
            hop: hop.hop,
            stage: hop.stage,
            role: hop.role,
            detail: hop.attempt > 1 ? `dispatched (attempt ${hop.attempt})` : 'dispatched',
            at: now,
          })),
        );
        expect(d.changes!.rollup?.hops ?? 0).toBe(hops.filter((h) => h.attempt === 1).length);
      });
    },
  );
});

describe('a later attempt', () => {
  test.prop([shapeArb, budgetArb, fc.integer({ min: 2, max: 6 }), fc.integer({ min: 0, max: 5_000 })], { numRuns: 40 })(
    "(a run's retry directive) goes out after its delay: audited `retry`, told `dispatched (attempt n)`, its body carrying the delay, no hop of the rollup",
    (s, budget, attempt, delay) => {
      const t = new GovernedTree();
      const def = definition(s);
      t.create('item', def, { budget });
      const view = t.views.get('item')!;
      const work = new Work(view, t.env());
      const role = s.roles[0]!;
      dispatch(work, 's0', role, 1, attempt, delay);
      const key = `item/1/${attempt}`;
      const hop = [...work.hops.values()].find((h) => h.idempotencyKey === key)!;
      expect(hop).toMatchObject({
        seq: view.item.hops + 1,
        hop: 1,
        attempt,
        kind: 'stage',
        stage: 's0',
        role,
        state: 'dispatched',
        dispatchedAt: t.now,
        activeSince: t.now + delay,
      });
      expect(view.hops.has(hop.id)).toBe(false);
      expect(work.item.hops).toBe(view.item.hops + 1);
      expect(work.hopsTaken).toBe(0);
      const [row] = work.outbox;
      expect(work.outbox).toHaveLength(1);
      expect(row).toMatchObject({
        kind: 'start',
        body: {
          role,
          taskId: hop.id,
          hop: 1,
          attempt,
          idempotencyKey: key,
          retryPolicy: stageRetryPolicy(def, 's0'),
          message: { metadata: { [SWITCHBOARD_METADATA_KEY]: { hopId: hop.id, stage: 's0', hop: 1, attempt } } },
        },
      });
      const body = row!.body as StartBody;
      expect(body.delayMs).toBe(delay > 0 ? delay : undefined);
      expect(Object.hasOwn(body, 'delayMs')).toBe(delay > 0);
      expect(work.audit).toEqual([
        {
          kind: 'retry',
          itemId: 'item',
          hop: 1,
          actor: 'coordinator',
          data: { hopId: hop.id, stage: 's0', role, attempt, idempotencyKey: key, delayMs: delay },
        },
      ]);
      expect(work.events).toEqual([
        {
          kind: 'dispatched',
          itemId: 'item',
          hop: 1,
          stage: 's0',
          role,
          detail: `dispatched (attempt ${attempt})`,
          at: t.now,
        },
      ]);
    },
  );
});

describe('a hop governed', () => {
  test.prop([runArb], { numRuns: 60 })(
    'is checked with the item (id, workflow, attributes, usage so far, no child hops) and the hop (stage, role, number, attempt, no approver), and audited',
    (r) => {
      drive(r, (d) => {
        const item = d.view!.item;
        const hops = made(d);
        expect(d.governed.map((g) => g.ctx)).toEqual(
          hops.map((hop) => ({
            itemId: item.id,
            workflow: r.shape.workflow,
            stage: hop.stage,
            role: hop.role,
            hop: hop.hop,
            attempt: hop.attempt,
            usage: item.usage,
            childHops: 0,
            approvedBy: null,
            ...(r.attributes === null ? {} : { attributes: r.attributes }),
          })),
        );
        for (const g of d.governed) expect(Object.hasOwn(g.ctx, 'attributes')).toBe(r.attributes !== null);
        expect(d.changes!.audit.filter((a) => a.kind === 'governance')).toEqual(
          d.governed.map((g) => ({
            kind: 'governance',
            itemId: item.id,
            hop: g.ctx.hop,
            actor: 'coordinator',
            data: {
              stage: g.ctx.stage,
              role: g.ctx.role,
              attempt: g.ctx.attempt,
              query: false,
              decision: 'allow',
              approvedBy: null,
              verdicts: g.decision.verdicts,
            },
          })),
        );
        for (const g of d.governed) expect(g.decision.verdicts.length).toBeGreaterThan(0);
      });
    },
  );
});

describe("a hop the item's own budget denies", () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 4 }),
      fc.constantFrom('maxHops' as const, 'maxTokens' as const),
      fc.integer({ min: 1, max: 40 }),
    ],
    {
      numRuns: 30,
    },
  )(
    'fails the item BUDGET_EXCEEDED when its maxHops is spent (the audit naming the limit and the hops), GOVERNANCE_DENIED when its tokens are spent exactly',
    (n, limit, per) => {
      const t = new GovernedTree();
      const id = 'item';
      const budget = limit === 'maxHops' ? { maxHops: n } : { maxTokens: n * per };
      t.create(
        id,
        definition({
          workflow: { id: 'own', version: 1 },
          roles: Array.from({ length: n + 1 }, () => 'w'),
          retry: { maximumAttempts: 1, initialInterval: 0, backoffCoefficient: 1 },
          attempts: [],
        }),
        { budget },
      );
      let d: Decision | undefined;
      for (let i = 0; i < n; i++) {
        t.now += 3;
        d = t.answer(id, { tokens: per });
      }
      const hop = n + 1;
      const reason =
        limit === 'maxHops' ? `budget spent: ${n} of ${n} hops` : `budget spent: ${n * per} of ${n * per} tokens`;
      const [g] = d!.governed;
      expect(g!.ctx.hop).toBe(hop);
      expect(g!.decision).toMatchObject({ decision: 'deny', policy: 'budget', reason });
      expect(d!.changes!.audit.filter((a) => a.kind === 'governance').map((a) => a.data)).toEqual([
        {
          stage: `s${n}`,
          role: 'w',
          attempt: 1,
          query: false,
          decision: 'deny',
          reason,
          approvedBy: null,
          verdicts: g!.decision.verdicts,
          ...(limit === 'maxHops' ? { budget: { limit: 'maxHops', maxHops: n, spent: n } } : {}),
        },
      ]);
      expect(d!.runEvents.filter((e) => e.type === 'GOVERNANCE_DENIED')).toEqual([
        {
          type: 'GOVERNANCE_DENIED',
          hop,
          reason,
          policy: 'budget',
          ...(limit === 'maxHops' ? { code: 'BUDGET_EXCEEDED' } : {}),
        },
      ]);
      expect(d!.events.filter((e) => e.kind === 'budget-exceeded').map((e) => e.detail)).toEqual(
        limit === 'maxHops' ? [`budget exceeded: ${n} of ${n} hops`] : [],
      );
      expect(d!.view!.item).toMatchObject({
        state: 'failed',
        failure: { code: limit === 'maxHops' ? 'BUDGET_EXCEEDED' : 'GOVERNANCE_DENIED' },
      });
      expect(made(d!)).toEqual([]);
    },
  );
});

/** The budget of a tree's item, in tokens (or none), and what its subtree spent. */
interface Over {
  budget: number | null;
  tokens: number;
  hops: number;
}

const overArb: fc.Arbitrary<Over> = fc.record({
  budget: fc.option(fc.integer({ min: 100, max: 200 }), { nil: null }),
  tokens: fc.integer({ min: 0, max: 260 }),
  hops: fc.integer({ min: 0, max: 5 }),
});

/** `tokens` as a subtree's usage: input and output tokens both. */
function split(tokens: number) {
  const input = Math.ceil(tokens / 2);
  return { inputTokens: input, outputTokens: tokens - input, costUsd: 0, elapsedMs: 0 };
}

/** Whether a subtree that spent `tokens` has spent `budget`, and the reason budgets give: at or over it. */
function spentReason(budget: number | null, tokens: number): string | null {
  if (budget === null || tokens < budget) return null;
  return `budget ${tokens > budget ? 'exceeded' : 'spent'}: ${tokens} of ${budget} tokens`;
}

describe("a hop under a tree's budget", () => {
  test.prop(
    [
      fc.array(overArb, { minLength: 0, maxLength: 3 }),
      fc.option(overArb, { nil: null }),
      fc.integer({ min: 0, max: 60 }),
    ],
    { numRuns: 80 },
  )(
    "is denied (`tree-budget`) and fails the item BUDGET_EXCEEDED under the first ancestor spent, parent first, else under the item's own subtree, this decision's charge counted",
    (ancestors, own, charge) => {
      const t = new GovernedTree();
      const id = 'item';
      const rollups: AncestorRollup[] = ancestors.map((a, i) => ({
        id: `up-${i}`,
        budget: a.budget === null ? null : { maxTokens: a.budget },
        tree: { usage: split(a.tokens), hops: a.hops },
      }));
      // The item's own budget is never spent by its own hops here: only by its subtree.
      const budget = own?.budget ?? null;
      const def = definition({
        workflow: { id: 'tree', version: 1 },
        roles: ['w', 'x'],
        retry: { maximumAttempts: 1, initialInterval: 0, backoffCoefficient: 1 },
        attempts: [],
      });
      const first = t.decide(id, {
        kind: 'create',
        itemId: id,
        taskId: null,
        definition: def,
        keepDefinition: false,
        input: [],
        budget: budget === null ? null : { maxTokens: budget + 100 },
        attributes: null,
        ancestors: rollups,
      });
      /** The denial expected for a hop governed with `added` tokens charged before it, or null. */
      const expected = (added: number, firstHop: boolean) => {
        for (const [i, a] of ancestors.entries()) {
          const reason = spentReason(a.budget, a.tokens + added);
          if (reason !== null) {
            return {
              reason: `up-${i}: ${reason}`,
              audit: {
                limit: 'ancestor',
                itemId: `up-${i}`,
                maxTokens: a.budget,
                spent: { tokens: a.tokens + added, costUsd: 0, hops: a.hops + (firstHop ? 0 : 1) },
              },
            };
          }
        }
        // The item's own subtree is read from the second hop on (the store reads none at its creation).
        const mine =
          own === null || firstHop ? null : spentReason(budget === null ? null : budget + 100, own.tokens + added);
        if (mine === null) return null;
        return {
          reason: `${id} with its children: ${mine}`,
          audit: {
            limit: 'subtree',
            itemId: id,
            maxTokens: budget! + 100,
            spent: { tokens: own!.tokens + added, costUsd: 0, hops: own!.hops },
          },
        };
      };
      const check = (d: Decision, hop: number, denial: ReturnType<typeof expected>) => {
        const [g] = d.governed;
        expect(g!.ctx.hop).toBe(hop);
        if (denial === null) {
          expect(g!.decision.decision).toBe('allow');
          expect(made(d).map((h) => h.hop)).toEqual([hop]);
          return;
        }
        const { reason, audit } = denial;
        expectTreeDenied(t, d, t.views.get(id)!.item.budget, reason, { budget: audit });
        expect(d.runEvents).toContainEqual({
          type: 'GOVERNANCE_DENIED',
          hop,
          reason,
          policy: 'tree-budget',
          code: 'BUDGET_EXCEEDED',
        });
        expect(d.events.filter((e) => e.kind === 'denied' || e.kind === 'budget-exceeded')).toEqual([
          expect.objectContaining({ kind: 'denied', hop, detail: `tree-budget: ${reason}` }),
          expect.objectContaining({ kind: 'budget-exceeded', hop, detail: `budget exceeded under ${reason}` }),
        ]);
        expect(made(d)).toEqual([]);
        expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'BUDGET_EXCEEDED' } });
      };
      const atFirst = expected(0, true);
      check(first, 1, atFirst);
      if (atFirst !== null) return;
      // The store's reading of the item's own subtree before its next decision.
      const view = t.views.get(id)!;
      if (own !== null) {
        t.views.set(id, {
          ...view,
          tree: { usage: split(own.tokens), hops: own.hops },
        });
      }
      t.now += 5;
      const second = t.answer(id, { tokens: charge });
      check(second, 2, expected(charge, false));
    },
  );
});

describe("a hop approved under the tree's budgets", () => {
  test.prop(
    [
      fc.integer({ min: 1, max: 300 }),
      fc.integer({ min: 0, max: 400 }),
      fc.integer({ min: 0, max: 5 }),
      fc.option(fc.record({ budget: fc.integer({ min: 1, max: 300 }), tokens: fc.integer({ min: 0, max: 400 }) }), {
        nil: null,
      }),
    ],
    { numRuns: 40 },
  )(
    "is governed against its parent's subtree and its own as the store read them (the approval charged nothing): the parent's denial first, one verdict; else its own; else dispatched",
    (max, tokens, hops, parent) => {
      const t = new GovernedTree();
      const id = 'item';
      const def = parseWorkflowDefinition({
        id: 'gated',
        version: 1,
        start: 's0',
        stages: { s0: { role: 'w', approval: { approvers: ['boss'] } } },
      });
      const ancestors: AncestorRollup[] =
        parent === null
          ? []
          : [{ id: 'up', budget: { maxTokens: parent.budget }, tree: { usage: split(parent.tokens), hops: 1 } }];
      t.decide(id, {
        kind: 'create',
        itemId: id,
        taskId: null,
        definition: def,
        keepDefinition: false,
        input: [],
        budget: { maxTokens: max },
        attributes: null,
        ancestors,
      });
      const view = t.views.get(id)!;
      expect(view.item.state).toBe('awaiting-approval');
      t.views.set(id, { ...view, tree: { usage: split(tokens), hops } });
      const d = t.decide(id, { kind: 'approve', approver: 'boss' });
      const [g] = d.governed;
      expect(g!.ctx.approvedBy).toBe('boss');
      const up = parent === null ? null : spentReason(parent.budget, parent.tokens);
      const own = spentReason(max, tokens);
      if (up === null && own === null) {
        expect(g!.decision.decision).toBe('allow');
        expect(made(d).map((h) => h.stage)).toEqual(['s0']);
        return;
      }
      const reason = up !== null ? `up: ${up}` : `${id} with its children: ${own}`;
      const budget =
        up !== null
          ? {
              limit: 'ancestor',
              itemId: 'up',
              maxTokens: parent!.budget,
              spent: { tokens: parent!.tokens, costUsd: 0, hops: 1 },
            }
          : { limit: 'subtree', itemId: id, maxTokens: max, spent: { tokens, costUsd: 0, hops } };
      expectTreeDenied(t, d, view.item.budget, reason, { approvedBy: 'boss', budget });
      expect(made(d)).toEqual([]);
      expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'BUDGET_EXCEEDED' } });
    },
  );
});

describe('a hop answered', () => {
  test.prop([fc.constantFrom('x', 'y', 'z'), fc.stringMatching(/^c[a-z0-9]{1,8}$/), fc.boolean()], { numRuns: 30 })(
    'resumes once with its answer: its `resume` audit entry and `resumed` event name who answered; out again after a timeout, it is published again, not resumed again',
    (role, token, failed) => {
      const t = new GovernedTree(1_000);
      const id = 'item';
      t.create(
        id,
        definition({
          workflow: { id: 'ask', version: 1 },
          roles: ['w'],
          retry: { maximumAttempts: 3, initialInterval: 0, backoffCoefficient: 1 },
          attempts: [],
        }),
      );
      const asking = [...t.views.get(id)!.hops.values()][0]!;
      t.now += 5;
      t.decide(id, {
        kind: 'result',
        result: {
          kind: 'result',
          headers: { taskId: asking.id, runId: id, hop: 1, attempt: 1, idempotencyKey: asking.idempotencyKey },
          role: 'w',
          outcome: 'suspended',
          parts: [],
          artifacts: [],
          ask: { role, continuationToken: token, message: { parts: [{ kind: 'text', text: 'why?' }] } },
        },
      });
      const query = [...t.views.get(id)!.hops.values()].find((h) => h.continuation === token)!;
      t.now += 7;
      const reply: ResultEnvelope = {
        kind: 'result',
        headers: answerHeaders(t.views.get(id)!, token),
        role,
        outcome: failed ? 'failed' : 'completed',
        parts: [],
        artifacts: [],
        ...(failed ? { error: { type: 'Nope', message: 'no' } } : {}),
      };
      const d = t.decide(id, { kind: 'result', result: reply });
      expect(d.changes!.audit.filter((a) => a.kind === 'resume')).toEqual([
        {
          kind: 'resume',
          itemId: id,
          hop: 1,
          actor: 'coordinator',
          data: { hopId: asking.id, answeredBy: role, queryId: query.id, continuation: token },
        },
      ]);
      expect(d.events.filter((e) => e.kind === 'resumed')).toEqual([
        {
          kind: 'resumed',
          itemId: id,
          hop: 1,
          stage: 's0',
          role: 'w',
          detail: `resumed with ${role}'s answer`,
          at: t.now,
        },
      ]);
      expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: reply }]);
      expect(d.view!.hops.get(asking.id)).toMatchObject({ state: 'dispatched', activeSince: t.now });
      // Out again past its timeout: published again (its answer signalled again), not resumed a second time.
      t.now += 1_001;
      const again = t.decide(id, { kind: 'timer' });
      expect(again.changes!.audit.map((a) => a.kind)).toEqual(['timeout']);
      expect(again.changes!.outbox).toEqual([{ kind: 'signal', body: reply }]);
      expect(again.events.filter((e) => e.kind === 'resumed')).toEqual([]);
      expect(again.governed).toEqual([]);
    },
  );
});

describe("a stage's retry policy", () => {
  test.prop([shapeArb], { numRuns: 30 })(
    'is the one the definition resolves for it, resolved once per definition object',
    (s) => {
      const def = definition(s);
      const again = definition(s);
      for (const stage of Object.keys(def.stages)) {
        const policy = retryPolicyOf(def, stage);
        expect(policy).toEqual(stageRetryPolicy(def, stage));
        expect(retryPolicyOf(def, stage)).toBe(policy);
        expect(retryPolicyOf(again, stage)).toEqual(policy);
      }
    },
  );
});
