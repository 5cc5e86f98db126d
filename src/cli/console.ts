import { ConsoleData, type ConsoleSource } from '../console/console-data.js';
import { DEFAULT_CONSOLE_HOST, DEFAULT_CONSOLE_PORT, startConsoleServer } from '../console/console-server.js';
import type { WorkQueue } from '../bus/work-queue.js';
import { createLogger } from '../log/logger.js';
import {
  type ConsoleUserTable,
  postgresConsoleUsers,
  sqliteConsoleUsers,
} from '../persistence/coordinator/console-users.js';
import { BUS_FLAGS, describeBus, openBus, parseBusChoice, requireRedisBusWithPostgres } from './bus-option.js';
import type { CliCommand } from './command.js';
import {
  CliUsageError,
  type FlagSpec,
  booleanFlag,
  parseCommandArgs,
  reportUsageError,
  stringFlag,
} from './command-args.js';
import { runConsoleUsers } from './console-users.js';
import { openExistingDatabase } from './read-database.js';
import { auditOf, coordinatorTablesOf, isPostgresUrl, openPostgresForReading } from './read-postgres.js';
import { stopSignal } from './stop-signal.js';

export const CONSOLE_USAGE = `Usage: switchboard console --db PATH [--bus URL [--bus-prefix NAME]] [--listen HOST:PORT] [--read-only]
       switchboard console --db postgres://USER@HOST:PORT/DB --bus redis://HOST:PORT [--bus-prefix NAME] [--listen HOST:PORT]
       switchboard console users add NAME|list|revoke NAME --db PATH|postgres://...   (see console users --help)

The operations console: a local web app over a switchboard database (a
SQLite file, or the PostgreSQL database of a Coordinator on Redis). It
shows the work items (state, stage, hops, cost, elapsed, output; filters by
state and workflow), one item's timeline (every hop with its role, attempt,
outcome, tokens, cost and time, the audit rows with the chain's
verification, the answers of its questions), the approvals waiting (approve
or deny as a named approver, through the bus as switchboard approve does),
the queues per role with their dead letters (replay them), the broker's
tasks and agents, and the task and workflow-run machines drawn from their
definitions with the current state highlighted. Open pages update live.

It reads the file read-only beside a running broker, Coordinator and
workers. On PostgreSQL there is no broker file: the tasks view shows the
tasks derived from the newest items' rows, and open pages update from a
poll of the audit head and the queue counters; while PostgreSQL does not
answer, reads answer 503 and the console keeps serving until it is back. Every asset ships in the package: nothing is fetched from the
internet. It answers only pages it serves itself (Host and Origin are
checked). An action needs an access token: a user's own (switchboard
console users add NAME; the approver is then that user, and the audit
names them), or the shared token printed once at start inside the address
to open (after #token=, never sent to the server in a URL), which acts
anonymously and names its approver by hand (deprecated once users exist).

Options:
  --db PATH          the switchboard SQLite file (must exist), or the Coordinator's
                     PostgreSQL database postgres://USER[:PASSWORD]@HOST:PORT/DB
                     (read-only; the password is never shown or logged)
  --bus URL          the work bus of the approvals and replays: redis://HOST:PORT[/DB]
                     (default: the embedded SQLite bus in the --db file; required
                     with --db postgres://...)
  --bus-prefix NAME  key prefix of the deployment on Redis (default switchboard)
  --listen HOST:PORT where to listen (default ${DEFAULT_CONSOLE_HOST}:${DEFAULT_CONSOLE_PORT}; port 0 picks a free one)
  --read-only        no actions: the page shows, the API refuses approvals and replays
  -h, --help         show this help

Exit status: 0 after SIGINT or SIGTERM; 1 when the database is missing or
unreadable (PostgreSQL does not answer), the bus cannot be reached or the
address cannot be listened on; 2 for a usage error.`;

/** How long one read of PostgreSQL may take before it fails (and the page is told the store does not answer). */
const CONSOLE_QUERY_TIMEOUT_MS = 5_000;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const CONSOLE_FLAGS: FlagSpec = {
  db: { type: 'string' },
  ...BUS_FLAGS,
  listen: { type: 'string' },
  'read-only': { type: 'boolean' },
};

/** `HOST:PORT` (IPv6 in brackets) into its parts. */
export function parseListen(value: string): { host: string; port: number } {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]]+):(\d{1,5})$/.exec(value);
  const port = match === null ? Number.NaN : Number(match[2]);
  if (match === null || port > 65_535) {
    throw new CliUsageError(`--listen must be HOST:PORT, for example 127.0.0.1:8090 (got '${value}')`);
  }
  const host = (match[1] as string).replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

