import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { ERROR_CODES, type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';
import { type SqliteDatabase, openPlainDatabase } from '../kernel/database.js';
import { processExists } from '../kernel/process-liveness.js';

/**
 * One broker per file. The owner is the row of `a2a_owner`: taken when a
 * broker opens the file (inside one `BEGIN IMMEDIATE`, so of two brokers
 * racing exactly one wins), deleted when it closes. A row whose process is
 * gone (killed, crashed) is taken over at once: on the same host the pid is
 * checked with signal 0 and, on Linux, against the process start recorded
 * with it (a reused pid is not the owner). An owner whose host name is not
 * this one's (another container on the same volume, whose pids mean nothing
 * here) is known by its lock: the owner holds an exclusive SQLite lock on the
 * side file `PATH-owner` for as long as its process lives, and the system
 * drops that lock when the process dies, however it dies. Otherwise opening
 * is refused with `BROKER_FILE_OWNED`, naming the owner and how to reach it.
 */

/** Who owns a broker's file: the `a2a_owner` row. */
export interface BrokerOwner {
  /** The owner's process id (on `host`). */
  pid: number;
  /** The host name of the machine it runs on. */
  host: string;
  /** When it took the file (ISO 8601). */
  since: string;
  /** The local socket it listens on, or null (stdio or in process only). */
  socket: string | null;
}

/** The codes of `BrokerOwnershipError`. */
export const BROKER_OWNERSHIP_ERROR_CODES = ERROR_CODES.BrokerOwnershipError;

/** A broker's file is owned by another live broker (`details`: its pid, host, since, socket). */
export class BrokerOwnershipError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'BrokerOwnershipError'>;

  constructor(path: string, owner: BrokerOwner) {
    const reach =
      owner.socket === null
        ? 'it serves no socket: stop it (or talk to it through the process that started it)'
        : `join it at unix:${owner.socket} (connect({ socket }) or connect({ db }))`;
    super(
      'BROKER_FILE_OWNED',
      `${path} is owned by a live broker: pid ${owner.pid} on ${owner.host}, since ${owner.since}; ${reach}, or stop it first (one broker per file)`,
      { details: { path, ...owner } },
    );
  }
}

interface OwnerRow extends BrokerOwner {
  token: string;
  processStart: string;
}

/** Tokens of the owners held by brokers open in this process (a same-pid row is live only if listed). */
const heldHere = new Set<string>();

/**
 * The identity of a process beyond its pid: the boot id and the start time
 * in clock ticks (`/proc/PID/stat`, field 22). Empty where `/proc` is absent:
 * then only the pid is checked.
 */
export function processStart(pid: number): string {
  try {
    const boot = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return `${boot}:${fields[19] ?? ''}`;
  } catch {
    return '';
  }
}

/** The side file whose lock an owner holds while it lives. */
export function ownerLockPath(path: string): string {
  return `${path}-owner`;
}

/**
 * Takes the owner's lock: an exclusive lock on the side file, kept until
 * `release` (or the process's death). Throws if another process holds it.
 */
function takeOwnerLock(path: string): { release(): void } {
  const db = openPlainDatabase(ownerLockPath(path));
  try {
    db.pragma('busy_timeout = 0');
    db.pragma('locking_mode = EXCLUSIVE');
    db.pragma('journal_mode = MEMORY');
    // The first write in exclusive mode takes the lock and keeps it.
    db.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS owner (pid INTEGER); DELETE FROM owner; COMMIT');
  } catch (error) {
    db.close();
    throw error;
  }
  return { release: () => db.close() };
}

/**
 * Whether a live process holds the owner's lock of `path`: true when the side
 * file cannot be read (SQLITE_BUSY while the lock is held), false when it
 * can, and undefined when there is no side file (an owner of an older version).
 */
export function ownerLockHeld(path: string): boolean | undefined {
  const file = ownerLockPath(path);
  if (!existsSync(file)) return undefined;
  let db: SqliteDatabase | undefined;
  try {
    db = openPlainDatabase(file, { readonly: true, fileMustExist: true });
    db.pragma('busy_timeout = 0');
    db.prepare('SELECT count(*) FROM sqlite_master').get();
    return false;
  } catch {
    // SQLITE_BUSY: the lock is held. Unreadable for any other reason: taken as held too (never two writers).
    return true;
  } finally {
    db?.close();
  }
}

