import type * as crypto from 'node:crypto';
import type { AuditEntryInput, AuditHead, AuditRow } from '../../protocol/audit.js';
import { type Clock, systemClock } from '../kernel/clock.js';
import type { SqliteDatabase, SqliteStatement as Statement } from '../kernel/database.js';
import { type MigrationSet, SchemaVersionError, migrate, schemaVersion } from '../kernel/migrations.js';
import type { AuditChain } from './audit-chain.js';
import { AuditError } from './audit-error.js';
import {
  type AuditAppended,
  type AuditListOptions,
  type CheckedEntry,
  type StoredAuditRow,
  checkAuditEntry,
  isoNow,
  listLimit,
  listedAuditRow,
} from './audit-rows.js';
import { AUDIT_GENESIS_HASH, chainEntries } from './chain-hash.js';
import { AuditChainWalk, type AuditVerification, type AuditVerifyOptions } from './chain-walk.js';
import { type AuditCheckpoint, checkpointSignerId, signCheckpoint, signsHead } from './checkpoints.js';

// Every name the audit room exported from `chain.ts` before its shared parts
// moved to modules of their own is still exported here.
export { AUDIT_ERROR_CODES, AuditError, type AuditErrorCode } from './audit-error.js';
export {
  type AuditAppended,
  type AuditListOptions,
  type CheckedEntry,
  type StoredAuditRow,
  checkAuditEntry,
  readAuditRow,
} from './audit-rows.js';
export {
  AUDIT_DOMAIN_TAG,
  AUDIT_GENESIS_HASH,
  type AuditHashedRow,
  type ChainedRow,
  auditRowHash,
  canonicalAuditRow,
  chainEntries,
} from './chain-hash.js';
export {
  type AuditBreak,
  type AuditCheckpointReport,
  AuditChainWalk,
  type AuditVerification,
  type AuditVerifyOptions,
} from './chain-walk.js';
export { AUDIT_CHECKPOINT_TAG, type AuditCheckpoint, auditKeyId, checkpointMessage } from './checkpoints.js';

/**
 * The hash-chained audit in an embedded SQLite database (the hashing is
 * `chain-hash.ts`'s, the verification `chain-walk.ts`'s, as PostgreSQL's in
 * `postgres-chain.ts`).
 */
export const AUDIT_MIGRATIONS: MigrationSet = {
  component: 'audit',
  current: 2,
  migrations: [
    {
      version: 1,
      name: 'audit log and head',
      up(db) {
        db.exec(`
          CREATE TABLE audit_log (
            seq INTEGER PRIMARY KEY,
            at TEXT NOT NULL,
            kind TEXT NOT NULL,
            item_id TEXT NOT NULL,
            hop INTEGER,
            actor TEXT NOT NULL,
            data TEXT NOT NULL,
            prev_hash TEXT NOT NULL,
            hash TEXT NOT NULL
          ) STRICT;
          CREATE INDEX audit_log_item ON audit_log (item_id, seq);
          CREATE TABLE audit_head (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            seq INTEGER NOT NULL,
            hash TEXT NOT NULL
          ) STRICT;
        `);
        db.prepare('INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, ?)').run(AUDIT_GENESIS_HASH);
      },
    },
    {
      version: 2,
      name: 'signed checkpoints',
      up(db) {
        // One signed chain head per row number; the private key is never stored.
        db.exec(`
          CREATE TABLE audit_checkpoints (
            seq INTEGER PRIMARY KEY,
            hash TEXT NOT NULL,
            at TEXT NOT NULL,
            key_id TEXT NOT NULL,
            signature TEXT NOT NULL
          ) STRICT;
        `);
      },
    },
  ],
};

/** Rows per INSERT statement at most (9 parameters a row, well under SQLite's limit). */
const INSERT_BATCH = 8;

export interface AuditLogOptions {
  clock?: Clock;
  /**
   * Reads only (a verifier on a read-only connection): the schema is not
   * migrated, only checked not to be newer than this code; a database from
   * before checkpoints has none.
   */
  readOnly?: boolean;
}

/**
 * The audit of one database, answering synchronously: `append` runs inside
 * the caller's transaction when there is one (as a savepoint), or in its own;
 * `appendManyInTransaction` is the Coordinator's store's seam, inside its
 * synchronous commit. `chain` is the same audit as an `AuditChain`.
 */
