import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { type Observable, Subject } from 'rxjs';
import {
  INITIAL_LEASE_STATE,
  type LeaseAction,
  type LeaseObservation,
  type LeaseRoleChange,
  type LeaseState,
  type LeaseTiming,
  decideLease,
} from '../../decisions/lease-decision.js';
import type { Logger } from '../../log/logger.js';
import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';
import { type PgConnection, type PgQuery, connectPostgres, redactPostgresUrl } from './postgres-connection.js';
import type { PgFence } from './postgres-client.js';
import { processExists } from '../kernel/process-liveness.js';
import { SchemaVersionError } from '../kernel/migrations.js';
import { PG_EPOCH_SETTING, type PgPool } from '../kernel/postgres.js';
import { type PgMigrationSet, migratePg, pgSchemaVersion } from '../kernel/postgres-migrations.js';

export type { PgQuery } from './postgres-connection.js';
export type { LeaseRoleChange } from '../../decisions/lease-decision.js';

/** Every code a `CoordinatorLeaseError` carries. */
export const COORDINATOR_LEASE_ERROR_CODES = ERROR_CODES.CoordinatorLeaseError;
/** One code a `CoordinatorLeaseError` carries. */
export type CoordinatorLeaseErrorCode = ErrorCodeOf<'CoordinatorLeaseError'>;

/** The leader lease refused: a fenced commit, bad options, or a database it cannot use. */
export class CoordinatorLeaseError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: CoordinatorLeaseErrorCode;
  constructor(code: CoordinatorLeaseErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

/**
 * The lease's tables, a component of their own in the database's
 * `schema_version` (`coordinator-lease`): made by the first lease that starts
 * on a database (tables an earlier version made without a version row are
 * taken as version 1), and a database of a newer version refused
 * (`SchemaVersionError`, `SCHEMA_TOO_NEW`), as the store's tables are.
 */
export const LEASE_MIGRATION_SET: PgMigrationSet = {
  component: 'coordinator-lease',
  current: 1,
  migrations: [
    {
      version: 1,
      name: 'the leader lease and the Coordinators seen on it',
      sql: [
        `CREATE TABLE IF NOT EXISTS coordinator_lease (
          id smallint PRIMARY KEY CHECK (id = 1),
          epoch bigint NOT NULL DEFAULT 0,
          holder text,
          pid integer,
          host text,
          process_start timestamptz,
          since timestamptz,
          renewed_at timestamptz,
          expires_at timestamptz
        )`,
        'INSERT INTO coordinator_lease (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING',
        `CREATE TABLE IF NOT EXISTS coordinator_lease_members (
          id text PRIMARY KEY,
          pid integer NOT NULL,
          host text NOT NULL,
          process_start timestamptz NOT NULL,
          first_seen timestamptz NOT NULL DEFAULT now(),
          last_seen timestamptz NOT NULL
        )`,
      ],
    },
  ],
};

/** How long the start may take to connect and create the tables (longer than an attempt: it happens once). */
const SETUP_TIMEOUT_MS = 30_000;

/** A member (a standby that stopped without closing) not seen for this long is forgotten (or ten leases, if longer). */
const MEMBER_FORGET_MS = 5 * 60_000;

/** Milliseconds since the Unix epoch of a timestamptz column, as a float8 (null stays null). */
const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8`;

export interface PostgresLeaseOptions {
  /** The database, `postgres://user:password@host:port/name` (the password is never logged). */
  url: string;
  /** This Coordinator's id in the lease (default a random UUID). */
  id?: string;
  /** How long a taken or renewed lease holds (default 10 s). */
  leaseMs?: number;
  /** How often the leader renews and a standby looks (default 3 s; under half of `leaseMs`). */
  renewMs?: number;
  /** The first wait after a failure, doubling up to `renewMs` (default 100 ms). */
  backoffMinMs?: number;
  /** An attempt that has not answered after this long failed (default `renewMs`). */
  queryTimeoutMs?: number;
  /** Where the lease logs its role changes and failed attempts (pino, stderr). */
  logger?: Logger;
  /** Whether a process of this host still exists (injectable for tests). */
  alive?: (pid: number) => boolean;
  /** A monotonic clock in milliseconds (default `performance.now`). */
  now?: () => number;
}

