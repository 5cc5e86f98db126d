import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { AuditHead, JsonObject } from '../../protocol/audit.js';
import type { CheckedEntry } from './audit-rows.js';

/**
 * The hash-chained audit. Every row's hash is
 *
 *   SHA-256( "switchboard.audit.v1" || 0x00 || prevHash (32 bytes) || JCS(row) )
 *
 * where JCS is the RFC 8785 canonical JSON of
 * `{ seq, at, kind, itemId, hop?, actor, data, epoch? }` (`hop` left out when
 * absent) and `prevHash` is the previous row's hash (32 zero bytes before the
 * first row). `epoch` (a number, or null) is there on PostgreSQL rows
 * appended from audit schema version 4 on: the leader lease's epoch that
 * committed the row is then part of what the hash covers. Rows appended
 * before (and every SQLite row, which has no epoch) hash without it, as they
 * always did: nothing is re-hashed. Hashes are stored as lower-case hex. The chain head `(seq, hash)` is
 * kept in `audit_head`, updated in the same transaction as the row, so that
 * rows cut from the end are detected; `append` also returns it so that
 * callers can keep it elsewhere and pass it to `verifyChain`.
 */

export const AUDIT_DOMAIN_TAG = 'switchboard.audit.v1';
export const AUDIT_GENESIS_HASH = '0'.repeat(64);

/** The domain tag and the 0x00 that ends it. */
const DOMAIN_PREFIX = Buffer.concat([Buffer.from(AUDIT_DOMAIN_TAG, 'utf8'), Buffer.from([0])]);
/** The domain prefix and the previous hash (32 bytes). */
const HASH_HEAD_BYTES = DOMAIN_PREFIX.length + 32;
/** `crypto.hash` (one call, no hash object), where this Node has it (20.12 and later). */
const oneShotHash = (crypto as { hash?: (algorithm: string, data: Buffer, encoding: 'buffer') => Buffer }).hash;

/** A row's fields, as hashed. */
export interface AuditHashedRow {
  seq: number;
  at: string;
  kind: string;
  itemId: string;
  hop: number | null;
  actor: string;
  data: JsonObject;
  /** PostgreSQL rows from audit schema version 4 on: the committing epoch (null: no lease); absent: not hashed. */
  epoch?: number | null;
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
    (row.epoch === undefined ? '' : `"epoch":${row.epoch === null ? 'null' : row.epoch},`) +
    (row.hop === null ? '' : `"hop":${row.hop},`) +
    `"itemId":${JSON.stringify(row.itemId)},"kind":${JSON.stringify(row.kind)},"seq":${row.seq}}`
  );
}

/** The hash (hex) of a row's canonical JSON after the row whose hash (hex) is `prevHash`. */
export function hashCanonical(prevHash: string, canonicalRow: string): string {
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
 * rows: SQLite in `sqlite-chain.ts`, PostgreSQL in `postgres-chain.ts`).
 * `epoch`: PostgreSQL's committing epoch (null: none), hashed with each row;
 * undefined (SQLite): not part of the row.
 */
export function chainEntries(head: AuditHead, entries: readonly CheckedEntry[], epoch?: number | null): ChainedRow[] {
  let { seq, hash } = head;
  // The previous hash is carried as bytes from one row to the next (parsed from hex once per batch).
  let prevBytes: Buffer = Buffer.from(hash, 'hex');
  const out: ChainedRow[] = [];
  for (const entry of entries) {
    const prevHash = hash;
    seq += 1;
    const row = epoch === undefined ? { seq, ...entry } : { seq, ...entry, epoch };
    prevBytes = hashAfter(prevBytes, canonicalAuditRow(row, entry.dataText));
    hash = prevBytes.toString('hex');
    out.push({ entry, seq, prevHash, hash });
  }
  return out;
}

/** The hash of one row, given the previous row's hash (both hex). */
export function auditRowHash(prevHash: string, row: AuditHashedRow): string {
  return hashCanonical(prevHash, canonicalAuditRow(row, canonicalize(row.data) ?? '{}'));
}
