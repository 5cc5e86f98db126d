import type { z } from 'zod';
import { toSchemaIssues } from '../protocol/parse.js';
import {
  type BusEnvelope,
  BusEnvelopeSchema,
  DEFAULT_RETRY_POLICY,
  type RetryPolicy,
  RetryPolicySchema,
  RoleSchema,
  WorkErrorSchema,
} from '../protocol/work-envelope.js';
import { IdSchema } from '../protocol/task.js';
import {
  BusError,
  type ConsumeOptions,
  DEFAULT_MAX_DELIVERIES,
  type NackOptions,
  type PublishRequest,
  type RoleSettings,
} from './work-queue.js';

/**
 * Checks of the arguments of `WorkQueue` calls, shared by every backend so
 * that each refuses the same bad input with the same `BusError`, before
 * anything is stored.
 */

/** A retry policy's overrides (built once: a schema built per call is compiled again on each parse). */
const PartialRetryPolicySchema = RetryPolicySchema.partial().strict();

/** Longest visibility timeout / delay accepted: a week. */
export const MAX_DURATION_MS = 7 * 24 * 60 * 60 * 1000;
/** Most messages one consume may lease. */
export const MAX_CONSUME_BATCH = 1000;

function invalid(message: string, details?: Record<string, unknown>): BusError {
  return new BusError('BUS_INVALID_ARGUMENT', message, details === undefined ? {} : { details });
}

export function checkRole(role: unknown): string {
  const parsed = RoleSchema.safeParse(role);
  if (!parsed.success) throw invalid(`invalid role: ${parsed.error.issues[0]?.message ?? 'bad role'}`);
  return parsed.data;
}

function checkDuration(name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_DURATION_MS) {
    throw invalid(`${name} must be a number of milliseconds in [${min}, ${MAX_DURATION_MS}]`);
  }
  return Math.round(value);
}

export interface CheckedPublish {
  role: string;
  envelope: BusEnvelope;
  idempotencyKey: string;
  taskKey: string | undefined;
  delayMs: number;
  retryPolicy: Partial<RetryPolicy> | undefined;
}

export function checkPublish(request: PublishRequest): CheckedPublish {
  const role = checkRole(request.role);
  const parsed = BusEnvelopeSchema.safeParse(request.envelope);
  if (!parsed.success) {
    throw new BusError('BUS_INVALID_ENVELOPE', 'invalid envelope', {
      details: { issues: toSchemaIssues(parsed.error as z.ZodError) },
    });
  }
  const key = IdSchema.safeParse(request.idempotencyKey);
  if (!key.success) throw invalid('idempotencyKey must be a non-empty string of at most 256 characters');
  let taskKey: string | undefined;
  if (request.taskKey !== undefined) {
    const tk = IdSchema.safeParse(request.taskKey);
    if (!tk.success) throw invalid('taskKey must be a non-empty string of at most 256 characters');
    taskKey = tk.data;
  }
  const delayMs = request.delayMs === undefined ? 0 : checkDuration('delayMs', request.delayMs, 0);
  let retryPolicy: Partial<RetryPolicy> | undefined;
  if (request.retryPolicy !== undefined) {
    const rp = PartialRetryPolicySchema.safeParse(request.retryPolicy);
    if (!rp.success) {
      throw invalid('invalid retryPolicy', { issues: toSchemaIssues(rp.error as z.ZodError) });
    }
    retryPolicy = rp.data;
  }
  return { role, envelope: parsed.data, idempotencyKey: key.data, taskKey, delayMs, retryPolicy };
}

export interface CheckedConsume {
  role: string;
  consumer: string;
  visibilityTimeoutMs: number;
  max: number;
  waitMs: number;
  signal: AbortSignal | undefined;
}

export function checkConsume(role: unknown, options: ConsumeOptions): CheckedConsume {
  const checkedRole = checkRole(role);
  if (options === null || typeof options !== 'object') throw invalid('consume options are required');
  const consumer = IdSchema.safeParse(options.consumer);
  if (!consumer.success) throw invalid('consumer must be a non-empty string of at most 256 characters');
  const visibilityTimeoutMs = checkDuration('visibilityTimeoutMs', options.visibilityTimeoutMs, 1);
  const max = options.max ?? 1;
  if (!Number.isInteger(max) || max < 1 || max > MAX_CONSUME_BATCH) {
    throw invalid(`max must be an integer in [1, ${MAX_CONSUME_BATCH}]`);
  }
  const waitMs = options.waitMs === undefined ? 0 : checkDuration('waitMs', options.waitMs, 0);
  return { role: checkedRole, consumer: consumer.data, visibilityTimeoutMs, max, waitMs, signal: options.signal };
}

export function checkNack(options: NackOptions): NackOptions {
  if (options === null || typeof options !== 'object') throw invalid('nack options are required');
  const error = WorkErrorSchema.safeParse(options.error);
  if (!error.success) throw invalid('nack error must be {type, message}');
  if (typeof options.retryable !== 'boolean') throw invalid('nack retryable must be a boolean');
  const out: NackOptions = { error: error.data, retryable: options.retryable };
  if (options.delayMs !== undefined) out.delayMs = checkDuration('delayMs', options.delayMs, 0);
  if (options.counted !== undefined) {
    if (typeof options.counted !== 'boolean')
      throw invalid('nack counted must be a boolean (false: the retry uses up no attempt)');
    out.counted = options.counted;
  }
  return out;
}

export function checkExtend(extendMs: number | undefined, fallback: number): number {
  return extendMs === undefined ? fallback : checkDuration('extendMs', extendMs, 1);
}

export interface ResolvedRoleSettings {
  retryPolicy: RetryPolicy;
  maxDeliveries: number;
}

/** Checks queue-level role settings once, at construction. */
export function resolveRoleSettings(
  base: ResolvedRoleSettings,
  settings: RoleSettings | undefined,
): ResolvedRoleSettings {
  if (settings === undefined) return base;
  let retryPolicy = base.retryPolicy;
  if (settings.retryPolicy !== undefined) {
    const rp = PartialRetryPolicySchema.safeParse(settings.retryPolicy);
    if (!rp.success) throw invalid('invalid retryPolicy', { issues: toSchemaIssues(rp.error as z.ZodError) });
    retryPolicy = { ...retryPolicy, ...rp.data };
  }
  const maxDeliveries = settings.maxDeliveries ?? base.maxDeliveries;
  if (!Number.isInteger(maxDeliveries) || maxDeliveries < 1) throw invalid('maxDeliveries must be an integer >= 1');
  return { retryPolicy, maxDeliveries };
}

export const BASE_ROLE_SETTINGS: ResolvedRoleSettings = Object.freeze({
  retryPolicy: DEFAULT_RETRY_POLICY,
  maxDeliveries: DEFAULT_MAX_DELIVERIES,
});