/** The lease row as `coordinator status` shows it (times in epoch milliseconds, by the database's clock). */
export interface LeaseHolderStatus {
  epoch: number;
  holder: string;
  pid: number;
  host: string;
  processStart: number | null;
  since: number;
  renewedAt: number;
  expiresAt: number;
  /** Whether the lease holds now (its expiry is in the future). */
  live: boolean;
}

/** One Coordinator seen on the lease (times in epoch milliseconds, by the database's clock). */
export interface LeaseMemberStatus {
  id: string;
  pid: number;
  host: string;
  processStart: number;
  firstSeen: number;
  lastSeen: number;
}

/** What `readLeaseStatus` reads: the lease row and the members seen. */
export interface LeaseStatus {
  /** The database's clock. */
  now: number;
  /** The epoch of the row (0: never taken). */
  epoch: number;
  /** The holder of the last epoch, live or lapsed; null when never taken. */
  holder: LeaseHolderStatus | null;
  /** Every Coordinator seen on the lease, but the holder, most recent first. */
  standbys: LeaseMemberStatus[];
}

/**
 * The lease and its members as stored, or `undefined` when the database has
 * no lease table (no lease ever started on it). Reads only.
 */
export async function readLeaseStatus(db: PgQuery): Promise<LeaseStatus | undefined> {
  const version = await pgSchemaVersion(db, LEASE_MIGRATION_SET.component);
  if (version > LEASE_MIGRATION_SET.current) {
    throw new SchemaVersionError(LEASE_MIGRATION_SET.component, version, LEASE_MIGRATION_SET.current);
  }
  const exists = await db.query(
    "SELECT to_regclass('coordinator_lease') IS NOT NULL AS lease, to_regclass('coordinator_lease_members') IS NOT NULL AS members",
  );
  if (exists.rows[0]?.lease !== true) return undefined;
  const lease = await db.query(
    `SELECT epoch::text AS epoch, holder, pid, host, ${ms('process_start')} AS process_start, ${ms('since')} AS since,
       ${ms('renewed_at')} AS renewed_at, ${ms('expires_at')} AS expires_at, ${ms('now()')} AS now,
       coalesce(expires_at > now(), false) AS live
     FROM coordinator_lease WHERE id = 1`,
  );
  const row = lease.rows[0];
  const now =
    row === undefined ? Number((await db.query(`SELECT ${ms('now()')} AS now`)).rows[0].now) : Number(row.now);
  const holder: LeaseHolderStatus | null =
    row === undefined || row.holder === null
      ? null
      : {
          epoch: Number(row.epoch),
          holder: String(row.holder),
          pid: Number(row.pid),
          host: String(row.host),
          processStart: row.process_start === null ? null : Number(row.process_start),
          since: Number(row.since),
          renewedAt: Number(row.renewed_at),
          expiresAt: Number(row.expires_at),
          live: row.live === true,
        };
  let standbys: LeaseMemberStatus[] = [];
  if (exists.rows[0]?.members === true) {
    const members = await db.query(
      `SELECT id, pid, host, ${ms('process_start')} AS process_start, ${ms('first_seen')} AS first_seen,
         ${ms('last_seen')} AS last_seen
       FROM coordinator_lease_members WHERE id IS DISTINCT FROM $1 ORDER BY last_seen DESC, id`,
      [holder?.live === true ? holder.holder : null],
    );
    standbys = members.rows.map((m) => ({
      id: String(m.id),
      pid: Number(m.pid),
      host: String(m.host),
      processStart: Number(m.process_start),
      firstSeen: Number(m.first_seen),
      lastSeen: Number(m.last_seen),
    }));
  }
  return { now, epoch: row === undefined ? 0 : Number(row.epoch), holder, standbys };
}

/** The role a lease holds now. */
export type LeaseRole = 'leader' | 'standby' | 'closed';

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new CoordinatorLeaseError(
      'COORD_LEASE_INVALID_OPTIONS',
      `${name} must be a positive number of milliseconds (got ${value})`,
      {
        details: { [name]: value },
      },
    );
  }
  return value;
}

