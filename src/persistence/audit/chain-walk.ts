import * as crypto from 'node:crypto';
import type { AuditHead } from '../../protocol/audit.js';
import { readAuditRow, type StoredAuditRow } from './audit-rows.js';
import { AUDIT_GENESIS_HASH, canonicalAuditRow, hashCanonical } from './chain-hash.js';
import { type AuditCheckpoint, auditKeyId, checkpointMessage } from './checkpoints.js';
import { type AuditDigest, digestSignatureHolds } from './digest.js';

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
  /** The head is not covered by a checkpoint and a signed head was required (an empty chain too). */
  | 'unsigned-head'
  /** The chain is shorter than a digest kept elsewhere: it was cut or rewound (even to genesis). */
  | 'rolled-back'
  /** A digest's row has another hash: the chain was rewritten up to there. */
  | 'digest-mismatch'
  /** A signed digest does not verify with the given key (forged, edited, or of another key). */
  | 'digest-signature';

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
  /**
   * A digest kept elsewhere (`audit digest`): the chain must extend it (row
   * `seq` still has `hash`; it may have grown since). Shorter is
   * `rolled-back`, another hash `digest-mismatch`; with `publicKey`, a signed
   * digest's signature is checked first (`digest-signature`).
   */
  digest?: AuditDigest;
  /** Checks every checkpoint of this key: its signature and the hash of the row it covers. */
  publicKey?: crypto.KeyObject;
  /**
   * With `publicKey`: fails when rows follow the newest verified checkpoint,
   * and when no checkpoint of the key signs the chain at all (an empty chain
   * too: a chain rewound to genesis with its checkpoints deleted).
   */
  requireSignedHead?: boolean;
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
 * the rows come from (SQLite's `SqliteAuditLog`, PostgreSQL's `PostgresAuditLog`).
 */
export class AuditChainWalk {
  readonly #options: AuditVerifyOptions;
  readonly #checkpoints: readonly AuditCheckpoint[];
  #signed: SignedCheckpoints | undefined;
  #expectedSeq = 1;
  #prevHash = AUDIT_GENESIS_HASH;
  /** Set at the first row whose hash covers its epoch: every later row's must too. */
  #epochHashed = false;

  /** `checkpoints`: every stored checkpoint (read only when `options.publicKey` is given). */
  constructor(options: AuditVerifyOptions, checkpoints: readonly AuditCheckpoint[]) {
    this.#options = options;
    this.#checkpoints = checkpoints;
  }

  /** Checks the checkpoints' signatures (with a public key); a bad one is the break. */
  start(): AuditVerification | undefined {
    const { publicKey, digest } = this.#options;
    if (publicKey === undefined) return undefined;
    if (digest?.checkpoint !== undefined && !digestSignatureHolds(digest, publicKey)) {
      return {
        ok: false,
        seq: digest.seq,
        reason: 'digest-signature',
        detail: `the digest of row ${digest.seq} does not verify with key ${auditKeyId(publicKey)}: it was forged or edited, or is of another key`,
      };
    }
    const signed = signedCheckpoints(publicKey, this.#checkpoints);
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
      // stored, so any change to its bytes shows. A PostgreSQL row's epoch is
      // hashed with it from audit schema version 4 on; older rows hash without
      // it, and once a row hashed with its epoch is met, every later row must be.
      const fields = {
        seq: stored.seq,
        at: stored.at,
        kind: stored.kind,
        itemId: stored.item_id,
        hop: stored.hop,
        actor: stored.actor,
      };
      const withEpoch =
        stored.epoch !== undefined &&
        hashCanonical(prevHash, canonicalAuditRow({ ...fields, epoch: stored.epoch }, stored.data)) === stored.hash;
      if (withEpoch) this.#epochHashed = true;
      else if (this.#epochHashed || hashCanonical(prevHash, canonicalAuditRow(fields, stored.data)) !== stored.hash) {
        const unreadable = readAuditRow(stored);
        if (typeof unreadable === 'string') {
          return { ok: false, seq: stored.seq, reason: 'malformed-row', detail: unreadable };
        }
        return {
          ok: false,
          seq: stored.seq,
          reason: 'hash-mismatch',
          detail: `row ${stored.seq} was changed: its content${
            stored.epoch === undefined ? ' does' : ' and epoch do'
          } not hash to its stored hash`,
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
      const digest = this.#options.digest;
      if (digest !== undefined && stored.seq === digest.seq && stored.hash !== digest.hash) {
        return {
          ok: false,
          seq: stored.seq,
          reason: 'digest-mismatch',
          detail: `row ${stored.seq}'s hash is not the one the digest kept elsewhere names: the chain was rewritten up to there`,
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
    const digest = options.digest;
    if (digest !== undefined && digest.seq > last.seq) {
      return {
        ok: false,
        seq: last.seq + 1,
        reason: 'rolled-back',
        detail: `the digest kept elsewhere names row ${digest.seq}${
          digest.checkpoint === undefined ? '' : ` (signed ${digest.checkpoint.at})`
        } but the last row is ${last.seq}: the chain was cut or rewound${last.seq === 0 ? ' to genesis' : ''}`,
      };
    }
    if (digest !== undefined && digest.seq === 0 && digest.hash !== AUDIT_GENESIS_HASH) {
      return {
        ok: false,
        seq: 0,
        reason: 'digest-mismatch',
        detail: 'the digest of row 0 does not name the genesis hash',
      };
    }
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
      if (options.requireSignedHead === true && signed.newest === undefined && last.seq === 0) {
        return {
          ok: false,
          seq: 1,
          reason: 'unsigned-head',
          detail: `the chain is empty and no checkpoint of key ${signed.keyId} signs it: if this database ever ran work, its audit was rewound to genesis and its checkpoints deleted (verify with a digest kept elsewhere)`,
          checkpoints: report,
        };
      }
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
): SignedCheckpoints | (AuditVerification & { ok: false }) {
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
