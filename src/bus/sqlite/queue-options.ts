import type { Durability, SqliteDatabase } from '../../persistence/kernel/database.js';
import { type CompiledQueueOptions, type QueueOptions, compileQueueOptions } from '../queue-options.js';

/** Options of `createSqliteQueue`: the database (open or a path), per-role settings, clock and polling. */
export interface SqliteQueueOptions extends QueueOptions {
  /** An open database (the caller closes it), or a path to open (closed by `close()`). */
  database: SqliteDatabase | string;
  /**
   * When `database` is a path.
   * @defaultValue `'normal'`
   */
  durability?: Durability;
  /**
   * How a waiting consumer polls for work published by other processes: it
   * starts at `min` ms and doubles up to `max` while nothing comes. A publish
   * in this process wakes it at once.
   * @defaultValue `{ min: 2, max: 50 }`
   */
  pollIntervalMs?: { min: number; max: number };
}

/** `SqliteQueueOptions` checked, every default filled in (a database path is opened by the queue). */
export interface CompiledSqliteQueueOptions extends CompiledQueueOptions {
  readonly database: SqliteDatabase | string;
  readonly durability: Durability;
  readonly pollIntervalMs: { readonly min: number; readonly max: number };
}

/** Checks `options` and fills in the defaults: a bad role name or role setting is refused with `BUS_INVALID_ARGUMENT`. */
export function compileSqliteQueueOptions(options: SqliteQueueOptions): CompiledSqliteQueueOptions {
  return {
    ...compileQueueOptions(options),
    database: options.database,
    durability: options.durability ?? 'normal',
    pollIntervalMs: options.pollIntervalMs ?? { min: 2, max: 50 },
  };
}
