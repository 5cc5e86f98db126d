import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { UsageGroup } from '../../src/workflow/records.js';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { COORDINATOR_SCHEMA } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate } from '../../src/persistence/kernel/migrations.js';
import { type CoordinatorDb, buildCoordinatorDb } from './coordinator-db.js';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';

interface UsageJson {
  by: string;
  groups: (UsageGroup & {
    state?: string;
    workflow?: { id: string; version: number };
    parentId?: string | null;
    rolledUp?: { costUsd: number } | null;
    rolledUpHops?: number | null;
  })[];
  total: Omit<UsageGroup, 'key'>;
}

describe('switchboard usage', () => {
  let tmp: TempDir;
  let coord: CoordinatorDb;
  beforeAll(async () => {
    tmp = tempDir();
    coord = await buildCoordinatorDb(tmp.dir);
  }, 30_000);
  afterAll(() => tmp.cleanup());

  it("reports the Coordinator's usage by agent, model and work item, with totals that match the items' rollups", async () => {
    const before = fingerprint(coord.path);
    const hops = coord.items.reduce((n, i) => n + i.hops, 0);
    const cost = coord.items.reduce((n, i) => n + i.usage.costUsd, 0);
    const tokens = coord.items.reduce((n, i) => n + i.usage.inputTokens + i.usage.outputTokens, 0);
    for (const by of ['agent', 'model', 'task'] as const) {
      const { code, json } = await runJson<UsageJson>(['usage', '--db', coord.path, '--by', by]);
      expect(code).toBe(0);
      expect(json.by).toBe(by);
      expect(json.groups.map(({ state, workflow, parentId, rolledUp, rolledUpHops, ...g }) => g)).toEqual(
        coord.usage[by],
      );
      expect(json.total.hops).toBe(hops);
      expect(json.total.costUsd).toBeCloseTo(cost, 9);
      expect(json.total.inputTokens + json.total.outputTokens).toBe(tokens);
    }
    // `item` is the name for work items; `task`, the older one, answers the same groups.
    const byTask = await runJson<UsageJson>(['usage', '--db', coord.path, '--by', 'item']);
    expect(byTask.code).toBe(0);
    expect(byTask.json.by).toBe('item');
    expect(byTask.json.groups.map(({ state, workflow, parentId, rolledUp, rolledUpHops, ...g }) => g)).toEqual(
      coord.usage.task,
    );
    const olderName = await runJson<UsageJson>(['usage', '--db', coord.path, '--by', 'task']);
    expect(olderName.json.groups).toEqual(byTask.json.groups);
    for (const item of coord.items) {
      const group = byTask.json.groups.find((g) => g.key === item.id)!;
      expect(group).toMatchObject({ hops: item.hops, state: 'completed', workflow: item.workflow, parentId: null });
      // Without children, the item's rollup is its own hops'.
      expect(group.rolledUp?.costUsd).toBeCloseTo(group.costUsd, 9);
      expect(group.costUsd).toBeCloseTo(item.usage.costUsd, 9);
    }
    expect(new Set(coord.usage.agent.map((g) => g.key))).toEqual(new Set(['architect', 'coding', 'testing', 'devops']));

    const table = await runCli(['usage', '--db', coord.path]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^agent\s+hops\s+in tok\s+out tok\s+tokens\s+cost\s+hop time$/);
    expect(lines.at(-1)).toMatch(new RegExp(`^total\\s+${hops}\\s+`));
    expect(lines.at(-1)).toContain(`$${cost.toFixed(4)}`);
    expect(fingerprint(coord.path)).toBe(before);
  });

  it('narrows to one work item with --item, and names an unknown one', async () => {
    const item = coord.items[0]!;
    const { code, json } = await runJson<UsageJson>(['usage', '--db', coord.path, '--by', 'model', '--item', item.id]);
    expect(code).toBe(0);
    expect(json.total.hops).toBe(item.hops);
    expect(json.total.costUsd).toBeCloseTo(item.usage.costUsd, 9);
    const r = await runCli(['usage', '--db', coord.path, '--item', 'no-such-item']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('no work item no-such-item');
  });

  it('exits 2 for bad usage or a database without Coordinator tables (creating none)', async () => {
    for (const [args, message] of [
      [['usage'], '--db PATH is required'],
      [['usage', '--db', coord.path, '--by', 'colour'], '--by must be one of agent, model, item, task'],
      [['usage', '--db', coord.path, 'extra'], "unexpected argument 'extra'"],
    ] as [string[], string][]) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
    }
    const busOnly = tmp.file('bus-only.db');
    await new SqliteQueue({ database: busOnly }).close();
    const before = fingerprint(busOnly);
    const r = await runCli(['usage', '--db', busOnly]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("holds no Coordinator tables (no 'coordinator' schema)");
    expect(fingerprint(busOnly)).toBe(before);
    // An older Coordinator schema: read without migrating, so refused, the file untouched.
    const older = tmp.file('older.db');
    const db = openDatabase(older);
    migrate(db, { ...COORDINATOR_SCHEMA, current: 5, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 5) });
    db.close();
    const untouched = fingerprint(older);
    const old = await runCli(['usage', '--db', older]);
    expect(old.code).toBe(2);
    expect(old.stderr).toContain('database schema for coordinator is version 5, older than this switchboard reads');
    expect(fingerprint(older)).toBe(untouched);
  });
});
