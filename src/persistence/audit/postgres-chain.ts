import type * as crypto from 'node:crypto';
import type { AuditEntryInput, AuditHead, AuditRow } from '../../protocol/audit.js';
import { type Clock, systemClock } from '../kernel/clock.js';
import { SchemaVersionError } from '../kernel/migrations.js';
import { PG_EPOCH_SETTING, type PgPool, type PgQuery, inPgTransaction } from '../kernel/postgres.js';
import { type PgMigrationSet, migratePg, pgSchemaVersion } from '../kernel/postgres-migrations.js';
import type { AuditChain } from './audit-chain.js';
import { AuditError } from './audit-error.js';
import {
  type AuditAppended,
  type AuditListOptions,
  type StoredAuditRow,
  checkAuditEntry,
  isoNow,
  listLimit,
  listedAuditRow,
} from './audit-rows.js';
import { AUDIT_GENESIS_HASH, type ChainedRow, auditRowHash, chainEntries } from './chain-hash.js';
import { AuditChainWalk, type AuditVerification, type AuditVerifyOptions } from './chain-walk.js';
import { type AuditCheckpoint, checkpointSignerId, signCheckpoint, signsHead } from './checkpoints.js';

/**
 * The hash-chained audit in PostgreSQL: the same rows, the same hashing
 * (`chainEntries`) and the same verification (`AuditChainWalk`) as SQLite's
 * `SqliteAuditLog`, so one verifier reads both. Appends run inside the caller's
 * transaction (the Coordinator's commit): the head row is locked
 * (`FOR UPDATE`) for the rest of it, so appenders take turns.
 */
export const AUDIT_PG_MIGRATIONS: PgMigrationSet = {
  component: 'audit',
  current: 4,
  migrations: [
    {
      version: 1,
      name: 'audit log and head',
      sql: [
        `CREATE TABLE audit_log (
          seq BIGINT PRIMARY KEY,
          at TEXT NOT NULL,
          kind TEXT NOT NULL,
          item_id TEXT NOT NULL,
          hop INTEGER,
          actor TEXT NOT NULL,
          data TEXT NOT NULL,
          prev_hash TEXT NOT NULL,
          hash TEXT NOT NULL
        )`,
        'CREATE INDEX audit_log_item ON audit_log (item_id, seq)',
        `CREATE TABLE audit_head (
          id INTEGER PRIMARY KEY CHECK (id = 1),
          seq BIGINT NOT NULL,
          hash TEXT NOT NULL
        )`,
        `INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '${AUDIT_GENESIS_HASH}')`,
      ],
    },
    {
      version: 2,
      name: 'signed checkpoints',
      sql: [
        `CREATE TABLE audit_checkpoints (
          seq BIGINT PRIMARY KEY,
          hash TEXT NOT NULL,
          at TEXT NOT NULL,
          key_id TEXT NOT NULL,
          signature TEXT NOT NULL
        )`,
      ],
    },
    {
      version: 3,
      name: 'the committing epoch of each row',
      // Outside the hash (the chain stays SQLite's): the leader lease's epoch whose fenced commit appended the
      // row, NULL for rows from before this version and for a commit with no lease.
      sql: [
        'ALTER TABLE audit_log ADD COLUMN epoch BIGINT',
        `ALTER TABLE audit_log ALTER COLUMN epoch SET DEFAULT NULLIF(current_setting('${PG_EPOCH_SETTING}', true), '')::bigint`,
      ],
    },
    {
      version: 4,
      name: 'the epoch hashed with each new row',
      // Nothing is re-hashed: rows appended from this version on hash their epoch with their content
      // (`chainEntries`), older rows keep their hash. The version is raised so that a verifier from before,
      // which would not know the new rows' hashing, refuses the database instead of calling it broken.
      sql: [],
    },
  ],
};

/** Rows per INSERT statement at most (9 parameters a row). */
const INSERT_BATCH = 64;
/** Rows read per page while verifying. */
const VERIFY_PAGE = 5_000;

function storedFrom(r: Record<string, unknown>): StoredAuditRow {
  return {
    seq: Number(r.seq),
    at: r.at as string,
    kind: r.kind as string,
    item_id: r.item_id as string,
    hop: r.hop === null ? null : Number(r.hop),
    actor: r.actor as string,
    data: r.data as string,
    prev_hash: r.prev_hash as string,
    hash: r.hash as string,
    epoch: r.epoch === null || r.epoch === undefined ? null : Number(r.epoch),
  };
}

/** A row as listed: with its epoch when its hash covers it (rows appended from audit schema version 4 on). */
function listedPgRow(stored: StoredAuditRow): AuditRow {
  const row = listedAuditRow(stored);
  const epoch = stored.epoch ?? null;
  return auditRowHash(row.prevHash, { ...row, epoch }) === row.hash ? { ...row, epoch } : row;
}

