import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteContextStore } from '../../src/persistence/context/sqlite-store.js';
import { COORDINATOR_SCHEMA, SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import type { ItemOutput } from '../../src/protocol/item-output.js';
import type { ItemRecord } from '../../src/workflow/records.js';

/** An ended item's output in the Coordinator's tables: durable, and no business of the Context Engine. */

const OUTPUT: ItemOutput = {
  state: 'completed',
  stage: 'review',
  hop: 2,
  role: 'reviewer',
  parts: [
    { kind: 'text', text: 'reviewed: é ✓' },
    { kind: 'data', data: { score: 9, tags: ['a', 'b'] } },
  ],
  artifacts: [{ artifactId: 'report', name: 'report', parts: [{ kind: 'text', text: 'fine' }] }],
};

function insert(store: SqliteCoordinatorStore, id: string, now: number): ItemRecord {
  store.insertItem({
    id,
    taskId: null,
    workflow: { id: 'draft-review', version: 1 },
    state: 'running',
    input: [{ kind: 'text', text: 'a post' }],
    budget: null,
    attributes: null,
    now,
  });
  return store.getItem(id)!;
}

describe("the Coordinator's tables keep an ended item's output", () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  const file = () => {
    const dir = mkdtempSync(join(tmpdir(), 'sb-output-'));
    dirs.push(dir);
    return join(dir, 'switchboard.db');
  };

  it('a live item has none; an ended one keeps it across a reopen, its JSON intact', () => {
    const path = file();
    let db = openDatabase(path);
    let store = new SqliteCoordinatorStore(db);
    const live = insert(store, 'item-1', 1_000);
    expect(live.output).toBeNull();
    store.updateItem({ ...live, state: 'completed', finishedAt: 2_000, updatedAt: 2_000, output: OUTPUT });
    insert(store, 'item-2', 1_500);
    db.close();

    db = openDatabase(path);
    store = new SqliteCoordinatorStore(db);
    expect(store.getItem('item-1')?.output).toEqual(OUTPUT);
    expect(store.getItem('item-2')?.output).toBeNull();
    expect(store.listItems({ state: 'completed' }).map((i) => i.output)).toEqual([OUTPUT]);
    // With the run's snapshot too (the statement the Coordinator writes a step with).
    const second = store.getItem('item-2')!;
    const failed: ItemOutput = {
      state: 'failed',
      stage: 'draft',
      hop: 1,
      code: 'GOVERNANCE_DENIED',
      message: 'deploys are frozen',
      error: null,
    };
    store.updateItem(
      { ...second, state: 'failed', finishedAt: 3_000, output: failed },
      { machineVersion: 1, snapshot: { value: 'failed' } },
    );
    expect(store.getItem('item-2')?.output).toEqual(failed);
    db.close();
  });

  it("survives the Context Engine's pruning and its forgetting of the run", async () => {
    const path = file();
    const db = openDatabase(path);
    const store = new SqliteCoordinatorStore(db);
    const context = new SqliteContextStore({ database: db, pruneIntervalMs: 0, retentionMs: 1 });
    try {
      const item = insert(store, 'item-1', 1_000);
      store.updateItem({ ...item, state: 'completed', finishedAt: 2_000, output: OUTPUT });
      await context.complete({
        idempotencyKey: 'item-1/1/1',
        runId: 'item-1',
        taskId: 'hop-1',
        hop: 1,
        role: 'reviewer',
        outcome: 'completed',
        output: { parts: OUTPUT.state === 'completed' ? OUTPUT.parts : [], artifacts: [] },
        publishes: [],
      });
      expect((await context.hydrate('item-1')).outputs).toHaveLength(1);
      await context.prune(Date.now() + 60_000);
      await context.pruneExpired();
      await context.forgetRun('item-1');
      expect((await context.hydrate('item-1')).outputs).toEqual([]);
      expect(store.getItem('item-1')?.output).toEqual(OUTPUT);
    } finally {
      await context.close();
      db.close();
    }
  });

  it('is added by migration 6 to a file of schema 5: items that ended before have none', () => {
    const path = file();
    const old = openDatabase(path);
    migrate(old, { ...COORDINATOR_SCHEMA, current: 5, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 5) });
    old
      .prepare(
        `INSERT INTO coord_items (id, workflow_id, workflow_version, state, input, created_at, updated_at, finished_at)
         VALUES ('old', 'draft-review', 1, 'completed', '[]', 1, 2, 2)`,
      )
      .run();
    old.close();
    // A reader does not migrate: it says what to do.
    const reader = openDatabase(path, { readonly: true });
    let refusal: unknown;
    try {
      new SqliteCoordinatorStore(reader, { readOnly: true });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(SchemaVersionError);
    expect(refusal).toMatchObject({
      code: 'SCHEMA_TOO_OLD',
      details: { component: 'coordinator', found: 5, supported: COORDINATOR_SCHEMA.current },
      message: expect.stringMatching(
        new RegExp(
          `version 5, older than this switchboard reads \\(${COORDINATOR_SCHEMA.current}\\).*switchboard coordinator --db PATH`,
        ),
      ),
    });
    reader.close();
    const db = openDatabase(path);
    try {
      const store = new SqliteCoordinatorStore(db);
      expect(schemaVersion(db, 'coordinator')).toBe(COORDINATOR_SCHEMA.current);
      expect(store.getItem('old')).toMatchObject({ state: 'completed', output: null });
    } finally {
      db.close();
    }
    const migrated = openDatabase(path, { readonly: true });
    try {
      expect(new SqliteCoordinatorStore(migrated, { readOnly: true }).getItem('old')?.output).toBeNull();
    } finally {
      migrated.close();
    }
  });
});
