import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KeyRing, addKey, readKeys, revokeKey } from '../../src/gateway/gateway-keys.js';
import { RateLimiter } from '../../src/gateway/rate-limiter.js';

let dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  dirs = [];
});

function keysFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-gateway-keys-'));
  dirs.push(dir);
  return join(dir, 'keys.json');
}

describe('the gateway keys file', () => {
  it('keeps the SHA-256 of a key, never the key, readable by its owner only', () => {
    const file = keysFile();
    const key = addKey(file, 'alice', ['echo']);
    expect(key).toMatch(/^sbgw_[A-Za-z0-9_-]{43}$/);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toContain(key);
    expect(text).toContain(createHash('sha256').update(key).digest('hex'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readKeys(file)).toMatchObject([{ name: 'alice', agents: ['echo'] }]);
  });

  it('refuses a second live key of one name, and revoking an unknown one, changing nothing', () => {
    const file = keysFile();
    addKey(file, 'alice', ['echo']);
    const before = readFileSync(file, 'utf8');
    expect(() => addKey(file, 'alice', ['other'])).toThrow(expect.objectContaining({ code: 'GATEWAY_KEY_EXISTS' }));
    expect(() => revokeKey(file, 'bob')).toThrow(expect.objectContaining({ code: 'GATEWAY_KEY_UNKNOWN' }));
    expect(readFileSync(file, 'utf8')).toBe(before);
  });

  it('a file that is not a keys file is refused with what to do', () => {
    const file = keysFile();
    writeFileSync(file, '{"something": "else"}');
    expect(() => readKeys(file)).toThrow(expect.objectContaining({ code: 'GATEWAY_KEYS_FILE' }));
    expect(() => addKey(file, 'alice', ['echo'])).toThrow(/not a gateway keys file/);
  });

  it('the ring finds live keys only, and sees a key added or revoked after it was opened', () => {
    const file = keysFile();
    const ring = new KeyRing(file);
    expect(ring.find('anything')).toBeUndefined();
    const key = addKey(file, 'alice', ['echo']);
    expect(ring.find(key)?.name).toBe('alice');
    // Found before: remembered, and the same.
    expect(ring.find(key)?.name).toBe('alice');
    expect(ring.find(`${key}x`)).toBeUndefined();
    revokeKey(file, 'alice');
    // A key found before is not remembered past a change of the file.
    expect(ring.find(key)).toBeUndefined();
    expect(ring.isLive('alice')).toBe(false);
    const again = addKey(file, 'alice', ['echo']);
    expect(ring.find(again)?.name).toBe('alice');
    expect(ring.find(key)).toBeUndefined();
  });
});

describe('the per-key rate limit', () => {
  it('allows bursts of twice the rate, then the rate, per key', () => {
    const limiter = new RateLimiter(2);
    const at0 = [1, 2, 3, 4, 5].map(() => limiter.take('a', 0));
    expect(at0).toEqual([true, true, true, true, false]);
    expect(limiter.take('b', 0)).toBe(true); // another key has its own bucket
    expect(limiter.take('a', 400)).toBe(false); // 0.8 of a token
    expect(limiter.take('a', 500)).toBe(true); // one token a half second
    expect(limiter.take('a', 500)).toBe(false);
  });
});
