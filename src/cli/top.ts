import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { RedisQueue } from '../bus/redis/queue.js';
import { readPostgresSnapshot } from '../inspect/postgres-snapshot.js';
import { type SystemSnapshot, queueViewOf, readSystemSnapshot } from '../inspect/system-snapshot.js';
import { type ScreenOptions, renderScreen } from '../inspect/top-screen.js';
import { type SqliteDatabase, openDatabase } from '../persistence/kernel/database.js';
import { BUS_FLAGS, describeBus, openBus, parseBusChoice } from './bus-option.js';
import type { CliCommand } from './command.js';
import { CliUsageError, type FlagSpec, booleanFlag, parseCommandArgs, stringFlag } from './command-args.js';
import { type OpenedPostgres, inSnapshot, isPostgresUrl, readOnPostgres } from './read-postgres.js';

export const DEFAULT_TOP_INTERVAL_MS = 1000;
const MIN_INTERVAL_MS = 50;
const MAX_INTERVAL_MS = 60_000;

export const TOP_USAGE = `Usage: switchboard top --db PATH|URL [--bus URL [--bus-prefix NAME]] [--interval MS] [--once]
       switchboard top --bus URL [--bus-prefix NAME] [--interval MS] [--once]

A live view of a switchboard database in the terminal: tasks by state and the
live ones that waited longest, the work queues per role (ready, delayed, in
flight, dead letters, done, age of the oldest ready message), and the
Coordinator's work items with their stage, hop and cost (when the file holds
them). Reads the file read-only, while the broker, workers and Coordinator
write it. With a Redis bus (--bus), the queues are read from Redis instead
(the same columns but DONE: Redis does not keep acked messages), read-only.
With --db postgres://... (a Coordinator's PostgreSQL database) the tasks
are derived from the work item and hop rows (there is no broker file) and
the queues come from --bus (none without it); each refresh reads one
snapshot of the tables (a REPEATABLE READ transaction).
Redraws in place every interval; q or Ctrl-C quits and restores the
terminal. When stdout is not a terminal (a pipe, CI), prints one snapshot as
plain text and exits.

Options:
  --db PATH          the SQLite file (must exist), or postgres://USER[:PASSWORD]
                     @HOST:PORT/DB: a Coordinator's PostgreSQL database;
                     optional with --bus
  --bus URL          the queues of a Redis Streams bus: redis://HOST:PORT[/DB]
                     (default: the SQLite bus in the --db file)
  --bus-prefix NAME  key prefix of the deployment on Redis (default switchboard)
  --interval MS      refresh period in ms, ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS} (default: ${DEFAULT_TOP_INTERVAL_MS})
  --once             print one snapshot and exit, even on a terminal
  -h, --help         show this help

Exit status: 0 after q, Ctrl-C or one snapshot; 1 when the Redis bus or
PostgreSQL cannot be reached; 2 for a usage error (a missing or non-SQLite
file, a bad flag) or PostgreSQL tables of another schema version.`;

/** Every flag the command accepts (each is documented in its --help; a test checks it). */
export const TOP_FLAGS: FlagSpec = {
  db: { type: 'string' },
  ...BUS_FLAGS,
  interval: { type: 'string' },
  once: { type: 'boolean' },
};

interface TopFlags {
  db: string | undefined;
  /** `--db postgres://...`: the Coordinator's PostgreSQL database (instead of a file). */
  postgres: string | undefined;
  /** The Redis bus whose queues are shown (instead of the file's). */
  redis: { url: string; prefix: string; label: string } | undefined;
  intervalMs: number;
  once: boolean;
}

function parseFlags(argv: string[]): TopFlags {
  const args = parseCommandArgs(argv, TOP_FLAGS, 0);
  const db = stringFlag(args, 'db');
  if (db === undefined && stringFlag(args, 'bus') === undefined) {
    throw new CliUsageError('--db PATH is required (or --bus redis://HOST:PORT for the queues alone)');
  }
  const postgres = db !== undefined && isPostgresUrl(db) ? db : undefined;
  // A PostgreSQL database holds no bus: its queues are on Redis (--bus), or not shown.
  const bus =
    postgres !== undefined && stringFlag(args, 'bus') === undefined && stringFlag(args, 'bus-prefix') === undefined
      ? undefined
      : parseBusChoice(args, postgres === undefined ? db : undefined);
  const intervalText = stringFlag(args, 'interval') ?? String(DEFAULT_TOP_INTERVAL_MS);
  const intervalMs = Number(intervalText);
  if (!/^\d+$/.test(intervalText) || intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS) {
    throw new CliUsageError(`--interval must be a whole number of ms from ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS}`);
  }
  return {
    db: db === undefined || postgres !== undefined ? undefined : resolve(db),
    postgres,
    redis: bus?.kind === 'redis' ? { url: bus.url, prefix: bus.prefix, label: describeBus(bus) } : undefined,
    intervalMs,
    once: booleanFlag(args, 'once'),
  };
}

function openReadOnly(path: string): SqliteDatabase {
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {
    throw new CliUsageError(`no database at ${path} (the file does not exist)`);
  }
  if (!isFile) throw new CliUsageError(`${path} is not a file`);
  try {
    const db = openDatabase(path, { readonly: true });
    db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    return db;
  } catch (error) {
    throw new CliUsageError(`cannot read ${path} as SQLite: ${(error as Error).message}`);
  }
}

/** Where the tasks and items come from: a file, a PostgreSQL database, or nowhere (the Redis queues alone). */
type Tables = { kind: 'file'; db: SqliteDatabase } | { kind: 'postgres'; opened: OpenedPostgres } | undefined;

