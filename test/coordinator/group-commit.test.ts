import { afterEach, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/bus/work-queue.js';
import { observeCommits } from '../../src/actors/coordinator/commit-timing.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { RESULTS_ROLE, type ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { type Fixture, auditRows, auditHead, deployments, openFixture, until } from './helpers.js';

/**
 * Results that arrive together share one commit; when one of them fails, the
 * batch rolls back (tables and memory) and each is applied alone: the failing
 * one fails alone, the others commit, and the failed one is retried.
 */
describe('results applied in a shared commit', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('results read together share a commit; one that fails rolls back alone, the others of its batch commit; it applies on retry', async () => {
    const batches: number[] = [];
    // No architect pool: the test is the architect, and delivers two results in one publish.
    const { architect: _, ...rest } = DEMO_HANDLERS;
    f = await openFixture({ deployments: deployments(rest) });
    observeCommits(f.coordinator, (_ns, what, _inner, _cpu, batch) => {
      if (what === 'result') batches.push(batch);
    });
    const { coordinator } = f;
    const a = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Item A (its result fails once)' });
    const b = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Item B' });
    const c = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Item C' });
    const d = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Item D' });
    const jobs: Delivery[] = [];
    while (jobs.length < 4) {
      jobs.push(
        ...(await coordinator.bus.consume('architect', {
          consumer: 'test-architect',
          visibilityTimeoutMs: 120_000,
          max: 4,
          waitMs: 5_000,
        })),
      );
    }
    const result = (headers: ResultEnvelope['headers'], inputTokens: number): ResultEnvelope => ({
      kind: 'result',
      headers,
      role: 'architect',
      outcome: 'completed',
      parts: [{ kind: 'text', text: 'the design' }],
      artifacts: [],
      usage: { inputTokens, outputTokens: 10, costUsd: 0.001, model: 'test' },
    });
    const headersOf = (itemId: string) => {
      const job = jobs.find((j) => j.envelope.kind === 'work' && j.envelope.headers.runId === itemId)!;
      if (job.envelope.kind !== 'work') throw new Error('not work');
      return job.envelope.headers;
    };
    // Two results read together share one commit.
    await coordinator.bus.publishMany([
      { role: RESULTS_ROLE, envelope: result(headersOf(c), 100), idempotencyKey: 'result-c' },
      { role: RESULTS_ROLE, envelope: result(headersOf(d), 100), idempotencyKey: 'result-d' },
    ]);
    await until(
      async () =>
        (await Promise.all([c, d].map((id) => coordinator.listHops(id)))).every((hops) =>
          hops.some((h) => h.role === 'coding'),
        ),
      10_000,
      'items C and D at coding',
    );
    expect(batches).toEqual([2, 2]);
    // A's accrual fails inside the database (as a full disk or a constraint would) until the trigger goes.
    const restore = await f.storage.sabotage('coord_usage', 'sabotaged by the test', 'NEW.input_tokens = 666');
    const headBefore = await auditHead(coordinator);
    await coordinator.bus.publishMany([
      { role: RESULTS_ROLE, envelope: result(headersOf(a), 666), idempotencyKey: 'result-a' },
      { role: RESULTS_ROLE, envelope: result(headersOf(b), 100), idempotencyKey: 'result-b' },
    ]);
    // B moves on to coding; A stays where it was, in the tables and in memory.
    await until(
      async () => (await coordinator.listHops(b)).some((h) => h.role === 'coding'),
      10_000,
      'item B at coding',
    );
    expect((await coordinator.listHops(a)).map((h) => `${h.role}:${h.state}`)).toEqual(['architect:dispatched']);
    expect((await coordinator.getItem(a))?.usage.inputTokens).toBe(0);
    expect(await coordinator.tables.readUsageRows({ itemId: a })).toHaveLength(0);
    expect((await auditRows(coordinator, { itemId: a })).filter((r) => r.kind === 'result')).toHaveLength(0);
    expect((await auditHead(coordinator)).seq).toBeGreaterThan(headBefore.seq);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
    // The failed result was nacked for a retry: with the fault gone it applies, once.
    await restore();
    await until(
      async () => (await coordinator.listHops(a)).some((h) => h.role === 'coding'),
      10_000,
      'item A at coding',
    );
    expect((await coordinator.getItem(a))?.usage.inputTokens).toBeGreaterThanOrEqual(666);
    expect((await coordinator.listHops(a)).filter((h) => h.role === 'architect')).toHaveLength(1);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });
});