/**
 * One leading Coordinator among several sharing a PostgreSQL database. The
 * lease is one row (`coordinator_lease`): an epoch, its holder and until when
 * it holds, by the database's clock. Taking the lease (free, lapsed, or held
 * by a dead process of this host) increments the epoch; the leader renews it
 * every `renewMs`; standbys look for a lapse as often and take over. Every
 * Coordinator also keeps a row in `coordinator_lease_members` (standbys seen).
 *
 * Fencing: `assertEpoch(tx)` runs first inside each commit transaction. It
 * locks the lease row `FOR SHARE` (so a takeover waits for the commit, and a
 * commit after a takeover sees the new epoch) and throws `COORD_FENCED` when
 * the epoch is no longer this leader's, or when this lease no longer believes
 * it leads: a replaced leader never commits again, however long it was paused
 * or cut off. A leader that cannot renew before its local deadline (the send
 * time of its last successful renewal plus `leaseMs`) stops leading at once,
 * reconnects with backoff and rejoins as a standby.
 *
 * The decisions are `decideLease` (pure, in src/decisions/); this class runs
 * the attempts, the timers and the connection.
 */
export class PostgresLease {
  /** This Coordinator's id in the lease (the `holder` of its epochs, its member row). */
  readonly id: string;
  readonly #url: string;
  readonly #timing: LeaseTiming;
  readonly #queryTimeoutMs: number;
  readonly #log: Logger | undefined;
  readonly #alive: (pid: number) => boolean;
  readonly #now: () => number;
  readonly #host = hostname();
  readonly #processStart = Date.now() - process.uptime() * 1000;
  readonly #changes = new Subject<LeaseRoleChange>();
  #state: LeaseState = INITIAL_LEASE_STATE;
  #connection: PgConnection | undefined;
  #attemptTimer: NodeJS.Timeout | undefined;
  #deadlineTimer: NodeJS.Timeout | undefined;
  /** The attempt running, if any (close waits for it). */
  #inFlight: Promise<void> | undefined;
  #started = false;
  /** Resolves the first attempt's outcome for `acquire()`. */
  #firstOutcome: ((outcome: LeaseObservation) => void) | undefined;

  /** Every role change: `leader` (with its epoch), `standby`, `lost` (with the epoch and why). */
  readonly roles$: Observable<LeaseRoleChange> = this.#changes.asObservable();

  constructor(options: PostgresLeaseOptions) {
    this.#url = options.url;
    this.id = options.id ?? randomUUID();
    const leaseMs = positive('leaseMs', options.leaseMs ?? 10_000);
    const renewMs = positive('renewMs', options.renewMs ?? 3_000);
    if (renewMs * 2 > leaseMs) {
      throw new CoordinatorLeaseError(
        'COORD_LEASE_INVALID_OPTIONS',
        `renewMs (${renewMs}) must be at most half of leaseMs (${leaseMs}), so that one failed renewal does not lose the lease`,
        { details: { leaseMs, renewMs } },
      );
    }
    const backoffMinMs = positive('backoffMinMs', options.backoffMinMs ?? Math.min(100, renewMs));
    this.#timing = { leaseMs, renewMs, backoffMinMs, backoffMaxMs: Math.max(backoffMinMs, renewMs) };
    this.#queryTimeoutMs = positive('queryTimeoutMs', options.queryTimeoutMs ?? renewMs);
    this.#log = options.logger;
    this.#alive = options.alive ?? processExists;
    this.#now = options.now ?? (() => performance.now());
  }

  /** The lease's timing (after defaults). */
  get timing(): LeaseTiming {
    return this.#timing;
  }

