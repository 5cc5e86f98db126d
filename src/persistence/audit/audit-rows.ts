import type { z } from 'zod';
import {
  AUDIT_KINDS,
  AuditEntryInputSchema,
  type AuditHead,
  isWellFormedText,
  jsonProblem,
  type AuditKind,
  type AuditRow,
  type JsonObject,
  type JsonValue,
  MAX_AUDIT_DATA_BYTES,
} from '../../protocol/audit.js';
import { MAX_ID_CHARS } from '../../protocol/bounds.js';
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
  // The entries the runtime writes are plain objects the schema accepts: read as such without the schema's
  // pass. Anything else (and every refusal, for its message and path) goes through the schema.
  const plain = plainEntry(entry);
  if (plain !== null) return checkedFrom(plain, now);
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

const KINDS: ReadonlySet<string> = new Set(AUDIT_KINDS);
const ENTRY_KEYS: ReadonlySet<string> = new Set(['kind', 'itemId', 'hop', 'actor', 'data', 'at']);

/** A string of `min` to `max` code units without a lone surrogate. */
function textWithin(value: unknown, min: number, max: number): boolean {
  return typeof value === 'string' && value.length >= min && value.length <= max && isWellFormedText(value);
}

/**
 * The entry as `AuditEntryInputSchema` reads it, when it is a plain object
 * that the schema accepts as it is (no key but the schema's, each value of
 * its type and within its bounds, `data` plain JSON); null otherwise (the
 * schema then decides). Accepts nothing the schema refuses.
 */
function plainEntry(entry: unknown): ParsedEntry | null {
  if (entry === null || typeof entry !== 'object' || Object.getPrototypeOf(entry) !== Object.prototype) return null;
  for (const key in entry) if (!ENTRY_KEYS.has(key)) return null;
  if (Object.getOwnPropertySymbols(entry).length > 0) return null;
  const e = entry as Record<string, unknown>;
  const { kind, itemId, hop, actor, data, at } = e;
  if (typeof kind !== 'string' || !KINDS.has(kind)) return null;
  if (!textWithin(itemId, 1, MAX_ID_CHARS) || !textWithin(actor, 1, 256)) return null;
  if (hop !== undefined && !(Number.isSafeInteger(hop) && (hop as number) >= 0)) return null;
  if (at !== undefined && !textWithin(at, 1, 64)) return null;
  if (data === null || typeof data !== 'object' || Array.isArray(data) || jsonProblem(data) !== null) return null;
  return e as ParsedEntry;
}

function checkedFrom(e: ParsedEntry, now: () => string): CheckedEntry {
  // `data` passed the schema's `jsonProblem`: plain JSON (no cycle, no lone surrogate, nothing but JSON values).
  const dataText = canonicalPlainJson(e.data);
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

/**
 * The RFC 8785 canonical JSON of plain JSON (a value `jsonProblem` passes),
 * as `canonicalize` writes it: keys in code-unit order, numbers and strings
 * as `JSON.stringify` writes them. Without `canonicalize`'s checks, which
 * `jsonProblem` made already.
 */
function canonicalPlainJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let out = '[';
    for (let i = 0; i < value.length; i++) out += (i === 0 ? '' : ',') + canonicalPlainJson(value[i]!);
    return `${out}]`;
  }
  const keys = Object.keys(value).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    out += `${i === 0 ? '' : ','}${JSON.stringify(key)}:${canonicalPlainJson(value[key]!)}`;
  }
  return `${out}}`;
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