/** What one refresh reads: the tables (one read transaction), then the Redis queues when asked for. */
async function readSnapshot(tables: Tables, queue: RedisQueue | undefined): Promise<SystemSnapshot> {
  const snapshot: SystemSnapshot =
    tables === undefined
      ? { at: Date.now(), tasks: null, queues: null, items: null }
      : tables.kind === 'file'
        ? readSystemSnapshot(tables.db)
        : await inSnapshot(tables.opened, (store) => readPostgresSnapshot(store));
  if (queue !== undefined) snapshot.queues = (await queue.statsOfAllRoles()).map(queueViewOf);
  return snapshot;
}

interface View {
  read(): Promise<SystemSnapshot>;
  screen: Pick<ScreenOptions, 'db' | 'intervalMs'> & { queueSource?: string };
}

async function runTop(argv: string[]): Promise<number> {
  let flags: TopFlags;
  let db: SqliteDatabase | undefined;
  try {
    flags = parseFlags(argv);
    db = flags.db === undefined ? undefined : openReadOnly(flags.db);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    process.stderr.write(`switchboard top: ${error.message}\n\n${TOP_USAGE}\n`);
    return 2;
  }
  if (flags.postgres !== undefined) {
    const topFlags = flags;
    return readOnPostgres(flags.postgres, 'top', (_store, opened) =>
      showTop(topFlags, { kind: 'postgres', opened }, opened.where),
    );
  }
  try {
    return await showTop(flags, db === undefined ? undefined : { kind: 'file', db }, flags.db);
  } finally {
    db?.close();
  }
}

/** Opens the Redis bus when asked for, then shows the screen (once, or live) until quit. */
async function showTop(flags: TopFlags, tables: Tables, where: string | undefined): Promise<number> {
  let queue: RedisQueue | undefined;
  try {
    if (flags.redis !== undefined) {
      try {
        queue = (await openBus({ kind: 'redis', url: flags.redis.url, prefix: flags.redis.prefix })) as RedisQueue;
      } catch (error) {
        process.stderr.write(`switchboard top: cannot open the bus: ${(error as Error).message}\n`);
        return 1;
      }
    }
    const opened = queue;
    const view: View = {
      read: () => readSnapshot(tables, opened),
      screen: {
        db: where ?? flags.redis?.label ?? '',
        intervalMs: flags.intervalMs,
        ...(flags.redis === undefined || where === undefined ? {} : { queueSource: flags.redis.label }),
      },
    };
    if (flags.once || !process.stdout.isTTY) {
      let snapshot: SystemSnapshot;
      try {
        snapshot = await view.read();
      } catch (error) {
        const what = tables?.kind === 'postgres' ? 'the database or the queues' : 'the queues';
        process.stderr.write(`switchboard top: cannot read ${what}: ${(error as Error).message}\n`);
        return 1;
      }
      const lines = renderScreen(snapshot, {
        ...view.screen,
        width: process.stdout.columns ?? 132,
        height: null,
        color: false,
      });
      process.stdout.write(`${lines.join('\n')}\n`);
      return 0;
    }
    return await liveView(view);
  } finally {
    await queue?.close();
  }
}

const ENTER_ALTERNATE_SCREEN = '\x1b[?1049h\x1b[?25l';
const LEAVE_ALTERNATE_SCREEN = '\x1b[?25h\x1b[?1049l';

/** Redraws every interval on the alternate screen until q, Ctrl-C or a signal. */
function liveView(view: View): Promise<number> {
  const out = process.stdout;
  const input = process.stdin;
  let last: SystemSnapshot | null = null;
  let error: string | undefined;
  let reading = false;
  let done = false;

  const paint = () => {
    const snapshot = last ?? { at: Date.now(), tasks: null, queues: null, items: null };
    const lines = renderScreen(snapshot, {
      ...view.screen,
      width: out.columns ?? 80,
      height: out.rows ?? 24,
      color: true,
      ...(error === undefined ? {} : { error }),
    });
    let frame = '';
    for (const [index, line] of lines.entries()) frame += `\x1b[${index + 1};1H${line}\x1b[K`;
    frame += `\x1b[${lines.length + 1};1H\x1b[J`;
    out.write(frame);
  };
  // One read at a time (a Redis read may outlast the interval); a failed read keeps the last snapshot.
  const draw = () => {
    if (reading) return;
    reading = true;
    view
      .read()
      .then(
        (snapshot) => {
          last = snapshot;
          error = undefined;
        },
        (e: unknown) => {
          error = (e as Error).message;
        },
      )
      .finally(() => {
        reading = false;
        if (!done) paint();
      });
  };

  return new Promise<number>((resolveExit) => {
    const finish = () => {
      if (done) return;
      done = true;
      clearInterval(timer);
      out.off('resize', paint);
      input.off('data', onKey);
      for (const signal of SIGNALS) process.off(signal, finish);
      if (input.isTTY) input.setRawMode(false);
      input.pause();
      out.write(LEAVE_ALTERNATE_SCREEN);
      resolveExit(0);
    };
    const onKey = (data: Buffer) => {
      const keys = data.toString('utf8');
      if (keys.includes('q') || keys.includes('Q') || keys.includes('\x03')) finish();
      else if (keys.includes(' ') || keys.includes('r')) draw();
    };
    out.write(ENTER_ALTERNATE_SCREEN);
    if (input.isTTY) input.setRawMode(true);
    input.on('data', onKey);
    input.resume();
    for (const signal of SIGNALS) process.on(signal, finish);
    out.on('resize', paint);
    const timer = setInterval(draw, view.screen.intervalMs);
    draw();
  });
}

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

export const topCommand: CliCommand = {
  name: 'top',
  summary: 'live terminal view of tasks, queues and work items in a database (q to quit)',
  usage: TOP_USAGE,
  run: runTop,
};
