import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { SqliteStatement as Statement } from '../../persistence/kernel/database.js';
import type { Logger } from '../../log/logger.js';
import type { SqliteDatabase } from '../../persistence/kernel/database.js';
import { CoordinatorError } from './types.js';
import { processExists } from '../../persistence/kernel/process-liveness.js';

/**
 * One Coordinator per file. A Coordinator keeps its live runs and records in
 * memory, so a second one on the same file would decide from stale state.
 * The owner is a row (`coord_owner`): taken on open, renewed by a heartbeat,
 * given up on close. Another Coordinator may take the file over only when the
 * owner is gone: its process no longer exists (same host: checked at once, so
 * a restart after a crash does not wait), or its heartbeat is older than
 * `staleMs` (another host, or a process that hangs). Otherwise opening is
 * refused with `COORD_FILE_OWNED`, naming the owner.
 */

export interface OwnerRow {
  token: string;
  pid: number;
  host: string;
  since: number;
  heartbeatAt: number;
}

export interface OwnershipOptions {
  db: SqliteDatabase;
  now: () => number;
  logger: Logger;
  /** How often the owner renews (default 1 s). */
  heartbeatMs?: number;
  /** How old a heartbeat may be before the file is taken over (default 10 s). */
  staleMs?: number;
  /** Whether a process of this host still exists (injectable for tests). */
  alive?: (pid: number) => boolean;
}

export class FileOwnership {
  readonly token = randomUUID();
  readonly #db: SqliteDatabase;
  readonly #now: () => number;
  readonly #log: Logger;
  readonly #heartbeatMs: number;
  readonly #staleMs: number;
  readonly #alive: (pid: number) => boolean;
  readonly #read: Statement;
  readonly #write: Statement;
  readonly #renew: Statement;
  readonly #release: Statement;
  #timer: NodeJS.Timeout | undefined;
  #lost = false;
  /** Called once if another Coordinator takes the file over while this one runs. */
  onLost: ((by: OwnerRow | undefined) => void) | undefined;

  constructor(options: OwnershipOptions) {
    this.#db = options.db;
    this.#now = options.now;
    this.#log = options.logger;
    this.#heartbeatMs = options.heartbeatMs ?? 1_000;
    this.#staleMs = options.staleMs ?? 10_000;
    this.#alive = options.alive ?? processExists;
    this.#read = this.#db.prepare(
      'SELECT token, pid, host, since, heartbeat_at AS heartbeatAt FROM coord_owner WHERE id = 1',
    );
    this.#write = this.#db.prepare(
      `INSERT INTO coord_owner (id, token, pid, host, since, heartbeat_at) VALUES (1, ?, ?, ?, ?, ?)
       ON CONFLICT (id) DO UPDATE SET token = excluded.token, pid = excluded.pid, host = excluded.host,
         since = excluded.since, heartbeat_at = excluded.heartbeat_at`,
    );
    this.#renew = this.#db.prepare('UPDATE coord_owner SET heartbeat_at = ? WHERE id = 1 AND token = ?');
    this.#release = this.#db.prepare('DELETE FROM coord_owner WHERE id = 1 AND token = ?');
  }

  /** The owner now, if any. */
  owner(): OwnerRow | undefined {
    return this.#read.get() as OwnerRow | undefined;
  }

  /** Takes the file, or throws `COORD_FILE_OWNED`. Starts the heartbeat. */
  claim(): void {
    const host = hostname();
    this.#db
      .transaction(() => {
        const now = this.#now();
        const current = this.owner();
        if (current !== undefined && current.token !== this.token) {
          const age = now - current.heartbeatAt;
          const gone = age > this.#staleMs || (current.host === host && !this.#alive(current.pid));
          if (!gone) {
            throw new CoordinatorError(
              'COORD_FILE_OWNED',
              `another Coordinator owns this file: pid ${current.pid} on ${current.host}, alive ${Math.max(0, age)} ms ago (run one Coordinator per file)`,
            );
          }
          this.#log.warn(
            { previous: { pid: current.pid, host: current.host, heartbeatAgoMs: age } },
            'taking over the file from a Coordinator that is gone',
          );
        }
        this.#write.run(this.token, process.pid, host, now, now);
      })
      .immediate();
    this.#timer = setInterval(() => this.#heartbeat(), this.#heartbeatMs);
    this.#timer.unref();
  }

  #heartbeat(): void {
    if (this.#lost) return;
    let renewed: boolean;
    try {
      renewed = this.#renew.run(this.#now(), this.token).changes === 1;
    } catch (error) {
      // A busy file: the next beat tries again (the stale bound is ten beats).
      this.#log.warn({ err: error }, 'could not renew the file ownership');
      return;
    }
    if (renewed) return;
    this.#lost = true;
    clearInterval(this.#timer);
    const by = this.owner();
    this.#log.error({ owner: by && { pid: by.pid, host: by.host } }, 'another Coordinator took this file over');
    this.onLost?.(by);
  }

  /** Gives the file up (on close). */
  release(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#lost) return;
    try {
      this.#release.run(this.token);
    } catch (error) {
      this.#log.warn({ err: error }, 'could not release the file ownership');
    }
  }
}