  /** The role this lease holds now (a leader past its local deadline is no longer one). */
  get role(): LeaseRole {
    const state = this.#state;
    if (state.role === 'leader' && this.#now() >= state.deadline) return 'standby';
    return state.role;
  }

  /** The epoch this lease leads, or `undefined` when it does not lead. */
  get epoch(): number | undefined {
    const state = this.#state;
    return state.role === 'leader' && this.#now() < state.deadline ? state.epoch : undefined;
  }

  /**
   * Starts the lease: creates its tables if missing, makes the first attempt
   * and resolves with the role it took (`leader` or `standby`); from then on
   * the leader renews and a standby watches, on their own. Rejects with
   * `COORD_LEASE_BACKEND` (and the lease is closed) when the database cannot be
   * reached or its tables cannot be created within 30 s; a first attempt that
   * fails after that resolves `standby`, and like every later failure is
   * retried with backoff.
   */
  async acquire(): Promise<'leader' | 'standby'> {
    if (this.#started)
      throw new CoordinatorLeaseError(
        'COORD_LEASE_INVALID_OPTIONS',
        'this lease was already started: call acquire() once',
      );
    this.#started = true;
    try {
      const connection = await this.#connect(SETUP_TIMEOUT_MS);
      await migratePg(this.#setupPool(connection), LEASE_MIGRATION_SET);
    } catch (error) {
      await this.close();
      throw error instanceof CoordinatorLeaseError || error instanceof SchemaVersionError
        ? error
        : this.#backendError('cannot create the lease tables', error);
    }
    const first = new Promise<LeaseObservation>((resolve) => {
      this.#firstOutcome = resolve;
    });
    this.#run('acquire');
    // A first attempt that failed (the database answered the setup, so a passing fault) leaves a standby that retries.
    await first;
    return this.role === 'leader' ? 'leader' : 'standby';
  }

  /** The lease's one connection as the pool a migration runs its transaction on (never released, never ended). */
  #setupPool(connection: PgConnection): PgPool {
    const query = (text: string, params?: unknown[]) => this.#query(connection, text, params, SETUP_TIMEOUT_MS);
    return {
      query,
      connect: async () => ({ query, release: () => {} }),
      end: async () => {},
      safeUrl: redactPostgresUrl(this.#url),
    };
  }

  #backendError(what: string, cause: unknown): CoordinatorLeaseError {
    const message = cause instanceof Error ? cause.message : String(cause);
    return new CoordinatorLeaseError(
      'COORD_LEASE_BACKEND',
      `${what} on ${redactPostgresUrl(this.#url)}: ${message} (check that PostgreSQL runs and the URL's user may create tables)`,
      { cause },
    );
  }

  /**
   * The fence: call it first inside every commit transaction (`tx` is the
   * transaction's connection). Throws `COORD_FENCED` when this lease does not
   * lead, or when the database's epoch is no longer this leader's; the caller
   * rolls back. It holds the lease row `FOR SHARE` until the transaction ends,
   * and sets the transaction's `idle_in_transaction_session_timeout` to
   * `renewMs`, so a leader cut off mid-commit cannot hold the row for long.
   * It leaves its epoch in the transaction's `PG_EPOCH_SETTING`: the audit
   * rows the transaction appends record it (a rolled-back one records none).
   */
  async assertEpoch(tx: PgQuery): Promise<void> {
    const epoch = this.#leadingEpoch();
    const { rows } = await tx.query(
      `SELECT epoch::text AS epoch, holder, set_config('idle_in_transaction_session_timeout', $1, true) AS idle,
         set_config($2, $3, true) AS committing
       FROM coordinator_lease WHERE id = 1 FOR SHARE`,
      [String(Math.ceil(this.#timing.renewMs)), PG_EPOCH_SETTING, String(epoch)],
    );
    const row = rows[0];
    if (row === undefined || Number(row.epoch) !== epoch || row.holder !== this.id) {
      throw this.#fenced(epoch, row === undefined ? undefined : Number(row.epoch));
    }
    // The lock may have waited: the local deadline still has to hold after it.
    this.#leadingEpoch();
  }

  /**
   * `assertEpoch` bound to this lease, for a store that takes a fence; its
   * `statement` form is the same check inside a commit of one statement.
   */
  readonly fence: PgFence = Object.assign((tx: PgQuery): Promise<void> => this.assertEpoch(tx), {
    statement: {
      expected: () => ({ epoch: this.#leadingEpoch(), holder: this.id }),
      refused: (epoch: number, found: number | undefined) => this.#fenced(epoch, found),
    },
  });

  #leadingEpoch(): number {
    const state = this.#state;
    if (state.role !== 'leader' || this.#now() >= state.deadline) throw this.#fenced(undefined, undefined);
    return state.epoch;
  }

  #fenced(epoch: number | undefined, current: number | undefined): CoordinatorLeaseError {
    const why =
      epoch === undefined
        ? 'this Coordinator does not hold the leader lease (it is a standby, or its lease lapsed)'
        : `the leader lease moved on to epoch ${current ?? 'unknown'}: this Coordinator led epoch ${epoch} and was replaced`;
    return new CoordinatorLeaseError(
      'COORD_FENCED',
      `${why}; nothing was committed: stop deciding, drop the in-memory state, and rejoin as a standby (the leader commits)`,
      { details: { id: this.id, epoch: epoch ?? null, currentEpoch: current ?? null } },
    );
  }

  /** Ends the lease: a leader releases it (a standby takes over at its next look); closes the connection. */
  async close(): Promise<void> {
    if (this.#state.role === 'closed' && this.#connection === undefined) return;
    clearTimeout(this.#attemptTimer);
    clearTimeout(this.#deadlineTimer);
    // A leader announces the loss and releases the lease; a first attempt still running answers acquire().
    this.#apply({ kind: 'close' });
    while (this.#inFlight !== undefined) {
      const inFlight = this.#inFlight;
      await inFlight;
      if (this.#inFlight === inFlight) this.#inFlight = undefined;
    }
    const connection = this.#connection;
    this.#connection = undefined;
    if (connection !== undefined) {
      try {
        await this.#query(connection, 'DELETE FROM coordinator_lease_members WHERE id = $1', [this.id]);
      } catch (error) {
        this.#log?.warn({ err: error }, 'could not remove this Coordinator from the lease members');
      }
      await connection.end();
    }
    this.#changes.complete();
  }

  #apply(observation: LeaseObservation): void {
    const before = this.#state;
    const { state, actions } = decideLease(this.#timing, before, observation);
    this.#state = state;
    if (this.#firstOutcome !== undefined && observation.kind !== 'tick') {
      const resolve = this.#firstOutcome;
      this.#firstOutcome = undefined;
      resolve(observation);
    }
    for (const action of actions) this.#do(action);
    clearTimeout(this.#deadlineTimer);
    this.#deadlineTimer = undefined;
    if (state.role === 'leader') {
      const wait = Math.max(0, state.deadline - this.#now());
      this.#deadlineTimer = setTimeout(() => this.#apply({ kind: 'tick', now: this.#now() }), Math.ceil(wait) + 1);
      this.#deadlineTimer.unref();
    }
  }

  #do(action: LeaseAction): void {
    switch (action.kind) {
      case 'announce':
        if (action.change.role === 'lost') {
          this.#log?.warn({ epoch: action.change.epoch, reason: action.change.reason }, 'stopped leading');
        } else if (action.change.role === 'leader') {
          this.#log?.info({ epoch: action.change.epoch }, 'leading');
        }
        this.#changes.next(action.change);
        return;
      case 'reset-connection':
        this.#connection?.destroy();
        this.#connection = undefined;
        return;
      case 'attempt':
        clearTimeout(this.#attemptTimer);
        this.#attemptTimer = setTimeout(() => this.#run(action.what), Math.max(0, Math.ceil(action.inMs)));
        this.#attemptTimer.unref();
        return;
      case 'release': {
        const connection = this.#connection;
        if (connection === undefined) return;
        const release = this.#query(
          connection,
          'UPDATE coordinator_lease SET expires_at = now() WHERE id = 1 AND epoch = $1 AND holder = $2',
          [action.epoch, this.id],
        ).then(
          () => undefined,
          (error: unknown) =>
            this.#log?.warn({ err: error }, 'could not release the leader lease (it lapses by itself)'),
        );
        const previous = this.#inFlight;
        this.#inFlight = previous === undefined ? release : previous.then(() => release);
        return;
      }
    }
  }

  #run(what: 'acquire' | 'renew'): void {
    if (this.#state.role === 'closed') return;
    const attempt = (what === 'acquire' ? this.#tryAcquire() : this.#tryRenew()).then(
      (observation) => observation,
      (error: unknown): LeaseObservation => {
        this.#log?.warn({ err: error, attempt: what }, 'leader lease attempt failed');
        return { kind: 'failed', now: this.#now() };
      },
    );
    const done = attempt.then((observation) => {
      if (this.#inFlight === done) this.#inFlight = undefined;
      if (this.#state.role !== 'closed') {
        this.#apply(observation);
        return;
      }
      this.#firstOutcome?.(observation);
      this.#firstOutcome = undefined;
      // Taken while closing: give it back at once rather than let it lapse.
      if (observation.kind === 'acquired') this.#do({ kind: 'release', epoch: observation.epoch });
    });
    this.#inFlight = done;
  }

  async #connect(timeoutMs = this.#queryTimeoutMs): Promise<PgConnection> {
    if (this.#connection !== undefined) return this.#connection;
    const connection = await connectPostgres(
      this.#url,
      (message, cause) => new CoordinatorLeaseError('COORD_LEASE_BACKEND', message, { cause }),
      {
        connectTimeoutMs: timeoutMs,
        statementTimeoutMs: this.#queryTimeoutMs,
        onError: (error) => {
          this.#log?.warn({ err: error }, 'the leader lease connection failed');
          if (this.#connection === connection) this.#connection = undefined;
          connection.destroy();
        },
      },
    );
    if (this.#state.role === 'closed') {
      connection.destroy();
      throw new CoordinatorLeaseError('COORD_LEASE_BACKEND', 'the lease was closed while it connected');
    }
    this.#connection = connection;
    return connection;
  }

  /** A query that fails after `queryTimeoutMs` (the connection is then reset by the decision). */
  async #query(
    connection: PgConnection,
    text: string,
    params?: unknown[],
    timeoutMs = this.#queryTimeoutMs,
  ): ReturnType<PgQuery['query']> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        connection.query(text, params),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer from PostgreSQL within ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** This Coordinator was seen now; members not seen for `MEMBER_FORGET_MS` (or ten leases) are forgotten. */
  async #seen(connection: PgConnection): Promise<void> {
    await this.#query(
      connection,
      `WITH forgotten AS (
         DELETE FROM coordinator_lease_members
         WHERE id <> $1 AND last_seen < now() - $5::float8 * interval '1 millisecond'
       )
       INSERT INTO coordinator_lease_members (id, pid, host, process_start, last_seen)
       VALUES ($1, $2, $3, to_timestamp($4::float8 / 1000), now())
       ON CONFLICT (id) DO UPDATE SET last_seen = now()`,
      [this.id, process.pid, this.#host, this.#processStart, Math.max(MEMBER_FORGET_MS, 10 * this.#timing.leaseMs)],
    );
  }

  async #tryAcquire(): Promise<LeaseObservation> {
    const connection = await this.#connect();
    await this.#seen(connection);
    const { rows } = await this.#query(
      connection,
      `SELECT epoch::text AS epoch, holder, pid, host, coalesce(expires_at <= now(), true) AS lapsed
       FROM coordinator_lease WHERE id = 1`,
    );
    const row = rows[0];
    if (row === undefined) throw new Error('the coordinator_lease row is missing (was it deleted by hand?)');
    const deadHolder = row.host === this.#host && row.pid !== null && !this.#alive(Number(row.pid));
    const free = row.holder === null || row.lapsed === true || row.holder === this.id || deadHolder;
    if (!free) return { kind: 'held', now: this.#now() };
    if (deadHolder && row.lapsed !== true && row.holder !== this.id) {
      this.#log?.warn(
        { previous: { pid: row.pid, host: row.host, epoch: Number(row.epoch) } },
        'taking over the lease from a Coordinator that is gone',
      );
    }
    const sentAt = this.#now();
    // A compare-and-set on the epoch read: of several standbys racing, one takes it.
    const taken = await this.#query(
      connection,
      `UPDATE coordinator_lease SET epoch = epoch + 1, holder = $2, pid = $3, host = $4,
         process_start = to_timestamp($5::float8 / 1000), since = now(), renewed_at = now(),
         expires_at = now() + $6::float8 * interval '1 millisecond'
       WHERE id = 1 AND epoch = $1::bigint
       RETURNING epoch::text AS epoch`,
      [row.epoch, this.id, process.pid, this.#host, this.#processStart, this.#timing.leaseMs],
    );
    const epoch = taken.rows[0]?.epoch;
    if (epoch === undefined) return { kind: 'held', now: this.#now() };
    return { kind: 'acquired', epoch: Number(epoch), sentAt, now: this.#now() };
  }

  async #tryRenew(): Promise<LeaseObservation> {
    const state = this.#state;
    if (state.role !== 'leader') return { kind: 'held', now: this.#now() };
    const connection = await this.#connect();
    await this.#seen(connection);
    const sentAt = this.#now();
    const renewed = await this.#query(
      connection,
      `UPDATE coordinator_lease SET renewed_at = now(), expires_at = now() + $3::float8 * interval '1 millisecond'
       WHERE id = 1 AND epoch = $1::bigint AND holder = $2
       RETURNING epoch::text AS epoch`,
      [state.epoch, this.id, this.#timing.leaseMs],
    );
    const now = this.#now();
    if (renewed.rows.length === 0) return { kind: 'replaced', now };
    return { kind: 'renewed', epoch: Number(renewed.rows[0].epoch), sentAt, now };
  }
}
