import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import canonicalize from 'canonicalize';
import type { z } from 'zod';
import { ERROR_CODES, type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';
import {
  AUDIT_KINDS,
  type AuditEntryInput,
  AuditEntryInputSchema,
  type AuditHead,
  type AuditKind,
  type AuditRow,
  type JsonObject,
  MAX_AUDIT_DATA_BYTES,
} from '../../protocol/audit.js';
import { type Clock, systemClock } from '../kernel/clock.js';
import type { SqliteDatabase } from '../kernel/database.js';
import { type MigrationSet, SchemaVersionError, migrate, schemaVersion } from '../kernel/migrations.js';

/**
 * The hash-chained audit. Every row's hash is
 *
 *   SHA-256( "switchboard.audit.v1" || 0x00 || prevHash (32 bytes) || JCS(row) )
 *
 * where JCS is the RFC 8785 canonical JSON of
 * `{ seq, at, kind, itemId, hop?, actor, data }` (`hop` left out when absent)
 * and `prevHash` is the previous row's hash (32 zero bytes before the first
 * row). Hashes are stored as lower-case hex. The chain head `(seq, hash)` is
 * kept in `audit_head`, updated in the same transaction as the row, so that
 * rows cut from the end are detected; `append` also returns it so that
 * callers can keep it elsewhere and pass it to `verifyChain`.
 */

export const AUDIT_DOMAIN_TAG = 'switchboard.audit.v1';
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

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

/** Every code an `AuditError` carries. */
export const AUDIT_ERROR_CODES = ERROR_CODES.AuditError;
/** One code an `AuditError` carries (one of `AUDIT_ERROR_CODES`). */
export type AuditErrorCode = ErrorCodeOf<'AuditError'>;

/** The domain tag of a checkpoint's signed bytes. */
export const AUDIT_CHECKPOINT_TAG = 'switchboard.audit.checkpoint.v1';

/** A signed chain head: row `seq` had hash `hash` at `at`, signed by the key `keyId` names. */
export interface AuditCheckpoint {
  seq: number;
  hash: string;
  at: string;
  /** `auditKeyId` of the public key (hex). */
  keyId: string;
  /** Ed25519 signature of `checkpointMessage` (base64). */
  signature: string;
}

/** The bytes a checkpoint signs: the domain tag, 0x00, then the JCS of `{at, hash, seq}`. */
export function checkpointMessage(c: { seq: number; hash: string; at: string }): Buffer {
  return Buffer.from(`${AUDIT_CHECKPOINT_TAG}\u0000${canonicalize({ at: c.at, hash: c.hash, seq: c.seq })}`, 'utf8');
}

/** A key's id: the first 16 bytes (hex) of SHA-256 over its public key (SPKI DER). */
export function auditKeyId(key: crypto.KeyObject): string {
  const publicKey = key.type === 'private' ? crypto.createPublicKey(key) : key;
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 32);
}

/** What `verifyChain` found of the checkpoints, given a public key. */
export interface AuditCheckpointReport {
  keyId: string;
  /** Checkpoints of this key whose signature and row hash were checked. */
  verified: number;
  /** Checkpoints of other keys (not checked). */
  otherKeys: number;
  /** The newest verified checkpoint's row (0 when none). */
  signedSeq: number;
  /** Rows after it: appended since the last checkpoint, or forged there. */
  unsignedRows: number;
}

/** A refused audit append (nothing written); `path` (also `details.path`) points into the entry. */
export class AuditError extends SwitchboardError {
  declare readonly code: AuditErrorCode;
  constructor(
    code: AuditErrorCode,
    message: string,
    readonly path: (string | number)[] = [],
  ) {
    super(code, message, { details: { path } });
  }
}

