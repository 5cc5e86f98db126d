import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe } from 'vitest';
import { PostgresAuditLog } from '../../src/persistence/audit/postgres-chain.js';
import { SqliteAuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { openDatabase } from '../../src/persistence/kernel/database.js';
import { openPgPool } from '../../src/persistence/kernel/postgres.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';
import { runAuditChainContract } from './audit-chain-contract.js';

const { runPostgres } = await postgresGate();

runAuditChainContract('sqlite', async (clock) => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-audit-chain-'));
  const db = openDatabase(join(dir, 'audit.db'));
  return {
    chain: new SqliteAuditLog(db, { clock }).chain,
    async setStoredData(seq, data) {
      db.prepare('UPDATE audit_log SET data = ? WHERE seq = ?').run(data, seq);
    },
    async cleanup() {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});

describe.runIf(runPostgres)('on PostgreSQL', () => {
  runAuditChainContract('postgres', async (clock) => {
    const database = await createTestDatabase('sb_audit');
    const pool = await openPgPool(database.url);
    return {
      chain: await PostgresAuditLog.open(pool, { clock }),
      async setStoredData(seq, data) {
        await pool.query('UPDATE audit_log SET data = $1 WHERE seq = $2', [data, seq]);
      },
      async cleanup() {
        await pool.end();
        await database.drop();
      },
    };
  });
});
