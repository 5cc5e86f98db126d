/**
 * Rollbacks of the audit through the real CLI (`node bin/switchboard.js
 * audit digest|verify`, the build in dist/), on SQLite and on PostgreSQL:
 * each one a writer of the database can do is reported as passing without a
 * digest kept elsewhere (the threat model of docs/audit.md), and caught with
 * `audit verify --digest LINE`.
 */
import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auditRowHash } from '../../src/persistence/audit/chain-hash.js';
import { PostgresAuditLog } from '../../src/persistence/audit/postgres-chain.js';
import { SqliteAuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { type PgPool, inPgTransaction, openPgPool } from '../../src/persistence/kernel/postgres.js';
import type { AuditEntryInput } from '../../src/protocol/audit.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';
import { type TempDir, runCli, runJson, tempDir } from './helpers.js';

const { runPostgres } = await postgresGate();
const GENESIS = '0'.repeat(64);

let tmp: TempDir;
let keyFile: string;
let pubFile: string;
beforeAll(async () => {
  tmp = tempDir('sb-audit-digest-');
  keyFile = tmp.file('audit.key');
  pubFile = `${keyFile}.pub`;
  const r = await runCli(['audit', 'keygen', '--out', keyFile]);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(() => tmp.cleanup());

const entry = (i: number): AuditEntryInput => ({
  kind: 'cost',
  itemId: 'item-1',
  hop: i,
  actor: 'coordinator',
  data: { i },
});

/** A chain of 8 rows in a database of one backend: rows 1–6, a checkpoint, rows 7–8, a checkpoint. */
interface Backend {
  /** `--db` of the CLI. */
  db: string;
  /** Runs SQL statements (no parameters) on the database, as a writer without the key would. */
  exec(sql: string): Promise<void>;
  /** Appends rows of other content through the audit's own code (hashes recomputed, nothing signed). */
  appendForged(hops: number[]): Promise<void>;
  close(): Promise<void>;
}

const CUT_BEFORE_NEWEST_CHECKPOINT = `
  DELETE FROM audit_log WHERE seq > 6;
  DELETE FROM audit_checkpoints WHERE seq > 6;
  UPDATE audit_head SET seq = 6, hash = (SELECT hash FROM audit_log WHERE seq = 6) WHERE id = 1;`;
const REWIND_TO_GENESIS = `
  DELETE FROM audit_log;
  DELETE FROM audit_checkpoints;
  UPDATE audit_head SET seq = 0, hash = '${GENESIS}' WHERE id = 1;`;

async function sqliteChain(name: string): Promise<Backend> {
  const path = tmp.file(name);
  const db = openDatabase(path);
  const audit = new SqliteAuditLog(db);
  const key = createPrivateKey(readFileSync(keyFile, 'utf8'));
  for (let i = 1; i <= 6; i++) audit.append(entry(i));
  audit.checkpoint(key);
  for (let i = 7; i <= 8; i++) audit.append(entry(i));
  audit.checkpoint(key);
  db.close();
  return {
    db: path,
    async exec(sql) {
      const w = openDatabase(path);
      w.exec(sql);
      w.close();
    },
    async appendForged(hops) {
      const w = openDatabase(path);
      const forger = new SqliteAuditLog(w);
      for (const hop of hops) forger.append({ ...entry(hop), data: { forged: hop } });
      w.close();
    },
    async close() {},
  };
}

/** Rows appended as a leader's fenced commit would: the transaction's epoch set. */
async function appendAtEpoch(pool: PgPool, audit: PostgresAuditLog, epoch: number, entries: AuditEntryInput[]) {
  await inPgTransaction(pool, async (tx) => {
    await tx.query("SELECT set_config('switchboard.epoch', $1, true)", [String(epoch)]);
    await audit.appendInTransaction(tx, entries);
  });
}

async function postgresChain(): Promise<Backend & { pool: PgPool }> {
  const database = await createTestDatabase('sb_audit_digest');
  const pool = await openPgPool(database.url);
  const audit = await PostgresAuditLog.open(pool);
  const key = createPrivateKey(readFileSync(keyFile, 'utf8'));
  await appendAtEpoch(pool, audit, 3, [1, 2, 3, 4, 5, 6].map(entry));
  await audit.checkpoint(key);
  await appendAtEpoch(pool, audit, 4, [7, 8].map(entry));
  await audit.checkpoint(key);
  return {
    db: database.url,
    pool,
    async exec(sql) {
      await pool.query(sql);
    },
    async appendForged(hops) {
      await audit.appendMany(hops.map((hop) => ({ ...entry(hop), data: { forged: hop } })));
    },
    async close() {
      await pool.end();
      await database.drop();
    },
  };
}

async function digestOf(db: string): Promise<string> {
  const r = await runCli(['audit', 'digest', '--db', db, '--public-key', pubFile]);
  expect(r.code, r.stderr).toBe(0);
  const line = r.stdout.trim();
  expect(line.split('\n')).toHaveLength(1);
  return line;
}

const strictest = (db: string) => ['audit', 'verify', '--db', db, '--public-key', pubFile, '--require-signed-head'];

function rollbacks(name: string, open: (file: string) => Promise<Backend>): void {
  describe(`audit rollbacks on ${name}`, () => {
    it('audit digest prints the newest signed checkpoint as one line; an intact chain extends it', async () => {
      const b = await open('intact.db');
      try {
        const line = await digestOf(b.db);
        expect(line).toMatch(/^audit-digest-v1,8,[0-9a-f]{64},\S+Z,[0-9a-f]{32},\S+$/);
        const r = await runCli([...strictest(b.db), '--digest', line]);
        expect(r.code, r.stdout + r.stderr).toBe(0);
        // Without the key, the digest's row is still checked.
        expect((await runCli(['audit', 'verify', '--db', b.db, '--digest', line])).code).toBe(0);
      } finally {
        await b.close();
      }
    });

    it('every row and checkpoint deleted, the head set back to genesis: missed without a digest, rolled-back with it', async () => {
      const b = await open('genesis.db');
      try {
        const line = await digestOf(b.db);
        await b.exec(REWIND_TO_GENESIS);
        // Without a digest: the chain is consistent with itself, and --public-key finds no checkpoint to check.
        expect(await runJson(['audit', 'verify', '--db', b.db])).toMatchObject({ code: 0, json: { ok: true } });
        expect(await runJson(['audit', 'verify', '--db', b.db, '--public-key', pubFile])).toMatchObject({
          code: 0,
          json: { ok: true, entries: 0 },
        });
        // --require-signed-head refuses an empty chain no checkpoint signs.
        expect(await runJson(strictest(b.db))).toMatchObject({ code: 1, json: { ok: false, reason: 'unsigned-head' } });
        const caught = await runJson([...strictest(b.db), '--digest', line]);
        expect(caught).toMatchObject({ code: 1, json: { ok: false, seq: 1, reason: 'rolled-back' } });
        expect((await runJson(['audit', 'verify', '--db', b.db, '--digest', line])).json).toMatchObject({
          reason: 'rolled-back',
        });
        expect(String(caught.json.detail)).toContain('to genesis');
      } finally {
        await b.close();
      }
    });

    it('the tail cut back to a signed checkpoint, the checkpoints after it deleted: passes the strictest check, rolled-back with a digest', async () => {
      const b = await open('cut.db');
      try {
        const line = await digestOf(b.db);
        await b.exec(CUT_BEFORE_NEWEST_CHECKPOINT);
        const missed = await runJson(strictest(b.db));
        expect(missed).toMatchObject({ code: 0, json: { ok: true, entries: 6, checkpoints: { signedSeq: 6 } } });
        const caught = await runJson([...strictest(b.db), '--digest', line]);
        expect(caught).toMatchObject({ code: 1, json: { ok: false, seq: 7, reason: 'rolled-back' } });
        // The cut chain's own digest is of row 6: the digest kept elsewhere is what remembers row 8.
        expect(await digestOf(b.db)).toMatch(/^audit-digest-v1,6,/);
      } finally {
        await b.close();
      }
    });

    it('the tail after the newest kept checkpoint rewritten with recomputed hashes: missed by --public-key, digest-mismatch with a digest', async () => {
      const b = await open('rewrite.db');
      try {
        const line = await digestOf(b.db);
        await b.exec(CUT_BEFORE_NEWEST_CHECKPOINT);
        await b.appendForged([7, 8]);
        expect(await runJson(['audit', 'verify', '--db', b.db, '--public-key', pubFile])).toMatchObject({
          code: 0,
          json: { ok: true, entries: 8, checkpoints: { signedSeq: 6, unsignedRows: 2 } },
        });
        const caught = await runJson(['audit', 'verify', '--db', b.db, '--public-key', pubFile, '--digest', line]);
        expect(caught).toMatchObject({ code: 1, json: { ok: false, seq: 8, reason: 'digest-mismatch' } });
      } finally {
        await b.close();
      }
    });

    it('refuses a digest that is not one (exit 2), and one whose signature does not verify (digest-signature)', async () => {
      const b = await open('bad-digest.db');
      try {
        const line = await digestOf(b.db);
        const garbled = await runCli(['audit', 'verify', '--db', b.db, '--digest', 'audit-digest-v1,8,abc']);
        expect(garbled.code).toBe(2);
        expect(garbled.stderr).toContain('not an audit digest');
        // A digest moved to another row keeps its signature: the signature no longer verifies.
        const moved = line.replace(/^audit-digest-v1,8,/, 'audit-digest-v1,6,');
        expect(await runJson([...strictest(b.db), '--digest', moved])).toMatchObject({
          code: 1,
          json: { ok: false, seq: 6, reason: 'digest-signature' },
        });
      } finally {
        await b.close();
      }
    });
  });
}

rollbacks('SQLite', sqliteChain);

describe.runIf(runPostgres)('on PostgreSQL', () => {
  rollbacks('PostgreSQL', () => postgresChain());

  it("a row's epoch is hashed with it: changed alone, hash-mismatch without a digest", async () => {
    const b = await postgresChain();
    try {
      const listed = await runJson(['audit', 'verify', '--db', b.db, '--json']);
      expect(listed).toMatchObject({ code: 0, json: { ok: true, entries: 8 } });
      await b.exec('UPDATE audit_log SET epoch = 9 WHERE seq = 7');
      expect(await runJson(['audit', 'verify', '--db', b.db])).toMatchObject({
        code: 1,
        json: { ok: false, seq: 7, reason: 'hash-mismatch' },
      });
    } finally {
      await b.close();
    }
  });

  it("a row's epoch changed and the tail re-hashed, its checkpoint deleted: missed by --public-key, digest-mismatch with a digest", async () => {
    const b = await postgresChain();
    try {
      const line = await digestOf(b.db);
      // Row 7 re-attributed to epoch 9; rows 7 and 8 re-hashed as a writer without the key can; checkpoint 8 deleted.
      const { rows } = await b.pool.query('SELECT * FROM audit_log WHERE seq >= 7 ORDER BY seq');
      let prev = (await b.pool.query('SELECT hash FROM audit_log WHERE seq = 6')).rows[0].hash as string;
      for (const r of rows) {
        const epoch = Number(r.seq) === 7 ? 9 : Number(r.epoch);
        const hash = auditRowHash(prev, {
          seq: Number(r.seq),
          at: r.at,
          kind: r.kind,
          itemId: r.item_id,
          hop: r.hop,
          actor: r.actor,
          data: JSON.parse(r.data),
          epoch,
        });
        await b.pool.query('UPDATE audit_log SET epoch = $1, prev_hash = $2, hash = $3 WHERE seq = $4', [
          epoch,
          prev,
          hash,
          r.seq,
        ]);
        prev = hash;
      }
      await b.pool.query('UPDATE audit_head SET hash = $1 WHERE id = 1', [prev]);
      await b.exec('DELETE FROM audit_checkpoints WHERE seq > 6');
      expect(await runJson(['audit', 'verify', '--db', b.db, '--public-key', pubFile])).toMatchObject({
        code: 0,
        json: { ok: true, entries: 8, checkpoints: { signedSeq: 6, unsignedRows: 2 } },
      });
      expect(await runJson(['audit', 'verify', '--db', b.db, '--public-key', pubFile, '--digest', line])).toMatchObject(
        {
          code: 1,
          json: { ok: false, seq: 8, reason: 'digest-mismatch' },
        },
      );
    } finally {
      await b.close();
    }
  });
});