export class PostgresAuditLog implements AuditChain {
  readonly #pool: PgPool;
  /** The clock's time in ISO 8601 (formatted once per millisecond). */
  readonly #now: () => string;

  private constructor(pool: PgPool, clock: Clock) {
    this.#pool = pool;
    this.#now = isoNow(clock);
  }

  /**
   * Opens the audit on a pool: migrates its tables, or with `readOnly`
   * (a verifier) only refuses a schema newer than this code's.
   */
  static async open(pool: PgPool, options: { clock?: Clock; readOnly?: boolean } = {}): Promise<PostgresAuditLog> {
    if (options.readOnly === true) {
      const found = await pgSchemaVersion(pool, AUDIT_PG_MIGRATIONS.component);
      if (found > AUDIT_PG_MIGRATIONS.current || found === 0) {
        throw new SchemaVersionError(AUDIT_PG_MIGRATIONS.component, found, AUDIT_PG_MIGRATIONS.current);
      }
    } else await migratePg(pool, AUDIT_PG_MIGRATIONS);
    return new PostgresAuditLog(pool, options.clock ?? systemClock);
  }

  /**
   * Appends rows in order inside the caller's open transaction `tx` (all or
   * none with it). Every entry is checked first: a bad one throws
   * `AuditError` before anything is written.
   */
  async appendInTransaction(tx: PgQuery, entries: readonly AuditEntryInput[]): Promise<AuditAppended[]> {
    if (entries.length === 0) return [];
    const checked = entries.map((e) => checkAuditEntry(e, this.#now));
    // The transaction's committing epoch (the fence's setting; null with no lease) is hashed with each row.
    const { epoch, ...head } = await this.#lockHead(tx);
    const rows = chainEntries(head, checked, epoch);
    const last = rows[rows.length - 1]!;
    for (let i = 0; i < rows.length; i += INSERT_BATCH) {
      const chunk = rows.slice(i, i + INSERT_BATCH);
      const params: unknown[] = [];
      const values = chunk.map(({ entry, seq, prevHash, hash }, j) => {
        params.push(
          seq,
          entry.at,
          entry.kind,
          entry.itemId,
          entry.hop,
          entry.actor,
          entry.dataText,
          prevHash,
          hash,
          epoch,
        );
        const b = j * 10;
        return `(${Array.from({ length: 10 }, (_, k) => `$${b + k + 1}`).join(', ')})`;
      });
      const insert = `INSERT INTO audit_log (seq, at, kind, item_id, hop, actor, data, prev_hash, hash, epoch) VALUES ${values.join(', ')}`;
      if (i + INSERT_BATCH < rows.length) await tx.query(insert, params);
      else {
        // The last rows and the head's move in one statement (one round trip fewer per append).
        const n = params.length;
        await tx.query(
          `WITH appended AS (${insert}) UPDATE audit_head SET seq = $${n + 1}, hash = $${n + 2} WHERE id = 1`,
          [...params, last.seq, last.hash],
        );
      }
    }
    return rows.map((r) => ({ seq: r.seq, hash: r.hash, at: r.entry.at, prevHash: r.prevHash }));
  }

  /**
   * The rows that append `entries` after `head`, checked and hashed as
   * `appendInTransaction` writes them, for a caller that writes them itself
   * in a statement that moves the head only from `head` (the Coordinator's
   * one-statement commit). Every entry is checked first: a bad one throws
   * `AuditError`. `epoch`: the epoch the statement writes in each row (null:
   * none), hashed with it.
   */
  chainAfter(head: AuditHead, entries: readonly AuditEntryInput[], epoch: number | null): ChainedRow[] {
    return chainEntries(
      head,
      entries.map((e) => checkAuditEntry(e, this.#now)),
      epoch,
    );
  }

  /** The head as it stands (not locked). */
  async readHead(q: PgQuery): Promise<AuditHead> {
    return headOf(await q.query('SELECT seq, hash FROM audit_head WHERE id = 1'));
  }

  /** The head, locked for the rest of `tx`, and the epoch `tx` commits under (the fence's setting; null: none). */
  async #lockHead(tx: PgQuery): Promise<AuditHead & { epoch: number | null }> {
    const result = await tx.query(
      `SELECT seq, hash, NULLIF(current_setting($1, true), '') AS epoch FROM audit_head WHERE id = 1 FOR UPDATE`,
      [PG_EPOCH_SETTING],
    );
    const epoch = (result.rows[0] as { epoch?: string | null } | undefined)?.epoch;
    return { ...headOf(result), epoch: epoch === null || epoch === undefined ? null : Number(epoch) };
  }

  /**
   * Signs the head inside the caller's transaction `tx` with an Ed25519
   * private key (never stored); null on an empty chain; a head already
   * signed by this key is not signed again.
   */
  async checkpointInTransaction(tx: PgQuery, privateKey: crypto.KeyObject): Promise<AuditCheckpoint | null> {
    const keyId = checkpointSignerId(privateKey);
    const head = await this.#lockHead(tx);
    if (head.seq === 0) return null;
    const existing = await tx.query(
      'SELECT seq, hash, at, key_id AS "keyId", signature FROM audit_checkpoints WHERE seq = $1',
      [head.seq],
    );
    const found = existing.rows[0] as AuditCheckpoint | undefined;
    if (signsHead(found, keyId, head)) return { ...found, seq: Number(found.seq) };
    const c = signCheckpoint(head, this.#now(), privateKey, keyId);
    await tx.query(
      `INSERT INTO audit_checkpoints (seq, hash, at, key_id, signature) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (seq) DO UPDATE SET hash = excluded.hash, at = excluded.at, key_id = excluded.key_id,
         signature = excluded.signature`,
      [c.seq, c.hash, c.at, c.keyId, c.signature],
    );
    return c;
  }

  /** Signs the head in a transaction of its own (the periodic checkpoint). */
  async checkpoint(privateKey: crypto.KeyObject): Promise<AuditCheckpoint | null> {
    return this.#inTransaction((tx) => this.checkpointInTransaction(tx, privateKey));
  }

  /** Appends rows in order in a transaction of their own, all or none. */
  async appendMany(entries: readonly AuditEntryInput[]): Promise<AuditAppended[]> {
    return this.#inTransaction((tx) => this.appendInTransaction(tx, entries));
  }

  #inTransaction<T>(run: (tx: PgQuery) => Promise<T>, mode = ''): Promise<T> {
    return inPgTransaction(this.#pool, run, `BEGIN${mode}`);
  }

  /** The chain head as stored. */
  async head(): Promise<AuditHead> {
    const row = (await this.#pool.query('SELECT seq, hash FROM audit_head WHERE id = 1')).rows[0] as
      | { seq: string; hash: string }
      | undefined;
    if (row === undefined) throw new AuditError('AUDIT_HEAD_MISSING', 'the audit head row is missing');
    return { seq: Number(row.seq), hash: row.hash };
  }

  /** Rows in order (of one work item, after a seq, up to a limit). */
  async list(options: AuditListOptions = {}): Promise<AuditRow[]> {
    const params: unknown[] = [options.afterSeq ?? 0];
    let where = 'seq > $1';
    if (options.itemId !== undefined) {
      params.push(options.itemId);
      where += ' AND item_id = $2';
    }
    const rows = await this.#pool.query(
      `SELECT * FROM audit_log WHERE ${where} ORDER BY seq LIMIT ${listLimit(options)}`,
      params,
    );
    return rows.rows.map((r) => listedPgRow(storedFrom(r)));
  }

  /** Every stored checkpoint, by row. */
  async checkpoints(q: PgQuery = this.#pool): Promise<AuditCheckpoint[]> {
    const rows = await q.query(
      'SELECT seq, hash, at, key_id AS "keyId", signature FROM audit_checkpoints ORDER BY seq',
    );
    return rows.rows.map((r) => ({ ...(r as AuditCheckpoint), seq: Number(r.seq) }));
  }

  /**
   * Walks the whole chain from the first row (`AuditChainWalk`: the checks of
   * `SqliteAuditLog.verifyChain`), rows and head read from one snapshot
   * (a REPEATABLE READ transaction), a page at a time.
   */
  async verifyChain(options: AuditVerifyOptions = {}): Promise<AuditVerification> {
    return this.#inTransaction(async (tx) => {
      const walk = new AuditChainWalk(options, options.publicKey === undefined ? [] : await this.checkpoints(tx));
      const refused = walk.start();
      if (refused !== undefined) return refused;
      let after = -1;
      for (;;) {
        const page = await tx.query('SELECT * FROM audit_log WHERE seq > $1 ORDER BY seq LIMIT $2', [
          after,
          VERIFY_PAGE,
        ]);
        for (const r of page.rows) {
          const stored = storedFrom(r);
          const broken = walk.row(stored);
          if (broken !== undefined) return broken;
          after = stored.seq;
        }
        if (page.rows.length < VERIFY_PAGE) break;
      }
      const head = (await tx.query('SELECT seq, hash FROM audit_head WHERE id = 1')).rows[0] as
        | { seq: string; hash: string }
        | undefined;
      return walk.finish(head === undefined ? undefined : { seq: Number(head.seq), hash: head.hash });
    }, ' ISOLATION LEVEL REPEATABLE READ READ ONLY');
  }
}

/** The head from the answer of a read of `audit_head`. */
function headOf(result: { rows: { seq: string; hash: string }[] }): AuditHead {
  const row = result.rows[0];
  if (row === undefined) throw new AuditError('AUDIT_HEAD_MISSING', 'the audit head row is missing');
  return { seq: Number(row.seq), hash: row.hash };
}
