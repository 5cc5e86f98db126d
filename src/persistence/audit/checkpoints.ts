import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { AuditHead } from '../../protocol/audit.js';
import { AuditError } from './audit-error.js';

/**
 * Signed checkpoints: a chain head `(seq, hash, at)` signed with an Ed25519
 * key, stored beside the rows (`audit_checkpoints`) by either store; the
 * private key is never stored. `chain-walk.ts` checks them.
 */

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

/** Key ids of the private keys seen (derived once per key). */
const signerIds = new WeakMap<crypto.KeyObject, string>();

/** The key id of a private key that signs checkpoints; anything but an Ed25519 private key is `AUDIT_BAD_KEY`. */
export function checkpointSignerId(privateKey: crypto.KeyObject): string {
  if (privateKey.type !== 'private' || privateKey.asymmetricKeyType !== 'ed25519') {
    throw new AuditError('AUDIT_BAD_KEY', 'an audit checkpoint needs an Ed25519 private key');
  }
  const keyId = signerIds.get(privateKey) ?? auditKeyId(privateKey);
  signerIds.set(privateKey, keyId);
  return keyId;
}

/** Whether `existing` (the checkpoint stored at the head's row, if any) already signs `head` with `keyId`. */
export function signsHead(
  existing: AuditCheckpoint | undefined,
  keyId: string,
  head: AuditHead,
): existing is AuditCheckpoint {
  return existing !== undefined && existing.keyId === keyId && existing.hash === head.hash;
}

/** The checkpoint of `head` at `at`, signed with `privateKey` (whose id is `keyId`). */
export function signCheckpoint(
  head: AuditHead,
  at: string,
  privateKey: crypto.KeyObject,
  keyId: string,
): AuditCheckpoint {
  const c = { seq: head.seq, hash: head.hash, at };
  const signature = crypto.sign(null, checkpointMessage(c), privateKey).toString('base64');
  return { ...c, keyId, signature };
}
