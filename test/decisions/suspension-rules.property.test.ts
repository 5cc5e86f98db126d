import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { CoordinatorGovernance } from '../../src/actors/coordinator/policies.js';
import type { Decision, DecisionEnv, StartBody } from '../../src/decisions/coordinator-decisions.js';
import { awaitsReply, takeAnswer } from '../../src/decisions/coordinator/suspension.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinition } from '../../src/protocol/workflow.js';
import type { PolicyEntry } from '../../src/workflow/governance.js';
import type { HopRecord } from '../../src/workflow/records.js';
import { ChildTree, TREE_ROLES, answerHeaders, hopHeaders, roleChain } from './child-tree.js';

/**
 * The rules of a hop that asks another role a question, each stated on its
 * own: the hop stands down (suspended, with what its result cost: its
 * `suspend` audit entry naming the role asked and the continuation, its cost
 * entry, its `suspended` event) and its query hop is made (the next in the
 * item's order, under the hop's number, keyed by the continuation, with the
 * question kept); the run is told (`HOP_SUSPENDED`); the question is
 * governed as a query and, allowed, published (its start row addressed back
 * to the hop, its `dispatch` audit entry). A question the run does not wait
 * for is never published and its query fails: denied (`GovernanceDenied`;
 * one needing an approval is denied too), over the item's budget
 * (`BudgetExceeded`), refused by the run (`RunRefused`), or asked after the
 * item ended (`ItemEnded`, a late result). An answer (or a failed one) is
 * written on the query (its reply, its cost, its `result` audit entry, its
 * `answered` event) and resumes the hop; after the item ended it is late.
 * Neither writes the item's row anew. A run waits for the answer under the
 * continuation it was suspended with and no other: not while running, not
 * once ended, not for a question asked before.
 */

/** A tree whose decisions are governed by `policies` too. */
class GovernedTree extends ChildTree {
  readonly cascade: CoordinatorGovernance;
  constructor(policies: PolicyEntry[] = []) {
    super();
    this.cascade = new CoordinatorGovernance({ knownRoles: [...TREE_ROLES, 'a/b'], maxHops: 100, policies });
  }
  override env(): DecisionEnv {
    return { ...super.env(), governance: this.cascade };
  }
}

const chain = (length: number): WorkflowDefinition => roleChain('asking', length, 1);

const usage = (tokens: number) => ({ inputTokens: tokens, outputTokens: 2, costUsd: 0, model: 'mm' });

const headersOf = hopHeaders;

/** The stage hop of `id` that is out. */
function outHop(t: ChildTree, id: string): HopRecord {
  return [...t.views.get(id)!.hops.values()].find((h) => h.kind === 'stage' && h.state === 'dispatched')!;
}

interface Case {
  /** Stages done before the hop that asks. */
  done: number;
  /** Questions asked and answered before, by the same hop. */
  before: number;
  role: string;
  token: string;
  question: string;
  tokens: number;
  budget: number | null;
}

const caseArb: fc.Arbitrary<Case> = fc.record({
  done: fc.integer({ min: 0, max: 2 }),
  before: fc.integer({ min: 0, max: 2 }),
  role: fc.constantFrom('x', 'y', 'z'),
  token: fc.stringMatching(/^c[a-z0-9]{1,10}$/),
  question: fc.string({ minLength: 1, maxLength: 8 }),
  tokens: fc.integer({ min: 0, max: 400 }),
  budget: fc.option(fc.integer({ min: 2_000, max: 9_000 }), { nil: null }),
});

/** The suspended result of `hop` asking `role` under `token`. */
function asked(hop: HopRecord, c: Pick<Case, 'role' | 'token' | 'question' | 'tokens'>): ResultEnvelope {
  return {
    kind: 'result',
    headers: headersOf(hop),
    role: hop.role,
    outcome: 'suspended',
    parts: [],
    artifacts: [],
    usage: usage(c.tokens),
    ask: { role: c.role, continuationToken: c.token, message: { parts: [{ kind: 'text', text: c.question }] } },
  };
}

