import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, statSync } from 'node:fs';
import { type Socket, connect as netConnect } from 'node:net';
import { type BrokerOwner, BrokerOwnershipError, liveOwner } from '../persistence/a2a/owner.js';
import { isInMemoryPath, openDatabase } from '../persistence/kernel/database.js';
import { backgroundLogPath, canonicalDatabasePath, defaultSocketPath, runtimeDirectory } from './host-paths.js';
import { SWITCHBOARD_BIN } from './serve-process.js';
import { TransportError } from './transport-error.js';
import { formatDuration } from '../protocol/retention.js';

/**
 * Joining the host's broker of a database file, or starting it: what
 * `connect({ db })` does. Like a language server or `ssh-agent`, the broker
 * starts when first needed, runs in the background (it outlives the process
 * that started it), serves every runtime of this user on its socket, and
 * stops by itself `idleSeconds` after its last connection closed.
 */

/** Seconds a background broker started by `connect({ db })` keeps running without any connection (default). */
export const DEFAULT_BROKER_IDLE_SECONDS = 60;

/** How long `connect({ db })` waits for a broker it started to listen. */
const START_TIMEOUT_MS = 20_000;

/** Options of `joinHostBroker`. */
export interface JoinHostBrokerOptions {
  /** Seconds a broker started here stays up after its last connection closes (default 60). */
  idleSeconds?: number;
  /** `--durability` of a broker started here. */
  durability?: 'normal' | 'full';
  /** `--task-retention` of a broker started here, in milliseconds (default: every task is kept). */
  taskRetentionMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** Opens a connection to the broker listening on `path`, or throws `TransportError` `NO_BROKER`. */
export function connectSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(path);
    const onError = (error: NodeJS.ErrnoException) => {
      socket.destroy();
      reject(
        new TransportError(
          'NO_BROKER',
          `no broker listens on ${path} (${error.code ?? error.message}): start one with switchboard serve --listen unix:${path}, or connect({ db }) to start it`,
          { details: { socket: path, reason: error.code ?? error.message }, cause: error },
        ),
      );
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** The live owner of a database file, read beside it (read-only); undefined if none or no file. */
function ownerOf(db: string): BrokerOwner | undefined {
  if (!existsSync(db)) return undefined;
  try {
    const handle = openDatabase(db, { readonly: true });
    try {
      return liveOwner(handle, db);
    } finally {
      handle.close();
    }
  } catch {
    // No owner table yet (a file of an older version, or not a broker's): nobody owns it.
    return undefined;
  }
}

/**
 * A connection to the broker that owns `db`: its socket if it listens (the
 * default one, or the one its ownership names), else a broker started now in
 * the background on the default socket. Of runtimes racing to start it, one
 * broker wins the file and the others join it.
 */
export async function joinHostBroker(dbPath: string, options: JoinHostBrokerOptions = {}): Promise<Socket> {
  if (isInMemoryPath(dbPath)) {
    throw new TypeError(
      `connect({ db: '${dbPath}' }): a database in memory belongs to one process and has no host broker; give a file path, or use connect({ spawn })`,
    );
  }
  const db = canonicalDatabasePath(dbPath);
  const env = options.env ?? process.env;
  const socketPath = defaultSocketPath(db, env);
  const joined = await tryJoin(db, socketPath);
  if (joined !== undefined) return joined;
  const child = startBackgroundBroker(db, socketPath, options, env);
  const deadline = Date.now() + START_TIMEOUT_MS;
  let delay = 10;
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 100);
    const socket = await tryJoin(db, socketPath);
    if (socket !== undefined) return socket;
    // Ours exited: joined by a racer that won the file, or failed (its log says why).
    if (child.exited && ownerOf(db) === undefined) {
      throw new TransportError('SPAWN_FAILED', `the broker of ${db} did not start: ${child.failure()}`, {
        details: { db, log: child.log },
      });
    }
  }
  throw new TransportError(
    'SPAWN_FAILED',
    `the broker of ${db} did not listen on ${socketPath} within ${START_TIMEOUT_MS / 1000} s: ${child.failure()}`,
    { details: { db, log: child.log } },
  );
}

async function tryJoin(db: string, socketPath: string): Promise<Socket | undefined> {
  try {
    return await connectSocket(socketPath);
  } catch {
    // Not on the default socket: a live owner elsewhere is joined there, or named.
  }
  const owner = ownerOf(db);
  if (owner === undefined) return undefined;
  if (owner.socket === null) throw new BrokerOwnershipError(db, owner);
  if (owner.socket === socketPath) return undefined;
  return connectSocket(owner.socket);
}

interface BackgroundBroker {
  readonly exited: boolean;
  readonly log: string;
  failure(): string;
}

function startBackgroundBroker(
  db: string,
  socketPath: string,
  options: JoinHostBrokerOptions,
  env: NodeJS.ProcessEnv,
): BackgroundBroker {
  mkdirSync(runtimeDirectory(env), { recursive: true, mode: 0o700 });
  const log = backgroundLogPath(db, env);
  rotateLog(log);
  const logFd = openSync(log, 'a', 0o600);
  const idle = options.idleSeconds ?? DEFAULT_BROKER_IDLE_SECONDS;
  const args = [SWITCHBOARD_BIN, 'serve', '--db', db, '--listen', `unix:${socketPath}`, '--idle-exit', String(idle)];
  if (options.durability !== undefined) args.push('--durability', options.durability);
  if (options.taskRetentionMs !== undefined) args.push('--task-retention', formatDuration(options.taskRetentionMs));
  // Detached, its own session, no pipe to us: it outlives the process that started it.
  const child = spawn(process.execPath, args, { detached: true, stdio: ['ignore', 'ignore', logFd], env });
  closeSync(logFd);
  let exited = false;
  let spawnError: Error | undefined;
  child.once('exit', () => {
    exited = true;
  });
  child.once('error', (error) => {
    spawnError = error;
    exited = true;
  });
  child.unref();
  return {
    get exited() {
      return exited;
    },
    log,
    failure: () => spawnError?.message ?? fatalLine(log, child.pid) ?? `see its log ${log}`,
  };
}

/** A background broker's log is rotated when one starts and it is longer than this: it becomes `LOG.1`. */
export const BACKGROUND_LOG_MAX_BYTES = 8 * 1024 * 1024;

/**
 * Keeps a background broker's log bounded: at a start, a log longer than
 * `BACKGROUND_LOG_MAX_BYTES` is renamed to `LOG.1` (replacing the previous
 * one), so at most two logs of about that size are kept per file. A
 * rotation that fails (another starter rotated it first) is left alone.
 */
export function rotateLog(log: string, maxBytes = BACKGROUND_LOG_MAX_BYTES): void {
  try {
    if (statSync(log).size <= maxBytes) return;
    renameSync(log, `${log}.1`);
  } catch {
    // No log yet, or another starter rotated it at the same moment.
  }
}

/** The message of the last fatal or error line the broker `pid` wrote to its log. */
function fatalLine(log: string, pid: number | undefined): string | undefined {
  let text: string;
  try {
    text = readFileSync(log, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.trim().split('\n').reverse();
  for (const line of lines) {
    try {
      const entry = JSON.parse(line) as { pid?: number; level?: number; msg?: string };
      if (entry.pid === pid && (entry.level ?? 0) >= 50 && entry.msg !== undefined) return entry.msg;
    } catch {
      // Not a log line (e.g. a usage message): shown as it is.
      if (line.trim() !== '') return line.trim();
    }
  }
  return undefined;
}
