import { SqliteCoordinatorStore } from '../persistence/coordinator/sqlite-store.js';
import type { CoordinatorTables } from '../persistence/coordinator/coordinator-store.js';
import type { ItemRecord } from '../workflow/records.js';
import { CliUsageError } from './command-args.js';
import { openExistingDatabase, requireComponent } from './read-database.js';
import { coordinatorTablesOf, isPostgresUrl, openPostgresForReading } from './read-postgres.js';

/**
 * What `submit`, `approve` and `items cancel|retry` read of a Coordinator's
 * database before they send (and, with --wait, after): its items and the
 * workflows it serves. Opened read-only and never created: a --db that names
 * no Coordinator database is refused before anything is sent.
 */
export interface CoordinatorReader {
  /** Where, for messages (a PostgreSQL URL without its password). */
  readonly where: string;
  readItem(id: string): Promise<ItemRecord | undefined>;
  /** The item created for a request id (`switchboard.request`), if any. */
  findByRequest(requestId: string): Promise<ItemRecord | undefined>;
  /** The ids of the workflows a Coordinator on this database served (kept on its start). */
  workflowIds(): Promise<string[]>;
  /** A kept definition's stage names. */
  stagesOf(ref: { id: string; version: number }): Promise<string[] | undefined>;
  close(): Promise<void>;
}

/** Why the database cannot be read: exit 1 with the message (the command line was right). */
export class UnreadableCoordinator extends Error {}

const REQUEST = 'switchboard.request';

function reader(
  where: string,
  tables: CoordinatorTables,
  ids: () => Promise<string[]>,
  definition: (ref: { id: string; version: number }) => Promise<unknown>,
  close: () => Promise<void>,
): CoordinatorReader {
  return {
    where,
    readItem: (id) => tables.readItem(id),
    async findByRequest(requestId) {
      const items = await tables.readItems({ limit: 100_000 });
      return items.find((i) => i.attributes?.[REQUEST] === requestId);
    },
    workflowIds: ids,
    async stagesOf(ref) {
      const body = (await definition(ref)) as { stages?: Record<string, unknown> } | undefined;
      return body?.stages === undefined ? undefined : Object.keys(body.stages);
    },
    close,
  };
}

/** Opens the Coordinator's database named by --db (a SQLite file that exists, or a PostgreSQL URL). */
export async function openCoordinatorReader(db: string, command: string): Promise<CoordinatorReader> {
  if (isPostgresUrl(db)) {
    const opened = await openPostgresForReading(db, command).catch((error: unknown) => {
      throw new UnreadableCoordinator((error as Error).message);
    });
    try {
      const store = await coordinatorTablesOf(opened);
      return reader(
        opened.where,
        store,
        async () =>
          (await opened.pool.query('SELECT DISTINCT id FROM coord_definitions ORDER BY id')).rows.map(
            (r) => r.id as string,
          ),
        (ref) => store.loadDefinition(ref),
        () => opened.close(),
      );
    } catch (error) {
      await opened.close();
      throw new UnreadableCoordinator(
        `${opened.where}: ${(error as Error).message} (is it the --db of a Coordinator that has started?)`,
      );
    }
  }
  let opened: ReturnType<typeof openExistingDatabase> | undefined;
  try {
    opened = openExistingDatabase(db, 'read');
    requireComponent(opened, 'coordinator', 'Coordinator tables');
  } catch (error) {
    opened?.db.close();
    if (error instanceof CliUsageError) {
      throw new UnreadableCoordinator(
        `${error.message}: give the --db of the Coordinator (switchboard coordinator --db PATH); nothing was sent, and no database is ever created by ${command}`,
      );
    }
    throw error;
  }
  const store = new SqliteCoordinatorStore(opened.db, { readOnly: true });
  const db_ = opened.db;
  return reader(
    opened.path,
    store,
    () =>
      Promise.resolve(
        (db_.prepare('SELECT DISTINCT id FROM coord_definitions ORDER BY id').all() as { id: string }[]).map(
          (r) => r.id,
        ),
      ),
    (ref) => store.loadDefinition(ref),
    () => {
      db_.close();
      return Promise.resolve();
    },
  );
}
