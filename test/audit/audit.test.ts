import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fc, test } from '@fast-check/vitest';
import canonicalize from 'canonicalize';
import { afterAll, describe, expect, it } from 'vitest';
import {
  AUDIT_MIGRATIONS,
  AUDIT_DOMAIN_TAG,
  AUDIT_GENESIS_HASH,
  AuditError,
  AuditLog,
  auditRowHash,
  canonicalAuditRow,
} from '../../src/persistence/audit/sqlite-chain.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { SchemaVersionError, schemaVersion } from '../../src/persistence/kernel/migrations.js';
import type { AuditEntryInput } from '../../src/protocol/audit.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

function freshDb(): { db: SqliteDatabase; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-audit-'));
  dirs.push(dir);
  const path = join(dir, 'audit.db');
  return { db: openDatabase(path), path };
}

/** A clock that ticks one millisecond per reading, from a fixed start. */
function tickingClock(start = Date.UTC(2026, 0, 1)) {
  let t = start;
  return { now: () => t++ };
}

function entry(i: number, itemId = 'item-1'): AuditEntryInput {
  const kinds = ['governance', 'dispatch', 'result', 'cost'] as const;
  return {
    kind: kinds[i % kinds.length]!,
    itemId,
    hop: Math.floor(i / kinds.length) + 1,
    actor: 'coordinator',
    data: { i, role: 'coding', verdicts: [{ policy: 'budget', decision: 'allow' }] },
  };
}

function filledLog(n: number) {
  const { db, path } = freshDb();
  const audit = new AuditLog(db, { clock: tickingClock() });
  for (let i = 0; i < n; i++) audit.append(entry(i));
  return { db, path, audit };
}