/** Why `verifyChain` stopped. */
export type AuditBreak =
  /** A row's stored hash is not the hash of its content. */
  | 'hash-mismatch'
  /** A row's `prevHash` is not the hash of the row before (rows reordered, replaced or inserted). */
  | 'prev-hash-mismatch'
  /** A row is missing from the middle (or the first row is not seq 1). */
  | 'seq-gap'
  /** Rows were cut from the end: the head names a later row than the last one. */
  | 'truncated'
  /** The head does not match the last row (edited, or rows added past it). */
  | 'head-mismatch'
  /** A row cannot be read back (bad JSON, unknown kind). */
  | 'malformed-row'
  /** A checkpoint of the given key does not verify (forged or edited checkpoint). */
  | 'checkpoint-signature'
  /** A signed checkpoint's hash is not the hash of the row it covers (the chain was rewritten). */
  | 'checkpoint-mismatch'
  /** The head is not covered by a checkpoint and a signed head was required. */
  | 'unsigned-head';

export type AuditVerification =
  | { ok: true; entries: number; head: AuditHead; checkpoints?: AuditCheckpointReport }
  | { ok: false; seq: number; reason: AuditBreak; detail: string; checkpoints?: AuditCheckpointReport };

export interface AuditVerifyOptions {
  /**
   * A head noted earlier (kept elsewhere): row `seq` must still have this
   * hash (a prefix check: the chain may have grown since); a chain shorter
   * than `seq` is truncated.
   */
  expectedHead?: AuditHead;
  /** Checks every checkpoint of this key: its signature and the hash of the row it covers. */
  publicKey?: crypto.KeyObject;
  /** With `publicKey`: fails when rows follow the newest verified checkpoint. */
  requireSignedHead?: boolean;
}

/** A row's fields, as hashed. */
export interface AuditHashedRow {
  seq: number;
  at: string;
  kind: string;
  itemId: string;
  hop: number | null;
  actor: string;
  data: JsonObject;
}

/**
 * The RFC 8785 canonical JSON of a row, given the canonical JSON of its
 * `data`. The row's own keys are ASCII and its other values strings and whole
 * numbers, so their canonical form is fixed: keys in code-unit order,
 * strings as `JSON.stringify` writes them. (Equal to `canonicalize(row)`; a
 * property test checks it.)
 */
export function canonicalAuditRow(row: Omit<AuditHashedRow, 'data'>, canonicalData: string): string {
  return (
    `{"actor":${JSON.stringify(row.actor)},"at":${JSON.stringify(row.at)},"data":${canonicalData},` +
    (row.hop === null ? '' : `"hop":${row.hop},`) +
    `"itemId":${JSON.stringify(row.itemId)},"kind":${JSON.stringify(row.kind)},"seq":${row.seq}}`
  );
}

function hashCanonical(prevHash: string, canonicalRow: string): string {
  return hashAfter(Buffer.from(prevHash, 'hex'), canonicalRow).toString('hex');
}

/**
 * The hash of a row after the row whose hash bytes are `prev`: the domain
 * prefix, `prev` and the row's UTF-8 are laid out in one buffer and hashed in
 * one call (a row is at most a few tens of kilobytes).
 */
function hashAfter(prev: Buffer, canonicalRow: string): Buffer {
  const size = HASH_HEAD_BYTES + Buffer.byteLength(canonicalRow, 'utf8');
  const input = Buffer.allocUnsafe(size);
  DOMAIN_PREFIX.copy(input, 0);
  prev.copy(input, DOMAIN_PREFIX.length);
  input.write(canonicalRow, HASH_HEAD_BYTES, 'utf8');
  return oneShotHash === undefined
    ? createHash('sha256').update(input).digest()
    : (oneShotHash('sha256', input, 'buffer') as Buffer);
}

/** One checked entry placed in the chain: its row number, its hash and the previous row's. */
export interface ChainedRow {
  entry: CheckedEntry;
  seq: number;
  prevHash: string;
  hash: string;
}

/**
 * Places checked entries after the head `(seq, hash)`: each gets the next row
 * number and its hash (the one hashing of the chain, whatever store keeps the
 * rows: SQLite here, PostgreSQL in `postgres-chain.ts`).
 */
