import { Console } from 'node:console';
import { resolve } from 'node:path';
import { createBroker } from '../actors/broker/broker.js';
import { LOG_LEVELS, type LogLevel, createLogger } from '../log/logger.js';
import { type Durability, IN_MEMORY_PATH, isInMemoryPath } from '../persistence/kernel/database.js';
import { BrokerSession } from '../transport/broker-session.js';
import type { CliCommand } from './command.js';
import { INSPECT_USAGE, type InspectTarget, startRequestedInspection, takeInspectOption } from './inspect-option.js';
import { CliUsageError, choiceFlag, parseCommandArgs, reportUsageError, stringFlag } from './command-args.js';
import { stopSignal } from './stop-signal.js';

export const DEFAULT_DB_PATH = './switchboard.db';
const DURABILITIES: readonly Durability[] = ['normal', 'full'];

export const SERVE_USAGE = `Usage: switchboard serve [--db PATH] [--durability normal|full] [--log-level LEVEL]
                       [--inspect[=[HOST:]PORT]]

Runs the A2A broker on stdin/stdout: JSON-RPC 2.0, one message per line
(NDJSON, UTF-8). Requests are read from stdin; answers and the notifications
a2a.task.event and a2a.push (for every agent registered on this connection)
are written to stdout, which carries protocol lines only. Logs are JSON lines
on stderr. Stops cleanly on end of stdin, SIGINT or SIGTERM: calls in flight
are answered, output is flushed and the database is closed (a second signal
exits at once; every answered call is committed either way).

Options:
  --db PATH            SQLite file holding tasks, messages and events; created
                       if missing (default: ${DEFAULT_DB_PATH}). ${IN_MEMORY_PATH} keeps
                       them in memory: nothing survives the process (tests)
  --durability MODE    normal: a commit survives a killed process (WAL,
                       synchronous=NORMAL; default). full: it also survives
                       power loss (synchronous=FULL, slower)
  --log-level LEVEL    ${LOG_LEVELS.join(', ')} (default: info)
${INSPECT_USAGE}
  -h, --help           show this help

Protocol: docs/stdio.md and docs/protocol.md.`;

interface ServeFlags {
  db: string;
  durability: Durability;
  logLevel: LogLevel;
  inspect: InspectTarget | null;
}

function parseFlags(all: string[]): ServeFlags {
  const { argv, inspect } = takeInspectOption(all);
  const args = parseCommandArgs(
    argv,
    { db: { type: 'string' }, durability: { type: 'string' }, 'log-level': { type: 'string' } },
    0,
  );
  return {
    db: dbPath(stringFlag(args, 'db') ?? DEFAULT_DB_PATH),
    durability: choiceFlag(args, 'durability', DURABILITIES, 'normal'),
    logLevel: choiceFlag(args, 'log-level', LOG_LEVELS, 'info'),
    inspect,
  };
}

/** A file path is made absolute (logs name it unambiguously); `:memory:` stays as SQLite spells it. */
function dbPath(flag: string): string {
  return isInMemoryPath(flag) ? flag : resolve(flag);
}

async function runServe(argv: string[]): Promise<number> {
  let flags: ServeFlags;
  try {
    flags = parseFlags(argv);
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('serve', error, SERVE_USAGE);
    throw error;
  }
  // stdout carries protocol lines only: anything a dependency prints through
  // the console goes to stderr in this process.
  globalThis.console = new Console({ stdout: process.stderr, stderr: process.stderr });
  const logger = createLogger({ level: flags.logLevel, name: 'switchboard-serve' });
  const inspection = await startRequestedInspection(flags.inspect, logger);
  if (inspection === 'failed') return 1;
  let broker: ReturnType<typeof createBroker>;
  try {
    broker = createBroker({ path: flags.db, durability: flags.durability, logger, inspect: inspection?.inspect });
  } catch (error) {
    logger.fatal({ db: flags.db, err: { message: (error as Error).message } }, 'cannot open the broker database');
    await inspection?.stop();
    return 1;
  }
  const session = new BrokerSession({ broker, input: process.stdin, output: process.stdout, logger });
  const signal = stopSignal(logger, 'stopping: answering calls in flight');
  void signal.stopped.then(() => session.close());
  logger.info({ db: flags.db, durability: flags.durability }, 'serving on stdio');
  if (isInMemoryPath(flags.db))
    logger.warn({ db: flags.db }, 'the database is in memory: nothing survives this process');
  try {
    await session.closed;
    await session.close();
    await broker.close();
  } finally {
    signal.dispose();
    // The inspector's server would keep the process alive.
    await inspection?.stop();
    // Let the process end: nothing more is read.
    process.stdin.destroy();
  }
  logger.info('stopped');
  return 0;
}

export const serveCommand: CliCommand = {
  name: 'serve',
  summary: 'run the A2A broker on stdin/stdout (JSON-RPC 2.0 over NDJSON)',
  usage: SERVE_USAGE,
  run: runServe,
};
