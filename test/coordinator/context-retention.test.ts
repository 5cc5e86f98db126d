import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator.js';
import { type Worker, complete, createWorker, suspend } from '../../src/actors/worker.js';
import { parseWorkflowDefinition } from '../../src/machines/workflow-definition.js';
import { DEFAULT_CONTEXT_RETENTION_MS, SqliteContextStore } from '../../src/persistence/context-store.js';
import { openDatabase } from '../../src/persistence/database.js';
import { WARM, devSdlc, tempDir, until } from './helpers.js';

/**
 * The embedded Coordinator owns its Context Engine and prunes it while it
 * runs: idempotency records past the retention go, what a suspended run
 * resumes from stays, and the run resumes after the pruning.
 */

const HOUR = 60 * 60 * 1000;

const planBuild = parseWorkflowDefinition({
  id: 'plan-build',
  version: 1,
  title: 'plan, then build (which may ask the oracle)',
  start: 'plan',
  stages: {
    plan: { role: 'planner', next: [{ on: 'succeeded', goto: 'build' }] },
    build: { role: 'builder', next: [{ on: 'succeeded', end: 'completed' }] },
  },
});

// Makes `oracle` one of the Coordinator's roles (its questions are forwarded to the `oracle` queue),
// while no pool of this Coordinator serves it: a question waits there, unleased, until the test answers.
const oracleDesk = parseWorkflowDefinition({
  id: 'oracle-desk',
  version: 1,
  title: 'the oracle',
  start: 'ask',
  stages: { ask: { role: 'oracle', next: [{ on: 'succeeded', end: 'completed' }] } },
});

function text(parts: readonly { kind: string; text?: string }[]): string {
  return parts.map((p) => p.text ?? '').join(' ');
}

describe('the Coordinator prunes its Context Engine', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it('forgets old idempotency records while it runs, and keeps what a suspended run resumes from', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    let offset = 0;
    const coordinator: Coordinator = await createCoordinator({
      path: join(dir, 'switchboard.db'),
      clock: { now: () => Date.now() + offset },
      definitions: [planBuild, oracleDesk],
      contextRetention: { retentionMs: HOUR, pruneIntervalMs: 20 },
      deployments: {
        planner: {
          handler: () => complete({ parts: [{ kind: 'text', text: 'a plan' }] }),
          deployment: WARM,
          observeIntervalMs: 10,
          pollWaitMs: 50,
        },
        builder: {
          handler: ({ message, resume }) => {
            if (resume !== undefined)
              return complete({ parts: [{ kind: 'text', text: `built, ${text(resume.reply.parts)}` }] });
            if (text(message.parts).includes('ask')) {
              return suspend({
                ask: { role: 'oracle', message: { role: 'agent', parts: [{ kind: 'text', text: 'which way?' }] } },
                state: { waiting: true },
              });
            }
            return complete({ parts: [{ kind: 'text', text: 'built' }] });
          },
          deployment: WARM,
          observeIntervalMs: 10,
          pollWaitMs: 50,
        },
      },
    });
    cleanups.push(() => coordinator.close());
    const store = coordinator.contextStore as SqliteContextStore;
    expect(store).toBeInstanceOf(SqliteContextStore);
    expect(store.retentionMs).toBe(HOUR);
    const db = store.database;
    const count = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;

    const done = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'quick' });
    const waiting = await coordinator.createWorkItem({ workflow: 'plan-build', input: 'ask the oracle' });
    expect((await coordinator.settled(done)).state).toBe('completed');
    await until(() => coordinator.get(waiting)?.state === 'suspended', 10_000, 'the second item to suspend');
    await until(async () => (await coordinator.bus.stats('oracle')).depth === 1, 10_000, 'the question to wait');

    // plan + build of the first item, plan + the suspension of the second.
    expect(count('SELECT count(*) AS n FROM context_completions')).toBe(4);
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NULL')).toBe(1);
    const outputs = count('SELECT count(*) AS n FROM context_outputs');
    expect(outputs).toBe(3);

    // Two hours on (the retention is one): the running Coordinator's store prunes by itself.
    offset += 2 * HOUR;
    await until(() => count('SELECT count(*) AS n FROM context_completions') === 0, 5000, 'the Coordinator to prune');
    // Kept: the checkpoint the suspended run resumes from, every output (the runs' context).
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NULL')).toBe(1);
    expect(count('SELECT count(*) AS n FROM context_outputs')).toBe(outputs);

    // The suspended item resumes from its checkpoint after the pruning and completes.
    const oracle: Worker = createWorker({
      role: 'oracle',
      bus: coordinator.bus,
      contextStore: coordinator.contextStore,
      pollWaitMs: 50,
      handler: () => complete({ parts: [{ kind: 'text', text: 'go left' }] }),
    });
    cleanups.push(() => oracle.stop({ graceMs: 100 }));
    const final = await coordinator.settled(waiting);
    expect(final.state).toBe('completed');
    const hops = coordinator.hops(waiting);
    expect(hops.find((h) => h.kind === 'stage' && h.stage === 'build')?.state).toBe('completed');
    // The resume's records are new: kept, as the resumed checkpoint (resumed now).
    expect(count('SELECT count(*) AS n FROM context_checkpoints WHERE resumed_at IS NOT NULL')).toBe(1);
    expect(count('SELECT count(*) AS n FROM context_completions')).toBe(2);
  });

  it('keeps a day by default, and refuses a bad retention before opening anything', async () => {
    const dir = tempDir();
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    await expect(
      createCoordinator({ path, definitions: [devSdlc], contextRetention: { retentionMs: 0 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringMatching(/retentionMs/) });
    await expect(
      createCoordinator({ path, definitions: [devSdlc], contextRetention: { pruneIntervalMs: 1.5 } }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT' });
    const db = openDatabase(path);
    cleanups.push(() => {
      db.close();
    });
    const store = new SqliteContextStore({ database: db, pruneIntervalMs: 0 });
    cleanups.push(() => store.close());
    await expect(
      createCoordinator({
        broker: {} as never,
        bus: {} as never,
        db,
        contextStore: store,
        definitions: [devSdlc],
        contextRetention: { retentionMs: HOUR },
      }),
    ).rejects.toMatchObject({ code: 'COORD_INVALID_ARGUMENT', message: expect.stringMatching(/contextStore/) });

    const coordinator = await createCoordinator({ path: join(dir, 'default.db'), definitions: [devSdlc] });
    cleanups.push(() => coordinator.close());
    expect((coordinator.contextStore as SqliteContextStore).retentionMs).toBe(DEFAULT_CONTEXT_RETENTION_MS);
  });
});
