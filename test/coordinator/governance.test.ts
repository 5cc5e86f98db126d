import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorError } from '../../src/actors/coordinator/types.js';
import { type WorkHandler, complete } from '../../src/actors/worker/worker.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import type { NamedPolicy } from '../../src/workflow/governance.js';
import { RESULTS_ROLE, type ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { type Fixture, auditRows, auditHead, autoApprove, deployments, openFixture, until } from './helpers.js';

/** Governance denials, budget overruns, approvals and refused calls: each audited, each with its reason. */
describe('governance, budgets and approvals', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('a policy deny fails the item with the audited reason', async () => {
    const freeze: NamedPolicy = {
      name: 'deploy-freeze',
      check: (ctx) =>
        ctx.role === 'devops' ? { decision: 'deny', reason: 'deploys are frozen' } : { decision: 'allow' },
    };
    f = await openFixture({ policies: [freeze] });
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Ship it' });
    const final = await coordinator.settled(id);
    stop();
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'GOVERNANCE_DENIED', stage: 'devops' });
    expect(final.failure?.reason).toContain('deploys are frozen');
    const audit = await auditRows(coordinator, { itemId: id });
    const denial = audit.filter((r) => r.kind === 'governance').at(-1)!;
    expect(denial.data).toMatchObject({ role: 'devops', decision: 'deny', reason: 'deploys are frozen' });
    expect((denial.data.verdicts as { policy: string; decision: string }[]).at(-1)).toEqual({
      policy: 'deploy-freeze',
      decision: 'deny',
      reason: 'deploys are frozen',
    });
    const last = audit.at(-1)!;
    expect(last.kind).toBe('item-failed');
    expect(last.data).toMatchObject({ state: 'failed', failure: { code: 'GOVERNANCE_DENIED' } });
    // No devops hop was dispatched.
    expect((await coordinator.listHops(id)).some((h) => h.role === 'devops')).toBe(false);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it('a question a suspended hop asks goes through the Coordinator: denied, it never reaches the role and the item fails, audited', async () => {
    const noQuestions: NamedPolicy = {
      name: 'no-questions',
      check: (ctx) =>
        ctx.role === 'architect' && ctx.stage === 'coding'
          ? { decision: 'deny', reason: 'coding may not ask the architect' }
          : { decision: 'allow' },
    };
    let questionsAnswered = 0;
    const architect: WorkHandler = (hop) => {
      if (hop.headers.askedBy !== undefined) questionsAnswered++;
      return DEMO_HANDLERS.architect!(hop);
    };
    f = await openFixture({ policies: [noQuestions], deployments: deployments({ ...DEMO_HANDLERS, architect }) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Decide alone' });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'GOVERNANCE_DENIED', stage: 'coding', hop: 2 });
    expect(final.failure?.reason).toContain('coding may not ask the architect');
    const governed = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'governance');
    expect(governed.at(-1)?.data).toMatchObject({ role: 'architect', stage: 'coding', query: true, decision: 'deny' });
    const query = (await coordinator.listHops(id)).find((h) => h.kind === 'query')!;
    expect(query).toMatchObject({ role: 'architect', state: 'failed', error: { type: 'GovernanceDenied' } });
    // The question was never published: the architect never saw it.
    await new Promise((r) => setTimeout(r, 100));
    expect(questionsAnswered).toBe(0);
    expect((await coordinator.bus.stats('architect')).depth).toBe(0);
    expect((await coordinator.listHops(id)).find((h) => h.role === 'coding')?.state).toBe('suspended');
  });

  it('an allowed question is forwarded through the Coordinator to the role', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Ask first' });
    await coordinator.settled(id);
    stop();
    const dispatch = (await auditRows(coordinator, { itemId: id })).find(
      (r) => r.kind === 'dispatch' && r.data.kind === 'query',
    );
    expect(dispatch?.data).toMatchObject({ role: 'architect', via: 'coordinator' });
  });

  it('a budget overrun fails the item with the audited reason', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({
      workflow: 'dev-sdlc',
      input: 'Big change',
      budget: { maxTokens: 4_000 },
    });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure?.code).toBe('BUDGET_EXCEEDED');
    expect(final.failure?.reason).toMatch(/budget exceeded: \d+ of 4000 tokens/);
    expect(final.usage.inputTokens + final.usage.outputTokens).toBeGreaterThan(4_000);
    const last = (await auditRows(coordinator, { itemId: id })).at(-1)!;
    expect(last.kind).toBe('item-failed');
    expect(last.data).toMatchObject({ failure: { code: 'BUDGET_EXCEEDED' } });
  });

  it('a spent budget is denied by the budget policy before the next hop', async () => {
    const architect: WorkHandler = () =>
      complete({ usage: { inputTokens: 600, outputTokens: 400, costUsd: 0.01, model: 'exact' } });
    f = await openFixture({ deployments: deployments({ ...DEMO_HANDLERS, architect }) });
    const { coordinator } = f;
    // Exactly spent after the architect's hop: not over (no overrun), but no budget left for the next hop.
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Tiny', budget: { maxTokens: 1_000 } });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'GOVERNANCE_DENIED', stage: 'coding' });
    expect(final.failure?.reason).toBe('budget: budget spent: 1000 of 1000 tokens');
    const governed = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'governance');
    expect(governed.map((g) => g.data.decision)).toEqual(['allow', 'deny']);
    expect((governed[1]!.data.verdicts as { policy: string }[]).map((v) => v.policy)).toEqual(['budget']);
    expect(await coordinator.listHops(id)).toHaveLength(1);
  });

  it('a require-approval policy holds the hop for a named approver', async () => {
    const qa: NamedPolicy = {
      name: 'qa-sign-off',
      check: (ctx) =>
        ctx.role === 'testing'
          ? { decision: 'require-approval', reason: 'testing needs QA', approvers: ['qa-lead'] }
          : { decision: 'allow' },
    };
    f = await openFixture({ policies: [qa] });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Needs QA' });
    await until(async () => (await coordinator.getItem(id))?.state === 'awaiting-approval', 10_000, 'the QA approval');
    expect((await coordinator.getItem(id))?.approval).toMatchObject({
      source: 'governance',
      approvers: ['qa-lead'],
      stage: 'testing',
    });
    await expect(coordinator.approve(id, 'release-manager')).rejects.toMatchObject({ code: 'COORD_APPROVAL_REFUSED' });
    const stop = autoApprove(coordinator, 'release-manager');
    const sub = coordinator.statuses$.subscribe((s) => {
      if (s.event.kind === 'approval-requested' && s.approval?.source === 'governance')
        void coordinator.approve(s.id, 'qa-lead');
    });
    await coordinator.approve(id, 'qa-lead');
    const final = await coordinator.settled(id);
    stop();
    sub.unsubscribe();
    expect(final.state).toBe('completed');
    const approvals = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'approval');
    expect(approvals.map((r) => r.data.by)).toEqual(['qa-lead', 'qa-lead', 'release-manager']);
  });

  it('approval: a non-approver is refused and nothing changes; a denial fails the item, audited', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Deploy me' });
    await until(async () => (await coordinator.getItem(id))?.state === 'awaiting-approval', 10_000, 'the gate');
    const before = await auditHead(coordinator);
    const err = await coordinator.approve(id, 'intern').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CoordinatorError);
    expect((err as CoordinatorError).code).toBe('COORD_APPROVAL_REFUSED');
    expect(await auditHead(coordinator)).toEqual(before);
    expect((await coordinator.getItem(id))?.state).toBe('awaiting-approval');
    await coordinator.deny(id, 'release-manager', 'not in this release');
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'APPROVAL_DENIED', stage: 'devops' });
    expect(final.failure?.reason).toContain('release-manager');
    const audit = await auditRows(coordinator, { itemId: id });
    expect(audit.find((r) => r.kind === 'approval')?.data).toMatchObject({
      decision: 'denied',
      by: 'release-manager',
      reason: 'not in this release',
    });
    expect(audit.at(-1)?.kind).toBe('item-failed');
    await expect(coordinator.approve(id, 'release-manager')).rejects.toMatchObject({ code: 'COORD_ITEM_FINAL' });
    await coordinator.mirrored();
  });

  it('cancel ends the item, audited', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Never mind' });
    await until(async () => (await coordinator.getItem(id))?.state === 'awaiting-approval', 10_000, 'the gate');
    await expect(coordinator.cancel(id, { reason: 'x'.repeat(2001) })).rejects.toMatchObject({
      code: 'COORD_INVALID_ARGUMENT',
    });
    expect((await coordinator.getItem(id))?.state).toBe('awaiting-approval');
    await coordinator.cancel(id, { by: 'edge', reason: 'requirements changed' });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('canceled');
    expect((await auditRows(coordinator, { itemId: id })).at(-1)).toMatchObject({
      kind: 'item-canceled',
      data: { state: 'canceled', cancellation: { by: 'edge', reason: 'requirements changed' } },
    });
    await expect(coordinator.cancel(id)).rejects.toMatchObject({ code: 'COORD_ITEM_FINAL' });
    await coordinator.mirrored();
  });

  it('refuses bad requests and changes nothing', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const head = await auditHead(coordinator);
    await expect(coordinator.createWorkItem({ workflow: 'nope', input: 'x' })).rejects.toMatchObject({
      code: 'COORD_UNKNOWN_WORKFLOW',
    });
    await expect(coordinator.createWorkItem({ workflow: 'dev-sdlc', input: '' })).rejects.toMatchObject({
      code: 'COORD_INVALID_ARGUMENT',
    });
    await expect(
      coordinator.createWorkItem({ workflow: 'dev-sdlc', input: [{ kind: 'nope' }] as never }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    await expect(
      coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'x', budget: { maxTokens: -1 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    await expect(coordinator.createWorkItem(null as never)).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    await expect(coordinator.approve('no-such-item', 'release-manager')).rejects.toMatchObject({
      code: 'COORD_UNKNOWN_ITEM',
    });
    await expect(coordinator.approve('no-such-item', '')).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    expect(await coordinator.listItems()).toHaveLength(0);
    expect(await auditHead(coordinator)).toEqual(head);
  });

  it('a result delivered again changes nothing', async () => {
    f = await openFixture();
    const { coordinator } = f;
    const stop = autoApprove(coordinator);
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Once only' });
    await coordinator.settled(id);
    stop();
    const devops = (await coordinator.listHops(id)).find((h) => h.role === 'devops')!;
    const before = { head: await auditHead(coordinator), item: await coordinator.getItem(id) };
    const again: ResultEnvelope = {
      kind: 'result',
      headers: { taskId: devops.id, runId: id, hop: devops.hop, attempt: 1, idempotencyKey: devops.idempotencyKey },
      role: 'devops',
      outcome: 'completed',
      parts: [],
      artifacts: [],
      usage: { inputTokens: 999, outputTokens: 999, costUsd: 9, model: 'demo-small' },
    };
    await coordinator.bus.publish(RESULTS_ROLE, again, { idempotencyKey: 'replayed-by-the-test' });
    await until(async () => {
      const s = await coordinator.bus.stats(RESULTS_ROLE);
      return s.depth === 0 && s.inFlight === 0;
    });
    expect(await auditHead(coordinator)).toEqual(before.head);
    expect((await coordinator.getItem(id))?.usage).toEqual(before.item?.usage);
  });
  it('a hop whose workers keep dying (leases expire past its attempts) fails the item with LeaseExpired, audited', async () => {
    // No architect pool: this test plays a worker that leases the hop and dies each time.
    const { architect: _, ...rest } = DEMO_HANDLERS;
    f = await openFixture({ deployments: deployments(rest) });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Nobody survives this' });
    // dev-sdlc's maximumAttempts is 3: three leases that expire, and the next look dead-letters it.
    for (let i = 1; i <= 3; i++) {
      const leased = await coordinator.bus.consume('architect', {
        consumer: `doomed-${i}`,
        visibilityTimeoutMs: 100,
        waitMs: 5_000,
      });
      expect(leased.map((d) => d.deliveries)).toEqual([i]);
      await new Promise((r) => setTimeout(r, 150));
    }
    expect(await coordinator.bus.consume('architect', { consumer: 'late', visibilityTimeoutMs: 100 })).toEqual([]);
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure?.reason).toContain('LeaseExpired');
    const hop = (await coordinator.listHops(id))[0]!;
    expect(hop).toMatchObject({ role: 'architect', state: 'failed' });
    const failure = (await auditRows(coordinator, { itemId: id })).find((r) => r.kind === 'failure')!;
    expect(failure.data).toMatchObject({ errorType: 'LeaseExpired', deliveries: 3 });
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });
});
