import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, migrate, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import type { MigrationSet } from '../../src/persistence/kernel/migrations.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sb-migrate-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

function set(current: number, failAt?: number): MigrationSet {
  const migrations = [];
  for (let v = 1; v <= current; v++) {
    migrations.push({
      version: v,
      name: `v${v}`,
      up: (db: ReturnType<typeof openDatabase>) => {
        if (v === failAt) throw new Error(`migration ${v} failed`);
        db.exec(`CREATE TABLE t${v} (x INTEGER)`);
      },
    });
  }
  return { component: 'demo', current, migrations };
}

function tables(db: ReturnType<typeof openDatabase>): string[] {
  return (
    db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't%' ORDER BY name").all() as {
      name: string;
    }[]
  ).map((r) => r.name);
}

describe('migrations', () => {
  it('creates a fresh schema at the current version, in WAL mode', () => {
    const db = openDatabase(join(dir, 'a.db'));
    expect(migrate(db, set(3))).toEqual({ from: 0, to: 3 });
    expect(schemaVersion(db, 'demo')).toBe(3);
    expect(tables(db)).toEqual(['t1', 't2', 't3']);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(migrate(db, set(3))).toEqual({ from: 3, to: 3 });
    db.close();
  });

  it('migrates an older database forward, running only the newer steps', () => {
    const path = join(dir, 'b.db');
    let db = openDatabase(path);
    migrate(db, set(2));
    db.close();
    db = openDatabase(path);
    expect(migrate(db, set(4))).toEqual({ from: 2, to: 4 });
    expect(tables(db)).toEqual(['t1', 't2', 't3', 't4']);
    db.close();
  });

  it('runs all steps in one transaction: a failing step leaves the database as it was', () => {
    const path = join(dir, 'c.db');
    const db = openDatabase(path);
    migrate(db, set(1));
    expect(() => migrate(db, set(4, 3))).toThrow('migration 3 failed');
    expect(schemaVersion(db, 'demo')).toBe(1);
    expect(tables(db)).toEqual(['t1']);
    db.close();
  });

  it('refuses a database newer than the code, with a typed error', () => {
    const db = openDatabase(join(dir, 'd.db'));
    migrate(db, set(5));
    let error: unknown;
    try {
      migrate(db, set(3));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(SchemaVersionError);
    expect(error).toMatchObject({ code: 'SCHEMA_TOO_NEW', found: 5, supported: 3 });
    db.close();
  });

  it('keeps one version row per component', () => {
    const db = openDatabase(join(dir, 'e.db'));
    migrate(db, set(2));
    migrate(db, {
      component: 'other',
      current: 1,
      migrations: [{ version: 1, name: 'o', up: (d) => d.exec('CREATE TABLE o1 (x)') }],
    });
    expect(schemaVersion(db, 'demo')).toBe(2);
    expect(schemaVersion(db, 'other')).toBe(1);
    db.close();
  });

  it('applies the durability setting', () => {
    const normal = openDatabase(join(dir, 'n.db'));
    const full = openDatabase(join(dir, 'f.db'), { durability: 'full' });
    expect(normal.pragma('synchronous', { simple: true })).toBe(1);
    expect(full.pragma('synchronous', { simple: true })).toBe(2);
    normal.close();
    full.close();
  });
});
