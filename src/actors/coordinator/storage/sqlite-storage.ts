import type { KeyObject } from 'node:crypto';
import { of } from 'rxjs';
import { SqliteAuditLog } from '../../../persistence/audit/sqlite-chain.js';
import { SqliteCoordinatorStore } from '../../../persistence/coordinator/sqlite-store.js';
import type { Clock } from '../../../persistence/kernel/clock.js';
import type { SqliteDatabase } from '../../../persistence/kernel/database.js';
import type { Logger } from '../../../log/logger.js';
import { FileOwnership } from '../ownership.js';
import type { CoordinatorStorage } from './coordinator-storage.js';

/** What the Coordinator's storage on an SQLite file is opened with. */
export interface SqliteStorageOptions {
  /** The database the Coordinator's tables and the audit live in. */
  db: SqliteDatabase;
  clock: Clock;
  logger: Logger;
  /** Signs the audit head at every item's end, in the commit's transaction. */
  auditKey?: KeyObject;
  ownership?: { heartbeatMs?: number; staleMs?: number };
}

/**
 * The Coordinator's tables and audit in one SQLite file, which it owns while
 * it runs (`FileOwnership`: opening a file another live Coordinator owns is
 * refused). Reads answer synchronously, from the file.
 */
export function openSqliteStorage(options: SqliteStorageOptions): CoordinatorStorage {
  const { db, auditKey, logger } = options;
  // The audit entries of a commit are appended in its transaction; an item's end signs the head there too.
  const store = new SqliteCoordinatorStore(db, {
    audit: {
      append: (entries) => log.appendManyInTransaction(entries),
      ...(auditKey === undefined ? {} : { checkpoint: () => log.checkpoint(auditKey) }),
    },
  });
  const ownership = new FileOwnership({
    db,
    // Liveness across processes is wall-clock time, whatever clock the Coordinator's decisions use.
    now: () => Date.now(),
    logger,
    ...(options.ownership ?? {}),
  });
  ownership.claim();
  let log: SqliteAuditLog;
  try {
    log = new SqliteAuditLog(db, { clock: options.clock });
  } catch (error) {
    ownership.release();
    throw error;
  }
  return {
    name: 'sqlite',
    store,
    tables: store,
    audit: log.chain,
    traceStore: store,
    storedTasks: true,
    liveNow: () => store.liveItems(),
    itemNow: (itemId) => store.getItem(itemId),
    // `itemNow` read the file: an item it did not find is unknown.
    itemNotNow: () => of(undefined),
    onLost(stop) {
      ownership.onLost = () => {
        // Another Coordinator decided this one was gone and runs the file now: stop deciding.
        stop();
      };
    },
    async close() {
      ownership.release();
    },
  };
}