describe('appending', () => {
  it('numbers rows from 1, chains each to the one before and moves the head', () => {
    const { db } = freshDb();
    const audit = new AuditLog(db, { clock: tickingClock() });
    expect(audit.head()).toEqual({ seq: 0, hash: AUDIT_GENESIS_HASH });
    const first = audit.append({ kind: 'item-created', itemId: 'w1', actor: 'quad', data: { workflow: 'dev-sdlc@1' } });
    const second = audit.append({
      kind: 'dispatch',
      itemId: 'w1',
      hop: 1,
      actor: 'coordinator',
      data: { role: 'architect' },
    });
    expect(first).toMatchObject({ seq: 1, prevHash: AUDIT_GENESIS_HASH, at: '2026-01-01T00:00:00.000Z' });
    expect(second).toMatchObject({ seq: 2, prevHash: first.hash });
    expect(audit.head()).toEqual({ seq: 2, hash: second.hash });
    const rows = audit.list();
    expect(rows.map((r) => [r.seq, r.kind, r.hop])).toEqual([
      [1, 'item-created', null],
      [2, 'dispatch', 1],
    ]);
    expect(audit.verifyChain()).toEqual({ ok: true, entries: 2, head: { seq: 2, hash: second.hash } });
  });

  it('hashes the domain tag, the previous hash and the RFC 8785 form of the row, as documented', () => {
    const { db } = freshDb();
    const audit = new AuditLog(db);
    const at = '2026-02-03T04:05:06.789Z';
    const appended = audit.append({
      kind: 'cost',
      itemId: 'w1',
      hop: 3,
      actor: 'coordinator',
      at,
      data: { z: 1, a: [true, null, 'é'], m: { y: 1e21, b: 0.1 } },
    });
    // Re-derived here from the rule, independently of auditRowHash.
    const canonical =
      '{"actor":"coordinator","at":"2026-02-03T04:05:06.789Z","data":{"a":[true,null,"é"],"m":{"b":0.1,"y":1e+21},"z":1},"hop":3,"itemId":"w1","kind":"cost","seq":1}';
    expect(
      canonicalize({
        seq: 1,
        at,
        kind: 'cost',
        itemId: 'w1',
        hop: 3,
        actor: 'coordinator',
        data: audit.list()[0]!.data,
      }),
    ).toBe(canonical);
    const expected = createHash('sha256')
      .update(
        Buffer.concat([Buffer.from(AUDIT_DOMAIN_TAG), Buffer.from([0]), Buffer.alloc(32), Buffer.from(canonical)]),
      )
      .digest('hex');
    expect(appended.hash).toBe(expected);
    expect(AUDIT_DOMAIN_TAG).toBe('switchboard.audit.v1');
  });

  test.prop([
    fc.record({
      seq: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      at: fc.string(),
      kind: fc.string(),
      itemId: fc.string({ unit: 'grapheme' }),
      hop: fc.option(fc.nat(), { nil: null }),
      actor: fc.string({ unit: 'binary' }),
    }),
    fc.jsonValue(),
  ])('the fast canonical row is exactly what canonicalize writes', (row, value) => {
    const data = { value } as never;
    const expected = canonicalize({ ...row, ...(row.hop === null ? { hop: undefined } : {}), data });
    expect(canonicalAuditRow(row, canonicalize(data)!)).toBe(expected);
  });

  it('refuses bad entries with a typed error and appends nothing', () => {
    const { audit } = filledLog(3);
    const head = audit.head();
    const bad: unknown[] = [
      { kind: 'gossip', itemId: 'w', actor: 'a', data: {} },
      { kind: 'dispatch', itemId: '', actor: 'a', data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { cost: Number.NaN } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { when: new Date() } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: [1, 2] },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { s: '\ud800' } },
      { kind: 'dispatch', itemId: 'w', actor: '\udc00', data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', hop: -1, data: {} },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: { body: 'x'.repeat(70_000) } },
      { kind: 'dispatch', itemId: 'w', actor: 'a', data: {}, extra: 1 },
    ];
    for (const e of bad) {
      expect(() => audit.append(e as AuditEntryInput)).toThrow(AuditError);
    }
    try {
      audit.append(bad[0] as AuditEntryInput);
    } catch (error) {
      expect(error).toMatchObject({ code: 'AUDIT_INVALID_ENTRY', path: ['kind'] });
    }
    // appendMany is all or none.
    expect(() => audit.appendMany([entry(10), bad[1] as AuditEntryInput])).toThrow(AuditError);
    expect(audit.head()).toEqual(head);
    expect(audit.verifyChain()).toMatchObject({ ok: true, entries: 3 });
  });

  it("runs inside the caller's transaction: rolled back with it, committed with it", () => {
    const { db, audit } = filledLog(2);
    db.exec('CREATE TABLE hops (id INTEGER PRIMARY KEY, note TEXT NOT NULL)');
    const work = db.transaction((fail: boolean) => {
      db.prepare('INSERT INTO hops (note) VALUES (?)').run('dispatched');
      const appended = audit.append(entry(2));
      if (fail) throw new Error('the dispatch failed after the audit row');
      return appended;
    });
    expect(() => work(true)).toThrow('the dispatch failed');
    expect(audit.head().seq).toBe(2);
    expect(db.prepare('SELECT count(*) AS n FROM hops').get()).toEqual({ n: 0 });
    const appended = work(false);
    expect(appended.seq).toBe(3);
    expect(audit.head()).toEqual({ seq: 3, hash: appended.hash });
    expect(audit.verifyChain()).toMatchObject({ ok: true, entries: 3 });
  });

  it('continues the chain across reopening the file, from two AuditLog instances', () => {
    const { db, path, audit } = filledLog(4);
    db.close();
    const db2 = openDatabase(path);
    const again = new AuditLog(db2);
    const other = new AuditLog(db2);
    again.append(entry(4));
    other.append(entry(5));
    expect(again.verifyChain()).toMatchObject({ ok: true, entries: 6 });
    expect(schemaVersion(db2, 'audit')).toBe(AUDIT_MIGRATIONS.current);
    expect(audit).toBeDefined();
    db2.prepare("UPDATE schema_version SET version = ? WHERE component = 'audit'").run(AUDIT_MIGRATIONS.current + 1);
    expect(() => new AuditLog(db2)).toThrow(SchemaVersionError);
  });

  it('lists the rows of one work item, after a seq, up to a limit', () => {
    const { db } = freshDb();
    const audit = new AuditLog(db);
    audit.appendMany([entry(0, 'a'), entry(1, 'b'), entry(2, 'a'), entry(3, 'a')]);
    expect(audit.list({ itemId: 'a' }).map((r) => r.seq)).toEqual([1, 3, 4]);
    expect(audit.list({ itemId: 'a', afterSeq: 1, limit: 1 }).map((r) => r.seq)).toEqual([3]);
  });
});

