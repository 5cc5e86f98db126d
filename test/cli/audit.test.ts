import { existsSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SqliteQueue } from '../../src/bus/sqlite/queue.js';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { type CoordinatorDb, buildCoordinatorDb } from './coordinator-db.js';
import { type TempDir, fingerprint, runCli, runJson, tempDir } from './helpers.js';

/** An audit of `n` rows written through the real AuditLog; returns its head. */
function writeAudit(path: string, n: number): { seq: number; hash: string } {
  const db = openDatabase(path);
  const audit = new AuditLog(db);
  for (let i = 1; i <= n; i++) {
    audit.append({
      kind: i === 1 ? 'item-created' : 'dispatch',
      itemId: 'item-1',
      ...(i === 1 ? {} : { hop: i - 1 }),
      actor: 'coordinator',
      data: { i },
    });
  }
  const head = audit.head();
  db.close();
  return head;
}

function tamper(path: string, sql: string): void {
  const db = openDatabase(path);
  db.exec(sql);
  db.close();
}

describe('switchboard audit verify', () => {
  let tmp: TempDir;
  let coord: CoordinatorDb;
  beforeAll(async () => {
    tmp = tempDir();
    coord = await buildCoordinatorDb(tmp.dir);
  }, 30_000);
  afterAll(() => tmp.cleanup());

  it("exits 0 on a Coordinator's intact chain, printing the entries and the head, and changes nothing", async () => {
    const before = fingerprint(coord.path);
    const r = await runCli(['audit', 'verify', '--db', coord.path]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Audit chain intact: ${coord.auditEntries} entries`);
    expect(r.stdout).toMatch(new RegExp(`Head: ${coord.auditEntries}:[0-9a-f]{64}`));
    const j = await runJson<{ ok: boolean; entries: number; head: { seq: number; hash: string } }>([
      'audit',
      'verify',
      '--db',
      coord.path,
    ]);
    expect(j.code).toBe(0);
    expect(j.json).toMatchObject({ ok: true, entries: coord.auditEntries, head: { seq: coord.auditEntries } });
    expect(coord.auditEntries).toBeGreaterThan(20);
    expect(fingerprint(coord.path)).toBe(before);
  });

  it('exits 1 naming an edited row and why', async () => {
    const path = tmp.file('edited.db');
    writeAudit(path, 8);
    tamper(path, "UPDATE audit_log SET actor = 'mallory' WHERE seq = 3");
    const r = await runCli(['audit', 'verify', '--db', path]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('BROKEN at row 3 (hash-mismatch)');
    expect(r.stdout).toContain('row 3: dispatch of item item-1, hop 2 by mallory');
    const j = await runJson(['audit', 'verify', '--db', path]);
    expect(j.code).toBe(1);
    expect(j.json).toMatchObject({ ok: false, seq: 3, reason: 'hash-mismatch', row: { seq: 3, actor: 'mallory' } });
  });

  it('exits 1 on a deleted row (seq-gap) and on rows cut from the end (truncated)', async () => {
    const gap = tmp.file('gap.db');
    writeAudit(gap, 8);
    tamper(gap, 'DELETE FROM audit_log WHERE seq = 5');
    expect(await runJson(['audit', 'verify', '--db', gap])).toMatchObject({
      code: 1,
      json: { ok: false, seq: 5, reason: 'seq-gap' },
    });
    const cut = tmp.file('cut.db');
    writeAudit(cut, 8);
    tamper(cut, 'DELETE FROM audit_log WHERE seq > 6');
    const r = await runCli(['audit', 'verify', '--db', cut]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('BROKEN at row 7 (truncated)');
  });

  it('with --expect-head, catches rows cut together with the stored head', async () => {
    const path = tmp.file('cut-head.db');
    const head = writeAudit(path, 8);
    const db = openDatabase(path);
    const kept = db.prepare('SELECT hash FROM audit_log WHERE seq = 6').get() as { hash: string };
    db.exec('DELETE FROM audit_log WHERE seq > 6');
    db.prepare('UPDATE audit_head SET seq = 6, hash = ? WHERE id = 1').run(kept.hash);
    db.close();
    // The stored head was rewritten to match: only the head kept elsewhere shows the cut.
    expect((await runCli(['audit', 'verify', '--db', path])).code).toBe(0);
    const r = await runCli(['audit', 'verify', '--db', path, '--expect-head', `${head.seq}:${head.hash}`]);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('BROKEN at row 7 (truncated)');
    expect(r.stdout).toContain('expected head');
  });

  it('verifies one snapshot while another process keeps appending (no false break at the head)', async () => {
    const path = tmp.file('live.db');
    const db = openDatabase(path);
    const audit = new AuditLog(db);
    const row = (i: number) => ({
      kind: 'cost' as const,
      itemId: `item-${i % 7}`,
      hop: i,
      actor: 'coordinator',
      data: { i },
    });
    audit.appendMany(Array.from({ length: 20_000 }, (_, i) => row(i)));
    let appending = true;
    let appended = 0;
    const appender = (async () => {
      while (appending) {
        audit.appendMany(Array.from({ length: 5 }, (_, i) => row(appended + i)));
        appended += 5;
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    try {
      for (let run = 0; run < 3; run++) {
        const r = await runJson<{ ok: boolean; entries: number }>(['audit', 'verify', '--db', path]);
        expect(r.json, JSON.stringify(r.json)).toMatchObject({ ok: true });
        expect(r.code).toBe(0);
        expect(r.json.entries).toBeGreaterThanOrEqual(20_000);
      }
    } finally {
      appending = false;
      await appender;
      db.close();
    }
    expect(appended).toBeGreaterThan(0);
  });

  it('exits 2 for bad usage, without creating or touching any file', async () => {
    const missing = tmp.file('missing.db');
    const cases: [string[], string][] = [
      [['audit', 'verify'], '--db PATH is required'],
      [['audit', '--db', coord.path], "missing subcommand: 'verify'"],
      [['audit', 'check', '--db', coord.path], "unknown subcommand 'check'"],
      [['audit', 'verify', '--db', missing], 'the file does not exist'],
      [['audit', 'verify', '--db', coord.path, '--expect-head', 'abc'], '--expect-head must be SEQ:HASH'],
      [['audit', 'verify', '--db', coord.path, '--bogus'], "Unknown option '--bogus'"],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toContain(message);
      expect(r.stderr).toContain('Usage: switchboard audit verify');
    }
    expect(existsSync(missing)).toBe(false);

    const notDb = tmp.file('notes.txt');
    writeFileSync(notDb, 'not a database, just text\n'.repeat(100));
    const r = await runCli(['audit', 'verify', '--db', notDb]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('cannot read');

    // An audit written by a newer switchboard: refused with the reason, not called broken.
    const newer = tmp.file('newer.db');
    writeAudit(newer, 2);
    tamper(newer, "UPDATE schema_version SET version = 99 WHERE component = 'audit'");
    const refused = await runCli(['audit', 'verify', '--db', newer]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('newer than this switchboard supports');

    // A database with a work bus but no audit: named, and no audit table is created.
    const busOnly = tmp.file('bus-only.db');
    await new SqliteQueue({ database: busOnly }).close();
    const before = fingerprint(busOnly);
    const noAudit = await runCli(['audit', 'verify', '--db', busOnly]);
    expect(noAudit.code).toBe(2);
    expect(noAudit.stderr).toContain("holds no audit (no 'audit' schema)");
    expect(fingerprint(busOnly)).toBe(before);
  });
});
