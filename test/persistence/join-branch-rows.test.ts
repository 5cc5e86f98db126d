import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { COORDINATOR_SCHEMA } from '../../src/persistence/coordinator/sqlite-schema.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import { item } from './coordinator-store-contract.js';

/**
 * The SQLite store keeps an open join of 16 branches or more in rows of its
 * own (`coord_join_branches`): a branch's row is written when the branch
 * changed, not when the run's snapshot is written again; the rows go when
 * the join does; a snapshot written before (its branches in its text) loads
 * as it is; rows that do not match their snapshot are a clear error.
 */

type Branch = { key: string; state: string; output: unknown; error: null; budget: null };
const branchesOf = (n: number): Branch[] =>
  Array.from({ length: n }, (_, i) => ({ key: `k${i}`, state: 'running', output: null, error: null, budget: null }));
const snapshotOf = (branches: Branch[] | null) => ({
  status: 'active',
  value: 'fanning',
  historyValue: {},
  context: { runId: 'p', join: branches === null ? null : { stage: 'fan', hop: 2, branches } },
  children: {},
});

let dir: string;
let db: SqliteDatabase;
let store: SqliteCoordinatorStore;
/** Each row write of `coord_join_branches` (insert or update), by position, as a trigger logs it. */
const written = (): number[] =>
  (db.prepare('SELECT position FROM test_branch_writes ORDER BY n').all() as { position: number }[]).map(
    (r) => r.position,
  );
const rows = (): number => (db.prepare('SELECT count(*) AS n FROM coord_join_branches').get() as { n: number }).n;
const write = (branches: Branch[] | null) => {
  db.exec('DELETE FROM test_branch_writes');
  store.updateItem(item('p'), { machineVersion: 1, snapshot: snapshotOf(branches) });
};

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-branch-rows-'));
  db = openDatabase(join(dir, 'coord.db'));
  store = new SqliteCoordinatorStore(db);
  store.insertItem({
    id: 'p',
    taskId: 'task-p',
    workflow: { id: 'wf', version: 1 },
    state: 'running',
    input: [],
    budget: null,
    attributes: null,
    now: 1000,
  });
  db.exec(`
    CREATE TABLE test_branch_writes (n INTEGER PRIMARY KEY, position INTEGER NOT NULL);
    CREATE TRIGGER test_branch_insert AFTER INSERT ON coord_join_branches
      BEGIN INSERT INTO test_branch_writes (position) VALUES (new.position); END;
    CREATE TRIGGER test_branch_update AFTER UPDATE ON coord_join_branches
      BEGIN INSERT INTO test_branch_writes (position) VALUES (new.position); END;
  `);
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('join branch rows (SQLite)', () => {
  it('writes every branch once, then only the branches that changed; the text stands for them', () => {
    let branches = branchesOf(40);
    write(branches);
    expect(written()).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const text = (db.prepare("SELECT run_snapshot FROM coord_items WHERE id = 'p'").get() as { run_snapshot: string })
      .run_snapshot;
    expect(JSON.parse(text).context.join.branches).toEqual({ rows: 40 });

    branches = branches.map((b, i) => (i === 7 || i === 31 ? { ...b, state: 'succeeded', output: { i } } : b));
    write(branches);
    expect(written()).toEqual([7, 31]);
    // Written again unchanged: no row.
    write(branches);
    expect(written()).toEqual([]);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(branches));
  });

  it('drops the rows past a shorter join and all of them when the join ends or fits the text', () => {
    write(branchesOf(40));
    write(branchesOf(20));
    expect(rows()).toBe(20);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(branchesOf(20)));
    write(branchesOf(5));
    expect(rows()).toBe(0);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(branchesOf(5)));
    write(branchesOf(30));
    write(null);
    expect(rows()).toBe(0);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(null));
  });

  it('a store opened on the file reads the rows and writes only what changes after', () => {
    const branches = branchesOf(40);
    write(branches);
    const other = new SqliteCoordinatorStore(db);
    const loaded = other.loadRun('p')!.snapshot as ReturnType<typeof snapshotOf>;
    expect(loaded).toEqual(snapshotOf(branches));
    const next = loaded.context.join!.branches.map((b, i) => (i === 3 ? { ...b, state: 'failed' } : b));
    db.exec('DELETE FROM test_branch_writes');
    other.updateItem(item('p'), { machineVersion: 1, snapshot: snapshotOf(next) });
    expect(written()).toEqual([3]);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(next));
  });

  it('loads a snapshot written before the rows (its branches in its text) as it is, and moves it to rows', () => {
    const branches = branchesOf(40);
    db.prepare("UPDATE coord_items SET run_version = 1, run_snapshot = ? WHERE id = 'p'").run(
      JSON.stringify(snapshotOf(branches)),
    );
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(branches));
    write(branches);
    expect(rows()).toBe(40);
    expect(store.loadRun('p')?.snapshot).toEqual(snapshotOf(branches));
  });

  it('rows that do not match the snapshot are an error that says what to do, not a run with branches missing', () => {
    write(branchesOf(40));
    db.exec("DELETE FROM coord_join_branches WHERE item_id = 'p' AND position = 12");
    expect(() => new SqliteCoordinatorStore(db).loadRun('p')).toThrow(
      /work item p: its snapshot stands for 40 join branches and the file holds 39.*restore it from a backup/,
    );
  });

  it('the migration from schema 12 adds the table and keeps every run as it was', () => {
    const path = join(dir, 'old.db');
    const old = openDatabase(path);
    try {
      migrate(old, { ...COORDINATOR_SCHEMA, current: 12, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 12) });
      old
        .prepare(
          `INSERT INTO coord_items (id, task_id, workflow_id, workflow_version, state, input, created_at, updated_at,
             run_version, run_snapshot) VALUES ('p', 't', 'wf', 1, 'running', '[]', 1, 1, 1, ?)`,
        )
        .run(JSON.stringify(snapshotOf(branchesOf(30))));
      const migrated = new SqliteCoordinatorStore(old);
      expect(schemaVersion(old, 'coordinator')).toBe(COORDINATOR_SCHEMA.current);
      expect(migrated.loadRun('p')?.snapshot).toEqual(snapshotOf(branchesOf(30)));
    } finally {
      old.close();
    }
  });
});