export class SqliteAuditLog {
  /** This audit as an `AuditChain` (the face both backends share). */
  readonly chain: SqliteAuditChain;
  readonly #db: SqliteDatabase;
  /** The clock's time in ISO 8601 (formatted once per millisecond). */
  readonly #now: () => string;
  readonly #readHead: Statement<[], { seq: number; hash: string }>;
  /** INSERT statements of 1 to INSERT_BATCH rows, prepared when first needed. */
  readonly #inserts: Statement<(string | number | null)[]>[] = [];
  readonly #writeHead: Statement<[number, string]>;
  readonly #appendTx: (entries: readonly CheckedEntry[]) => AuditAppended[];
  readonly #appendRows: (entries: readonly CheckedEntry[]) => AuditAppended[];

  constructor(db: SqliteDatabase, options: AuditLogOptions = {}) {
    this.#db = db;
    this.#now = isoNow(options.clock ?? systemClock);
    if (options.readOnly === true) {
      const version = schemaVersion(db, AUDIT_MIGRATIONS.component);
      if (version > AUDIT_MIGRATIONS.current) {
        throw new SchemaVersionError(AUDIT_MIGRATIONS.component, version, AUDIT_MIGRATIONS.current);
      }
    } else {
      migrate(db, AUDIT_MIGRATIONS);
    }
    this.#readHead = db.prepare('SELECT seq, hash FROM audit_head WHERE id = 1');
    this.#writeHead = db.prepare('UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1');
    const appendRows = (entries: readonly CheckedEntry[]) => {
      const head = this.#readHead.get();
      if (head === undefined) throw new AuditError('AUDIT_HEAD_MISSING', 'the audit head row is missing');
      const out: AuditAppended[] = [];
      // Rows go in by statements of up to INSERT_BATCH rows (one statement for a hop's rows).
      let params: (string | number | null)[] = [];
      let { seq, hash } = head;
      for (const { entry: row, seq: rowSeq, prevHash, hash: rowHash } of chainEntries(head, entries)) {
        seq = rowSeq;
        hash = rowHash;
        params.push(seq, row.at, row.kind, row.itemId, row.hop, row.actor, row.dataText, prevHash, hash);
        out.push({ seq, hash, at: row.at, prevHash });
        if (params.length === INSERT_BATCH * 9) {
          this.#insertRows(INSERT_BATCH).run(...params);
          params = [];
        }
      }
      if (params.length > 0) this.#insertRows(params.length / 9).run(...params);
      this.#writeHead.run(seq, hash);
      return out;
    };
    this.#appendRows = appendRows;
    const tx = db.transaction(appendRows);
    // Its own transaction takes the write lock at once (BEGIN IMMEDIATE);
    // inside a caller's transaction it is a savepoint.
    this.#appendTx = tx.immediate;
    this.chain = new SqliteAuditChain(this);
  }

