import { Console } from 'node:console';
import { resolve } from 'node:path';
import { createBroker } from '../actors/broker/broker.js';
import { LOG_LEVELS, type LogLevel, createLogger } from '../log/logger.js';
import { type Durability, IN_MEMORY_PATH, isInMemoryPath } from '../persistence/kernel/database.js';
import { type HostedRemoteAgents, hostRemoteAgents } from '../remote/remote-host.js';
import { BrokerSession } from '../transport/broker-session.js';
import { defaultSocketPath } from '../transport/host-paths.js';
import { BrokerSocketServer } from '../transport/socket-server.js';
import { DURATION_SYNTAX, formatDuration, parseDuration } from '../protocol/retention.js';
import type { CliCommand } from './command.js';
import { INSPECT_USAGE, type InspectTarget, startRequestedInspection, takeInspectOption } from './inspect-option.js';
import { CliUsageError, choiceFlag, parseCommandArgs, reportUsageError, stringFlag } from './command-args.js';
import { stopSignal } from './stop-signal.js';

export const DEFAULT_DB_PATH = './switchboard.db';
const DURABILITIES: readonly Durability[] = ['normal', 'full'];

export const SERVE_USAGE = `Usage: switchboard serve [--db PATH] [--durability normal|full] [--log-level LEVEL]
                       [--listen unix[:PATH]] [--stdio] [--idle-exit SECONDS]
                       [--task-retention DURATION] [--no-remote-agents]
                       [--inspect[=[HOST:]PORT]]

Runs the A2A broker on stdin/stdout: JSON-RPC 2.0, one message per line
(NDJSON, UTF-8). Requests are read from stdin; answers and the notifications
a2a.task.event and a2a.push (for every agent registered on this connection)
are written to stdout, which carries protocol lines only. Logs are JSON lines
on stderr. Stops cleanly on end of stdin, SIGINT or SIGTERM: calls in flight
are answered, output is flushed and the database is closed (a second signal
exits at once; every answered call is committed either way).

With --listen it serves the same protocol on a local socket instead, to any
number of connections at once (and on stdio too with --stdio). The broker
owns its database file: a second broker on a file a live one owns exits 1
naming the owner and its socket. Agents registered through a connection
are no longer live once it closes (their tasks are kept: registering again
under the same contextId and name regains them).

With a database file, it also runs the bridge of the broker's remote A2A
agents once PATH.remotes.json exists (switchboard agents add-remote writes
it): each remote is a local agent, its tasks carried over A2A v1.0
(docs/remote-agents.md).

Options:
  --db PATH            SQLite file holding tasks, messages and events; created
                       if missing (default: ${DEFAULT_DB_PATH}). ${IN_MEMORY_PATH} keeps
                       them in memory: nothing survives the process (tests)
  --durability MODE    normal: a commit survives a killed process (WAL,
                       synchronous=NORMAL; default). full: it also survives
                       power loss (synchronous=FULL, slower)
  --log-level LEVEL    ${LOG_LEVELS.join(', ')} (default: info)
  --listen unix[:PATH] serve on a Unix socket at PATH, mode 0600, in a
                       directory only you can write; plain "unix" takes the
                       default path of the database (in $XDG_RUNTIME_DIR/
                       switchboard, else $TMPDIR/switchboard-UID)
  --stdio              with --listen, serve stdin/stdout as well (stops when
                       stdin ends)
  --idle-exit SECONDS  with --listen, stop after this long without any
                       connection and no remote agent's task being carried
                       (default: never)
  --task-retention DURATION
                       remove a task that ended longer ago than this (30d,
                       12h, 90m, 45s, 2w...) with its messages, artifacts,
                       push config and events, in small batches, checked now
                       and every minute (default: keep every task). A task
                       named by a live task's history, or of a work item
                       that has not ended, is kept (docs/operations.md)
  --no-remote-agents   do not run the bridge of the remote agents (run
                       switchboard agents bridge --db PATH instead)
${INSPECT_USAGE}
  -h, --help           show this help

Protocol: docs/stdio.md and docs/protocol.md.`;

interface ServeFlags {
  db: string;
  durability: Durability;
  logLevel: LogLevel;
  inspect: InspectTarget | null;
  /** The socket to listen on, or undefined (stdio only). */
  listen: string | undefined;
  stdio: boolean;
  idleExitMs: number | undefined;
  taskRetentionMs: number | undefined;
  /** Run the bridge of the remote agents of the database file. */
  remoteAgents: boolean;
}

