import canonicalize from 'canonicalize';
import type { z } from 'zod';
import {
  AUDIT_KINDS,
  AuditEntryInputSchema,
  type AuditHead,
  type AuditKind,
  type AuditRow,
  type JsonObject,
  MAX_AUDIT_DATA_BYTES,
} from '../../protocol/audit.js';
import type { Clock } from '../kernel/clock.js';
import { AuditError } from './audit-error.js';

/**
 * An audit row on its way in (an entry checked) and on its way out (a stored
 * row read back), the same for both stores: SQLite's `sqlite-chain.ts` and
 * PostgreSQL's `postgres-chain.ts` keep the same columns.
 */

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
  /** PostgreSQL only (audit schema version 3 on): the committing epoch; part of the hash from version 4 on. */
  epoch?: number | null;
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
 * A clock's time in ISO 8601, formatted once per millisecond (rows of one
 * transaction share the millisecond): the `at` of a row or a checkpoint.
 */
export function isoNow(clock: Clock): () => string {
  let lastMs = Number.NaN;
  let lastIso = '';
  return () => {
    const ms = clock.now();
    if (ms !== lastMs) {
      lastMs = ms;
      lastIso = new Date(ms).toISOString();
    }
    return lastIso;
  };
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

/** A stored row read back for `list`: one that cannot be read is `AUDIT_INVALID_ENTRY`. */
export function listedAuditRow(stored: StoredAuditRow): AuditRow {
  const row = readAuditRow(stored);
  if (typeof row === 'string') throw new AuditError('AUDIT_INVALID_ENTRY', `row ${stored.seq}: ${row}`);
  return row;
}

/** The rows `list` reads at most, whatever `limit` asks (10,000 when it asks nothing). */
export function listLimit(options: AuditListOptions): number {
  return Math.max(0, Math.min(options.limit ?? 10_000, 100_000));
}