async function runConsole(argv: string[]): Promise<number> {
  if (argv[0] === 'users') return runConsoleUsers(argv.slice(1));
  let flags: {
    db: string;
    bus: ReturnType<typeof parseBusChoice> | undefined;
    listen: { host: string; port: number };
  };
  try {
    const args = parseCommandArgs(argv, CONSOLE_FLAGS, 0);
    const db = stringFlag(args, 'db');
    if (db === undefined) throw new CliUsageError('--db PATH is required: the switchboard database to show');
    const readOnly = booleanFlag(args, 'read-only');
    if (readOnly && stringFlag(args, 'bus') !== undefined) throw new CliUsageError('--read-only takes no --bus');
    if (isPostgresUrl(db)) {
      if (readOnly) {
        throw new CliUsageError('--db postgres://... takes no --read-only: the console reads it through its --bus');
      }
      requireRedisBusWithPostgres(args, db);
    }
    const listen = stringFlag(args, 'listen');
    flags = {
      db,
      bus: readOnly ? undefined : parseBusChoice(args, db),
      listen: listen === undefined ? { host: DEFAULT_CONSOLE_HOST, port: DEFAULT_CONSOLE_PORT } : parseListen(listen),
    };
  } catch (error) {
    if (error instanceof CliUsageError) return reportUsageError('console', error, CONSOLE_USAGE);
    throw error;
  }
  const logger = createLogger({ name: 'switchboard-console' });
  let opened: ConsoleStore;
  try {
    opened = await openConsoleStore(flags.db);
  } catch (error) {
    process.stderr.write(`switchboard console: ${(error as Error).message}\n`);
    return 1;
  }
  let bus: WorkQueue | undefined;
  const stop = stopSignal(logger, 'console stopping');
  try {
    if (flags.bus !== undefined) {
      try {
        bus = await openBus(flags.bus);
      } catch (error) {
        process.stderr.write(
          `switchboard console: cannot reach the bus ${describeBus(flags.bus)}: ${(error as Error).message}\n`,
        );
        return 1;
      }
    }
    let server: Awaited<ReturnType<typeof startConsoleServer>>;
    try {
      server = await startConsoleServer({
        data: new ConsoleData(opened.source, bus),
        ...(opened.users === undefined ? {} : { users: opened.users }),
        ...(bus === undefined ? {} : { bus }),
        host: flags.listen.host,
        port: flags.listen.port,
        logger,
      });
    } catch (error) {
      process.stderr.write(`switchboard console: ${(error as Error).message}\n`);
      return 1;
    }
    logger.info(
      { url: server.url, db: opened.where, bus: flags.bus === undefined ? null : describeBus(flags.bus) },
      'console listening',
    );
    process.stdout.write(
      `switchboard console on ${opened.where}\nOpen ${server.tokenUrl}\n(the part after #token= is the access token for actions; it is shown only now)\n`,
    );
    await stop.stopped;
    await server.stop();
    return 0;
  } finally {
    stop.dispose();
    await bus?.close().catch(() => {});
    await opened.close();
  }
}

/** What the console reads, opened: a SQLite file or a PostgreSQL database, named without a password. */
interface ConsoleStore {
  source: ConsoleSource;
  /** The console's users (none in a file without the Coordinator's tables). */
  users?: ConsoleUserTable;
  where: string;
  close(): Promise<void>;
}

/** Opens the store read-only; a missing file, an unreachable PostgreSQL or another schema rejects with what to do. */
async function openConsoleStore(db: string): Promise<ConsoleStore> {
  if (!isPostgresUrl(db)) {
    const file = openExistingDatabase(db, 'read');
    return {
      source: { kind: 'sqlite', db: file.db },
      ...(file.components.has('coordinator') ? { users: sqliteConsoleUsers(file.db) } : {}),
      where: file.path,
      close: async () => {
        file.db.close();
      },
    };
  }
  const opened = await openPostgresForReading(db, 'console', { max: 2, queryTimeoutMs: CONSOLE_QUERY_TIMEOUT_MS });
  try {
    const [tables, audit] = await Promise.all([coordinatorTablesOf(opened), auditOf(opened)]);
    return {
      source: { kind: 'postgres', tables, audit },
      users: postgresConsoleUsers(opened.pool),
      where: opened.where,
      close: opened.close,
    };
  } catch (error) {
    await opened.close().catch(() => {});
    throw new Error(`cannot read ${opened.where} as a Coordinator's database: ${(error as Error).message}`);
  }
}

export const consoleCommand: CliCommand = {
  name: 'console',
  summary: 'the operations console in a browser: items, timelines, approvals, queues, machines',
  usage: CONSOLE_USAGE,
  run: runConsole,
};
