import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RETRY_POLICY,
  RetryPolicySchema,
  decideRetry,
  parseDurationMs,
  resolveRetryPolicy,
  retryDelayMs,
} from '../../src/protocol/retry-policy.js';

describe('RetryPolicySchema', () => {
  it('fills Temporal-shaped defaults', () => {
    expect(resolveRetryPolicy()).toEqual({
      initialInterval: 1_000,
      backoffCoefficient: 2,
      maximumInterval: 100_000,
      maximumAttempts: 3,
      nonRetryableErrorTypes: [],
    });
    expect(resolveRetryPolicy({ initialInterval: '250ms' }).maximumInterval).toBe(25_000);
  });

  it('reads durations as milliseconds or unit strings', () => {
    expect(parseDurationMs('1.5s')).toBe(1_500);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    expect(parseDurationMs('10ms')).toBe(10);
    expect(Number.isNaN(parseDurationMs('10 days'))).toBe(true);
    expect(resolveRetryPolicy({ initialInterval: 20, maximumInterval: '1s' })).toMatchObject({
      initialInterval: 20,
      maximumInterval: 1_000,
    });
  });

  it('refuses bad fields with their paths', () => {
    const bad = RetryPolicySchema.safeParse({
      initialInterval: '1 sec',
      backoffCoefficient: 0.5,
      maximumAttempts: 0,
      extra: true,
    });
    expect(bad.success).toBe(false);
    const paths = bad.error?.issues.map((i) => i.path.join('.')) ?? [];
    expect(paths).toEqual(expect.arrayContaining(['initialInterval', 'backoffCoefficient', 'maximumAttempts']));
    expect(bad.error?.issues.some((i) => i.code === 'unrecognized_keys')).toBe(true);
    const inverted = RetryPolicySchema.safeParse({ initialInterval: '10s', maximumInterval: '1s' });
    expect(inverted.success).toBe(false);
    expect(inverted.error?.issues[0]?.path).toEqual(['maximumInterval']);
  });
});

describe('retry decisions', () => {
  const policy = resolveRetryPolicy({
    initialInterval: 100,
    backoffCoefficient: 3,
    maximumInterval: 1_000,
    maximumAttempts: 4,
    nonRetryableErrorTypes: ['TestsFailed'],
  });

  it('backs off exponentially up to the maximum interval', () => {
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(policy, a))).toEqual([100, 300, 900, 1_000, 1_000]);
  });

  it('retries until maximumAttempts, never a non-retryable type', () => {
    expect(decideRetry(policy, { attempt: 1, errorType: 'Timeout' })).toEqual({
      retry: true,
      nextAttempt: 2,
      delayMs: 100,
    });
    expect(decideRetry(policy, { attempt: 4, errorType: 'Timeout' })).toEqual({
      retry: false,
      why: 'attempts-exhausted',
    });
    expect(decideRetry(policy, { attempt: 1, errorType: 'TestsFailed' })).toEqual({
      retry: false,
      why: 'non-retryable',
    });
    expect(decideRetry(policy, { attempt: 1, errorType: 'Timeout', retryable: false })).toEqual({
      retry: false,
      why: 'non-retryable',
    });
  });

  test.prop([
    fc.integer({ min: 0, max: 10_000 }),
    fc.double({ min: 1, max: 10, noNaN: true }),
    fc.integer({ min: 1, max: 30 }),
  ])('delays never decrease and never pass maximumInterval', (initial, coefficient, attempt) => {
    const p = resolveRetryPolicy({ initialInterval: initial, backoffCoefficient: coefficient });
    const a = retryDelayMs(p, attempt);
    const b = retryDelayMs(p, attempt + 1);
    expect(b).toBeGreaterThanOrEqual(a);
    expect(b).toBeLessThanOrEqual(p.maximumInterval);
    expect(DEFAULT_RETRY_POLICY.maximumAttempts).toBe(3);
  });
});
