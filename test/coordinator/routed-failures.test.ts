import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { Coordinator } from '../../src/actors/coordinator/coordinator.js';
import { NonRetryableError, type WorkHandler } from '../../src/actors/worker/worker.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { TEST_STORE, autoApprove, deployments, devSdlc, openFixture, until } from './helpers.js';

/**
 * A failure the workflow routes on purpose is handled, not dead: once the
 * Coordinator has routed it, the dead letter its work message became is
 * purged. A failure that nothing handles (it fails the item) stays in the
 * role's dead-letter queue. On the SQLite bus (project `default`) and on
 * the Redis bus (project `coordinator-postgres`: its store in PostgreSQL).
 */

// One stage whose failures are either expected (a rule ends the item on their type) or not (no rule).
const fragile = parseWorkflowDefinition({
  id: 'fragile',
  version: 1,
  start: 'only',
  stages: {
    only: {
      role: 'breaker',
      next: [{ on: 'failed', errorType: 'Expected', end: 'failed', reason: 'an expected refusal' }],
    },
  },
});
const breaker: WorkHandler = ({ message }) => {
  const text = message.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('');
  if (text.includes('expected')) throw new NonRetryableError('refused on purpose', { type: 'Expected' });
  throw new NonRetryableError('nobody expects this', { type: 'Broken' });
};

async function deadLetterCount(coordinator: Coordinator, role: string): Promise<number> {
  return (await coordinator.dispatcher.query(role)).deadLetters;
}

describe(`failures and dead letters (${TEST_STORE === 'postgres' ? 'the Redis bus' : 'the SQLite bus'})`, () => {
  async function withCoordinator(run: (coordinator: Coordinator) => Promise<void>): Promise<void> {
    const f = await openFixture({
      definitions: [devSdlc, fragile],
      deployments: deployments({ ...DEMO_HANDLERS, breaker }),
      // The unhandled failure's warning is this test's to read, not the run's output.
      logger: pino({ level: 'silent' }),
    });
    try {
      await run(f.coordinator);
    } finally {
      await f.close();
    }
  }

  it('a failure a next rule routes (TestsFailed back to coding) leaves no dead letter', async () => {
    await withCoordinator(async (coordinator) => {
      const stop = autoApprove(coordinator);
      const id = await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'Add rate limiting' });
      const settled = await coordinator.settled(id, { timeoutMs: 60_000 });
      stop();
      expect(settled.state).toBe('completed');
      const hops = await coordinator.listHops(id);
      // The testing hop failed once and was routed back to coding.
      expect(hops.filter((h) => h.stage === 'testing').map((h) => h.error?.type ?? h.state)).toEqual([
        'TestsFailed',
        'completed',
      ]);
      // Its dead letter was purged once routed: none is left on any role.
      await until(async () => (await deadLetterCount(coordinator, 'testing')) === 0, 30_000, 'the purge');
      for (const role of ['architect', 'coding', 'testing', 'devops']) {
        expect(await deadLetterCount(coordinator, role), role).toBe(0);
      }
    });
  }, 120_000);

  it('a failure that ends the item by a rule leaves none; one nothing handles stays a dead letter', async () => {
    await withCoordinator(async (coordinator) => {
      const expected = await coordinator.createWorkItem({ workflow: 'fragile', input: 'expected' });
      expect((await coordinator.settled(expected, { timeoutMs: 60_000 })).state).toBe('failed');
      expect((await coordinator.getItem(expected))?.failure?.code).toBe('RULE_ENDED');
      await until(async () => (await deadLetterCount(coordinator, 'breaker')) === 0, 30_000, 'the purge');

      const broken = await coordinator.createWorkItem({ workflow: 'fragile', input: 'a surprise' });
      expect((await coordinator.settled(broken, { timeoutMs: 60_000 })).state).toBe('failed');
      expect((await coordinator.getItem(broken))?.failure?.code).toBe('NON_RETRYABLE');
      const { deadLetters, deadLetterSample } = await coordinator.dispatcher.query('breaker');
      expect(deadLetters).toBe(1);
      const [letter] = deadLetterSample;
      expect(letter?.envelope.headers.runId).toBe(broken);
      expect(letter?.lastError).toMatchObject({ type: 'Broken', message: 'nobody expects this' });
      expect(letter?.lastError.stack).toContain('NonRetryableError: nobody expects this');
    });
  }, 120_000);
});
