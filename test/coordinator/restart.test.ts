import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type Coordinator, createCoordinator } from '../../src/actors/coordinator/coordinator.js';
import { COORDINATOR_SCHEMA, SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import { deployments, devSdlc, tempDir, until } from './helpers.js';

/** A Coordinator closed and opened again on the same file picks every live item up where it was. */
describe('restoring work items on open', () => {
  let dir: string | undefined;
  const open: Coordinator[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  async function start(path: string): Promise<Coordinator> {
    const c = await createCoordinator({ path, definitions: [devSdlc], deployments: deployments() });
    open.push(c);
    return c;
  }

  it('items waiting at a gate survive a restart and finish after the approval', async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const first = await start(path);
    const ids = [
      await first.createWorkItem({ workflow: 'dev-sdlc', input: 'One' }),
      await first.createWorkItem({ workflow: 'dev-sdlc', input: 'Two' }),
    ];
    await until(
      async () =>
        (await Promise.all(ids.map((id) => first.getItem(id)))).every((i) => i?.state === 'awaiting-approval'),
      10_000,
      'both gates',
    );
    await first.mirrored();
    const before = await Promise.all(
      ids.map(async (id) => ({ usage: (await first.getItem(id))!.usage, hops: (await first.listHops(id)).length })),
    );
    await first.close();
    open.splice(0);

    const second = await start(path);
    expect([...second.restored.items].sort()).toEqual([...ids].sort());
    expect(second.restored.refused).toEqual([]);
    for (const [i, id] of ids.entries()) {
      const item = (await second.getItem(id))!;
      expect(item.state).toBe('awaiting-approval');
      expect(item.usage).toEqual(before[i]!.usage);
      expect(item.approval).toMatchObject({ stage: 'devops', source: 'gate', approvers: ['release-manager'] });
    }
    const first$ = await new Promise((resolve) => second.watch(ids[0]!).subscribe((s) => resolve(s.event.kind)));
    expect(first$).toBe('current');
    for (const id of ids) await second.approve(id, 'release-manager');
    const finals = await Promise.all(ids.map((id) => second.settled(id)));
    expect(finals.map((f) => f.state)).toEqual(['completed', 'completed']);
    for (const [i, id] of ids.entries()) expect(await second.listHops(id)).toHaveLength(before[i]!.hops + 1);
    await second.mirrored();
    expect((await second.getItem(ids[0]!))?.mirrored).toBe(true);
    expect((await second.audit.verifyChain()).ok).toBe(true);
  });

  it("a run snapshot persisted before runs held their budget gets the item's budget back: the run still decides overruns", async () => {
    dir = tempDir();
    const path = join(dir, 'switchboard.db');
    const first = await start(path);
    const id = await first.createWorkItem({ workflow: 'dev-sdlc', input: 'One', budget: { maxTokens: 1_000_000 } });
    await until(async () => (await first.getItem(id))?.state === 'awaiting-approval', 10_000, 'the gate');
    await first.mirrored();
    const spent = (await first.getItem(id))!.usage;
    await first.close();
    open.splice(0);
    // As an earlier Coordinator wrote it: no budget in the run's context. The item's budget: one token left.
    const side = openDatabase(path);
    const left = spent.inputTokens + spent.outputTokens + 1;
    side
      .prepare(
        "UPDATE coord_items SET run_snapshot = json_remove(run_snapshot, '$.context.budget'), budget = ? WHERE id = ?",
      )
      .run(JSON.stringify({ maxTokens: left }), id);
    const row = side.prepare('SELECT run_snapshot FROM coord_items WHERE id = ?').get(id) as { run_snapshot: string };
    expect(JSON.parse(row.run_snapshot).context).not.toHaveProperty('budget');
    side.close();

    const second = await start(path);
    expect(second.restored.items).toEqual([id]);
    await second.approve(id, 'release-manager');
    const final = await second.settled(id);
    expect(final.state).toBe('failed');
    expect(final.failure).toMatchObject({ code: 'BUDGET_EXCEEDED', stage: 'devops' });
    expect(final.failure?.reason).toMatch(new RegExp(`budget exceeded: \\d+ of ${left} tokens`));
  });
});

describe('a file of an earlier Coordinator schema', () => {
  it('is migrated on open: version 1 run snapshots move into their items and restore; usage and outbox rows are kept', () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'old.db');
      const old = openDatabase(path);
      migrate(old, { ...COORDINATOR_SCHEMA, current: 1, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 1) });
      old
        .prepare(
          `INSERT INTO coord_items (id, workflow_id, workflow_version, state, input, created_at, updated_at)
           VALUES ('item-1', 'dev-sdlc', 1, 'running', '[]', 1, 1), ('item-2', 'dev-sdlc', 1, 'pending', '[]', 2, 2)`,
        )
        .run();
      old
        .prepare("INSERT INTO coord_runs (item_id, machine_version, snapshot, updated_at) VALUES ('item-1', 7, ?, 1)")
        .run(JSON.stringify({ status: 'active', value: 'running', context: { hop: 2 } }));
      old.exec(`INSERT INTO coord_usage (hop_id, item_id, agent, model, input_tokens, output_tokens, cost_usd,
                  elapsed_ms, at) VALUES ('hop-1', 'item-1', 'coding', 'm', 10, 2, 0.5, 3, 1);
                INSERT INTO coord_outbox (item_id, kind, body) VALUES ('item-1', 'start', '{}')`);
      old.close();
      const db = openDatabase(path);
      try {
        const store = new SqliteCoordinatorStore(db);
        expect(schemaVersion(db, 'coordinator')).toBe(COORDINATOR_SCHEMA.current);
        expect(store.loadRun('item-1')).toEqual({
          machineVersion: 7,
          snapshot: { status: 'active', value: 'running', context: { hop: 2 } },
        });
        expect(store.loadRun('item-2')).toBeUndefined();
        expect(store.getItem('item-1')?.state).toBe('running');
        expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'coord_runs'").all()).toEqual([]);
        // Usage and outbox rows kept, numbered as before, now without AUTOINCREMENT.
        expect(store.usageRows({ itemId: 'item-1' })).toMatchObject([{ hopId: 'hop-1', inputTokens: 10 }]);
        expect(store.outbox()).toMatchObject([{ id: 1, itemId: 'item-1', kind: 'start' }]);
        const sql = db.prepare("SELECT sql FROM sqlite_master WHERE name IN ('coord_usage', 'coord_outbox')").all() as {
          sql: string;
        }[];
        expect(sql).toHaveLength(2);
        for (const { sql: text } of sql) expect(text).not.toContain('AUTOINCREMENT');
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
