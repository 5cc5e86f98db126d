import { z } from 'zod';

/**
 * A duration as written in a definition or an option: a whole number of
 * milliseconds, or a string with a unit (`'250ms'`, `'1s'`, `'1.5s'`, `'2m'`,
 * `'1h'`), as in the Temporal TypeScript SDK. Parsed to milliseconds.
 */
export const DurationSchema = z
  .union([
    z.number().int().nonnegative(),
    z.string().regex(/^\d+(\.\d+)?(ms|s|m|h)$/, 'expected a duration such as 500, "500ms", "1s", "1.5s", "2m" or "1h"'),
  ])
  .transform((value) => (typeof value === 'number' ? value : parseDurationMs(value)))
  .pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER));

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** Milliseconds of a duration string such as `'1.5s'` (rounded to a whole millisecond). */
export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!match) return Number.NaN;
  return Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
}

/** The defaults of a retry policy, where a definition leaves a field out. */
export const DEFAULT_RETRY_POLICY = Object.freeze({
  initialInterval: 1_000,
  backoffCoefficient: 2,
  maximumInterval: 100_000,
  maximumAttempts: 3,
  nonRetryableErrorTypes: Object.freeze([]) as readonly string[],
});

/**
 * How a failed attempt is retried, shaped as Temporal's `RetryPolicy`:
 * attempt `n` (1-based) that fails is retried after
 * `min(initialInterval * backoffCoefficient^(n-1), maximumInterval)` unless
 * `n >= maximumAttempts` or its error type is listed in
 * `nonRetryableErrorTypes`. Intervals are milliseconds (or duration strings).
 * Differences from Temporal: `maximumAttempts` must be at least 1 (there is
 * no "unlimited"), and it defaults to 3; `maximumInterval` defaults to 100x
 * `initialInterval` as in Temporal.
 */
/**
 * The fields of a retry policy as written, each checked on its own (durations
 * already in milliseconds); defaults are not filled in. A workflow definition
 * holds these so that a stage's fields override the definition's defaults
 * field by field.
 */
export const RetryPolicyFieldsSchema = z.strictObject({
  initialInterval: DurationSchema.optional(),
  backoffCoefficient: z.number().min(1).max(1_000).optional(),
  maximumInterval: DurationSchema.optional(),
  maximumAttempts: z.number().int().min(1).max(1_000).optional(),
  nonRetryableErrorTypes: z.array(z.string().min(1).max(128)).max(64).optional(),
});
export type RetryPolicyFields = z.output<typeof RetryPolicyFieldsSchema>;

export const RetryPolicySchema = RetryPolicyFieldsSchema.transform((p, ctx) => {
  const initialInterval = p.initialInterval ?? DEFAULT_RETRY_POLICY.initialInterval;
  const maximumInterval = p.maximumInterval ?? initialInterval * 100;
  if (maximumInterval < initialInterval) {
    ctx.addIssue({
      code: 'custom',
      path: ['maximumInterval'],
      message: `maximumInterval (${maximumInterval} ms) is below initialInterval (${initialInterval} ms)`,
    });
  }
  return {
    initialInterval,
    backoffCoefficient: p.backoffCoefficient ?? DEFAULT_RETRY_POLICY.backoffCoefficient,
    maximumInterval,
    maximumAttempts: p.maximumAttempts ?? DEFAULT_RETRY_POLICY.maximumAttempts,
    nonRetryableErrorTypes: p.nonRetryableErrorTypes ?? [...DEFAULT_RETRY_POLICY.nonRetryableErrorTypes],
  };
});

/** A retry policy as written (every field optional, durations as numbers or strings). */
export type RetryPolicyInput = z.input<typeof RetryPolicySchema>;
/** A retry policy with every field filled in and every interval in milliseconds. */
export type RetryPolicy = z.output<typeof RetryPolicySchema>;

/** The policy with every default filled in. */
export function resolveRetryPolicy(input: RetryPolicyInput = {}): RetryPolicy {
  return RetryPolicySchema.parse(input);
}

/**
 * Milliseconds to wait before retrying after attempt `attempt` (1-based)
 * failed: `min(initialInterval * backoffCoefficient^(attempt-1), maximumInterval)`.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const exponent = Math.max(0, attempt - 1);
  const raw = policy.initialInterval * policy.backoffCoefficient ** exponent;
  return Math.round(Math.min(raw, policy.maximumInterval));
}

export type RetryDecision =
  | { retry: true; nextAttempt: number; delayMs: number }
  | { retry: false; why: 'non-retryable' | 'attempts-exhausted' };

/**
 * Whether a failed attempt is retried. `retryable: false` marks a failure the
 * reporter already knows is final (the error type need not be listed).
 */
export function decideRetry(
  policy: RetryPolicy,
  failure: { attempt: number; errorType: string; retryable?: boolean },
): RetryDecision {
  if (failure.retryable === false || policy.nonRetryableErrorTypes.includes(failure.errorType)) {
    return { retry: false, why: 'non-retryable' };
  }
  if (failure.attempt >= policy.maximumAttempts) return { retry: false, why: 'attempts-exhausted' };
  return { retry: true, nextAttempt: failure.attempt + 1, delayMs: retryDelayMs(policy, failure.attempt) };
}
