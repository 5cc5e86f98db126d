import { describe, expect, it } from 'vitest';
import { safeRedisUrl } from '../../src/persistence/kernel/redis/url.js';

describe('safeRedisUrl', () => {
  it('keeps scheme, host, port and database, and drops credentials', () => {
    expect(safeRedisUrl('redis://user:s3cret@10.0.0.5:6380/2')).toBe('redis://10.0.0.5:6380/2');
    expect(safeRedisUrl('rediss://:s3cret@cache.internal')).toBe('rediss://cache.internal');
    expect(safeRedisUrl('redis://127.0.0.1:6379/')).toBe('redis://127.0.0.1:6379');
  });
  it('says so for what is not a URL, without echoing it', () => {
    expect(safeRedisUrl('not a url with s3cret')).toBe('(unparsable url)');
  });
});
