import { z } from 'zod';
import { DurationSchema } from './duration.js';
import { WorkflowError } from './workflow-error.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy, RetryPolicySchema } from './work-envelope.js';

/**
 * Retry policies as written in workflow definitions, and the pure decisions
 * over them. The policy itself (`RetryPolicy`, Temporal-shaped, milliseconds)
 * is the one of the work bus (`./work-envelope.ts`): a stage's policy is the
 * policy its hops are published with.
 */

export { DurationSchema, parseDurationMs } from './duration.js';

/**
 * The fields of a retry policy as written: each optional, durations as
 * numbers or strings (parsed to milliseconds). A stage's fields override the
 * definition's defaults field by field; `resolveRetryPolicy` fills the rest.
 */
export const RetryPolicyFieldsSchema = z.strictObject({
  initialInterval: DurationSchema.optional(),
  backoffCoefficient: z.number().min(1).max(1_000).optional(),
  maximumInterval: DurationSchema.optional(),
  /** 0 means unlimited, as in Temporal (the bus still bounds deliveries by its `maxDeliveries`). */
  maximumAttempts: z.number().int().min(0).max(1_000).optional(),
  nonRetryableErrorTypes: z.array(z.string().min(1).max(128)).max(64).optional(),
});
export interface RetryPolicyFields extends z.output<typeof RetryPolicyFieldsSchema> {}
/** Retry policy fields as written (durations may be strings). */
export interface RetryPolicyFieldsInput extends z.input<typeof RetryPolicyFieldsSchema> {}

export type RetryPolicyCheck = { ok: true; policy: RetryPolicy } | { ok: false; path: string[]; message: string };

/**
 * Layers policy fields (later layers win, field by field) over the bus's
 * `DEFAULT_RETRY_POLICY` and checks the result: `maximumInterval` must not be
 * below `initialInterval`; a missing `maximumInterval` is the default's, or
 * `initialInterval` when that is longer.
 */
export function checkRetryPolicy(...layers: (RetryPolicyFields | undefined)[]): RetryPolicyCheck {
  const merged: RetryPolicyFields = {};
  for (const layer of layers) {
    if (layer === undefined) continue;
    for (const [key, value] of Object.entries(layer)) {
      if (value !== undefined) (merged as Record<string, unknown>)[key] = value;
    }
  }
  const initialInterval = merged.initialInterval ?? DEFAULT_RETRY_POLICY.initialInterval;
  const maximumInterval = merged.maximumInterval ?? Math.max(DEFAULT_RETRY_POLICY.maximumInterval, initialInterval);
  if (maximumInterval < initialInterval) {
    return {
      ok: false,
      path: ['maximumInterval'],
      message: `maximumInterval (${maximumInterval} ms) is below initialInterval (${initialInterval} ms)`,
    };
  }
  const policy = RetryPolicySchema.parse({
    initialInterval,
    backoffCoefficient: merged.backoffCoefficient ?? DEFAULT_RETRY_POLICY.backoffCoefficient,
    maximumInterval,
    maximumAttempts: merged.maximumAttempts ?? DEFAULT_RETRY_POLICY.maximumAttempts,
    nonRetryableErrorTypes: [...(merged.nonRetryableErrorTypes ?? DEFAULT_RETRY_POLICY.nonRetryableErrorTypes)],
  });
  return { ok: true, policy };
}

/** The policy of the given layers (see `checkRetryPolicy`); throws `WorkflowError` (`RETRY_POLICY_INVALID`, `details.path`). */
export function resolveRetryPolicy(...layers: (RetryPolicyFields | undefined)[]): RetryPolicy {
  const check = checkRetryPolicy(...layers);
  if (!check.ok) {
    throw new WorkflowError('RETRY_POLICY_INVALID', `invalid retry policy: ${check.path.join('.')}: ${check.message}`, {
      details: { path: check.path },
    });
  }
  return check.policy;
}

/**
 * Milliseconds to wait before retrying after attempt `attempt` (1-based)
 * failed: `min(initialInterval * backoffCoefficient^(attempt-1), maximumInterval)`.
 * No jitter: the WorkflowRun must decide the same way on every replay.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const exponent = Math.max(0, attempt - 1);
  const raw = policy.initialInterval * policy.backoffCoefficient ** exponent;
  return Math.round(Math.min(raw, policy.maximumInterval));
}

/** Why a failure is not retried. */
export type NoRetryReason = 'non-retryable' | 'exhausted';

export type RetryDecision =
  | { retry: true; nextAttempt: number; delayMs: number }
  | { retry: false; why: NoRetryReason };

/**
 * Whether a failed attempt is retried: not if the reporter says the failure
 * is final (`final`), not if its error type is listed in
 * `nonRetryableErrorTypes`, not if it was the last allowed attempt
 * (`maximumAttempts`, 0 meaning unlimited).
 */
export function decideRetry(
  policy: RetryPolicy,
  failure: { attempt: number; errorType: string; final?: NoRetryReason | undefined },
): RetryDecision {
  if (failure.final !== undefined) return { retry: false, why: failure.final };
  if (policy.nonRetryableErrorTypes.includes(failure.errorType)) return { retry: false, why: 'non-retryable' };
  if (policy.maximumAttempts !== 0 && failure.attempt >= policy.maximumAttempts)
    return { retry: false, why: 'exhausted' };
  return { retry: true, nextAttempt: failure.attempt + 1, delayMs: retryDelayMs(policy, failure.attempt) };
}
