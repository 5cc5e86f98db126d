/**
 * Noted heads as prefixes and signed checkpoints, through the real CLI
 * (`node bin/switchboard.js audit verify|keygen`, the build in dist/): each
 * tampering a writer without the key can do is caught with --public-key.
 */
import { spawn } from 'node:child_process';
import { createPrivateKey } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { buildCoordinatorDb } from './coordinator-db.js';
import { type TempDir, runCli, runJson, tempDir } from './helpers.js';

let tmp: TempDir;
let keyFile: string;
let pubFile: string;
beforeAll(async () => {
  tmp = tempDir();
  keyFile = tmp.file('audit.key');
  pubFile = `${keyFile}.pub`;
  const r = await runCli(['audit', 'keygen', '--out', keyFile]);
  expect(r.code, r.stderr).toBe(0);
});
afterAll(() => tmp.cleanup());

function rows(audit: AuditLog, from: number, to: number, tag = 'x'): void {
  for (let i = from; i <= to; i++) {
    audit.append({ kind: 'cost', itemId: 'item-1', hop: i, actor: 'coordinator', data: { i, tag } });
  }
}

/** A chain of `n` rows whose head is signed by the test key. */
function signedChain(name: string, n: number): string {
  const path = tmp.file(name);
  const db = openDatabase(path);
  const audit = new AuditLog(db);
  const key = createPrivateKey(readFileSync(keyFile, 'utf8'));
  rows(audit, 1, n - 2);
  audit.checkpoint(key);
  rows(audit, n - 1, n);
  audit.checkpoint(key);
  db.close();
  return path;
}

function tamper(path: string, fn: (db: ReturnType<typeof openDatabase>, audit: AuditLog) => void): void {
  const db = openDatabase(path);
  fn(db, new AuditLog(db));
  db.close();
}

describe('audit keygen', () => {
  it('writes the private key 0600 and the public key beside it, and never overwrites a key', async () => {
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyFile, 'utf8')).toContain('BEGIN PRIVATE KEY');
    expect(readFileSync(pubFile, 'utf8')).toContain('BEGIN PUBLIC KEY');
    const again = await runCli(['audit', 'keygen', '--out', keyFile]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('exists');
  });
});

describe('audit verify --expect-head is a prefix check', () => {
  it('passes on a chain grown since the head was noted; a changed row or a shorter chain fails', async () => {
    const path = tmp.file('grown.db');
    let noted = { seq: 0, hash: '' };
    tamper(path, (_db, audit) => {
      rows(audit, 1, 5);
      noted = audit.head();
      rows(audit, 6, 9);
    });
    expect((await runCli(['audit', 'verify', '--db', path, '--expect-head', `${noted.seq}:${noted.hash}`])).code).toBe(
      0,
    );
    const wrong = await runJson(['audit', 'verify', '--db', path, '--expect-head', `5:${'e'.repeat(64)}`]);
    expect(wrong).toMatchObject({ code: 1, json: { ok: false, seq: 5, reason: 'head-mismatch' } });
    const beyond = await runJson(['audit', 'verify', '--db', path, '--expect-head', `12:${noted.hash}`]);
    expect(beyond).toMatchObject({ code: 1, json: { ok: false, seq: 10, reason: 'truncated' } });
  });
});