/** The answer (completed, or failed with or without its error) to the query under `token`. */
function answerOf(
  t: ChildTree,
  id: string,
  token: string,
  how: { failed: boolean; error: boolean; tokens: number },
): ResultEnvelope {
  const view = t.views.get(id)!;
  const query = [...view.hops.values()].find((h) => h.continuation === token)!;
  return {
    kind: 'result',
    headers: answerHeaders(view, token),
    role: query.role,
    outcome: how.failed ? 'failed' : 'completed',
    parts: [{ kind: 'text', text: 'an answer' }],
    artifacts: [],
    usage: usage(how.tokens),
    ...(how.failed && how.error ? { error: { type: 'Nope', message: 'no' } } : {}),
  };
}

/** The item created with `c`'s budget, its first hops done, the hop out having asked and been answered `before` times. */
function ready(c: Case, t: ChildTree = new GovernedTree()) {
  const id = 'item';
  t.create(id, chain(c.done + 1), { budget: c.budget === null ? null : { maxTokens: c.budget } });
  for (let i = 0; i < c.done; i++) {
    t.now += 5;
    t.answer(id, { parts: [] });
  }
  for (let r = 0; r < c.before; r++) {
    t.now += 2;
    t.decide(id, { kind: 'result', result: asked(outHop(t, id), { ...c, token: `before-${r}`, tokens: 1 }) });
    t.now += 2;
    t.decide(id, {
      kind: 'result',
      result: answerOf(t, id, `before-${r}`, { failed: false, error: false, tokens: 1 }),
    });
  }
  t.now += 13;
  const view = t.views.get(id)!;
  return { t, id, view, hop: outHop(t, id) };
}

/** What the hop's result cost: its tokens and the 13 ms since it was last out. */
const added = (tokens: number, ms = 13) => ({ inputTokens: tokens, outputTokens: 2, costUsd: 0, elapsedMs: ms });

/** The hop after its suspending result: suspended, with what it cost. */
function suspendedHop(hop: HopRecord, tokens: number): HopRecord {
  const a = added(tokens);
  return {
    ...hop,
    state: 'suspended',
    activeSince: null,
    model: 'mm',
    usage: {
      inputTokens: hop.usage.inputTokens + a.inputTokens,
      outputTokens: hop.usage.outputTokens + a.outputTokens,
      costUsd: hop.usage.costUsd,
      elapsedMs: hop.usage.elapsedMs + a.elapsedMs,
    },
  };
}

/** The query hop a suspension makes (dispatched, before anything else happens to it). */
function queryHop(t: ChildTree, d: Decision, hop: HopRecord, c: Case, seq: number): HopRecord {
  const query = [...d.view!.hops.values()].find((h) => h.continuation === c.token)!;
  expect(query.id).toMatch(/^id-/);
  return {
    id: query.id,
    itemId: 'item',
    seq,
    hop: hop.hop,
    attempt: 1,
    kind: 'query',
    stage: hop.stage,
    role: c.role,
    idempotencyKey: `${c.token}:ask`,
    continuation: c.token,
    askedBy: hop.id,
    state: 'dispatched',
    taskId: null,
    model: null,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    error: null,
    reply: null,
    question: { parts: [{ kind: 'text', text: c.question }] },
    dispatchedAt: t.now,
    activeSince: t.now,
    finishedAt: null,
    timeouts: 0,
  };
}

