import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  RetryPolicyFieldsSchema,
  checkRetryPolicy,
  decideRetry,
  parseDurationMs,
  resolveRetryPolicy,
  retryDelayMs,
} from '../../src/protocol/retry-policy.js';
import { DEFAULT_RETRY_POLICY } from '../../src/protocol/work-envelope.js';

describe('retry policy fields', () => {
  it('fill in from the work bus defaults, later layers winning field by field', () => {
    expect(resolveRetryPolicy()).toEqual({ ...DEFAULT_RETRY_POLICY, nonRetryableErrorTypes: [] });
    expect(
      resolveRetryPolicy(
        { initialInterval: 500, maximumAttempts: 2 },
        { maximumAttempts: 4, nonRetryableErrorTypes: ['X'] },
      ),
    ).toEqual({
      initialInterval: 500,
      backoffCoefficient: DEFAULT_RETRY_POLICY.backoffCoefficient,
      maximumInterval: DEFAULT_RETRY_POLICY.maximumInterval,
      maximumAttempts: 4,
      nonRetryableErrorTypes: ['X'],
    });
    // A long initial interval raises the default maximum to it.
    expect(resolveRetryPolicy({ initialInterval: 3_600_000 }).maximumInterval).toBe(3_600_000);
  });

  it('read durations as milliseconds or unit strings', () => {
    expect(parseDurationMs('1.5s')).toBe(1_500);
    expect(parseDurationMs('2m')).toBe(120_000);
    expect(parseDurationMs('1h')).toBe(3_600_000);
    expect(parseDurationMs('10ms')).toBe(10);
    expect(Number.isNaN(parseDurationMs('10 days'))).toBe(true);
    expect(RetryPolicyFieldsSchema.parse({ initialInterval: 20, maximumInterval: '1s' })).toEqual({
      initialInterval: 20,
      maximumInterval: 1_000,
    });
  });

  it('refuse bad fields with their paths, and an inverted interval with a typed error', () => {
    const bad = RetryPolicyFieldsSchema.safeParse({
      initialInterval: '1 sec',
      backoffCoefficient: 0.5,
      maximumAttempts: -1,
      extra: true,
    });
    expect(bad.success).toBe(false);
    const paths = bad.error?.issues.map((i) => i.path.join('.')) ?? [];
    expect(paths).toEqual(expect.arrayContaining(['initialInterval', 'backoffCoefficient', 'maximumAttempts']));
    expect(bad.error?.issues.some((i) => i.code === 'unrecognized_keys')).toBe(true);
    expect(checkRetryPolicy({ initialInterval: 10_000, maximumInterval: 1_000 })).toEqual({
      ok: false,
      path: ['maximumInterval'],
      message: 'maximumInterval (1000 ms) is below initialInterval (10000 ms)',
    });
    expect(() => resolveRetryPolicy({ initialInterval: 10_000, maximumInterval: 1_000 })).toThrow(
      expect.objectContaining({
        name: 'WorkflowError',
        code: 'RETRY_POLICY_INVALID',
        details: { path: expect.any(Array) },
      }),
    );
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

  it('back off exponentially up to the maximum interval', () => {
    expect([1, 2, 3, 4, 5].map((a) => retryDelayMs(policy, a))).toEqual([100, 300, 900, 1_000, 1_000]);
  });

  it('retry until maximumAttempts, never a non-retryable type or a failure reported final', () => {
    expect(decideRetry(policy, { attempt: 1, errorType: 'Timeout' })).toEqual({
      retry: true,
      nextAttempt: 2,
      delayMs: 100,
    });
    expect(decideRetry(policy, { attempt: 4, errorType: 'Timeout' })).toEqual({ retry: false, why: 'exhausted' });
    expect(decideRetry(policy, { attempt: 1, errorType: 'TestsFailed' })).toEqual({
      retry: false,
      why: 'non-retryable',
    });
    expect(decideRetry(policy, { attempt: 1, errorType: 'Timeout', final: 'exhausted' })).toEqual({
      retry: false,
      why: 'exhausted',
    });
    expect(decideRetry(policy, { attempt: 1, errorType: 'Timeout', final: 'non-retryable' })).toEqual({
      retry: false,
      why: 'non-retryable',
    });
  });

  it('never runs out of attempts when maximumAttempts is 0 (unlimited, as in Temporal)', () => {
    const unlimited = resolveRetryPolicy({ maximumAttempts: 0, initialInterval: 1, maximumInterval: 8 });
    expect(decideRetry(unlimited, { attempt: 10_000, errorType: 'Timeout' })).toEqual({
      retry: true,
      nextAttempt: 10_001,
      delayMs: 8,
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
    expect(a).toBeGreaterThanOrEqual(Math.min(initial, p.maximumInterval));
    expect(b).toBeGreaterThanOrEqual(a);
    expect(b).toBeLessThanOrEqual(p.maximumInterval);
  });
});
