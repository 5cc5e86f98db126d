import { afterEach, describe, expect, it } from 'vitest';
import { observeCommits } from '../../src/actors/coordinator/commit-timing.js';
import type { Delivery } from '../../src/bus/work-queue.js';
import { DEMO_HANDLERS } from '../../src/demo/roles.js';
import { RESULTS_ROLE, type ResultEnvelope } from '../../src/protocol/work-envelope.js';
import type { CoordinatorStore } from '../../src/persistence/coordinator/coordinator-store.js';
import type { CommitBatch } from '../../src/workflow/records.js';
import { type Fixture, deployments, openFixture, until } from './helpers.js';

/**
 * Results that arrive while a commit is in flight (on PostgreSQL a commit
 * takes milliseconds) are not committed one by one after it: they wait for
 * the next turn together and share one decision and one commit. Here the
 * store's first result commit is held in flight (its Promise settles only
 * when the test says) while two more results arrive, each read on its own.
 */
describe('results arriving while a commit is in flight', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
    f = undefined;
  });

  it('share the next commit', async () => {
    const { architect: _, ...rest } = DEMO_HANDLERS;
    // No timer decisions in between (they would keep their place between the results).
    f = await openFixture({ deployments: deployments(rest), timerIntervalMs: 3_600_000 });
    const { coordinator } = f;
    const batches: number[] = [];
    observeCommits(coordinator, (_ns, what, _inner, _cpu, batch) => {
      if (what === 'result') batches.push(batch);
    });
    const ids = [
      await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'A' }),
      await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'B' }),
      await coordinator.createWorkItem({ workflow: 'dev-sdlc', input: 'C' }),
    ];
    const jobs: Delivery[] = [];
    while (jobs.length < 3) {
      jobs.push(
        ...(await coordinator.bus.consume('architect', {
          consumer: 'test-architect',
          visibilityTimeoutMs: 120_000,
          max: 3,
          waitMs: 5_000,
        })),
      );
    }
    // The store commits as always; the first result commit's Promise settles only once released.
    // The store both Coordinators commit through (on either store, the object behind `tables`).
    const store = coordinator.tables as unknown as CoordinatorStore;
    const commit = store.commit.bind(store);
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    store.commit = async (batch: CommitBatch) => {
      const out = await commit(batch);
      if (!held && batch.changes.some((c) => !c.created)) {
        held = true;
        await gate;
      }
      return out;
    };
    const publish = async (itemId: string) => {
      const job = jobs.find((j) => j.envelope.kind === 'work' && j.envelope.headers.runId === itemId)!;
      if (job.envelope.kind !== 'work') throw new Error('not work');
      const result: ResultEnvelope = {
        kind: 'result',
        headers: job.envelope.headers,
        role: 'architect',
        outcome: 'completed',
        parts: [{ kind: 'text', text: 'the design' }],
        artifacts: [],
        usage: { inputTokens: 10, outputTokens: 10, costUsd: 0.001, model: 'test' },
      };
      await coordinator.bus.publish(RESULTS_ROLE, result, { idempotencyKey: `result-${itemId}` });
    };
    await publish(ids[0]!);
    await until(async () => held, 10_000, "the first result's commit in flight");
    // Each read on its own (the results loop polls every few milliseconds), while the first commit is held.
    await publish(ids[1]!);
    await new Promise((r) => setTimeout(r, 300));
    await publish(ids[2]!);
    await new Promise((r) => setTimeout(r, 300));
    expect(batches).toEqual([]);
    release();
    await until(
      async () =>
        (await Promise.all(ids.map((id) => coordinator.listHops(id)))).every((hops) =>
          hops.some((h) => h.role === 'coding'),
        ),
      10_000,
      'all three at coding',
    );
    // The first alone (in flight when the others came), the two that waited in one commit of 2
    // (each result is reported with the size of the commit it shared; one by one would be [1, 1, 1]).
    expect(batches).toEqual([1, 2, 2]);
    expect((await coordinator.verifyAudit()).ok).toBe(true);
  });
});
