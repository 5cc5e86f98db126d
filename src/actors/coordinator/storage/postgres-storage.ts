import type { KeyObject } from 'node:crypto';
import { from } from 'rxjs';
import type { Logger } from '../../../log/logger.js';
import { PostgresAuditLog } from '../../../persistence/audit/postgres-chain.js';
import type { PgFence } from '../../../persistence/coordinator/postgres-client.js';
import { PostgresCoordinatorStore } from '../../../persistence/coordinator/postgres-store.js';
import type { Clock } from '../../../persistence/kernel/clock.js';
import { openPgPool, safePostgresUrl } from '../../../persistence/kernel/postgres.js';
import { heldItemTraces } from '../item-traces.js';
import type { CoordinatorStorage } from './coordinator-storage.js';

/** What the Coordinator's storage in PostgreSQL is opened with. */
export interface PostgresStorageOptions {
  /** `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE` (checked by the options). */
  url: string;
  /** Connections of the pool at most (default 4). */
  maxConnections?: number;
  clock: Clock;
  logger: Logger;
  /** Signs the audit head at every item's end, in the commit's transaction. */
  auditKey?: KeyObject;
  /** Run first inside every commit transaction (a leader lease's `assertEpoch`). */
  fence?: PgFence;
}

/**
 * The Coordinator's tables and audit in PostgreSQL. Nothing is read
 * synchronously from the database: what must be (a stream's first statuses)
 * comes from the engine's memory of the live items. Leadership is the
 * lease's (the `fence`), kept outside. A failed open ends the pool.
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<CoordinatorStorage> {
  const { auditKey, fence, logger: log } = options;
  const pool = await openPgPool(options.url, {
    user: 'the Coordinator',
    ...(options.maxConnections === undefined ? {} : { max: options.maxConnections }),
    onError: (error) => log.warn({ err: error }, 'a PostgreSQL connection failed: the pool makes another'),
  });
  try {
    const audit = await PostgresAuditLog.open(pool, { clock: options.clock });
    const store = await PostgresCoordinatorStore.open(pool, {
      audit: {
        append: (tx, entries) => audit.appendInTransaction(tx, entries),
        ...(auditKey === undefined ? {} : { checkpoint: (tx) => audit.checkpointInTransaction(tx, auditKey) }),
        // A commit in one statement: its audit rows hashed here, after the head the store last read.
        chain: (head, entries, epoch) => audit.chainAfter(head, entries, epoch),
        head: (q) => audit.readHead(q),
      },
      ...(fence === undefined ? {} : { fence }),
    });
    log.info({ db: safePostgresUrl(options.url) }, 'the Coordinator keeps its tables and audit in PostgreSQL');
    return {
      name: 'postgres',
      store,
      tables: store,
      audit,
      // An item's trace is held in this process only (a restart starts its spans a new trace).
      traceStore: heldItemTraces(),
      // The broker is this process's own: the task ids in the tables name another one's tasks.
      storedTasks: false,
      liveNow: (live) => live.liveItems(),
      itemNow: (itemId, live) => live.liveItem(itemId),
      // Not live in memory: ended (its status is final, nothing more will come) or unknown.
      itemNotNow: (itemId) => from(store.readItem(itemId)),
      onLost() {},
      close: () => pool.end(),
    };
  } catch (error) {
    await pool.end().catch((closing: unknown) => log.warn({ err: closing }, 'close failed'));
    throw error;
  }
}
