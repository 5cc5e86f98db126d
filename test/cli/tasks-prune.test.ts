import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';
import { buildRetentionFile } from './retention-fixture.js';

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

function rows(path: string, table: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

interface Stats {
  source: string;
  autoVacuum: string;
  fileBytes: number;
  tables: { table: string; rows: number; tableBytes: number; indexBytes: number }[];
}

describe('switchboard tasks prune and tasks stats', () => {
  let tmp: TempDir;
  let db: string;
  beforeEach(async () => {
    tmp = tempDir();
    db = tmp.file('sb.db');
    await buildRetentionFile(db, 300);
  }, 60_000);
  afterEach(() => tmp.cleanup());

  it('stats shows rows and bytes per table, read-only', async () => {
    const before = fingerprint(db);
    const { code, json } = await runJson<Stats>(['tasks', 'stats', '--db', db]);
    expect(code).toBe(0);
    expect(json.source).toBe('dbstat');
    expect(json.autoVacuum).toBe('incremental');
    const tasks = json.tables.find((t) => t.table === 'a2a_tasks');
    expect(tasks).toMatchObject({ rows: 301 });
    expect(tasks?.tableBytes).toBeGreaterThan(301 * 100);
    expect(json.tables.find((t) => t.table === 'a2a_messages')?.rows).toBe(601);
    expect(json.tables.find((t) => t.table === 'a2a_events')?.indexBytes).toBeGreaterThan(0);
    const text = await runCli(['tasks', 'stats', '--db', db]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/a2a_messages\s+601\s/);
    expect(text.stdout).toContain('bytes of the file per task');
    expect(fingerprint(db)).toBe(before);
  });

  it('refuses bad durations and dates with a clear message, changing nothing', async () => {
    const before = fingerprint(db);
    for (const bad of ['5x', '-1d', '0s', '1.5d', '2026-13-01', 'yesterday', '2026-01-31T12:00:00']) {
      const r = await runCli(['tasks', 'prune', `--ended-before=${bad}`, '--db', db]);
      expect(r.code, bad).toBe(2);
      expect(r.stderr, bad).toContain(`--ended-before takes a duration`);
      expect(r.stderr, bad).toContain(`not '${bad}'`);
    }
    const missing = await runCli(['tasks', 'prune', '--db', db]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--ended-before DURATION|DATE is required');
    const noFile = await runCli(['tasks', 'prune', '--ended-before', '1d', '--db', tmp.file('none.db')]);
    expect(noFile.code).toBe(2);
    expect(existsSync(tmp.file('none.db'))).toBe(false);
    expect(fingerprint(db)).toBe(before);
    expect(rows(db, 'a2a_tasks')).toBe(301);
  });

  it('--dry-run counts and removes nothing; then a prune removes the ended tasks and gives the space back', async () => {
    const dry = await runJson<{ via: string; dryRun: boolean; removed: Record<string, number> }>([
      'tasks',
      'prune',
      '--ended-before',
      '1d',
      '--db',
      db,
      '--dry-run',
    ]);
    expect(dry.code).toBe(0);
    expect(dry.json).toMatchObject({ via: 'file', dryRun: true, removed: { tasks: 300, messages: 600, events: 900 } });
    expect(rows(db, 'a2a_tasks')).toBe(301);
    const text = await runCli(['tasks', 'prune', '--ended-before', '1d', '--db', db, '--dry-run']);
    expect(text.stdout).toContain('Would remove 300 tasks that ended before');
    const sizeBefore = statSync(db).size;

    const pruned = await runJson<{ via: string; removed: Record<string, number>; freedPages: number }>([
      'tasks',
      'prune',
      '--ended-before',
      '1d',
      '--db',
      db,
    ]);
    expect(pruned.code).toBe(0);
    expect(pruned.json.removed).toEqual({ tasks: 300, messages: 600, artifacts: 0, pushConfigs: 0, events: 900 });
    expect(pruned.json.freedPages).toBeGreaterThan(0);
    expect(rows(db, 'a2a_tasks')).toBe(1);
    expect(rows(db, 'a2a_messages')).toBe(1);
    expect(statSync(db).size).toBeLessThan(sizeBefore);
    const again = await runCli(['tasks', 'prune', '--ended-before', '2026-01-01', '--db', db]);
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('Removed 0 tasks that ended before 2026-01-01T00:00:00.000Z');
  }, 60_000);

  it('prunes through the broker that owns the file, on its socket', async () => {
    const socket = tmp.file('sb.sock');
    const child = spawn(process.execPath, [bin, 'serve', '--db', db, '--listen', `unix:${socket}`], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    try {
      for (let i = 0; i < 200 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 50));
      const { code, json } = await runJson<{ via: string; removed: { tasks: number } }>([
        'tasks',
        'prune',
        '--ended-before',
        '36h',
        '--db',
        db,
      ]);
      expect(code).toBe(0);
      expect(json).toMatchObject({ via: 'socket', removed: { tasks: 300 } });
      expect(rows(db, 'a2a_tasks')).toBe(1);
    } finally {
      child.kill('SIGTERM');
      await new Promise((resolve) => child.once('exit', resolve));
    }
  }, 60_000);
});