describe('a hop that asks', () => {
  test.prop([caseArb], { numRuns: 50 })(
    'stands down, its query made and governed as a query, the run told, the question published back to it',
    (c) => {
      const { t, id, view, hop } = ready(c);
      const d = t.decide(id, { kind: 'result', result: asked(hop, c) });
      expect(d.handling).toBe('applied');
      expect(d.changes!.created).toBe(false);
      const seq = view.item.hops + 1;
      const query = queryHop(t, d, hop, c, seq);
      expect(d.view!.hops.get(hop.id)).toEqual(suspendedHop(hop, c.tokens));
      expect(d.view!.hops.get(query.id)).toEqual(query);
      expect(d.changes!.hops).toEqual([
        { hop: suspendedHop(hop, c.tokens), created: false },
        { hop: query, created: true },
      ]);
      expect(d.view!.item).toMatchObject({ hops: seq, state: 'suspended', hop: hop.hop });
      expect(d.runEvents).toEqual([
        {
          type: 'HOP_SUSPENDED',
          hop: hop.hop,
          attempt: hop.attempt,
          continuation: c.token,
          askedRole: c.role,
          usage: added(c.tokens),
        },
      ]);
      const audit = d.changes!.audit;
      expect(audit.map((a) => a.kind)).toEqual(['suspend', 'cost', 'governance', 'dispatch']);
      expect(audit[0]).toEqual({
        kind: 'suspend',
        itemId: id,
        hop: hop.hop,
        actor: 'w',
        data: { hopId: hop.id, askedRole: c.role, continuation: c.token },
      });
      expect(audit[1]).toMatchObject({ kind: 'cost', hop: hop.hop, data: { hopId: hop.id, inputTokens: c.tokens } });
      expect(audit[2]!.data).toMatchObject({
        stage: hop.stage,
        role: c.role,
        attempt: hop.attempt,
        query: true,
        decision: 'allow',
        approvedBy: null,
      });
      expect(audit[3]).toEqual({
        kind: 'dispatch',
        itemId: id,
        hop: hop.hop,
        actor: 'coordinator',
        data: { hopId: query.id, kind: 'query', role: c.role, idempotencyKey: `${c.token}:ask`, via: 'coordinator' },
      });
      expect(d.governed.map((g) => g.ctx)).toEqual([
        expect.objectContaining({ stage: hop.stage, role: c.role, hop: hop.hop, attempt: hop.attempt }),
      ]);
      expect(d.events).toEqual([
        {
          kind: 'suspended',
          itemId: id,
          hop: hop.hop,
          stage: hop.stage,
          role: 'w',
          detail: `asked ${c.role} and stood down`,
          usage: added(c.tokens),
          model: 'mm',
          at: t.now,
        },
      ]);
      const spent = d.view!.item.usage;
      const body: StartBody = {
        role: c.role,
        taskId: hop.id,
        runId: id,
        hop: hop.hop,
        attempt: 1,
        idempotencyKey: `${c.token}:ask`,
        askedBy: { role: 'w', continuationToken: c.token, taskId: hop.id, hop: hop.hop },
        message: { parts: [{ kind: 'text', text: c.question }] },
        ...(c.budget === null
          ? {}
          : {
              itemBudget: {
                maxTokens: c.budget,
                spentTokens: spent.inputTokens + spent.outputTokens,
                spentCostUsd: 0,
              },
            }),
      };
      expect(d.changes!.outbox).toEqual([{ kind: 'start', body }]);
    },
  );

  test.prop([caseArb, fc.stringMatching(/^[a-z][a-z ]{0,20}$/), fc.boolean()], { numRuns: 40 })(
    'a question governance denies (or would have wait for an approval) is not published: its query fails, the item fails',
    (c, reason, approval) => {
      const policy: PolicyEntry = {
        name: 'no-asking',
        check: (ctx) =>
          ctx.role !== c.role
            ? { decision: 'allow' }
            : approval
              ? { decision: 'require-approval', reason }
              : { decision: 'deny', reason },
      };
      const { t, id, hop } = ready({ ...c, before: 0, budget: null }, new GovernedTree([policy]));
      const d = t.decide(id, { kind: 'result', result: asked(hop, c) });
      const told = approval ? `a query cannot wait for an approval (no-asking: ${reason})` : reason;
      expect(d.runEvents).toEqual([
        expect.objectContaining({ type: 'HOP_SUSPENDED' }),
        { type: 'GOVERNANCE_DENIED', hop: hop.hop, reason: told, ...(approval ? {} : { policy: 'no-asking' }) },
      ]);
      expect(d.events.filter((e) => e.kind === 'denied')).toEqual([
        expect.objectContaining({ hop: hop.hop, stage: hop.stage, detail: `query to ${c.role} denied: ${told}` }),
      ]);
      const item = d.view!.item;
      expect(item).toMatchObject({ state: 'failed', failure: { code: 'GOVERNANCE_DENIED' } });
      expectDropped(t, d, c, 'GovernanceDenied', item.failure!.reason);
    },
  );

  test.prop([caseArb], { numRuns: 30 })(
    'a question whose result takes the item over its budget is not asked: its query fails, the item fails',
    (c) => {
      const budget = 1_000;
      const { t, id, hop } = ready({ ...c, before: 0, budget });
      const d = t.decide(id, { kind: 'result', result: asked(hop, { ...c, tokens: budget + c.tokens }) });
      const item = d.view!.item;
      expect(item).toMatchObject({ state: 'failed', failure: { code: 'BUDGET_EXCEEDED' } });
      expect(d.events.filter((e) => e.kind === 'budget-exceeded')).toHaveLength(1);
      expect(d.governed).toEqual([]);
      expectDropped(t, d, c, 'BudgetExceeded', item.failure!.reason);
    },
  );

  test.prop([caseArb, fc.constantFrom('a/b', '$x', 'w/x', `r${'x'.repeat(128)}`, `r${'y'.repeat(300)}`)], {
    numRuns: 30,
  })(
    'a question to a role no run can wait on fails its hop for good (InvalidSuspension): nothing is asked, the item fails',
    (c, role) => {
      const { t, id, hop } = ready({ ...c, before: 0 });
      const rowsBefore = t.rows.length;
      const d = t.decide(id, { kind: 'result', result: asked(hop, { ...c, role }) });
      expect(d.handling).toBe('applied');
      expect(d.refused).toEqual([]);
      const failed = d.view!.hops.get(hop.id)!;
      expect(failed).toMatchObject({ state: 'failed', error: { type: 'InvalidSuspension' } });
      expect(failed.error!.message).toContain(
        `the question's role ${JSON.stringify(role.slice(0, 140))} is not a role a run can wait on`,
      );
      expect(failed.error!.message).toContain('ask a role by the name its workers serve');
      // The run's own check says why; a long name is cut.
      expect(failed.error!.message).toContain('(expected a role name without spaces (at most 128))');
      if (role.length > 140) expect(failed.error!.message).not.toContain(role);
      // Not retried: the item fails at once, with what the result cost.
      expect(d.view!.item).toMatchObject({ state: 'failed', failure: { code: 'NON_RETRYABLE' } });
      expect(d.view!.item.usage.inputTokens).toBe(c.tokens);
      expect([...d.view!.hops.values()].filter((h) => h.kind === 'query')).toEqual([]);
      expect(t.rows.slice(rowsBefore).filter((r) => r.kind === 'start')).toEqual([]);
      expect(d.changes!.audit.filter((e) => e.kind === 'failure')).toEqual([
        expect.objectContaining({
          data: expect.objectContaining({ errorType: 'InvalidSuspension' }),
        }),
      ]);
      // Delivered again, it changes nothing.
      expect(t.decide(id, { kind: 'result', result: asked(hop, { ...c, role }) }).handling).toBe('duplicate');
    },
  );

  test.prop([caseArb], { numRuns: 20 })(
    'a completed result that also names a question to such a role completes its hop: it asks nothing',
    (c) => {
      const { t, id, hop } = ready({ ...c, before: 0 });
      const d = t.decide(id, {
        kind: 'result',
        result: { ...asked(hop, { ...c, role: 'a/b' }), outcome: 'completed' },
      });
      expect(d.view!.hops.get(hop.id)!.state).toBe('completed');
      expect([...d.view!.hops.values()].filter((h) => h.kind === 'query')).toEqual([]);
    },
  );

  test.prop([caseArb], { numRuns: 30 })(
    'a question asked after the item ended is late: its cost is written, its query fails, nothing is asked',
    (c) => {
      const { t, id, hop } = ready({ ...c, before: 0 });
      t.decide(id, { kind: 'cancel', by: null, reason: null });
      const d = t.decide(id, { kind: 'result', result: asked(hop, c) });
      expect(d.handling).toBe('late');
      expect(d.runEvents).toEqual([]);
      expect(d.view!.hops.get(hop.id)).toEqual(suspendedHop(hop, c.tokens));
      expect(d.events.map((e) => [e.kind, e.detail])).toEqual([
        ['suspended', `asked ${c.role} and stood down`],
        ['late-result', 'a result after the item ended (canceled): cost accrued'],
      ]);
      expect(d.changes!.audit.map((a) => a.kind)).toEqual(['suspend', 'cost']);
      expectDropped(t, d, c, 'ItemEnded', 'the work item is canceled');
    },
  );
});