describe('verifyChain catches tampering', () => {
  it('an edited row: hash mismatch at that row', () => {
    const { db, audit } = filledLog(6);
    db.prepare("UPDATE audit_log SET data = json_set(data, '$.role', 'devops') WHERE seq = 3").run();
    expect(audit.verifyChain()).toEqual({
      ok: false,
      seq: 3,
      reason: 'hash-mismatch',
      detail: 'row 3 was changed: its content does not hash to its stored hash',
    });
  });

  it('an edited row whose hash was recomputed: the next row no longer follows it', () => {
    const { db, audit } = filledLog(6);
    const row = audit.list()[2]!;
    const forged = { ...row, actor: 'mallory' };
    db.prepare('UPDATE audit_log SET actor = ?, hash = ? WHERE seq = 3').run(
      'mallory',
      auditRowHash(row.prevHash, forged),
    );
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 4, reason: 'prev-hash-mismatch' });
  });

  it('the last row edited with its hash recomputed: the head no longer matches', () => {
    const { db, audit } = filledLog(4);
    const row = audit.list()[3]!;
    db.prepare('UPDATE audit_log SET actor = ?, hash = ? WHERE seq = 4').run(
      'mallory',
      auditRowHash(row.prevHash, { ...row, actor: 'mallory' }),
    );
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 4, reason: 'head-mismatch' });
  });

  it('a deleted row: a gap at its seq', () => {
    const { db, audit } = filledLog(6);
    db.prepare('DELETE FROM audit_log WHERE seq = 2').run();
    expect(audit.verifyChain()).toEqual({
      ok: false,
      seq: 2,
      reason: 'seq-gap',
      detail: 'row 2 is missing (the next row is 3)',
    });
  });

  it('a deleted first row', () => {
    const { db, audit } = filledLog(3);
    db.prepare('DELETE FROM audit_log WHERE seq = 1').run();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 1, reason: 'seq-gap' });
  });

  it('a deleted row with later rows renumbered: they no longer hash', () => {
    const { db, audit } = filledLog(5);
    db.prepare('DELETE FROM audit_log WHERE seq = 2').run();
    db.prepare('UPDATE audit_log SET seq = seq - 1 WHERE seq > 2').run();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 2, reason: 'prev-hash-mismatch' });
  });

  it('two rows swapped: the first of them no longer follows its predecessor', () => {
    const { db, audit } = filledLog(6);
    const swap = db.transaction(() => {
      db.prepare('UPDATE audit_log SET seq = -1 WHERE seq = 3').run();
      db.prepare('UPDATE audit_log SET seq = 3 WHERE seq = 4').run();
      db.prepare('UPDATE audit_log SET seq = 4 WHERE seq = -1').run();
    });
    swap();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 3, reason: 'prev-hash-mismatch' });
  });

  it('rows cut from the end: truncated, naming the first missing row', () => {
    const { db, audit } = filledLog(6);
    db.prepare('DELETE FROM audit_log WHERE seq > 4').run();
    expect(audit.verifyChain()).toEqual({
      ok: false,
      seq: 5,
      reason: 'truncated',
      detail: 'the stored head is at row 6 but the last row is 4: rows were cut from the end',
    });
  });

  it('rows cut from the end with the stored head rewound: caught by the head kept elsewhere', () => {
    const { db, audit } = filledLog(6);
    const kept = audit.head();
    const four = audit.list()[3]!;
    db.prepare('DELETE FROM audit_log WHERE seq > 4').run();
    db.prepare('UPDATE audit_head SET seq = 4, hash = ? WHERE id = 1').run(four.hash);
    expect(audit.verifyChain()).toMatchObject({ ok: true, entries: 4 });
    expect(audit.verifyChain({ expectedHead: kept })).toMatchObject({ ok: false, seq: 5, reason: 'truncated' });
  });

  it('an edited or deleted head', () => {
    const { db, audit } = filledLog(3);
    db.prepare("UPDATE audit_head SET hash = '" + 'f'.repeat(64) + "' WHERE id = 1").run();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 3, reason: 'head-mismatch' });
    db.prepare('UPDATE audit_head SET seq = 2 WHERE id = 1').run();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 3, reason: 'head-mismatch' });
    db.prepare('DELETE FROM audit_head').run();
    expect(audit.verifyChain()).toMatchObject({
      ok: false,
      reason: 'head-mismatch',
      detail: 'the stored head is missing',
    });
    expect(() => audit.append(entry(9))).toThrow(expect.objectContaining({ code: 'AUDIT_HEAD_MISSING' }));
  });

  it('a row that cannot be read back', () => {
    const { db, audit } = filledLog(3);
    db.prepare("UPDATE audit_log SET data = 'not json' WHERE seq = 2").run();
    expect(audit.verifyChain()).toMatchObject({ ok: false, seq: 2, reason: 'malformed-row' });
  });
});

type Tamper =
  | { t: 'edit-data'; at: number }
  | { t: 'edit-actor'; at: number }
  | { t: 'edit-at'; at: number }
  | { t: 'edit-hash'; at: number }
  | { t: 'delete'; at: number }
  | { t: 'swap'; at: number }
  | { t: 'truncate'; keep: number }
  | { t: 'edit-head' }
  | { t: 'none' };