describe('audit verify --public-key', () => {
  it('an intact signed chain passes, with no unsigned rows; --require-signed-head passes too', async () => {
    const path = signedChain('intact.db', 8);
    const r = await runCli(['audit', 'verify', '--db', path, '--public-key', pubFile, '--require-signed-head']);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('Signed: 2 checkpoint(s)');
    expect(r.stdout).toContain('0 row(s) after it unsigned');
  });

  it('a tail cut with the head rewound: passes without the key, truncated with it', async () => {
    const path = signedChain('cut.db', 8);
    tamper(path, (db) => {
      const six = db.prepare('SELECT hash FROM audit_log WHERE seq = 6').get() as { hash: string };
      db.exec('DELETE FROM audit_log WHERE seq > 6');
      db.prepare('UPDATE audit_head SET seq = 6, hash = ? WHERE id = 1').run(six.hash);
    });
    expect((await runCli(['audit', 'verify', '--db', path])).code).toBe(0);
    const r = await runJson(['audit', 'verify', '--db', path, '--public-key', pubFile]);
    expect(r).toMatchObject({ code: 1, json: { ok: false, seq: 7, reason: 'truncated' } });
  });

  it('a forged append with a recomputed hash: counted unsigned, and fails --require-signed-head', async () => {
    const path = signedChain('forged.db', 8);
    tamper(path, (_db, audit) => rows(audit, 9, 10, 'forged'));
    expect((await runCli(['audit', 'verify', '--db', path])).code).toBe(0);
    const counted = await runCli(['audit', 'verify', '--db', path, '--public-key', pubFile]);
    expect(counted.code).toBe(0);
    expect(counted.stdout).toContain('the newest at row 8; 2 row(s) after it unsigned');
    const required = await runJson(['audit', 'verify', '--db', path, '--public-key', pubFile, '--require-signed-head']);
    expect(required).toMatchObject({
      code: 1,
      json: { ok: false, seq: 9, reason: 'unsigned-head', checkpoints: { unsignedRows: 2, signedSeq: 8 } },
    });
  });

  it('a rewritten chain: passes without the key, checkpoint-mismatch with it', async () => {
    const path = signedChain('rewritten.db', 8);
    tamper(path, (db, audit) => {
      db.exec("DELETE FROM audit_log; UPDATE audit_head SET seq = 0, hash = '" + '0'.repeat(64) + "' WHERE id = 1");
      rows(audit, 1, 8, 'rewritten');
    });
    expect((await runCli(['audit', 'verify', '--db', path])).code).toBe(0);
    const r = await runJson(['audit', 'verify', '--db', path, '--public-key', pubFile]);
    expect(r).toMatchObject({ code: 1, json: { ok: false, seq: 6, reason: 'checkpoint-mismatch' } });
  });

  it('a checkpoint re-pointed at a forged row, or its signature edited: checkpoint-signature', async () => {
    const path = signedChain('resigned.db', 8);
    tamper(path, (db, audit) => {
      db.exec('DELETE FROM audit_log WHERE seq > 6');
      rows(audit, 7, 8, 'forged');
      const head = audit.head();
      db.prepare('UPDATE audit_checkpoints SET hash = ? WHERE seq = 8').run(head.hash);
    });
    const r = await runJson(['audit', 'verify', '--db', path, '--public-key', pubFile]);
    expect(r).toMatchObject({ code: 1, json: { ok: false, seq: 8, reason: 'checkpoint-signature' } });
  });

  it('refuses --require-signed-head without --public-key, and a file that is no public key (exit 2)', async () => {
    const path = signedChain('usage.db', 4);
    expect((await runCli(['audit', 'verify', '--db', path, '--require-signed-head'])).code).toBe(2);
    const notKey = tmp.file('not-a-key.pem');
    writeFileSync(notKey, 'hello');
    const r = await runCli(['audit', 'verify', '--db', path, '--public-key', notKey]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not a PEM public key');
  });
});

describe('a Coordinator with --audit-key / auditKey', () => {
  it('signs the head at every item end; the key appears nowhere in the database', async () => {
    const pem = readFileSync(keyFile, 'utf8');
    const key = createPrivateKey(pem);
    const dir = tmp.file('coord');
    mkdirSync(dir);
    const coord = await buildCoordinatorDb(dir, key);
    const r = await runCli(['audit', 'verify', '--db', coord.path, '--public-key', pubFile, '--require-signed-head']);
    expect(r.code, r.stdout).toBe(0);
    // At least one checkpoint (two item ends committed together share one), the newest at the head
    // (--require-signed-head passed).
    expect(r.stdout).toMatch(/Signed: [1-9]\d* checkpoint\(s\)/);
    const seed = Buffer.from(key.export({ format: 'jwk' }).d!, 'base64url');
    const pemBody = pem
      .split('\n')
      .filter((l) => l !== '' && !l.startsWith('-----'))
      .join('');
    for (const file of [coord.path, `${coord.path}-wal`]) {
      let bytes: Buffer;
      try {
        bytes = readFileSync(file);
      } catch {
        continue;
      }
      expect(bytes.includes(seed)).toBe(false);
      expect(bytes.includes(Buffer.from(pemBody))).toBe(false);
      expect(bytes.includes(Buffer.from(seed.toString('base64')))).toBe(false);
    }
  }, 60_000);

  it('the coordinator command refuses a group-readable key file and a bad key in the environment without echoing it', async () => {
    const loose = tmp.file('loose.key');
    const pem = readFileSync(keyFile, 'utf8');
    writeFileSync(loose, pem);
    chmodSync(loose, 0o640);
    const r = await runCli(['coordinator', '--db', tmp.file('c1.db'), '--audit-key', loose]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('chmod 600');
    const pemBody = pem.split('\n')[1]!;
    expect(r.stderr).not.toContain(pemBody);
    const broken = pem.replace('MC4CAQAw', 'MC4CAQAx');
    const env = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [new URL('../../bin/switchboard.js', import.meta.url).pathname, 'coordinator', '--db', tmp.file('c2.db')],
        { env: { ...process.env, SWITCHBOARD_AUDIT_KEY: broken }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (c: string) => {
        stderr += c;
      });
      child.on('close', (code) => resolve({ code, stderr }));
    });
    expect(env.code).toBe(2);
    expect(env.stderr).toContain('SWITCHBOARD_AUDIT_KEY is not a PEM private key');
    expect(env.stderr).not.toContain(broken.split('\n')[1]!);
  });
});
