import { describe } from 'vitest';
import { PostgresAuditLog } from '../../src/persistence/audit/postgres-chain.js';
import { PostgresCoordinatorStore } from '../../src/persistence/coordinator/postgres-store.js';
import { type PgPool, openPgPool } from '../../src/persistence/kernel/postgres.js';
import { createTestDatabase, postgresGate } from '../postgres-availability.js';
import { runCoordinatorStoreContract } from './coordinator-store-contract.js';

const { runPostgres } = await postgresGate();

describe.runIf(runPostgres)('on PostgreSQL', () => {
  runCoordinatorStoreContract('postgres', async () => {
    const database = await createTestDatabase('sb_store');
    const pools: PgPool[] = [];
    let checkpoints = 0;
    const openStore = async () => {
      const pool = await openPgPool(database.url);
      pools.push(pool);
      const audit = await PostgresAuditLog.open(pool);
      const store = await PostgresCoordinatorStore.open(pool, {
        audit: {
          append: (tx, entries) => audit.appendInTransaction(tx, entries),
          checkpoint: async () => {
            checkpoints++;
          },
        },
      });
      return { audit, store };
    };
    const main = await openStore();
    return {
      store: main.store,
      audit: async () => (await main.audit.list()).map((r) => ({ kind: r.kind, itemId: r.itemId })),
      checkpoints: () => checkpoints,
      reopen: async () => (await openStore()).store,
      async cleanup() {
        for (const pool of pools) await pool.end();
        await database.drop();
      },
    };
  });
});
