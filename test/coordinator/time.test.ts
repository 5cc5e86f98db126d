import { afterEach, describe, expect, it } from 'vitest';
import { REPLY_METADATA_KEY } from '../../src/bus/reply-routing.js';
import type { Delivery, WorkQueue } from '../../src/bus/work-queue.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { RESULTS_ROLE, type ResultEnvelope, type WorkEnvelope } from '../../src/protocol/work-envelope.js';
import type { WorkflowDefinitionInput } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, ON_POSTGRES, auditRows, openFixture, until } from './helpers.js';

/**
 * Time as an input: a stage's `timeout` re-publishes a hop that is out too
 * long (same idempotency key: a lost message is found again) until its retry
 * policy is spent, then fails it (as does the Coordinator's default hop
 * timeout when the stage sets none); an item's `deadline` fails the item. Every
 * step is audited. No pools: the test is the worker (or there is none).
 */
function definition(extra: Partial<WorkflowDefinitionInput> = {}, stage: Record<string, unknown> = {}) {
  return parseWorkflowDefinition({
    id: 'timed',
    version: 1,
    start: 'work',
    stages: { work: { role: 'worker', next: [{ on: 'succeeded', end: 'completed' }], ...stage } },
    ...extra,
  });
}

/** Publishes a completed result for the hop of `headers`, as a worker of `role` would. */
async function publishCompleted(
  bus: WorkQueue,
  headers: WorkEnvelope['headers'],
  result: { role: string; text: string; usage: ResultEnvelope['usage']; key: string },
): Promise<void> {
  await bus.publish(
    RESULTS_ROLE,
    {
      kind: 'result',
      headers,
      role: result.role,
      outcome: 'completed',
      parts: [{ kind: 'text', text: result.text }],
      artifacts: [],
      usage: result.usage,
    },
    { idempotencyKey: result.key },
  );
}

async function take(f: Fixture, role: string): Promise<Delivery & { envelope: WorkEnvelope }> {
  // Ten seconds by the clock, however quickly a store's consume comes back empty.
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    const [d] = await f.coordinator.bus.consume(role, {
      consumer: 'test',
      visibilityTimeoutMs: 60_000,
      max: 1,
      waitMs: 200,
    });
    if (d !== undefined) return d as Delivery & { envelope: WorkEnvelope };
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`nothing on ${role} in 10 s`);
}