export function chainEntries(head: AuditHead, entries: readonly CheckedEntry[]): ChainedRow[] {
  let { seq, hash } = head;
  // The previous hash is carried as bytes from one row to the next (parsed from hex once per batch).
  let prevBytes: Buffer = Buffer.from(hash, 'hex');
  const out: ChainedRow[] = [];
  for (const entry of entries) {
    const prevHash = hash;
    seq += 1;
    prevBytes = hashAfter(prevBytes, canonicalAuditRow({ seq, ...entry }, entry.dataText));
    hash = prevBytes.toString('hex');
    out.push({ entry, seq, prevHash, hash });
  }
  return out;
}

/** The hash of one row, given the previous row's hash (both hex). */
export function auditRowHash(prevHash: string, row: AuditHashedRow): string {
  return hashCanonical(prevHash, canonicalAuditRow(row, canonicalize(row.data) ?? '{}'));
}
/** Rows per INSERT statement at most (9 parameters a row, well under SQLite's limit). */
const INSERT_BATCH = 8;
/** The domain tag and the 0x00 that ends it. */
const DOMAIN_PREFIX = Buffer.concat([Buffer.from(AUDIT_DOMAIN_TAG, 'utf8'), Buffer.from([0])]);
/** The domain prefix and the previous hash (32 bytes). */
const HASH_HEAD_BYTES = DOMAIN_PREFIX.length + 32;
/** `crypto.hash` (one call, no hash object), where this Node has it (20.12 and later). */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: Buffer, encoding: 'buffer') => Buffer }).hash;

/** An audit row as a store keeps it (SQLite's and PostgreSQL's columns are the same). */
export interface StoredAuditRow {
  seq: number;
  at: string;
  kind: string;
  item_id: string;
  hop: number | null;
  actor: string;
  data: string;
  prev_hash: string;
  hash: string;
}

export interface AuditLogOptions {
  clock?: Clock;
  /**
   * Reads only (a verifier on a read-only connection): the schema is not
   * migrated, only checked not to be newer than this code; a database from
   * before checkpoints has none.
   */
  readOnly?: boolean;
}

export interface AuditListOptions {
  itemId?: string;
  /** Rows with a larger `seq` only. */
  afterSeq?: number;
  limit?: number;
}

/** One appended row's place in the chain: the new head. */
export interface AuditAppended extends AuditHead {
  at: string;
  prevHash: string;
}

/**
 * The audit of one database. `append` runs inside the caller's transaction
 * when there is one (as a savepoint), or in its own.
 */
export class AuditLog {
  readonly #db: SqliteDatabase;
  readonly #clock: Clock;
  readonly #readHead: Statement<[], { seq: number; hash: string }>;
  /** INSERT statements of 1 to INSERT_BATCH rows, prepared when first needed. */
  readonly #inserts: Statement<(string | number | null)[]>[] = [];
  readonly #writeHead: Statement<[number, string]>;
  readonly #appendTx: (entries: readonly CheckedEntry[]) => AuditAppended[];
  readonly #appendRows: (entries: readonly CheckedEntry[]) => AuditAppended[];
  /** The last clock reading and its ISO form (rows of one transaction share the millisecond). */
  #lastMs = Number.NaN;
  #lastIso = '';
  /** Key ids of the private keys seen (derived once per key). */
  readonly #keyIds = new WeakMap<crypto.KeyObject, string>();

