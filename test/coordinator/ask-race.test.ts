import { afterEach, describe, expect, it } from 'vitest';
import type { Delivery } from '../../src/bus/work-queue.js';
import { RESULTS_ROLE, type ResultEnvelope, type WorkEnvelope } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, auditRows, openFixture } from './helpers.js';

/**
 * A suspended hop's question goes out through the Coordinator's outbox, in the
 * transaction that records the suspension: it cannot reach the asked role
 * before the suspension is recorded, so its answer never comes "early". The
 * test is both workers (no pools) and makes the answer race a redelivery of
 * the suspension, in both orders, in one read of the results queue: each is
 * applied once, nothing is nacked or retried.
 */
const definition = parseWorkflowDefinition({
  id: 'asks',
  version: 1,
  start: 'lead',
  stages: { lead: { role: 'lead', next: [{ on: 'succeeded', end: 'completed' }] } },
});

async function take(f: Fixture, role: string): Promise<Delivery & { envelope: WorkEnvelope }> {
  for (let i = 0; i < 50; i++) {
    const [d] = await f.coordinator.bus.consume(role, {
      consumer: `test-${role}`,
      visibilityTimeoutMs: 60_000,
      max: 1,
      waitMs: 200,
    });
    if (d !== undefined) {
      if (d.envelope.kind !== 'work') throw new Error('not work');
      return d as Delivery & { envelope: WorkEnvelope };
    }
  }
  throw new Error(`nothing on ${role}`);
}

describe('the ask path: one path for every hop', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  for (const order of ['answer first', 'suspension first'] as const) {
    it(`the answer races a redelivered suspension (${order}): each applies once, no retry`, async () => {
      f = await openFixture({ definitions: [definition], deployments: {}, allowedRoles: ['lead', 'expert'] });
      const { coordinator } = f;
      const { bus } = coordinator;
      const id = await coordinator.createWorkItem({ workflow: 'asks', input: 'go' });
      const work = await take(f, 'lead');
      const token = `tok-${order.replace(' ', '-')}`;
      const question = { role: 'agent' as const, parts: [{ kind: 'text' as const, text: 'which way?' }] };
      const suspension: ResultEnvelope = {
        kind: 'result',
        headers: work.envelope.headers,
        role: 'lead',
        outcome: 'suspended',
        parts: [],
        artifacts: [],
        usage: { inputTokens: 10, outputTokens: 1, costUsd: 0.01, model: 'm' },
        ask: { role: 'expert', continuationToken: token, message: question },
      };
      // Nothing reaches the asked role before the suspension carrying the question is recorded.
      expect((await bus.stats('expert')).depth).toBe(0);
      await bus.publish(RESULTS_ROLE, suspension, { idempotencyKey: `${work.envelope.headers.idempotencyKey}:result` });
      await bus.ack(work);

      // The Coordinator published the question from its outbox.
      const asked = await take(f, 'expert');
      expect(asked.deliveries).toBe(1);
      expect(asked.envelope.message).toEqual(question);
      expect(asked.envelope.headers).toMatchObject({
        runId: id,
        idempotencyKey: `${token}:ask`,
        askedBy: { role: 'lead', continuationToken: token, hop: work.envelope.headers.hop },
      });
      expect((await coordinator.listHops(id)).map((h) => `${h.kind}:${h.state}`)).toEqual([
        'stage:suspended',
        'query:dispatched',
      ]);

      const answer: ResultEnvelope = {
        kind: 'result',
        headers: asked.envelope.headers,
        role: 'expert',
        outcome: 'completed',
        parts: [{ kind: 'text', text: 'left' }],
        artifacts: [],
        usage: { inputTokens: 5, outputTokens: 1, costUsd: 0.02, model: 'm' },
      };
      // Back to back, so that one read of the results queue takes both.
      const publishAnswer = () => bus.publish(RESULTS_ROLE, answer, { idempotencyKey: `${token}:ask:result` });
      const redeliver = () => bus.publish(RESULTS_ROLE, suspension, { idempotencyKey: `${token}:again` });
      if (order === 'answer first') await Promise.all([publishAnswer(), redeliver()]);
      else await Promise.all([redeliver(), publishAnswer()]);
      await bus.ack(asked);

      // The reply resumes the hop, once.
      const resumed = await take(f, 'lead');
      expect(resumed.deliveries).toBe(1);
      expect(resumed.envelope.headers.continuationToken).toBe(token);
      expect(resumed.envelope.message.parts).toEqual([{ kind: 'text', text: 'left' }]);
      await bus.publish(
        RESULTS_ROLE,
        {
          kind: 'result',
          headers: work.envelope.headers,
          role: 'lead',
          outcome: 'completed',
          parts: [{ kind: 'text', text: 'went left' }],
          artifacts: [],
          usage: { inputTokens: 1, outputTokens: 1, costUsd: 0.001, model: 'm' },
        },
        { idempotencyKey: `${token}:final` },
      );
      await bus.ack(resumed);
      const final = await coordinator.settled(id);
      expect(final.state).toBe('completed');

      // Applied once each: one suspension, one query, one resume; the costs of each counted once.
      const audit = await auditRows(coordinator, { itemId: id });
      const count = (kind: string) => audit.filter((r) => r.kind === kind).length;
      expect(count('suspend')).toBe(1);
      expect(count('resume')).toBe(1);
      expect(audit.filter((r) => r.kind === 'dispatch' && r.data.kind === 'query')).toHaveLength(1);
      expect(count('cost')).toBe(3);
      expect(final.usage.costUsd).toBeCloseTo(0.031, 10);
      expect((await coordinator.listHops(id)).map((h) => `${h.kind}:${h.state}`)).toEqual([
        'stage:completed',
        'query:completed',
      ]);
      expect((await coordinator.verifyAudit()).ok).toBe(true);
      // No result was nacked for later (no "early" answer, no retry): the results queue is empty.
      await coordinator.mirrored();
      const results = await bus.stats(RESULTS_ROLE);
      expect(results).toMatchObject({ depth: 0, delayed: 0, inFlight: 0, deadLetters: 0 });
      expect(await bus.stats('lead')).toMatchObject({ depth: 0, delayed: 0 });
      expect(await bus.stats('expert')).toMatchObject({ depth: 0, delayed: 0 });
    });
  }
});