describe('stage timeouts and item deadlines', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('a hop whose message was lost is re-published under the same key by its stage timeout, and applied once', async () => {
    // Long enough that a loaded machine (a load average of 9 seen) takes and answers the message again before all five run out.
    const def = definition({}, { timeout: 1000, retry: { maximumAttempts: 5 } });
    f = await openFixture({ definitions: [def], deployments: {}, timerIntervalMs: 20 });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'timed', input: 'go' });
    await until(async () => (await coordinator.bus.stats('worker')).depth === 1, 5_000, 'the hop queued');
    // The message is lost (as when a Redis server restarts empty): gone from the bus, key and all.
    await f.storage.loseQueue('worker');
    expect((await coordinator.bus.stats('worker')).depth).toBe(0);
    const again = await take(f, 'worker');
    expect(again.envelope.headers.idempotencyKey).toBe(`${id}/1/1`);
    await publishCompleted(coordinator.bus, again.envelope.headers, {
      role: 'worker',
      text: 'done',
      usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.01, model: 'm' },
      key: `${id}:result`,
    });
    await coordinator.bus.ack(again);
    const final = await coordinator.settled(id);
    expect(final.state).toBe('completed');
    const audit = await auditRows(coordinator, { itemId: id });
    const timeouts = audit.filter((r) => r.kind === 'timeout');
    expect(timeouts.length).toBeGreaterThanOrEqual(1);
    expect(timeouts[0]!.data).toMatchObject({
      what: 'hop',
      action: 'republished',
      timeoutMs: 1000,
      timeouts: 1,
      idempotencyKey: `${id}/1/1`,
    });
    // Applied once: one hop row, one result, one cost.
    expect((await coordinator.listHops(id)).map((h) => `${h.stage}:${h.state}`)).toEqual(['work:completed']);
    expect(audit.filter((r) => r.kind === 'result')).toHaveLength(1);
    expect(final.usage.costUsd).toBeCloseTo(0.01, 10);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it('with no timeout anywhere in its definition, a hop whose message was lost is found again by the default hop timeout', async () => {
    const def = definition();
    expect(JSON.stringify(def)).not.toMatch(/timeout|deadline/);
    f = await openFixture({ definitions: [def], deployments: {}, timerIntervalMs: 20, hopTimeoutMs: 200 });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'timed', input: 'go' });
    await until(async () => (await coordinator.bus.stats('worker')).depth === 1, 5_000, 'the hop queued');
    // The message is lost: gone from the bus, key and all. Only a timeout can find it again.
    await f.storage.loseQueue('worker');
    const again = await take(f, 'worker');
    expect(again.envelope.headers.idempotencyKey).toBe(`${id}/1/1`);
    await publishCompleted(coordinator.bus, again.envelope.headers, {
      role: 'worker',
      text: 'done',
      usage: { inputTokens: 3, outputTokens: 1, costUsd: 0.01, model: 'm' },
      key: `${id}:result`,
    });
    await coordinator.bus.ack(again);
    const final = await coordinator.settled(id);
    expect(final.state).toBe('completed');
    const timeouts = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'timeout');
    expect(timeouts[0]!.data).toMatchObject({
      what: 'hop',
      action: 'republished',
      timeoutMs: 200,
      timeouts: 1,
      idempotencyKey: `${id}/1/1`,
    });
    expect((await coordinator.listHops(id)).map((h) => `${h.stage}:${h.state}`)).toEqual(['work:completed']);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it('a hop out past its timeouts fails by its retry policy (HopTimedOut), audited', async () => {
    const def = definition({}, { timeout: 60, retry: { maximumAttempts: 2 } });
    f = await openFixture({ definitions: [def], deployments: {}, timerIntervalMs: 15 });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'timed', input: 'nobody works' });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'RETRIES_EXHAUSTED', stage: 'work' });
    const hop = (await coordinator.listHops(id))[0]!;
    expect(hop).toMatchObject({ state: 'failed', timeouts: 2, error: { type: 'HopTimedOut' } });
    const timeouts = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'timeout');
    expect(timeouts.map((r) => r.data.action)).toEqual(['republished', 'failed']);
    expect((await auditRows(coordinator, { itemId: id })).at(-1)?.kind).toBe('item-failed');
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it('an item past its deadline fails (DEADLINE_EXCEEDED), audited; a later result only accrues its cost', async () => {
    f = await openFixture({ definitions: [definition({ deadline: '200ms' })], deployments: {}, timerIntervalMs: 15 });
    const { coordinator } = f;
    const id = await coordinator.createWorkItem({ workflow: 'timed', input: 'too slow' });
    const work = await take(f, 'worker');
    const final = await coordinator.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure?.code).toBe('DEADLINE_EXCEEDED');
    expect(final.finishedAt! - final.createdAt).toBeGreaterThanOrEqual(200);
    const deadline = (await auditRows(coordinator, { itemId: id })).find((r) => r.kind === 'timeout');
    expect(deadline?.data).toMatchObject({ what: 'deadline', deadlineMs: 200 });
    await publishCompleted(coordinator.bus, work.envelope.headers, {
      role: 'worker',
      text: 'late',
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.5, model: 'm' },
      key: `${id}:late`,
    });
    await until(async () => ((await coordinator.getItem(id))?.usage.costUsd ?? 0) > 0, 5_000, 'the late cost');
    expect(await coordinator.getItem(id)).toMatchObject({ state: 'failed', failure: { code: 'DEADLINE_EXCEEDED' } });
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  // On SQLite only: an older Coordinator's snapshot is written into the file beside it.
  it.skipIf(ON_POSTGRES)(
    'a run snapshot persisted before runs held their deadline gets it back from the item: the run still fails it',
    async () => {
      const def = definition({ deadline: '1h' });
      f = await openFixture({ definitions: [def], deployments: {}, timerIntervalMs: 15 });
      const id = await f.coordinator.createWorkItem({ workflow: 'timed', input: 'long ago' });
      await until(async () => (await f!.coordinator.bus.stats('worker')).depth === 1, 5_000, 'the hop queued');
      await f.coordinator.mirrored();
      await f.coordinator.close();
      // As an earlier Coordinator wrote it: no deadline in the run's context; the item was made two hours ago.
      const side = openDatabase(f.path);
      const createdAt = Date.now() - 2 * 3_600_000;
      side
        .prepare(
          "UPDATE coord_items SET run_snapshot = json_remove(run_snapshot, '$.context.deadline'), created_at = ? WHERE id = ?",
        )
        .run(createdAt, id);
      const row = side.prepare('SELECT run_snapshot FROM coord_items WHERE id = ?').get(id) as { run_snapshot: string };
      expect(JSON.parse(row.run_snapshot).context).not.toHaveProperty('deadline');
      side.close();

      f = await openFixture({ definitions: [def], deployments: {}, timerIntervalMs: 15 }, f.dir);
      expect(f.coordinator.restored.items).toEqual([id]);
      const final = await f.coordinator.settled(id, { timeoutMs: 10_000 });
      expect(final.failure).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
      expect(final.failure?.reason).toMatch(/ran past its deadline of 3600000 ms \(\d+ ms\)/);
      const deadline = (await auditRows(f.coordinator, { itemId: id })).find((r) => r.kind === 'timeout');
      expect(deadline?.data).toMatchObject({ what: 'deadline', deadlineMs: 3_600_000 });
      expect(deadline?.data.ageMs as number).toBeGreaterThanOrEqual(2 * 3_600_000);
    },
  );

  /**
   * A hop of `timed` that suspends asking `expert`; returns its work and the
   * question's token. The stage's `timeout` runs for the hop until its
   * suspension is read, too: it must be long enough for a loaded machine to
   * take the hop and publish the suspension, or the hop itself times out.
   */
  async function suspendAsking(timeout: number, maximumAttempts: number) {
    const def = definition({}, { timeout, retry: { maximumAttempts } });
    f = await openFixture({
      definitions: [def],
      deployments: {},
      timerIntervalMs: 20,
      allowedRoles: ['worker', 'expert'],
    });
    const fx = f;
    const { coordinator } = fx;
    const id = await coordinator.createWorkItem({ workflow: 'timed', input: 'ask someone' });
    const work = await take(fx, 'worker');
    const token = `tok-${id}`;
    const question = { role: 'agent' as const, parts: [{ kind: 'text' as const, text: 'which way?' }] };
    const suspension: ResultEnvelope = {
      kind: 'result',
      headers: work.envelope.headers,
      role: 'worker',
      outcome: 'suspended',
      parts: [],
      artifacts: [],
      usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01, model: 'm' },
      ask: { role: 'expert', continuationToken: token, message: question },
    };
    await coordinator.bus.publish(RESULTS_ROLE, suspension, { idempotencyKey: `${id}:suspend` });
    await coordinator.bus.ack(work);
    return { fx, coordinator, id, work, token, question };
  }

  /** Completes the hop that asked once its resume comes; returns the resume's message. */
  async function completeResumed(fx: Fixture, id: string, work: WorkEnvelope) {
    const resumed = await take(fx, 'worker');
    expect(resumed.envelope.headers.continuationToken).toBe(`tok-${id}`);
    await publishCompleted(fx.coordinator.bus, work.headers, {
      role: 'worker',
      text: 'went on',
      usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.001, model: 'm' },
      key: `${id}:final`,
    });
    await fx.coordinator.bus.ack(resumed);
    return resumed.envelope.message;
  }

  it("a query whose message was lost is re-published under the same key by the asking stage's timeout", async () => {
    const { fx, coordinator, id, work, token, question } = await suspendAsking(1_500, 3);
    await until(async () => (await coordinator.bus.stats('expert')).depth === 1, 5_000, 'the question queued');
    expect((await coordinator.listHops(id)).map((h) => `${h.kind}:${h.state}`)).toEqual([
      'stage:suspended',
      'query:dispatched',
    ]);
    // The question is lost (as when a Redis server restarts empty).
    await fx.storage.loseQueue('expert');
    const asked = await take(fx, 'expert');
    expect(asked.envelope.message).toEqual(question);
    expect(asked.envelope.headers).toMatchObject({
      runId: id,
      idempotencyKey: `${token}:ask`,
      askedBy: { role: 'worker', continuationToken: token, hop: 1 },
    });
    await publishCompleted(coordinator.bus, asked.envelope.headers, {
      role: 'expert',
      text: 'left',
      usage: { inputTokens: 5, outputTokens: 1, costUsd: 0.02, model: 'm' },
      key: `${token}:answer`,
    });
    await coordinator.bus.ack(asked);
    const resumed = await completeResumed(fx, id, work.envelope);
    expect(resumed.parts).toEqual([{ kind: 'text', text: 'left' }]);
    const final = await coordinator.settled(id);
    expect(final.state).toBe('completed');
    const audit = await auditRows(coordinator, { itemId: id });
    const timeouts = audit.filter((r) => r.kind === 'timeout' && r.data.what === 'query');
    expect(timeouts.length).toBeGreaterThanOrEqual(1);
    expect(timeouts[0]!.data).toMatchObject({
      action: 'republished',
      role: 'expert',
      stage: 'work',
      timeoutMs: 1_500,
      timeouts: 1,
      idempotencyKey: `${token}:ask`,
    });
    // Applied once: one query, answered once, one resume.
    expect((await coordinator.listHops(id)).map((h) => `${h.kind}:${h.state}`)).toEqual([
      'stage:completed',
      'query:completed',
    ]);
    expect(audit.filter((r) => r.kind === 'resume')).toHaveLength(1);
    expect(audit.filter((r) => r.kind === 'result' && r.data.kind === 'query')).toHaveLength(1);
    expect(final.usage.costUsd).toBeCloseTo(0.031, 10);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it("a query never answered fails by the asking stage's retry policy (HopTimedOut) and resumes the asker with the failure", async () => {
    const { fx, coordinator, id, work, token } = await suspendAsking(1_500, 2);
    const resumed = await completeResumed(fx, id, work.envelope);
    expect(resumed.metadata).toMatchObject({
      [REPLY_METADATA_KEY]: { role: 'expert', outcome: 'failed', error: { type: 'HopTimedOut' } },
    });
    const final = await coordinator.settled(id);
    expect(final.state).toBe('completed');
    const query = (await coordinator.listHops(id)).find((h) => h.kind === 'query')!;
    expect(query).toMatchObject({ state: 'failed', timeouts: 2, error: { type: 'HopTimedOut' } });
    const timeouts = (await auditRows(coordinator, { itemId: id })).filter((r) => r.kind === 'timeout');
    expect(timeouts.map((r) => [r.data.what, r.data.action])).toEqual([
      ['query', 'republished'],
      ['query', 'failed'],
    ]);
    // An answer after the failure changes nothing.
    const asked = await take(fx, 'expert');
    await coordinator.bus.publish(
      RESULTS_ROLE,
      {
        kind: 'result',
        headers: asked.envelope.headers,
        role: 'expert',
        outcome: 'completed',
        parts: [{ kind: 'text', text: 'too late' }],
        artifacts: [],
      },
      { idempotencyKey: `${token}:late` },
    );
    await coordinator.mirrored();
    await until(async () => (await coordinator.bus.stats(RESULTS_ROLE)).depth === 0, 5_000, 'the late answer read');
    expect((await coordinator.listHops(id)).find((h) => h.kind === 'query')?.state).toBe('failed');
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });

  it('refuses a bad timeout or deadline in a definition, a bad timer interval and a bad default hop timeout', async () => {
    expect(() => definition({}, { timeout: 0 })).toThrow(/timeout/);
    expect(() => definition({}, { timeout: 'soon' })).toThrow(/timeout/);
    expect(() => definition({ deadline: -1 })).toThrow(/deadline/);
    expect(definition({ deadline: '2m' }, { timeout: '1.5s' })).toMatchObject({
      deadline: 120_000,
      stages: { work: { timeout: 1_500 } },
    });
    await expect(openFixture({ definitions: [definition()], deployments: {}, timerIntervalMs: 1 })).rejects.toThrow(
      /timerIntervalMs/,
    );
    for (const hopTimeoutMs of [-1, 5, 1.5, 31 * 86_400_000, Number.NaN]) {
      await expect(openFixture({ definitions: [definition()], deployments: {}, hopTimeoutMs })).rejects.toMatchObject({
        code: 'COORD_INVALID_ARGUMENT',
        message: expect.stringMatching(/hopTimeoutMs is a whole number of milliseconds from 10 to .*, or 0 for none/),
      });
    }
  });
});
