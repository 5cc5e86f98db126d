import { LOG_LEVELS, type LogLevel, type Logger, createLogger } from '../log/logger.js';
import { logContextPrunes } from '../persistence/context/prune-log.js';
import type { RedisContextStore } from '../persistence/context/redis-store.js';
import type { ContextStore } from '../persistence/context/sqlite-store.js';
import type { SqliteDatabase } from '../persistence/kernel/database.js';
import {
  BUS_FLAGS,
  type BusChoice,
  CONTEXT_RETENTION_FLAGS,
  openContextStore,
  parseBusChoice,
  parseContextRetention,
} from './bus-option.js';
import {
  CliUsageError,
  type FlagSpec,
  type ParsedArgs,
  choiceFlag,
  parseCommandArgs,
  reportUsageError,
} from './command-args.js';
import {
  type InspectTarget,
  type RunningInspection,
  takeInspectOption,
  startRequestedInspection,
} from './inspect-option.js';
import { stopSignal } from './stop-signal.js';

/**
 * What the long-running processes on the bus (`coordinator`, `worker`) share:
 * the bus, Context Engine and log flags, the usage-error exit, the logger, the
 * stop signal, the inspector, and the shutdown after whatever they opened.
 */

/** The flags every bus process takes (`--inspect` is split off before parsing). */
export const BUS_PROCESS_FLAGS: FlagSpec = {
  ...BUS_FLAGS,
  ...CONTEXT_RETENTION_FLAGS,
  'log-level': { type: 'string' },
};

export interface BusProcessFlags {
  inspect: InspectTarget | null;
  bus: BusChoice;
  contextRetentionMs: number | undefined;
  logLevel: LogLevel;
}

/** Splits `--inspect` off `argv` and parses the rest against `spec` (no positionals). */
export function parseBusProcessArgs(
  argv: string[],
  spec: FlagSpec,
): { args: ParsedArgs; inspect: InspectTarget | null } {
  const split = takeInspectOption(argv);
  return { args: parseCommandArgs(split.argv, spec, 0), inspect: split.inspect };
}

/** Reads the flags of `BUS_PROCESS_FLAGS`; `database` is the `--db` file the default bus lives in. */
export function busProcessFlags(
  args: ParsedArgs,
  inspect: InspectTarget | null,
  database: string | undefined,
): BusProcessFlags {
  return {
    inspect,
    bus: parseBusChoice(args, database),
    contextRetentionMs: parseContextRetention(args),
    logLevel: choiceFlag(args, 'log-level', LOG_LEVELS, 'info'),
  };
}

/** A bus process while it runs. */
export interface BusProcess<F extends BusProcessFlags> {
  readonly flags: F;
  readonly log: Logger;
  /** Resolves on the first SIGINT or SIGTERM. */
  readonly stopped: Promise<NodeJS.Signals>;
  /** Starts the inspector `--inspect` asks for (`null`: none); `'failed'` is logged. It is stopped at the end. */
  startInspection(): Promise<RunningInspection | null | 'failed'>;
  /** Opens the Context Engine of the chosen bus with `--context-retention-ms`, its pruning logged. */
  openContextStore(options?: { database?: SqliteDatabase }): Promise<ContextStore | RedisContextStore>;
}

/**
 * Runs a bus process: a usage error exits 2 with the usage; otherwise `run`
 * runs (closing what it opened in its own `finally`), then the inspector is
 * stopped (its server would keep the process alive), the signal handlers are
 * removed and `stopped` is logged.
 */
export async function runBusProcess<F extends BusProcessFlags>(
  command: { name: string; usage: string; logName: string },
  argv: string[],
  parse: (argv: string[]) => F,
  run: (process: BusProcess<F>) => Promise<number>,
): Promise<number> {
  let flags: F;
  try {
    flags = parse(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError(command.name, error, command.usage);
    throw error;
  }
  const log = createLogger({ level: flags.logLevel, name: command.logName });
  const signal = stopSignal(log);
  let inspection: RunningInspection | null = null;
  try {
    return await run({
      flags,
      log,
      stopped: signal.stopped,
      startInspection: async () => {
        const started = await startRequestedInspection(flags.inspect, log);
        if (started !== 'failed') inspection = started;
        return started;
      },
      openContextStore: (options = {}) =>
        openContextStore(flags.bus, {
          ...options,
          onPrune: logContextPrunes(log),
          ...(flags.contextRetentionMs === undefined ? {} : { retentionMs: flags.contextRetentionMs }),
        }),
    });
  } finally {
    await (inspection as RunningInspection | null)?.stop();
    signal.dispose();
    log.info('stopped');
  }
}