  constructor(db: SqliteDatabase, options: AuditLogOptions = {}) {
    this.#db = db;
    this.#clock = options.clock ?? systemClock;
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

  /** The clock's time in ISO 8601 (formatted once per millisecond). */
  readonly #now = (): string => {
    const ms = this.#clock.now();
    if (ms !== this.#lastMs) {
      this.#lastMs = ms;
      this.#lastIso = new Date(ms).toISOString();
    }
    return this.#lastIso;
  };

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
    const limit = Math.max(0, Math.min(options.limit ?? 10_000, 100_000));
    const rows = this.#db
      .prepare(`SELECT * FROM audit_log WHERE ${where.join(' AND ')} ORDER BY seq LIMIT ${limit}`)
      .all(...params) as StoredAuditRow[];
    return rows.map((r) => {
      const row = readAuditRow(r);
      if (typeof row === 'string') throw new AuditError('AUDIT_INVALID_ENTRY', `row ${r.seq}: ${row}`);
      return row;
    });
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
    if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') {
      throw new AuditError('AUDIT_BAD_KEY', 'an audit checkpoint needs an Ed25519 private key');
    }
    const keyId = this.#keyIds.get(privateKey) ?? auditKeyId(privateKey);
    this.#keyIds.set(privateKey, keyId);
    const run = () => {
      const head = this.head();
      if (head.seq === 0) return null;
      const existing = this.#db
        .prepare('SELECT seq, hash, at, key_id AS keyId, signature FROM audit_checkpoints WHERE seq = ?')
        .get(head.seq) as AuditCheckpoint | undefined;
      if (existing !== undefined && existing.keyId === keyId && existing.hash === head.hash) return existing;
      const at = this.#now();
      const c = { seq: head.seq, hash: head.hash, at };
      const signature = crypto.sign(null, checkpointMessage(c), privateKey).toString('base64');
      const checkpoint: AuditCheckpoint = { ...c, keyId, signature };
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

/** The checkpoints of one key, checked. */
interface SignedCheckpoints {
  keyId: string;
  bySeq: Map<number, AuditCheckpoint>;
  newest: AuditCheckpoint | undefined;
  otherKeys: number;
}

/**
 * One walk of a chain from its first row: `start()`, then `row()` for each
 * stored row in `seq` order (stop at the first break it returns), then
 * `finish(head)`. It holds every check of `verifyChain`, whatever store
 * the rows come from (SQLite's `AuditLog`, PostgreSQL's `PostgresAuditLog`).
 */
export class AuditChainWalk {
  readonly #options: AuditVerifyOptions;
  readonly #checkpoints: readonly AuditCheckpoint[];
  #signed: SignedCheckpoints | undefined;
  #expectedSeq = 1;
  #prevHash = AUDIT_GENESIS_HASH;

  /** `checkpoints`: every stored checkpoint (read only when `options.publicKey` is given). */
  constructor(options: AuditVerifyOptions, checkpoints: readonly AuditCheckpoint[]) {
    this.#options = options;
    this.#checkpoints = checkpoints;
  }

  /** Checks the checkpoints' signatures (with a public key); a bad one is the break. */
  start(): AuditVerification | undefined {
    if (this.#options.publicKey === undefined) return undefined;
    const signed = signedCheckpoints(this.#options.publicKey, this.#checkpoints);
    if ('reason' in signed) return signed;
    this.#signed = signed;
    return undefined;
  }

  /** The next row, in `seq` order: its break, or undefined when it holds. */
  row(stored: StoredAuditRow): AuditVerification | undefined {
    const expected = this.#options.expectedHead;
    const signed = this.#signed;
    const expectedSeq = this.#expectedSeq;
    const prevHash = this.#prevHash;
    {
      if (stored.seq !== expectedSeq) {
        return {
          ok: false,
          seq: expectedSeq,
          reason: 'seq-gap',
          detail:
            stored.seq > expectedSeq
              ? `row ${expectedSeq} is missing (the next row is ${stored.seq})`
              : `row ${stored.seq} is out of place (expected ${expectedSeq})`,
        };
      }
      if (stored.prev_hash !== prevHash) {
        return {
          ok: false,
          seq: stored.seq,
          reason: 'prev-hash-mismatch',
          detail: `row ${stored.seq} does not follow row ${stored.seq - 1}: its prevHash is not that row's hash`,
        };
      }
      // The stored data is the canonical JSON append wrote: it is hashed as
      // stored, so any change to its bytes shows.
      const canonical = canonicalAuditRow(
        {
          seq: stored.seq,
          at: stored.at,
          kind: stored.kind,
          itemId: stored.item_id,
          hop: stored.hop,
          actor: stored.actor,
        },
        stored.data,
      );
      if (hashCanonical(prevHash, canonical) !== stored.hash) {
        const unreadable = readAuditRow(stored);
        if (typeof unreadable === 'string') {
          return { ok: false, seq: stored.seq, reason: 'malformed-row', detail: unreadable };
        }
        return {
          ok: false,
          seq: stored.seq,
          reason: 'hash-mismatch',
          detail: `row ${stored.seq} was changed: its content does not hash to its stored hash`,
        };
      }
      if (expected !== undefined && stored.seq === expected.seq && stored.hash !== expected.hash) {
        return {
          ok: false,
          seq: stored.seq,
          reason: 'head-mismatch',
          detail: `row ${stored.seq}'s hash is not the expected head's: the chain was rewritten up to there`,
        };
      }
      const checkpoint = signed?.bySeq.get(stored.seq);
      if (checkpoint !== undefined && checkpoint.hash !== stored.hash) {
        return {
          ok: false,
          seq: stored.seq,
          reason: 'checkpoint-mismatch',
          detail: `row ${stored.seq}'s hash is not the one its signed checkpoint of ${checkpoint.at} names: the chain was rewritten`,
        };
      }
      this.#prevHash = stored.hash;
      this.#expectedSeq += 1;
    }
    return undefined;
  }

  /** After the last row: the verdict, given the stored head (undefined: its row is missing). */
  finish(stored: AuditHead | undefined): AuditVerification {
    const expected = this.#options.expectedHead;
    const signed = this.#signed;
    const options = this.#options;
    const last: AuditHead = { seq: this.#expectedSeq - 1, hash: this.#prevHash };
    if (expected !== undefined && expected.seq > last.seq) {
      return {
        ok: false,
        seq: last.seq + 1,
        reason: 'truncated',
        detail: `the expected head is at row ${expected.seq} but the last row is ${last.seq}: rows were cut from the end`,
      };
    }
    let report: AuditCheckpointReport | undefined;
    if (signed !== undefined) {
      if (signed.newest !== undefined && signed.newest.seq > last.seq) {
        return {
          ok: false,
          seq: last.seq + 1,
          reason: 'truncated',
          detail: `a signed checkpoint of ${signed.newest.at} covers row ${signed.newest.seq} but the last row is ${last.seq}: rows were cut from the end`,
        };
      }
      const signedSeq = signed.newest?.seq ?? 0;
      report = {
        keyId: signed.keyId,
        verified: signed.bySeq.size,
        otherKeys: signed.otherKeys,
        signedSeq,
        unsignedRows: last.seq - signedSeq,
      };
      if (options.requireSignedHead === true && report.unsignedRows > 0) {
        return {
          ok: false,
          seq: signedSeq + 1,
          reason: 'unsigned-head',
          detail: `${report.unsignedRows} row(s) after row ${signedSeq} are covered by no signed checkpoint (appended since, or forged)`,
          checkpoints: report,
        };
      }
    }
    const heads: [string, AuditHead | undefined][] = [['stored head', stored]];
    for (const [name, head] of heads) {
      if (head === undefined) {
        return { ok: false, seq: last.seq, reason: 'head-mismatch', detail: `the ${name} is missing` };
      }
      if (head.seq > last.seq) {
        return {
          ok: false,
          seq: last.seq + 1,
          reason: 'truncated',
          detail: `the ${name} is at row ${head.seq} but the last row is ${last.seq}: rows were cut from the end`,
        };
      }
      if (head.seq < last.seq) {
        return {
          ok: false,
          seq: head.seq + 1,
          reason: 'head-mismatch',
          detail: `the ${name} is at row ${head.seq} but rows go on to ${last.seq}`,
        };
      }
      if (head.hash !== last.hash) {
        return {
          ok: false,
          seq: last.seq,
          reason: 'head-mismatch',
          detail: `the ${name}'s hash is not the hash of row ${last.seq}`,
        };
      }
    }
    return report === undefined
      ? { ok: true, entries: last.seq, head: last }
      : { ok: true, entries: last.seq, head: last, checkpoints: report };
  }
}

/** The checkpoints of `publicKey`'s key, each signature checked; the first bad one is a break. */
function signedCheckpoints(
  publicKey: crypto.KeyObject,
  checkpoints: readonly AuditCheckpoint[],
):
  | { keyId: string; bySeq: Map<number, AuditCheckpoint>; newest: AuditCheckpoint | undefined; otherKeys: number }
  | (AuditVerification & { ok: false }) {
  const keyId = auditKeyId(publicKey);
  const bySeq = new Map<number, AuditCheckpoint>();
  let newest: AuditCheckpoint | undefined;
  let otherKeys = 0;
  for (const c of checkpoints) {
    if (c.keyId !== keyId) {
      otherKeys++;
      continue;
    }
    let valid = false;
    try {
      valid = crypto.verify(null, checkpointMessage(c), publicKey, Buffer.from(c.signature, 'base64'));
    } catch {
      valid = false;
    }
    if (!valid) {
      return {
        ok: false,
        seq: c.seq,
        reason: 'checkpoint-signature',
        detail: `the checkpoint of row ${c.seq} does not verify with key ${keyId}: it was forged or edited`,
      };
    }
    bySeq.set(c.seq, c);
    newest = c;
  }
  return { keyId, bySeq, newest, otherKeys };
}

/** An audit entry as checked: its fields and its data's canonical JSON. */
export type CheckedEntry = Omit<AuditRow, 'seq' | 'prevHash' | 'hash'> & { dataText: string };

/**
 * Checks an entry against `AuditEntryInputSchema` (the one check) and writes
 * its data's RFC 8785 canonical JSON; a refused entry is `AUDIT_INVALID_ENTRY`
 * naming the path, and nothing is written.
 */
export function checkAuditEntry(entry: unknown, now: () => string): CheckedEntry {
  const parsed = AuditEntryInputSchema.safeParse(entry);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const path = issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p));
    throw new AuditError(
      'AUDIT_INVALID_ENTRY',
      `invalid audit entry: ${path.join('.') || '(root)'}: ${issue.message}`,
      path,
    );
  }
  return checkedFrom(parsed.data, now);
}

type ParsedEntry = z.output<typeof AuditEntryInputSchema>;

function checkedFrom(e: ParsedEntry, now: () => string): CheckedEntry {
  // `data` passed the schema's `jsonProblem`: plain JSON, so canonicalize writes it.
  const dataText = canonicalize(e.data) ?? '{}';
  if (Buffer.byteLength(dataText, 'utf8') > MAX_AUDIT_DATA_BYTES) {
    throw new AuditError(
      'AUDIT_INVALID_ENTRY',
      `invalid audit entry: data: over ${MAX_AUDIT_DATA_BYTES} bytes (record sizes, not bodies)`,
      ['data'],
    );
  }
  return {
    at: e.at ?? now(),
    kind: e.kind,
    itemId: e.itemId,
    hop: e.hop ?? null,
    actor: e.actor,
    data: e.data,
    dataText,
  };
}

/** A stored row read back, or what is wrong with it. */
export function readAuditRow(r: StoredAuditRow): AuditRow | string {
  if (!(AUDIT_KINDS as readonly string[]).includes(r.kind))
    return `row ${r.seq} has an unknown kind ${JSON.stringify(r.kind)}`;
  let data: unknown;
  try {
    data = JSON.parse(r.data);
  } catch {
    return `row ${r.seq}: data is not JSON`;
  }
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return `row ${r.seq}: data is not an object`;
  return {
    seq: r.seq,
    at: r.at,
    kind: r.kind as AuditKind,
    itemId: r.item_id,
    hop: r.hop,
    actor: r.actor,
    data: data as JsonObject,
    prevHash: r.prev_hash,
    hash: r.hash,
  };
}