describe('random chains with a random tamper', () => {
  const entryArb: fc.Arbitrary<AuditEntryInput> = fc.record({
    kind: fc.constantFrom('governance', 'dispatch', 'result', 'suspend', 'resume', 'approval', 'cost', 'failure'),
    itemId: fc.constantFrom('w1', 'w2', 'w3'),
    hop: fc.option(fc.integer({ min: 1, max: 20 }), { nil: undefined }),
    actor: fc.constantFrom('coordinator', 'release-manager', 'budget'),
    data: fc.dictionary(
      fc.string({ maxLength: 6 }),
      fc.oneof(
        fc.integer(),
        fc.double({ noNaN: true, noDefaultInfinity: true }),
        fc.string(),
        fc.boolean(),
        fc.constant(null),
      ),
      { maxKeys: 4 },
    ),
  }) as fc.Arbitrary<AuditEntryInput>;

  const tamperArb: fc.Arbitrary<Tamper> = fc.oneof(
    fc.record({ t: fc.constant('edit-data' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('edit-actor' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('edit-at' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('edit-hash' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('delete' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('swap' as const), at: fc.nat() }),
    fc.record({ t: fc.constant('truncate' as const), keep: fc.nat() }),
    fc.constant({ t: 'edit-head' as const }),
    fc.constant({ t: 'none' as const }),
  );

  // One database file for all runs: each run appends to its own fresh tables.
  const { db } = freshDb();

  test.prop([fc.array(entryArb, { minLength: 1, maxLength: 25 }), tamperArb], { numRuns: 150 })(
    'verifyChain is ok exactly when nothing was tampered with, and names the first broken row',
    (entries, tamper) => {
      db.exec(
        'DROP TABLE IF EXISTS audit_log; DROP TABLE IF EXISTS audit_head; DROP TABLE IF EXISTS audit_checkpoints; DROP TABLE IF EXISTS schema_version',
      );
      const audit = new AuditLog(db, { clock: tickingClock() });
      const appended = audit.appendMany(entries);
      const kept = audit.head();
      expect(kept).toEqual({ seq: entries.length, hash: appended.at(-1)!.hash });
      const n = entries.length;
      let firstBroken: number | null = null;
      switch (tamper.t) {
        case 'edit-data':
        case 'edit-actor':
        case 'edit-at':
        case 'edit-hash': {
          const seq = (tamper.at % n) + 1;
          const column = { 'edit-data': 'data', 'edit-actor': 'actor', 'edit-at': 'at', 'edit-hash': 'hash' }[tamper.t];
          const value =
            tamper.t === 'edit-data'
              ? JSON.stringify({ tampered: true })
              : tamper.t === 'edit-hash'
                ? 'e'.repeat(64)
                : 'tampered';
          db.prepare(`UPDATE audit_log SET ${column} = ? WHERE seq = ?`).run(value, seq);
          firstBroken = seq;
          break;
        }
        case 'delete': {
          const seq = (tamper.at % n) + 1;
          db.prepare('DELETE FROM audit_log WHERE seq = ?').run(seq);
          // Deleting the last row is a truncation: the head names it.
          firstBroken = seq;
          break;
        }
        case 'swap': {
          if (n < 2) break;
          const seq = (tamper.at % (n - 1)) + 1;
          db.prepare('UPDATE audit_log SET seq = -1 WHERE seq = ?').run(seq);
          db.prepare('UPDATE audit_log SET seq = ? WHERE seq = ?').run(seq, seq + 1);
          db.prepare('UPDATE audit_log SET seq = ? WHERE seq = -1').run(seq + 1);
          // Two identical rows swapped change nothing that is hashed except seq, which is hashed.
          firstBroken = seq;
          break;
        }
        case 'truncate': {
          const keep = tamper.keep % n;
          db.prepare('DELETE FROM audit_log WHERE seq > ?').run(keep);
          firstBroken = keep + 1;
          break;
        }
        case 'edit-head':
          db.prepare('UPDATE audit_head SET hash = ? WHERE id = 1').run('d'.repeat(64));
          firstBroken = n;
          break;
        case 'none':
          break;
      }
      const result = audit.verifyChain({ expectedHead: kept });
      if (firstBroken === null) {
        expect(result).toEqual({ ok: true, entries: n, head: kept });
      } else {
        expect(result.ok).toBe(false);
        if (!result.ok) expect(result.seq).toBe(firstBroken);
      }
    },
  );
});
