import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { COORDINATOR_AGENT_NAME } from '../../src/actors/coordinator/human-edge.js';
import type { ItemStatus } from '../../src/actors/coordinator/types.js';
import { NonRetryableError, type WorkHandler, complete, suspend } from '../../src/actors/worker/worker.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { A2AStore } from '../../src/persistence/a2a/store.js';
import { SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { ItemOutputSchema } from '../../src/protocol/item-output.js';
import type { Artifact, Task } from '../../src/protocol/task.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { ON_POSTGRES, WARM, openFixture, tempDir, until } from './helpers.js';

/**
 * A work item's result: kept with the item when it ends (completed, failed,
 * canceled), returned by `settled()` and the item's status, kept across a
 * reopen and the Context Engine's forgetting, and carried as artifacts of
 * the item's A2A task.
 */

const HOUR = 60 * 60 * 1000;

const draftReview = parseWorkflowDefinition({
  id: 'draft-review',
  version: 1,
  title: 'draft, then review (which may ask the oracle)',
  start: 'draft',
  stages: {
    draft: { role: 'drafter', next: [{ on: 'succeeded', goto: 'review' }] },
    review: { role: 'reviewer', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

// Makes `oracle` a known role that no pool serves: a question to it waits until the test ends.
const oracleDesk = parseWorkflowDefinition({
  id: 'oracle-desk',
  version: 1,
  title: 'the oracle',
  start: 'ask',
  stages: { ask: { role: 'oracle', next: [{ on: 'succeeded', end: 'completed' }] } },
});

const REPORT: Artifact = {
  artifactId: 'review-report',
  name: 'review report',
  parts: [{ kind: 'data', data: { approved: true, comments: 2 } }],
};

function text(parts: readonly { kind: string; text?: string }[]): string {
  return parts.map((p) => p.text ?? '').join(' ');
}

const roles: Record<string, WorkHandler> = {
  drafter: ({ message }) => complete({ parts: [{ kind: 'text', text: `a draft of ${text(message.parts)}` }] }),
  reviewer: ({ message }) => {
    const request = text(message.parts);
    if (request.includes('reject')) throw new NonRetryableError('the draft contradicts itself', { type: 'Rejected' });
    if (request.includes('ask')) {
      return suspend({
        ask: { role: 'oracle', message: { role: 'agent', parts: [{ kind: 'text', text: 'is it true?' }] } },
        state: {},
      });
    }
    return complete({ parts: [{ kind: 'text', text: `reviewed: ${request}` }], artifacts: [REPORT] });
  },
};

const pools = () =>
  Object.fromEntries(
    Object.entries(roles).map(([role, handler]) => [
      role,
      { handler, deployment: WARM, observeIntervalMs: 10, pollWaitMs: 50 },
    ]),
  );

async function open(path: string, offset: () => number): Promise<Coordinator> {
  return createCoordinator({
    path,
    clock: { now: () => Date.now() + offset() },
    definitions: [draftReview, oracleDesk],
    contextRetention: { retentionMs: HOUR, pruneIntervalMs: 0 },
    forgetRuns: { intervalMs: 0 },
    deployments: pools(),
  });
}

/** The item's task as the broker holds it (read as the item's Coordinator party, registered again). */
async function itemTask(coordinator: Coordinator, itemId: string): Promise<Task> {
  await coordinator.mirrored();
  const item = (await coordinator.getItem(itemId))!;
  const me = await coordinator.broker!.register({ name: COORDINATOR_AGENT_NAME, contextId: itemId, kind: 'parent' });
  const { task } = await coordinator.broker!.getTask({ token: me.token, id: item.taskId! });
  return task;
}

describe("a work item's output", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /** A Coordinator on the suite's store (`TEST_STORE`), closed and removed after the test. */
  async function onSuiteStore(): Promise<Coordinator> {
    const f = await openFixture({
      definitions: [draftReview, oracleDesk],
      forgetRuns: { intervalMs: 0 },
      deployments: pools(),
    });
    cleanups.push(() => f.close());
    return f.coordinator;
  }

  function fixture() {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return join(dir, 'switchboard.db');
  }

  // On SQLite only: it counts the embedded Context Engine's rows (the PostgreSQL suite's Context Engine is Redis).
  it.skipIf(ON_POSTGRES)(
    'settled() resolves with the last stage’s parts and artifacts, kept across a reopen and the forgetting of the run',
    async () => {
      const path = fixture();
      let offset = 0;
      let coordinator = await open(path, () => offset);
      let closed = false;
      cleanups.push(() => (closed ? undefined : coordinator.close()));
      const id = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'the launch post' });
      const final = await coordinator.settled(id);
      expect(final.state).toBe('completed');
      expect(final.output).toEqual({
        state: 'completed',
        stage: 'review',
        hop: 2,
        role: 'reviewer',
        parts: [{ kind: 'text', text: 'reviewed: the launch post' }],
        artifacts: [REPORT],
      });
      expect(ItemOutputSchema.parse(final.output)).toEqual(final.output);
      expect((await coordinator.getItem(id))?.output).toEqual(final.output);
      // Settling again, once it ended, resolves at once with the same output.
      expect((await coordinator.settled(id, { timeoutMs: 0 })).output).toEqual(final.output);

      // The item's A2A task carries the output: the answer's parts, then the last hop's artifacts.
      const task = await itemTask(coordinator, id);
      expect(task.status.state).toBe('completed');
      expect(task.artifacts.map((a) => a.artifactId)).toEqual(['item-output', 'review-report']);
      expect(task.artifacts[0]?.parts).toEqual(final.output?.state === 'completed' ? final.output.parts : []);
      expect(task.artifacts[1]).toMatchObject({ name: 'review report', parts: REPORT.parts });

      // Past the retention, the Context Engine forgets the run: the output stays with the item.
      const store = coordinator.contextStore as SqliteContextStore;
      const outputs = () =>
        (store.database.prepare('SELECT count(*) AS n FROM context_outputs WHERE run_id = ?').get(id) as { n: number })
          .n;
      expect(outputs()).toBe(2);
      offset += 2 * HOUR;
      expect(await coordinator.forgetEndedRuns()).toBe(1);
      expect(outputs()).toBe(0);
      expect(await coordinator.tables.readContextForgottenAt(id)).not.toBeNull();
      expect((await coordinator.getItem(id))?.output).toEqual(final.output);

      // And across a reopen.
      await coordinator.close();
      closed = true;
      coordinator = await open(path, () => offset);
      closed = false;
      expect((await coordinator.getItem(id))?.output).toEqual(final.output);
      expect((await coordinator.settled(id)).output).toEqual(final.output);
      expect((await itemTask(coordinator, id)).artifacts).toHaveLength(2);
    },
  );

  it('a failed item keeps its failure (code, message, stage, hop, the hop’s error), on its task too', async () => {
    const coordinator = await onSuiteStore();
    const id = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'reject this' });
    const final = await coordinator.settled(id, { timeoutMs: 20_000 });
    expect(final.state).toBe('failed');
    expect(final.output).toMatchObject({
      state: 'failed',
      stage: 'review',
      hop: 2,
      code: 'NON_RETRYABLE',
      error: { type: 'Rejected', message: 'the draft contradicts itself' },
    });
    expect(final.output?.state === 'failed' && final.output.message).toBe(final.failure?.reason);
    const task = await itemTask(coordinator, id);
    expect(task.status.state).toBe('failed');
    expect(task.artifacts.map((a) => a.artifactId)).toEqual(['item-failure']);
    expect(task.artifacts[0]?.parts[0]).toEqual({
      kind: 'text',
      text: `NON_RETRYABLE: ${final.failure?.reason}`,
    });
    expect(task.artifacts[0]?.parts[1]).toMatchObject({ kind: 'data', data: { code: 'NON_RETRYABLE', hop: 2 } });
  });

  it('settled() with a timeout rejects with COORD_SETTLE_TIMEOUT and the item runs on; a cancel settles it', async () => {
    const coordinator = await onSuiteStore();
    await expect(coordinator.settled('no-such-item')).rejects.toMatchObject({ code: 'COORD_UNKNOWN_ITEM' });
    await expect(coordinator.settled('no-such-item', { timeoutMs: -1 })).rejects.toMatchObject({
      code: 'COORD_INVALID_ARGUMENT',
    });
    const id = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'ask the oracle' });
    await until(async () => (await coordinator.getItem(id))?.state === 'suspended', 10_000, 'the item to suspend');
    const error = await coordinator.settled(id, { timeoutMs: 30 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({
      name: 'CoordinatorError',
      code: 'COORD_SETTLE_TIMEOUT',
      details: { itemId: id, timeoutMs: 30, state: 'suspended' },
    });
    expect((error as Error).message).toMatch(/did not end within 30 ms.*cancel/);
    expect((await coordinator.getItem(id))?.state).toBe('suspended');
    expect((await coordinator.getItem(id))?.output).toBeNull();

    const settling = coordinator.settled(id, { timeoutMs: 20_000 });
    await coordinator.cancel(id, { by: 'editor', reason: 'the post was dropped' });
    const final = await settling;
    expect(final.state).toBe('canceled');
    expect(final.output).toEqual({
      state: 'canceled',
      stage: 'review',
      hop: 2,
      by: 'editor',
      reason: 'the post was dropped',
    });
    const task = await itemTask(coordinator, id);
    expect(task.status.state).toBe('canceled');
    expect(task.artifacts.map((a) => a.artifactId)).toEqual(['item-cancellation']);
    expect(task.artifacts[0]?.parts[0]).toMatchObject({ kind: 'data', data: { by: 'editor' } });
  });

  it('settled() rejects with COORD_CLOSED when the Coordinator closes before the item ends', async () => {
    const coordinator = await onSuiteStore();
    const id = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'ask the oracle' });
    await until(async () => (await coordinator.getItem(id))?.state === 'suspended', 10_000, 'the item to suspend');
    const settling = coordinator.settled(id);
    await coordinator.close();
    await expect(settling).rejects.toMatchObject({
      code: 'COORD_CLOSED',
      details: { itemId: id, state: 'suspended' },
    });
  });

  // On SQLite only: it brings its own parts on one file.
  it.skipIf(ON_POSTGRES)(
    'a mirror that failed between the artifacts and the final move puts the same artifacts again on open',
    async () => {
      const path = fixture();
      const db = openDatabase(path);
      let broker = createBroker({ path });
      const bus = new SqliteQueue({ database: db, pollIntervalMs: { min: 2, max: 20 } });
      const contextStore = new SqliteContextStore({ database: db, pruneIntervalMs: 0 });
      cleanups.push(async () => {
        await contextStore.close();
        await bus.close();
        await broker.close();
        db.close();
      });
      // The broker as the mirror sees it: the item task's final move fails once (a crash right before it).
      const itemTasks = new Set<string>();
      let failed = 0;
      const flaky = new Proxy(broker, {
        get(target, prop) {
          if (prop === 'setStatus') {
            return (params: Parameters<Broker['setStatus']>[0]) => {
              if (failed === 0 && params.state === 'completed' && itemTasks.has(params.id)) {
                failed++;
                return Promise.reject(new Error('the process died here'));
              }
              return target.setStatus(params);
            };
          }
          const value = Reflect.get(target, prop, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      const parts = { bus, db, contextStore, definitions: [draftReview, oracleDesk], deployments: pools() };
      const first = await createCoordinator({ ...parts, broker: flaky });
      const id = await first.createWorkItem({ workflow: 'draft-review', input: 'the launch post' });
      itemTasks.add((await first.getItem(id))!.taskId!);
      expect((await first.settled(id)).state).toBe('completed');
      await first.mirrored();
      expect(failed).toBe(1);
      expect((await first.getItem(id))?.mirrored).toBe(false);
      // Read from the tables (the item's parties are still registered: the mirror has not released them).
      const tasks = new A2AStore(db);
      const halfway = tasks.loadTask(tasks.taskHead((await first.getItem(id))!.taskId!)!);
      expect(halfway.status.state).toBe('working');
      expect(halfway.artifacts.map((a) => a.artifactId)).toEqual(['item-output', 'review-report']);
      await first.close();
      // A restart: the broker is opened again too (its registrations end with it).
      await broker.close();
      broker = createBroker({ path });

      const second = await createCoordinator({ ...parts, broker });
      cleanups.push(() => second.close());
      const task = await itemTask(second, id);
      expect((await second.getItem(id))?.mirrored).toBe(true);
      expect(task.status.state).toBe('completed');
      // The same two artifacts, put again under their ids: not four.
      expect(task.artifacts.map((a) => a.artifactId)).toEqual(['item-output', 'review-report']);
      expect(task.artifacts[1]?.parts).toEqual(REPORT.parts);
    },
  );

  it('statuses$ gives a late subscriber the current status of each live item, then the changes', async () => {
    const path = fixture();
    const coordinator = await open(path, () => 0);
    cleanups.push(() => coordinator.close());
    const early: ItemStatus[] = [];
    const sub = coordinator.statuses$.subscribe((s) => early.push(s));
    cleanups.push(() => sub.unsubscribe());
    // Nothing runs yet: an early subscriber gets no initial status.
    expect(early).toEqual([]);

    const waiting = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'ask the oracle' });
    const done = await coordinator.createWorkItem({ workflow: 'draft-review', input: 'a short note' });
    await coordinator.settled(done);
    await until(async () => (await coordinator.getItem(waiting))?.state === 'suspended', 10_000, 'the item to suspend');

    const late: ItemStatus[] = [];
    const lateSub = coordinator.statuses$.subscribe((s) => late.push(s));
    cleanups.push(() => lateSub.unsubscribe());
    // Synchronously, on subscribing: the live item as it stands (the ended one is not live).
    expect(late).toHaveLength(1);
    expect(late[0]).toMatchObject({ id: waiting, state: 'suspended', output: null, event: { kind: 'current' } });
    expect(early.filter((s) => s.id === done).at(-1)).toMatchObject({
      state: 'completed',
      event: { kind: 'completed' },
      output: { state: 'completed', parts: [{ kind: 'text', text: 'reviewed: a short note' }] },
    });

    await coordinator.cancel(waiting, { by: 'editor' });
    await until(async () => late.some((s) => s.event.kind === 'canceled'), 5_000, 'the cancellation');
    expect(late.at(-1)).toMatchObject({ id: waiting, state: 'canceled', output: { state: 'canceled', by: 'editor' } });
  });
});
