import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { type SystemSnapshot, readSystemSnapshot } from '../inspect/system-snapshot.js';
import { renderScreen } from '../inspect/top-screen.js';
import { type SqliteDatabase, openDatabase } from '../persistence/database.js';
import type { CliCommand } from './command.js';
import { CliUsageError } from './command-args.js';

export const DEFAULT_TOP_INTERVAL_MS = 1000;
const MIN_INTERVAL_MS = 50;
const MAX_INTERVAL_MS = 60_000;

export const TOP_USAGE = `Usage: switchboard top --db PATH [--interval MS] [--once]

A live view of a switchboard database in the terminal: tasks by state and the
live ones that waited longest, the work queues per role (ready, delayed, in
flight, dead letters, done, age of the oldest ready message), and the
Coordinator's work items with their stage, hop and cost (when the file holds
them). Reads the file read-only, while the broker, workers and Coordinator
write it. Redraws in place every interval; q or Ctrl-C quits and restores the
terminal. When stdout is not a terminal (a pipe, CI), prints one snapshot as
plain text and exits.

Options:
  --db PATH        the SQLite file (must exist)
  --interval MS    refresh period in ms, ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS} (default: ${DEFAULT_TOP_INTERVAL_MS})
  --once           print one snapshot and exit, even on a terminal
  -h, --help       show this help`;

interface TopFlags {
  db: string;
  intervalMs: number;
  once: boolean;
}

function parseFlags(argv: string[]): TopFlags {
  let values: { db?: string; interval?: string; once?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: { db: { type: 'string' }, interval: { type: 'string' }, once: { type: 'boolean' } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw new CliUsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.db === undefined || values.db === '') throw new CliUsageError('--db PATH is required');
  const intervalText = values.interval ?? String(DEFAULT_TOP_INTERVAL_MS);
  const intervalMs = Number(intervalText);
  if (!/^\d+$/.test(intervalText) || intervalMs < MIN_INTERVAL_MS || intervalMs > MAX_INTERVAL_MS) {
    throw new CliUsageError(`--interval must be a whole number of ms from ${MIN_INTERVAL_MS} to ${MAX_INTERVAL_MS}`);
  }
  return { db: resolve(values.db), intervalMs, once: values.once ?? false };
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

async function runTop(argv: string[]): Promise<number> {
  let flags: TopFlags;
  let db: SqliteDatabase;
  try {
    flags = parseFlags(argv);
    db = openReadOnly(flags.db);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    process.stderr.write(`switchboard top: ${error.message}\n\n${TOP_USAGE}\n`);
    return 2;
  }
  try {
    if (flags.once || !process.stdout.isTTY) {
      const lines = renderScreen(readSystemSnapshot(db), {
        db: flags.db,
        width: process.stdout.columns ?? 132,
        height: null,
        intervalMs: flags.intervalMs,
        color: false,
      });
      process.stdout.write(`${lines.join('\n')}\n`);
      return 0;
    }
    return await liveView(db, flags);
  } finally {
    db.close();
  }
}

const ENTER_ALTERNATE_SCREEN = '\x1b[?1049h\x1b[?25l';
const LEAVE_ALTERNATE_SCREEN = '\x1b[?25h\x1b[?1049l';

/** Redraws every interval on the alternate screen until q, Ctrl-C or a signal. */
function liveView(db: SqliteDatabase, flags: TopFlags): Promise<number> {
  const out = process.stdout;
  const input = process.stdin;
  let last: SystemSnapshot | null = null;
  let error: string | undefined;

  const draw = () => {
    try {
      last = readSystemSnapshot(db);
      error = undefined;
    } catch (e) {
      error = (e as Error).message;
    }
    const snapshot = last ?? { at: Date.now(), tasks: null, queues: null, items: null };
    const lines = renderScreen(snapshot, {
      db: flags.db,
      width: out.columns ?? 80,
      height: out.rows ?? 24,
      intervalMs: flags.intervalMs,
      color: true,
      ...(error === undefined ? {} : { error }),
    });
    let frame = '';
    for (const [index, line] of lines.entries()) frame += `\x1b[${index + 1};1H${line}\x1b[K`;
    frame += `\x1b[${lines.length + 1};1H\x1b[J`;
    out.write(frame);
  };

  return new Promise<number>((resolveExit) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearInterval(timer);
      out.off('resize', draw);
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
    out.on('resize', draw);
    const timer = setInterval(draw, flags.intervalMs);
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
