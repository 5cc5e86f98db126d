import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../../src/transport/client.js';
import { backgroundLogPath, canonicalDatabasePath, defaultSocketPath } from '../../src/transport/host-paths.js';
import { buildRetentionFile } from '../cli/retention-fixture.js';
import { hostDir } from './helpers.js';

const saved = process.env.XDG_RUNTIME_DIR;
let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
  if (saved === undefined) delete process.env.XDG_RUNTIME_DIR;
  else process.env.XDG_RUNTIME_DIR = saved;
});

function countTasks(path: string): number {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('connect({ db, taskRetentionMs })', () => {
  it('starts the background broker with --task-retention: the ended tasks older than it are removed', async () => {
    const h = hostDir();
    const run = join(h.dir, 'run');
    mkdirSync(run, { mode: 0o700 });
    process.env.XDG_RUNTIME_DIR = run;
    await buildRetentionFile(h.db, 20);
    expect(countTasks(h.db)).toBe(21);
    const db = canonicalDatabasePath(h.db);
    const socket = defaultSocketPath(db);
    const client = await connect({ db: h.db, idleSeconds: 1, taskRetentionMs: 86_400_000 });
    cleanups.push(async () => {
      // The background broker stops a second after the last connection closed.
      for (let i = 0; i < 500 && existsSync(socket); i++) await new Promise((resolve) => setTimeout(resolve, 20));
      h.cleanup();
    });
    cleanups.push(() => client.close());
    for (let i = 0; i < 500 && countTasks(h.db) > 1; i++) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(countTasks(h.db)).toBe(1);
    expect(readFileSync(backgroundLogPath(db), 'utf8')).toContain('"taskRetention":"1d"');
  }, 60_000);
});