function parseFlags(all: string[]): ServeFlags {
  const { argv, inspect } = takeInspectOption(all);
  const args = parseCommandArgs(
    argv,
    {
      db: { type: 'string' },
      durability: { type: 'string' },
      'log-level': { type: 'string' },
      listen: { type: 'string' },
      stdio: { type: 'boolean' },
      'idle-exit': { type: 'string' },
      'task-retention': { type: 'string' },
      'no-remote-agents': { type: 'boolean' },
    },
    0,
  );
  const db = dbPath(stringFlag(args, 'db') ?? DEFAULT_DB_PATH);
  const listen = listenFlag(stringFlag(args, 'listen'), db);
  const idle = stringFlag(args, 'idle-exit');
  if (listen === undefined && (args.values.stdio !== undefined || idle !== undefined)) {
    throw new CliUsageError('--stdio and --idle-exit go with --listen');
  }
  let idleExitMs: number | undefined;
  if (idle !== undefined) {
    const seconds = Number(idle);
    if (!Number.isFinite(seconds) || seconds <= 0) {
      throw new CliUsageError(`--idle-exit takes a number of seconds above 0, not '${idle}'`);
    }
    idleExitMs = Math.round(seconds * 1000);
  }
  const retention = stringFlag(args, 'task-retention');
  const taskRetentionMs = retention === undefined ? undefined : parseDuration(retention);
  if (retention !== undefined && taskRetentionMs === undefined) {
    throw new CliUsageError(`--task-retention takes ${DURATION_SYNTAX}, not '${retention}'`);
  }
  return {
    db,
    taskRetentionMs,
    durability: choiceFlag(args, 'durability', DURABILITIES, 'normal'),
    logLevel: choiceFlag(args, 'log-level', LOG_LEVELS, 'info'),
    inspect,
    listen,
    stdio: listen === undefined || args.values.stdio === true,
    idleExitMs,
    remoteAgents: args.values['no-remote-agents'] !== true,
  };
}

/** `--listen unix:PATH` (absolute-made) or `unix` (the database's default socket). */
function listenFlag(value: string | undefined, db: string): string | undefined {
  if (value === undefined) return undefined;
  if (value === 'unix' || value === 'unix:') {
    if (isInMemoryPath(db))
      throw new CliUsageError('--listen unix needs --db PATH: a database in memory has no default socket');
    return defaultSocketPath(db);
  }
  if (!value.startsWith('unix:')) {
    throw new CliUsageError(`--listen takes unix:PATH or unix (the default socket of --db), not '${value}'`);
  }
  return resolve(value.slice('unix:'.length));
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
    broker = createBroker({
      path: flags.db,
      durability: flags.durability,
      logger,
      inspect: inspection?.inspect,
      ...(flags.listen === undefined ? {} : { socket: flags.listen }),
      ...(flags.taskRetentionMs === undefined ? {} : { taskRetentionMs: flags.taskRetentionMs }),
    });
  } catch (error) {
    const err = error as Error & { code?: unknown; details?: unknown };
    logger.fatal(
      { db: flags.db, err: { message: err.message, code: err.code, details: err.details } },
      `cannot open the broker database: ${err.message}`,
    );
    await inspection?.stop();
    return 1;
  }
  let stopIdle!: () => void;
  const idle = new Promise<'idle'>((resolveIdle) => {
    stopIdle = () => resolveIdle('idle');
  });
  let socketServer: BrokerSocketServer | undefined;
  let remoteAgents: HostedRemoteAgents | undefined;
  if (flags.listen !== undefined) {
    try {
      socketServer = await BrokerSocketServer.listen({
        broker,
        path: flags.listen,
        logger,
        ...(flags.idleExitMs === undefined
          ? {}
          : { idle: { ms: flags.idleExitMs, onIdle: stopIdle, busy: () => remoteAgents?.busy() === true } }),
      });
    } catch (error) {
      const err = error as Error & { code?: unknown };
      logger.fatal(
        { socket: flags.listen, err: { message: err.message, code: err.code } },
        `cannot listen: ${err.message}`,
      );
      await broker.close();
      await inspection?.stop();
      return 1;
    }
  }
  remoteAgents =
    flags.remoteAgents && !isInMemoryPath(flags.db) ? hostRemoteAgents(broker, flags.db, logger) : undefined;
  const session = flags.stdio
    ? new BrokerSession({ broker, input: process.stdin, output: process.stdout, logger, connectionScoped: true })
    : undefined;
  const signal = stopSignal(logger, 'stopping: answering calls in flight');
  logger.info(
    {
      db: flags.db,
      durability: flags.durability,
      socket: flags.listen,
      stdio: flags.stdio,
      idleExitMs: flags.idleExitMs,
      taskRetention: flags.taskRetentionMs === undefined ? 'keep every task' : formatDuration(flags.taskRetentionMs),
    },
    flags.listen === undefined ? 'serving on stdio' : `serving on unix:${flags.listen}`,
  );
  if (isInMemoryPath(flags.db))
    logger.warn({ db: flags.db }, 'the database is in memory: nothing survives this process');
  try {
    const ended: Promise<unknown>[] = [signal.stopped, idle];
    if (session !== undefined) ended.push(session.closed);
    const why = await Promise.race(ended);
    if (why === 'idle') logger.info({ idleExitMs: flags.idleExitMs }, 'stopping: no connection for the idle period');
    await remoteAgents?.stop();
    await Promise.all([session?.close(), socketServer?.close()]);
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
  summary: 'run the A2A broker on stdin/stdout or a local socket (JSON-RPC 2.0 over NDJSON)',
  usage: SERVE_USAGE,
  run: runServe,
};