/** The query of a question not asked: failed with `type` and `message`, never published. */
function expectDropped(t: ChildTree, d: Decision, c: Case, type: string, message: string): void {
  const query = [...d.view!.hops.values()].find((h) => h.continuation === c.token)!;
  expect(query).toMatchObject({
    kind: 'query',
    role: c.role,
    state: 'failed',
    activeSince: null,
    finishedAt: t.now,
    error: { type, message },
    reply: null,
  });
  expect(d.changes!.outbox.filter((o) => o.kind === 'start')).toEqual([]);
  expect(d.changes!.audit.filter((a) => a.kind === 'dispatch')).toEqual([]);
}

describe('an answer', () => {
  const howArb = fc.record({
    failed: fc.boolean(),
    error: fc.boolean(),
    tokens: fc.integer({ min: 0, max: 300 }),
    published: fc.option(fc.integer({ min: -30, max: 30 }), { nil: undefined }),
  });

  test.prop([caseArb.map((c) => ({ ...c, budget: null })), howArb], { numRuns: 60 })(
    'is written on its query (its reply, its cost from its publish) and resumes the hop that asked',
    (c, how) => {
      const { t, id, hop } = ready(c);
      t.decide(id, { kind: 'result', result: asked(hop, c) });
      const view = t.views.get(id)!;
      const query = [...view.hops.values()].find((h) => h.continuation === c.token)!;
      t.now += 20;
      const reply = answerOf(t, id, c.token, how);
      const publishedAt = how.published === undefined ? undefined : query.activeSince! + 10 + how.published;
      const d = t.decide(id, {
        kind: 'result',
        result: reply,
        ...(publishedAt === undefined ? {} : { publishedAt }),
      });
      expect(d.handling).toBe('applied');
      expect(d.changes!.created).toBe(false);
      // Its running segment: until its answer was published (within it), else until now.
      const ms = publishedAt === undefined ? 20 : Math.min(20, Math.max(0, 10 + how.published!));
      const error = how.failed
        ? how.error
          ? { type: 'Nope', message: 'no' }
          : { type: 'Error', message: 'the query failed' }
        : null;
      expect(d.view!.hops.get(query.id)).toEqual({
        ...query,
        state: how.failed ? 'failed' : 'completed',
        finishedAt: t.now,
        activeSince: null,
        model: 'mm',
        usage: added(how.tokens, ms),
        error,
        reply,
      });
      expect(d.changes!.usage).toEqual([
        expect.objectContaining({ hopId: query.id, agent: c.role, inputTokens: how.tokens, elapsedMs: ms }),
      ]);
      expect(d.view!.item.usage.inputTokens).toBe(view.item.usage.inputTokens + how.tokens);
      const audit = d.changes!.audit;
      expect(audit.map((a) => a.kind)).toEqual(['result', 'cost', 'governance', 'resume']);
      expect(audit[0]).toEqual({
        kind: 'result',
        itemId: id,
        hop: hop.hop,
        actor: c.role,
        data: { hopId: query.id, kind: 'query', outcome: reply.outcome, parts: 1 },
      });
      expect(audit[1]).toMatchObject({ kind: 'cost', data: { hopId: query.id, agent: c.role, elapsedMs: ms } });
      expect(d.events[0]).toEqual({
        kind: 'answered',
        itemId: id,
        hop: hop.hop,
        stage: hop.stage,
        role: c.role,
        detail: how.failed ? `the query failed: ${error!.type}` : 'answered the query',
        usage: added(how.tokens, ms),
        model: 'mm',
        at: t.now,
      });
      expect(d.runEvents).toEqual([
        { type: 'HOP_RESUMED', hop: hop.hop, continuation: c.token, usage: added(how.tokens, ms) },
      ]);
      expect(d.view!.hops.get(hop.id)).toMatchObject({ state: 'dispatched', activeSince: t.now });
      expect(d.changes!.outbox).toEqual([{ kind: 'signal', body: reply }]);
      expect(d.view!.item.state).toBe('running');
    },
  );

  test.prop([caseArb.map((c) => ({ ...c, budget: null })), fc.boolean()], { numRuns: 30 })(
    'after the item ended is late: written on its query, the hop not resumed',
    (c, failed) => {
      const { t, id, hop } = ready(c);
      t.decide(id, { kind: 'result', result: asked(hop, c) });
      t.now += 4;
      t.decide(id, { kind: 'cancel', by: null, reason: null });
      const query = [...t.views.get(id)!.hops.values()].find((h) => h.continuation === c.token)!;
      t.now += 4;
      const reply = answerOf(t, id, c.token, { failed, error: true, tokens: 3 });
      const d = t.decide(id, { kind: 'result', result: reply });
      expect(d.handling).toBe('late');
      expect(d.runEvents).toEqual([]);
      expect(d.view!.hops.get(query.id)).toMatchObject({ state: failed ? 'failed' : 'completed', reply });
      expect(d.view!.hops.get(hop.id)!.state).toBe('suspended');
      expect(d.events.map((e) => [e.kind, e.hop, e.stage, e.role])).toEqual([
        ['answered', hop.hop, hop.stage, c.role],
        ['late-result', hop.hop, hop.stage, c.role],
      ]);
      expect(d.changes!.outbox).toEqual([]);
      expect(d.changes!.audit.map((a) => a.kind)).toEqual(['result', 'cost']);
    },
  );
});

