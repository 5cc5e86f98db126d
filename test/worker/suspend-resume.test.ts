import { afterEach, describe, expect, it } from 'vitest';
import { type Pool, createPool } from '../../src/actors/worker/pool.js';
import { type HopResume, complete, suspend } from '../../src/actors/worker/worker.js';
import { createDispatcher, questionHop } from '../../src/bus/dispatcher.js';
import { replyDispatch } from '../../src/bus/reply-routing.js';
import type { PublishRequest } from '../../src/bus/work-queue.js';
import type { ResultEnvelope } from '../../src/protocol/work-envelope.js';
import { type Harness, hop, openHarness, takeResults, until } from './helpers.js';

/**
 * A coder hop asks the architect a question and suspends. The test plays the
 * Coordinator: it reads results, and re-dispatches the architect's answer to
 * the coder only once the coder's pool has scaled to zero, so the proof is
 * direct: no coder worker existed between the question and the reply.
 */
describe('suspend and resume through the bus', () => {
  let h: Harness;
  const pools: Pool[] = [];
  afterEach(async () => {
    for (const p of pools.splice(0)) await p.stop();
    await h?.close();
  });

  for (const [mode, minReplicas] of [
    ['scale-to-zero', 0],
    ['warm', 1],
  ] as const) {
    it(`resumes the checkpointed hop with the reply (${mode} coder pool, same code)`, async () => {
      h = openHarness();
      const { bus, store } = h;
      const resumed: HopResume[] = [];
      const coderCalls: string[] = [];
      const coder = createPool({
        role: 'coder',
        bus,
        contextStore: store,
        deployment: { minReplicas, maxReplicas: 2, idleTimeoutMs: 100, concurrency: 1 },
        observeIntervalMs: 20,
        pollWaitMs: 50,
        handler: ({ resume, message }) => {
          coderCalls.push(resume === undefined ? 'first' : 'resumed');
          if (resume === undefined) {
            const task = message.parts[0]?.kind === 'text' ? message.parts[0].text : '';
            return suspend({
              ask: {
                role: 'architect',
                message: { role: 'agent', parts: [{ kind: 'text', text: 'Which database?' }] },
              },
              state: { task, draft: 'schema v1', step: 1 },
              usage: { inputTokens: 10, outputTokens: 5, costUsd: 0.001, model: 'm' },
            });
          }
          resumed.push(resume);
          const state = resume.state as { draft: string; task: string };
          const answer = resume.reply.parts[0]?.kind === 'text' ? resume.reply.parts[0].text : '?';
          return complete({ parts: [{ kind: 'text', text: `${state.task}: ${state.draft} on ${answer}` }] });
        },
      });
      const architect = createPool({
        role: 'architect',
        bus,
        contextStore: store,
        deployment: { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 100, concurrency: 1 },
        observeIntervalMs: 20,
        pollWaitMs: 50,
        handler: ({ message }) => {
          const q = message.parts[0]?.kind === 'text' ? message.parts[0].text : '';
          return complete({ parts: [{ kind: 'text', text: q === 'Which database?' ? 'PostgreSQL' : 'unsure' }] });
        },
      });
      pools.push(coder, architect);

      await bus.publish('coder', hop('build', {}, 'build the API'), { idempotencyKey: 'hop-build' });

      const [suspended] = await takeResults(bus, 1);
      expect(suspended).toMatchObject({
        role: 'coder',
        outcome: 'suspended',
        ask: { role: 'architect' },
        usage: { model: 'm' },
      });
      const token = suspended!.ask!.continuationToken;
      // The test is the Coordinator: it publishes the question the suspension asks.
      await createDispatcher({ bus }).start(questionHop(suspended!)!);
      const checkpoint = await store.checkpoint(token);
      expect(checkpoint).toMatchObject({
        role: 'coder',
        state: { task: 'build the API', draft: 'schema v1', step: 1 },
        resumedAt: undefined,
      });
      // The suspended hop holds nothing: acked, no lease.
      expect(await bus.stats('coder')).toMatchObject({ depth: 0, inFlight: 0 });

      const [answer] = await takeResults(bus, 1);
      expect(answer).toMatchObject({ role: 'architect', outcome: 'completed' });
      expect(answer!.headers.askedBy).toMatchObject({ role: 'coder', continuationToken: token });
      const dispatch = replyDispatch(answer as ResultEnvelope) as PublishRequest;
      expect(dispatch.role).toBe('coder');

      // Between the question and the reply the coder pool settles at its floor.
      await until(() => coder.replicas === minReplicas, 5000, `coder replicas = ${minReplicas}`);
      const startsBefore = coder.starts;
      const seen: number[] = [];
      const sub = coder.replicas$.subscribe((n) => seen.push(n));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(coderCalls).toEqual(['first']);
      expect(coder.starts).toBe(startsBefore);
      expect(seen.every((n) => n === minReplicas)).toBe(true);
      sub.unsubscribe();
      if (minReplicas === 0) expect(seen).toEqual([0]);

      // The reply arrives: the coder pool wakes (from zero when scale-to-zero) and resumes the hop.
      await bus.publish(dispatch.role, dispatch.envelope, { idempotencyKey: dispatch.idempotencyKey });
      // A second dispatch of the same reply is a no-op.
      expect(
        (await bus.publish(dispatch.role, dispatch.envelope, { idempotencyKey: dispatch.idempotencyKey })).duplicate,
      ).toBe(true);
      const [final] = await takeResults(bus, 1);
      expect(final).toMatchObject({
        role: 'coder',
        outcome: 'completed',
        parts: [{ kind: 'text', text: 'build the API: schema v1 on PostgreSQL' }],
        headers: { taskId: 'task-build', idempotencyKey: 'hop-build' },
      });
      expect(coderCalls).toEqual(['first', 'resumed']);
      expect(resumed[0]!.state).toEqual({ task: 'build the API', draft: 'schema v1', step: 1 });
      expect(resumed[0]!.from).toEqual({ role: 'architect', outcome: 'completed' });
      if (minReplicas === 0) expect(coder.starts).toBe(startsBefore + 1);
      else expect(coder.starts).toBe(startsBefore);
      expect((await store.checkpoint(token))!.resumedAt).toBeTypeOf('number');
    });
  }

  it('resumes with the failure when the query is dead-lettered', async () => {
    h = openHarness({
      roles: {
        oracle: {
          retryPolicy: {
            maximumAttempts: 1,
            initialInterval: 1,
            backoffCoefficient: 1,
            maximumInterval: 1,
            nonRetryableErrorTypes: [],
          },
        },
      },
    });
    const { bus, store } = h;
    const seen: HopResume[] = [];
    pools.push(
      createPool({
        role: 'asker',
        bus,
        contextStore: store,
        deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1000, concurrency: 1 },
        handler: ({ resume }) => {
          if (resume === undefined) {
            return suspend({
              ask: { role: 'oracle', message: { parts: [{ kind: 'text', text: 'q' }] } },
              state: { n: 1 },
            });
          }
          seen.push(resume);
          return complete({ parts: [{ kind: 'text', text: resume.from?.outcome ?? 'none' }] });
        },
      }),
      createPool({
        role: 'oracle',
        bus,
        contextStore: store,
        deployment: { minReplicas: 1, maxReplicas: 1, idleTimeoutMs: 1000, concurrency: 1 },
        handler: () => {
          throw new Error('oracle is down');
        },
      }),
    );
    await bus.publish('asker', hop('q'), { idempotencyKey: 'q' });
    const [suspended] = await takeResults(bus, 1);
    await createDispatcher({ bus }).start(questionHop(suspended!)!);
    const [failed] = await takeResults(bus, 1);
    expect(failed).toMatchObject({
      role: 'oracle',
      outcome: 'failed',
      error: { type: 'Error', message: 'oracle is down' },
    });
    const dispatch = replyDispatch(failed!)!;
    await bus.publish(dispatch.role, dispatch.envelope, { idempotencyKey: dispatch.idempotencyKey });
    const [final] = await takeResults(bus, 1);
    expect(final).toMatchObject({ role: 'asker', outcome: 'completed', parts: [{ kind: 'text', text: 'failed' }] });
    expect(seen[0]!.from).toMatchObject({ role: 'oracle', outcome: 'failed', error: { message: 'oracle is down' } });
    expect(seen[0]!.state).toEqual({ n: 1 });
  });
});