/**
 * Whether the process recorded in an owner row still runs. Another host's
 * owner is live while its lock is held (and, with no lock file, always).
 */
function ownerAlive(row: OwnerRow, host: string, path: string): boolean {
  if (row.host !== host) return ownerLockHeld(path) ?? true;
  if (row.pid === process.pid) return heldHere.has(row.token);
  if (!processExists(row.pid)) return false;
  if (row.processStart === '') return true;
  const now = processStart(row.pid);
  return now === '' || now === row.processStart;
}

/** The file's owner, if a live broker holds it (a read: for error messages and `status`). */
export function liveOwner(db: SqliteDatabase, path: string): BrokerOwner | undefined {
  const row = readOwner(db);
  return row === undefined || !ownerAlive(row, hostname(), path) ? undefined : publicOwner(row);
}

function readOwner(db: SqliteDatabase): OwnerRow | undefined {
  return db
    .prepare('SELECT token, pid, host, process_start AS processStart, since, socket FROM a2a_owner WHERE id = 1')
    .get() as OwnerRow | undefined;
}

/** The owner named when its lock is held but its row is gone. */
function unknownOwner(): BrokerOwner {
  return { pid: 0, host: 'unknown', since: 'unknown', socket: null };
}

function publicOwner(row: OwnerRow): BrokerOwner {
  return { pid: row.pid, host: row.host, since: row.since, socket: row.socket };
}

/** What `claimOwnership` did: the previous owner it found gone, if any. */
export interface OwnershipClaim {
  token: string;
  /** The owner that was gone (killed or crashed) and whose row was taken over. */
  tookOverFrom: BrokerOwner | undefined;
  /** Gives the file up: deletes the row if it is still this claim's. Idempotent. */
  release(): void;
}

/**
 * Takes the file for this process, or throws `BrokerOwnershipError` when a
 * live broker owns it. One `BEGIN IMMEDIATE` reads and writes the row: two
 * brokers racing are serialized by SQLite's write lock and the second sees
 * the first's row.
 */
export function claimOwnership(
  db: SqliteDatabase,
  path: string,
  options: { socket?: string | null; now: () => string },
): OwnershipClaim {
  const token = randomUUID();
  const host = hostname();
  let lock: { release(): void } | undefined;
  const take = db.transaction((): BrokerOwner | undefined => {
    const current = readOwner(db);
    if (current !== undefined && ownerAlive(current, host, path)) {
      throw new BrokerOwnershipError(path, publicOwner(current));
    }
    // Inside the file's write lock: of brokers racing, only this one reaches here now.
    try {
      lock = takeOwnerLock(path);
    } catch {
      // Held after all (an owner row written by a broker that has not committed it yet cannot be:
      // the write lock serializes claims): a live owner whose row is gone. Refuse rather than share.
      throw new BrokerOwnershipError(path, current === undefined ? unknownOwner() : publicOwner(current));
    }
    db.prepare(
      `INSERT INTO a2a_owner (id, token, pid, host, process_start, since, socket) VALUES (1, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET token = excluded.token, pid = excluded.pid, host = excluded.host,
         process_start = excluded.process_start, since = excluded.since, socket = excluded.socket`,
    ).run(token, process.pid, host, processStart(process.pid), options.now(), options.socket ?? null);
    return current === undefined ? undefined : publicOwner(current);
  });
  let tookOverFrom: BrokerOwner | undefined;
  try {
    tookOverFrom = take.immediate();
  } catch (error) {
    lock?.release();
    throw error;
  }
  heldHere.add(token);
  let released = false;
  return {
    token,
    tookOverFrom,
    release() {
      if (released) return;
      released = true;
      heldHere.delete(token);
      try {
        db.prepare('DELETE FROM a2a_owner WHERE id = 1 AND token = ?').run(token);
      } finally {
        lock?.release();
      }
    },
  };
}
