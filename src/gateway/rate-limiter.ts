/**
 * A token bucket per key: `rate` requests a second, saved up to a burst of
 * twice that. Time comes in as an argument (default the monotonic clock), so
 * that a test can drive it.
 */
export class RateLimiter {
  readonly rate: number;
  private readonly burst: number;
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(rate: number) {
    if (!Number.isFinite(rate) || rate <= 0) throw new RangeError('a rate is a number of requests a second above 0');
    this.rate = rate;
    this.burst = rate * 2;
  }

  /** Takes one request's token for `key`; false when its bucket is empty. */
  take(key: string, now = performance.now()): boolean {
    const bucket = this.buckets.get(key) ?? { tokens: this.burst, at: now };
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
