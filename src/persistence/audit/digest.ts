import * as crypto from 'node:crypto';
import type { AuditHead } from '../../protocol/audit.js';
import { AuditError } from './audit-error.js';
import { type AuditCheckpoint, checkpointMessage } from './checkpoints.js';

/**
 * An audit digest: the chain's signed head as one line of text, printed by
 * `switchboard audit digest` to be kept outside the database (a ticket, a
 * log, a second store), and given back to `audit verify --digest LINE`,
 * which fails on any chain that does not extend it. A writer of the database
 * can rewind the chain to any state it once had (even delete every row and
 * checkpoint); only a digest kept out of its reach remembers a later one.
 *
 *   audit-digest-v1,SEQ,HASH                       (an unsigned head)
 *   audit-digest-v1,SEQ,HASH,AT,KEYID,SIGNATURE    (a signed checkpoint)
 *
 * No field holds a comma or a space (the time is ISO 8601, the signature
 * base64): the line is one shell word.
 */
export interface AuditDigest extends AuditHead {
  /** The checkpoint that signs `(seq, hash)`, when the digest is of one. */
  checkpoint?: AuditCheckpoint;
}

const DIGEST_TAG = 'audit-digest-v1';
const DIGEST_LINE =
  /^audit-digest-v1,([0-9]{1,15}),([0-9a-f]{64})(?:,([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z),([0-9a-f]{32}),([A-Za-z0-9+/]+={0,2}))?$/;

/** The digest of a head, signed when `checkpoint` (which must sign that head) is given. */
export function auditDigest(head: AuditHead, checkpoint?: AuditCheckpoint): AuditDigest {
  return checkpoint === undefined ? { seq: head.seq, hash: head.hash } : { seq: head.seq, hash: head.hash, checkpoint };
}

/** The digest as its one line. */
export function formatAuditDigest(digest: AuditDigest): string {
  const c = digest.checkpoint;
  const head = `${DIGEST_TAG},${digest.seq},${digest.hash}`;
  return c === undefined ? head : `${head},${c.at},${c.keyId},${c.signature}`;
}

/** Reads a digest line; anything else is `AUDIT_BAD_DIGEST`. */
export function parseAuditDigest(line: string): AuditDigest {
  const m = DIGEST_LINE.exec(line.trim());
  if (m === null) {
    throw new AuditError(
      'AUDIT_BAD_DIGEST',
      `not an audit digest: expected ${DIGEST_TAG},SEQ,HASH[,AT,KEYID,SIGNATURE] as audit digest prints it`,
    );
  }
  const seq = Number(m[1]);
  const hash = m[2]!;
  if (m[3] === undefined) return { seq, hash };
  return { seq, hash, checkpoint: { seq, hash, at: m[3], keyId: m[4]!, signature: m[5]! } };
}

/** Whether a signed digest's signature verifies with `publicKey` (an unsigned digest: false). */
export function digestSignatureHolds(digest: AuditDigest, publicKey: crypto.KeyObject): boolean {
  const c = digest.checkpoint;
  if (c === undefined) return false;
  try {
    return crypto.verify(null, checkpointMessage(c), publicKey, Buffer.from(c.signature, 'base64'));
  } catch {
    return false;
  }
}