describe('the answer a run waits for', () => {
  test.prop([caseArb.map((c) => ({ ...c, budget: null })), fc.stringMatching(/^d[a-z0-9]{1,10}$/)], { numRuns: 30 })(
    'is the one under the continuation its hop was suspended with: none while the hop is out, none once the item ended',
    (c, other) => {
      const { t, id, hop } = ready(c);
      const env = t.env();
      const waits = (token: string) => awaitsReply(new Work(t.views.get(id)!, env), token);
      const earlier = Array.from({ length: c.before }, (_, r) => `before-${r}`);
      expect([c.token, other, ...earlier].map(waits)).toEqual([false, false, ...earlier.map(() => false)]);
      t.decide(id, { kind: 'result', result: asked(hop, c) });
      expect([c.token, other, ...earlier].map(waits)).toEqual([true, false, ...earlier.map(() => false)]);
      t.decide(id, { kind: 'cancel', by: null, reason: null });
      expect(t.views.get(id)!.run).toBeNull();
      expect([c.token, other, ...earlier].map(waits)).toEqual([false, false, ...earlier.map(() => false)]);
    },
  );

  test.prop([caseArb.map((c) => ({ ...c, before: c.before + 1, budget: null })), fc.boolean()], { numRuns: 30 })(
    'the answer to a question asked before is written on its query but resumes nothing',
    (c, failed) => {
      const { t, id, hop } = ready(c);
      t.decide(id, { kind: 'result', result: asked(hop, c) });
      t.now += 3;
      const view = t.views.get(id)!;
      const token = `before-${c.before - 1}`;
      const earlier = [...view.hops.values()].find((h) => h.continuation === token)!;
      const reply = answerOf(t, id, token, { failed, error: true, tokens: 5 });
      const work = new Work(view, t.env());
      expect(takeAnswer(work, reply, earlier, t.now)).toBe(false);
      expect(work.runEvents).toEqual([]);
      expect(work.hops.get(earlier.id)).toMatchObject({ state: failed ? 'failed' : 'completed', reply });
      expect(work.hops.get(hop.id)!.state).toBe('suspended');
      expect(work.run).toBe(view.run);
    },
  );
});
