import { type ChildProcess, spawn } from 'node:child_process';
import { statSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type TempDir, tempDir } from './helpers.js';
import { buildRetentionFile } from './retention-fixture.js';

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

function serve(db: string): ChildProcess {
  // On stdio, stdin kept open: the broker runs until it is killed.
  return spawn(process.execPath, [bin, 'serve', '--db', db, '--task-retention', '1d', '--log-level', 'warn'], {
    stdio: ['pipe', 'ignore', 'ignore'],
  });
}

function query<T>(path: string, sql: string): T {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(sql).get() as T;
  } finally {
    db.close();
  }
}

const countTasks = (path: string) => query<{ n: number }>(path, 'SELECT COUNT(*) AS n FROM a2a_tasks').n;

/** What must hold whenever the broker stops, however: no task half-removed, every log gap-free above its cut. */
function expectConsistent(path: string): void {
  const db = new Database(path, { readonly: true });
  try {
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    const orphans = db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM a2a_messages WHERE task NOT IN (SELECT task FROM a2a_tasks))
              + (SELECT COUNT(*) FROM a2a_events WHERE task NOT IN (SELECT task FROM a2a_tasks)) AS n`,
      )
      .get() as { n: number };
    expect(orphans.n).toBe(0);
    const partial = db
      .prepare(
        `SELECT COUNT(*) AS n FROM a2a_tasks t
         WHERE history_count != (SELECT COUNT(*) FROM a2a_messages m WHERE m.task = t.task)`,
      )
      .get() as { n: number };
    expect(partial.n).toBe(0);
    const logs = db
      .prepare(
        `SELECT e.party_context_id AS c, e.party_name AS p, MIN(seq) AS lo, MAX(seq) AS hi, COUNT(*) AS n,
                COALESCE(f.floor, 0) AS floor
         FROM a2a_events e LEFT JOIN a2a_event_floors f
           ON f.party_context_id = e.party_context_id AND f.party_name = e.party_name
         GROUP BY e.party_context_id, e.party_name`,
      )
      .all() as { lo: number; hi: number; n: number; floor: number }[];
    for (const log of logs) {
      // Gap-free from just above its cut to its end.
      expect(log.lo).toBe(log.floor + 1);
      expect(log.n).toBe(log.hi - log.floor);
    }
  } finally {
    db.close();
  }
}

describe('retention across a broker killed in the middle of a prune', () => {
  let tmp: TempDir | undefined;
  let child: ChildProcess | undefined;
  afterEach(async () => {
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((resolve) => child?.once('exit', resolve));
    }
    child = undefined;
    tmp?.cleanup();
    tmp = undefined;
  });

  it('kill -9 of switchboard serve mid-prune leaves whole tasks; the next start finishes the prune', async () => {
    tmp = tempDir();
    const db = tmp.file('sb.db');
    await buildRetentionFile(db, 5000);
    expect(countTasks(db)).toBe(5001);
    const sizeBefore = statSync(db).size;

    child = serve(db);
    const first = child;
    // Killed as soon as a first batch is seen committed.
    let seen = 5001;
    for (let i = 0; i < 4000 && seen === 5001; i++) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      try {
        seen = countTasks(db);
      } catch {
        // The broker is turning the file to incremental auto-vacuum (VACUUM): read again.
      }
    }
    first.kill('SIGKILL');
    await new Promise((resolve) => first.once('exit', resolve));
    const afterKill = countTasks(db);
    // Killed in the middle: some batches committed, not all.
    expect(afterKill).toBeLessThan(5001);
    expect(afterKill).toBeGreaterThan(1);
    expectConsistent(db);

    child = serve(db);
    const freePages = () => query<{ n: number }>(db, 'SELECT freelist_count AS n FROM pragma_freelist_count').n;
    // Done: the ended tasks removed and the free pages given back.
    for (let i = 0; i < 6000 && (countTasks(db) > 1 || freePages() > 0); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const second = child;
    second.stdin?.end();
    await new Promise((resolve) => second.once('exit', resolve));
    expect(countTasks(db)).toBe(1);
    expect(query<{ state: string }>(db, 'SELECT state FROM a2a_tasks').state).toBe('working');
    expect(query<{ n: number }>(db, 'SELECT COUNT(*) AS n FROM a2a_messages').n).toBe(1);
    expectConsistent(db);
    expect(statSync(db).size).toBeLessThan(sizeBefore / 4);
  }, 180_000);
});
