import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AuditLog } from '../../src/persistence/audit/sqlite-chain.js';
import { SqliteCoordinatorStore } from '../../src/persistence/coordinator/sqlite-store.js';
import { type SqliteDatabase, openDatabase } from '../../src/persistence/kernel/database.js';
import { runCoordinatorStoreContract } from './coordinator-store-contract.js';

runCoordinatorStoreContract('sqlite', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sb-coord-store-'));
  const path = join(dir, 'coord.db');
  const open: SqliteDatabase[] = [];
  let checkpoints = 0;
  const openStore = () => {
    const db = openDatabase(path);
    open.push(db);
    const audit = new AuditLog(db);
    return {
      audit,
      store: new SqliteCoordinatorStore(db, {
        audit: {
          append: (entries) => audit.appendManyInTransaction(entries),
          checkpoint: () => {
            checkpoints++;
          },
        },
      }),
    };
  };
  const main = openStore();
  return {
    store: main.store,
    audit: async () => main.audit.list().map((r) => ({ kind: r.kind, itemId: r.itemId })),
    checkpoints: () => checkpoints,
    reopen: async () => openStore().store,
    async cleanup() {
      for (const db of open) db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
});
