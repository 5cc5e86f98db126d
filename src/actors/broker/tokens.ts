import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** 256 random bits. */
export const TOKEN_BYTES = 32;

/** What the authority keeps of a token: its digest, never the token. */
export interface TokenEntry {
  readonly key: string;
  readonly digest: Buffer;
  readonly agentId: string;
}

/**
 * The token authority of one broker. A token is minted once, returned once,
 * and kept only as its SHA-256 digest mapped to the registration it names; it
 * is never stored, logged, or recoverable. Lookups hash the presented token
 * and confirm the digest with a constant-time compare.
 */
export class TokenAuthority {
  private readonly byKey = new Map<string, TokenEntry>();

  /** Mints a token for a registration. The caller hands `token` out once and forgets it. */
  mint(agentId: string): { token: string; entry: TokenEntry } {
    const token = randomBytes(TOKEN_BYTES).toString('base64url');
    const key = keyOf(token);
    const entry: TokenEntry = { key, digest: Buffer.from(key, 'hex'), agentId };
    this.byKey.set(entry.key, entry);
    return { token, entry };
  }

  /** The registration a token names, or undefined. */
  resolve(token: string): string | undefined {
    const key = keyOf(token);
    const entry = this.byKey.get(key);
    if (entry === undefined || !timingSafeEqual(entry.digest, Buffer.from(key, 'hex'))) return undefined;
    return entry.agentId;
  }

  /** Invalidates a token. */
  revoke(entry: TokenEntry): void {
    this.byKey.delete(entry.key);
  }

  /** Re-installs a revoked token (undo of a revoke inside a failed call). */
  reinstate(entry: TokenEntry): void {
    this.byKey.set(entry.key, entry);
  }

  clear(): void {
    this.byKey.clear();
  }

  get size(): number {
    return this.byKey.size;
  }
}

/** The SHA-256 digest of a token, in hex (one-shot `crypto.hash`: no Hash object per call). */
function keyOf(token: string): string {
  return hash('sha256', token, 'hex');
}
