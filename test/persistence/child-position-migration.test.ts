import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { COORDINATOR_PG_SCHEMA, PostgresCoordinatorStore } from '../../src/persistence/coordinator/postgres-store.js';
import { COORDINATOR_SCHEMA, SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import { migratePg } from '../../src/persistence/kernel/postgres-migrations.js';
import { openPgPool } from '../../src/persistence/kernel/postgres.js';
import { positionOf, treeOrder } from '../../src/workflow/item-tree.js';
import { tempDir } from '../coordinator/helpers.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';

const { runPostgres } = await postgresGate();

/**
 * Rows written before children carried their position: a root, a parallel
 * stage's two children made in one commit (the same time: `security` first,
 * as its parent started them), a later hop's child, a map's elements of one
 * time, a child whose attributes already say where it sits, and a row whose
 * attributes are not JSON.
 */
const ROWS: [id: string, attributes: string | null, createdAt: number][] = [
  ['root', null, 1],
  ['root.2.security', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '2:security' }), 5],
  ['root.2.qa', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '2:qa' }), 5],
  ['root.4.fix', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '4:fix' }), 9],
  ['root.1.0', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '1:0' }), 3],
  ['root.1.1', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '1:1' }), 3],
  ['root.1.2', JSON.stringify({ 'switchboard.parent': 'root', 'switchboard.branch': '1:2' }), 4],
  [
    'other.1.x',
    JSON.stringify({ 'switchboard.parent': 'other', 'switchboard.branch': '1:x', 'switchboard.position': 7, k: 'v' }),
    2,
  ],
  ['odd', 'not json', 2],
];

const INSERT = `INSERT INTO coord_items (id, workflow_id, workflow_version, state, input, attributes, created_at, updated_at)
  VALUES ($1, 'wf', 1, 'completed', '[]', $2, $3, $3)`;

/** What the migration must give: each child its place among its hop's siblings, in the order they were made. */
const EXPECTED: Record<string, number | null> = {
  root: null,
  'root.2.security': 0,
  'root.2.qa': 1,
  'root.4.fix': 0,
  'root.1.0': 0,
  'root.1.1': 1,
  'root.1.2': 2,
  'other.1.x': 7,
};

describe('child positions: the migration of rows made before them', () => {
  it('SQLite (schema 11 to 12): each child gets its place from the order it was made in; the rest is kept', () => {
    const dir = tempDir();
    try {
      const path = join(dir, 'old.db');
      const old = openDatabase(path);
      migrate(old, { ...COORDINATOR_SCHEMA, current: 11, migrations: COORDINATOR_SCHEMA.migrations.slice(0, 11) });
      const insert = old.prepare(INSERT.replace('$1, ', '?, ').replace('$2, $3, $3', '?, ?, ?'));
      for (const [id, attributes, at] of ROWS) insert.run(id, attributes, at, at);
      old.close();
      const db = openDatabase(path);
      try {
        const store = new SqliteCoordinatorStore(db);
        expect(schemaVersion(db, 'coordinator')).toBe(COORDINATOR_SCHEMA.current);
        // A row whose attributes are not JSON (no store writes one) does not stop the migration, and is kept.
        expect(db.prepare("SELECT attributes FROM coord_items WHERE id = 'odd'").get()).toEqual({
          attributes: 'not json',
        });
        db.prepare("DELETE FROM coord_items WHERE id = 'odd'").run();
        const items = store.listItems({ limit: 100 });
        expect(Object.fromEntries(items.map((i) => [i.id, positionOf(i)]))).toEqual(EXPECTED);
        expect(store.getItem('other.1.x')?.attributes).toEqual({
          'switchboard.parent': 'other',
          'switchboard.branch': '1:x',
          'switchboard.position': 7,
          k: 'v',
        });
        expect(treeOrder(items.filter((i) => i.id.startsWith('root'))).map((r) => r.item.id)).toEqual([
          'root',
          'root.1.0',
          'root.1.1',
          'root.1.2',
          'root.2.security',
          'root.2.qa',
          'root.4.fix',
        ]);
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.runIf(runPostgres)(
    'PostgreSQL (version 4 to 5): each child gets its place from the order it was made in; the rest is kept',
    async () => {
      const database = await createTestDatabase();
      const pool = await openPgPool(database.url);
      try {
        await migratePg(pool, {
          ...COORDINATOR_PG_SCHEMA,
          current: 4,
          migrations: COORDINATOR_PG_SCHEMA.migrations.slice(0, 4),
        });
        // Rows of one time are told apart by their id, shorter first: `security` and `qa` tie, so qa's
        // shorter id goes first there (SQLite keeps the order they were written in).
        for (const [id, attributes, at] of ROWS.filter(([id]) => id !== 'odd')) {
          await pool.query(INSERT, [id, attributes, at]);
        }
        const store = await PostgresCoordinatorStore.open(pool);
        expect(
          (await pool.query("SELECT version FROM schema_version WHERE component = 'coordinator'")).rows[0].version,
        ).toBe(COORDINATOR_PG_SCHEMA.current);
        const items = await store.readItems({ limit: 100 });
        expect(Object.fromEntries(items.map((i) => [i.id, positionOf(i)]))).toEqual({
          ...EXPECTED,
          'root.2.security': 1,
          'root.2.qa': 0,
        });
        expect((await store.readItem('other.1.x'))?.attributes).toEqual({
          'switchboard.parent': 'other',
          'switchboard.branch': '1:x',
          'switchboard.position': 7,
          k: 'v',
        });
        expect((await store.readItem('root.1.2'))?.attributes).toEqual({
          'switchboard.parent': 'root',
          'switchboard.branch': '1:2',
          'switchboard.position': 2,
        });
      } finally {
        await pool.end();
        await database.drop();
      }
    },
  );
});