  #insertRows(count: number): Statement<(string | number | null)[]> {
    const prepared = this.#inserts[count];
    if (prepared !== undefined) return prepared;
    const values = Array.from({ length: count }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ');
    const statement = this.#db.prepare<(string | number | null)[]>(
      `INSERT INTO audit_log (seq, at, kind, item_id, hop, actor, data, prev_hash, hash) VALUES ${values}`,
    );
    this.#inserts[count] = statement;
    return statement;
  }

  /** Appends one row; returns the new head. Bad input throws `AuditError` and appends nothing. */
  append(entry: AuditEntryInput): AuditAppended {
    return this.#appendTx([checkAuditEntry(entry, this.#now)])[0]!;
  }

  /** Appends rows in order, all or none. */
  appendMany(entries: readonly AuditEntryInput[]): AuditAppended[] {
    if (entries.length === 0) return [];
    // Every entry is checked before anything is written.
    return this.#appendTx(entries.map((e) => checkAuditEntry(e, this.#now)));
  }

  /**
   * Appends rows in order inside the caller's open transaction, without a
   * savepoint of its own (one transaction, one head update): for a caller
   * whose transaction rolls back whenever this throws (the Coordinator's
   * step), which keeps it all or none. Throws when no transaction is open.
   */
  appendManyInTransaction(entries: readonly AuditEntryInput[]): AuditAppended[] {
    if (!this.#db.inTransaction) {
      throw new AuditError('AUDIT_NO_TRANSACTION', 'appendManyInTransaction needs an open transaction');
    }
    if (entries.length === 0) return [];
    return this.#appendRows(entries.map((e) => checkAuditEntry(e, this.#now)));
  }

  /** The chain head as stored. */
  head(): AuditHead {
    const head = this.#readHead.get();
    if (head === undefined) throw new AuditError('AUDIT_HEAD_MISSING', 'the audit head row is missing');
    return { seq: head.seq, hash: head.hash };
  }

  /** Rows in order (of one work item, after a seq, up to a limit). */
  list(options: AuditListOptions = {}): AuditRow[] {
    const where: string[] = ['seq > ?'];
    const params: (string | number)[] = [options.afterSeq ?? 0];
    if (options.itemId !== undefined) {
      where.push('item_id = ?');
      params.push(options.itemId);
    }
    const rows = this.#db
      .prepare(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ${listLimit(options)}`)
      .all(...params) as StoredAuditRow[];
    return rows.map(listedAuditRow);
  }

  /**
   * Walks the whole chain from the first row and returns the first break:
   * a missing row, a row whose `prevHash` is not the hash before it, a row
   * whose content does not hash to its `hash`, a head that does not match the
   * last row. With `expectedHead` (a head the caller kept elsewhere), a chain
   * cut short together with its head is caught too.
   */
  verifyChain(options: AuditVerifyOptions = {}): AuditVerification {
    // One read transaction: rows and head are read from the same snapshot, so
    // a writer appending meanwhile (another process, WAL) cannot make an
    // intact chain look truncated.
    if (this.#db.inTransaction) return this.#verify(options);
    return this.#db.transaction(() => this.#verify(options)).deferred();
  }

  #verify(options: AuditVerifyOptions): AuditVerification {
    const walk = new AuditChainWalk(options, options.publicKey === undefined ? [] : this.checkpoints());
    const refused = walk.start();
    if (refused !== undefined) return refused;
    const iterate = this.#db
      .prepare('SELECT * FROM audit_log ORDER BY seq')
      .iterate() as IterableIterator<StoredAuditRow>;
    for (const stored of iterate) {
      const broken = walk.row(stored);
      if (broken !== undefined) return broken;
    }
    return walk.finish(this.#readHead.get());
  }
  /** Every stored checkpoint, by row. */
  checkpoints(): AuditCheckpoint[] {
    const table = this.#db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'audit_checkpoints'")
      .get();
    if (table === undefined) return [];
    return this.#db
      .prepare('SELECT seq, hash, at, key_id AS keyId, signature FROM audit_checkpoints ORDER BY seq')
      .all() as AuditCheckpoint[];
  }

  /**
   * Signs the current head with an Ed25519 private key and stores the
   * checkpoint (the key itself is never stored). Returns it, or null on an
   * empty chain; a head already signed by this key is not signed again.
   */
  checkpoint(privateKey: crypto.KeyObject): AuditCheckpoint | null {
    const keyId = checkpointSignerId(privateKey);
    const run = () => {
      const head = this.head();
      if (head.seq === 0) return null;
      const existing = this.#db
        .prepare('SELECT seq, hash, at, key_id AS keyId, signature FROM audit_checkpoints WHERE seq = ?')
        .get(head.seq) as AuditCheckpoint | undefined;
      if (signsHead(existing, keyId, head)) return existing;
      const checkpoint = signCheckpoint(head, this.#now(), privateKey, keyId);
      this.#db
        .prepare(
          'INSERT OR REPLACE INTO audit_checkpoints (seq, hash, at, key_id, signature) VALUES (@seq, @hash, @at, @keyId, @signature)',
        )
        .run(checkpoint);
      return checkpoint;
    };
    return this.#db.inTransaction ? run() : this.#db.transaction(run).immediate();
  }
}

/** The SQLite audit under the older name. @deprecated Use `SqliteAuditLog`. */
export const AuditLog = SqliteAuditLog;
/** The SQLite audit under the older name. @deprecated Use `SqliteAuditLog`. */
export type AuditLog = SqliteAuditLog;

/**
 * A `SqliteAuditLog` as an `AuditChain` (its `chain`): each method runs the
 * log's synchronous one and answers with a settled promise (a throw becomes
 * a rejection). The log's commit seam (`appendManyInTransaction`) is not
 * here: it stays synchronous, inside the store's own transaction.
 */
export class SqliteAuditChain implements AuditChain {
  readonly #log: SqliteAuditLog;

  constructor(log: SqliteAuditLog) {
    this.#log = log;
  }

  async appendMany(entries: readonly AuditEntryInput[]): Promise<AuditAppended[]> {
    return this.#log.appendMany(entries);
  }

  async head(): Promise<AuditHead> {
    return this.#log.head();
  }

  async list(options?: AuditListOptions): Promise<AuditRow[]> {
    return this.#log.list(options);
  }

  async checkpoints(): Promise<AuditCheckpoint[]> {
    return this.#log.checkpoints();
  }

  async checkpoint(privateKey: crypto.KeyObject): Promise<AuditCheckpoint | null> {
    return this.#log.checkpoint(privateKey);
  }

  async verifyChain(options?: AuditVerifyOptions): Promise<AuditVerification> {
    return this.#log.verifyChain(options);
  }
}
