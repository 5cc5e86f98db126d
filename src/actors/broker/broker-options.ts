import { type Logger, silentLogger } from '../../log/logger.js';
import { type Clock, systemClock } from '../../persistence/kernel/clock.js';
import { DEFAULT_DURABILITY, type Durability } from '../../persistence/kernel/database.js';
import { type IdSource, createUuidV7Source } from '../../persistence/kernel/ids.js';
import { MAX_DURATION_MS } from '../../protocol/retention.js';
import type { ActorInspector } from '../inspection.js';

/** Options of `createBroker`: the SQLite file, its durability, and the clock, ids and logger it uses. */
export interface BrokerOptions {
  /** The SQLite file (created if missing). */
  path: string;
  /**
   * `normal` (survives a killed process) or `full` (survives power loss).
   * @defaultValue `normal`
   */
  durability?: Durability;
  /**
   * The clock of every timestamp the broker writes.
   * @defaultValue the system clock
   */
  clock?: Clock;
  /**
   * The source of agent, task, message and artifact ids.
   * @defaultValue UUIDv7 from the clock
   */
  ids?: IdSource;
  /**
   * Where the broker's lines go.
   * @defaultValue a silent logger
   */
  logger?: Logger;
  /**
   * An inspector (`--inspect`) given to every root actor the broker creates:
   * its registry (shown as `broker`), each agent actor and each task actor.
   * @defaultValue none: nothing is inspected
   */
  inspect?: ActorInspector;
  /**
   * The local socket this broker listens on (`serve --listen`), recorded
   * with its ownership of the file so that a broker refused the file can
   * name where to reach the owner.
   * @defaultValue none
   */
  socket?: string;
  /**
   * How long an ended task is kept, in milliseconds: a task that ended
   * longer ago than this is removed with its messages, artifacts, push
   * config and events, in small batches, checked at once and then every
   * `min(taskRetentionMs, 1 minute)` (see docs/operations.md). A task named
   * by a live task's history, or of a Coordinator work item that has not
   * ended, is kept.
   * @defaultValue none: every task is kept
   */
  taskRetentionMs?: number;
}

/** A broker's options with every default filled in: what the running broker reads. */
export interface BrokerSettings {
  readonly path: string;
  readonly durability: Durability;
  readonly clock: Clock;
  readonly ids: IdSource;
  readonly logger: Logger;
  readonly inspect: ActorInspector | undefined;
  readonly socket: string | null;
  readonly taskRetentionMs: number | undefined;
}

/**
 * Fills in a broker's defaults. A `taskRetentionMs` that is not a whole
 * number of milliseconds from 1 to `MAX_DURATION_MS` is refused (`RangeError`);
 * the file itself is checked when opened.
 */
export function brokerSettings(options: BrokerOptions): BrokerSettings {
  const clock = options.clock ?? systemClock;
  const retention = options.taskRetentionMs;
  if (retention !== undefined && (!Number.isInteger(retention) || retention < 1 || retention > MAX_DURATION_MS)) {
    throw new RangeError(
      `taskRetentionMs must be a whole number of milliseconds from 1 to ${MAX_DURATION_MS} (got ${retention}): leave it out to keep every task`,
    );
  }
  return {
    path: options.path,
    durability: options.durability ?? DEFAULT_DURABILITY,
    clock,
    ids: options.ids ?? createUuidV7Source(() => clock.now()),
    logger: options.logger ?? silentLogger(),
    inspect: options.inspect,
    socket: options.socket ?? null,
    taskRetentionMs: retention,
  };
}
