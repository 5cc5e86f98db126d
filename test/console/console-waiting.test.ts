import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { ConsoleData } from '../../src/console/console-data.js';
import { silentLogger } from '../../src/log/logger.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * The console's `waiting` field: what a running item waits for on the bus
 * (its hop, role, since when and for how long), and, the bus being the
 * file's, where the hop's message is: queued, held by a worker, missing.
 * Read from the file opened read-only beside a running Coordinator.
 */
const definition = parseWorkflowDefinition({
  id: 'waits',
  version: 1,
  start: 'review',
  stages: { review: { role: 'reviewer', next: [{ on: 'succeeded', end: 'completed' }] } },
});

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the console: what an item waits for on the bus', () => {
  it('shows the hop out with its role and age, and whether it is queued, held or missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-console-waiting-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, 'switchboard.db');
    // No workers for the role, and no default hop timeout: the hop stays where the test puts it.
    const coordinator: Coordinator = await createCoordinator({
      path,
      definitions: [definition],
      deployments: {},
      hopTimeoutMs: 0,
      logger: silentLogger(),
    });
    cleanups.push(() => coordinator.close());
    const id = await coordinator.createWorkItem({ workflow: 'waits', input: 'look' });
    await until(async () => (await coordinator.bus.stats('reviewer')).depth === 1, 'the hop queued');

    const file = openDatabase(path, { readonly: true });
    cleanups.push(() => {
      file.close();
    });
    const data = new ConsoleData({ kind: 'sqlite', db: file });
    const sent = (await coordinator.listHops(id))[0]!;
    const at = sent.dispatchedAt + 90_000;

    const queued = await data.item(id, at);
    expect(queued?.waiting).toEqual([
      {
        itemId: id,
        workflow: 'waits',
        itemState: 'running',
        kind: 'stage',
        hop: 1,
        attempt: 1,
        stage: 'review',
        role: 'reviewer',
        since: sent.dispatchedAt,
        ageMs: 90_000,
        timeouts: 0,
        bus: 'queued',
      },
    ]);
    expect(await data.waiting(at)).toEqual(queued?.waiting);

    // A worker takes it: held, under its lease.
    const [taken] = await coordinator.bus.consume('reviewer', {
      consumer: 'w1',
      visibilityTimeoutMs: 60_000,
      max: 1,
      waitMs: 1_000,
    });
    expect(taken).toBeDefined();
    expect((await data.item(id, Date.now()))?.waiting.map((w) => w.bus)).toEqual(['held']);

    // Its message is lost (the row gone from the file): missing.
    const side = openDatabase(path);
    side.prepare('DELETE FROM bus_jobs WHERE role = ?').run('reviewer');
    side.close();
    expect((await data.waiting(Date.now())).map((w) => [w.itemId, w.bus])).toEqual([[id, 'missing']]);

    // An item that ended waits for nothing.
    await coordinator.cancel(id, { by: 'ops', reason: 'done looking' });
    await until(async () => (await coordinator.getItem(id))?.state === 'canceled', 'the cancel');
    expect((await data.item(id))?.waiting).toEqual([]);
    expect(await data.waiting()).toEqual([]);
  });
});
