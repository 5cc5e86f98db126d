import type { KeyObject } from 'node:crypto';
import type { AuditChain } from '../persistence/audit/audit-chain.js';
import { auditKeyId } from '../persistence/audit/checkpoints.js';
import { auditDigest, formatAuditDigest } from '../persistence/audit/digest.js';

/**
 * `audit digest`: verifies the chain (with the key's checkpoints when given),
 * then prints its signed head as one line on stdout: the newest checkpoint
 * (of `publicKey`'s key when given), or the unsigned head when there is no
 * checkpoint (said on stderr). A chain that does not verify gets no digest.
 */
export async function printDigest(chain: AuditChain, publicKey: KeyObject | undefined): Promise<number> {
  const verification = await chain.verifyChain(publicKey === undefined ? {} : { publicKey });
  if (!verification.ok) {
    process.stderr.write(
      `switchboard audit: no digest: the chain is BROKEN at row ${verification.seq} (${verification.reason}): ${verification.detail}\n`,
    );
    return 1;
  }
  const keyId = publicKey === undefined ? undefined : auditKeyId(publicKey);
  const checkpoints = (await chain.checkpoints()).filter((c) => keyId === undefined || c.keyId === keyId);
  const newest = checkpoints[checkpoints.length - 1];
  if (newest !== undefined) {
    // Without a key, the checkpoint's row is checked against the chain (its signature is not).
    const holds = await chain.verifyChain({ digest: auditDigest(newest) });
    if (!holds.ok) {
      process.stderr.write(
        `switchboard audit: no digest: the newest checkpoint (row ${newest.seq}) does not match the chain (${holds.reason}): ${holds.detail}\n`,
      );
      return 1;
    }
    process.stdout.write(`${formatAuditDigest(auditDigest(newest, newest))}\n`);
    if (verification.head.seq > newest.seq) {
      process.stderr.write(
        `switchboard audit: the digest is of the newest checkpoint (row ${newest.seq}); ${verification.head.seq - newest.seq} row(s) after it are not signed yet\n`,
      );
    }
    return 0;
  }
  process.stderr.write(
    `switchboard audit: no signed checkpoint${keyId === undefined ? '' : ` of key ${keyId}`}: the digest is of the unsigned head (give the Coordinator --audit-key to sign it)\n`,
  );
  process.stdout.write(`${formatAuditDigest(auditDigest(verification.head))}\n`);
  return 0;
}
