import type { BoundName } from './bounds.js';
import { BOUNDS } from './bounds.js';
import { ERROR_CODES, type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from './switchboard-error.js';

/** The broker's refusals; the transport puts them on the wire (`toJsonRpcError`). */
export const BROKER_ERROR_CODES = ERROR_CODES.BrokerError;
/** One code a `BrokerError` carries (one of `BROKER_ERROR_CODES`). */
export type BrokerErrorCode = ErrorCodeOf<'BrokerError'>;

/** One code of the A2A refusals (a `BROKER_ERROR_CODES` entry starting `A2A_`). */
export type A2AErrorCode = Extract<BrokerErrorCode, `A2A_${string}`>;

/** Whether a code is one of the A2A refusals (JSON-RPC 1400 on the wire). */
export function isA2AErrorCode(code: string): code is A2AErrorCode {
  return code.startsWith('A2A_') && (BROKER_ERROR_CODES as readonly string[]).includes(code);
}

/** The A2A refusals: on the wire, JSON-RPC code 1400 with `data.errorCode`. */
export const A2A_ERROR_CODES: readonly A2AErrorCode[] = BROKER_ERROR_CODES.filter(isA2AErrorCode);

/** One problem of refused params, as `INVALID_PARAMS` lists it in `details.issues`: where, what and its code. */
export interface SchemaIssue {
  path: (string | number)[];
  message: string;
  code: string;
}

/**
 * A call the broker refused (nothing changed). The same refusal is the same
 * `BrokerError` in process (`createBroker`, `connectInProcess`) and over stdio.
 */
export class BrokerError extends SwitchboardError {
  declare readonly code: BrokerErrorCode;

  constructor(code: BrokerErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

export function a2aError(code: A2AErrorCode, message: string, details: Record<string, unknown> = {}): BrokerError {
  return new BrokerError(code, message, { details });
}

/** A bound was crossed: `details.limit` names the bound, `details.max` is its value. */
export function boundError(
  code: 'A2A_PAYLOAD_TOO_LARGE' | 'A2A_SEND_CAP',
  limit: BoundName,
  message?: string,
): BrokerError {
  return a2aError(code, message ?? `${limit} (${BOUNDS[limit]}) exceeded`, { limit, max: BOUNDS[limit] });
}

export function invalidParams(message: string, issues: SchemaIssue[] = []): BrokerError {
  return new BrokerError('INVALID_PARAMS', message, { details: { issues } });
}

export function invalidRequest(message: string): BrokerError {
  return new BrokerError('INVALID_REQUEST', message);
}

export function methodNotFound(method: string): BrokerError {
  return new BrokerError('METHOD_NOT_FOUND', `Method not found: ${method}`, { details: { method } });
}

export function parseError(message = 'Parse error'): BrokerError {
  return new BrokerError('PARSE_ERROR', message);
}

export function internalError(message = 'Internal error'): BrokerError {
  return new BrokerError('INTERNAL_ERROR', message);
}

/** Whether a value is a `BrokerError`. */
export function isBrokerError(value: unknown): value is BrokerError {
  return value instanceof BrokerError;
}
