import type { BoundName } from './bounds.js';
import { BOUNDS } from './bounds.js';

/** Standard JSON-RPC 2.0 error codes. */
export const JSONRPC_PARSE_ERROR = -32700;
export const JSONRPC_INVALID_REQUEST = -32600;
export const JSONRPC_METHOD_NOT_FOUND = -32601;
export const JSONRPC_INVALID_PARAMS = -32602;
export const JSONRPC_INTERNAL_ERROR = -32603;
/** Every A2A error is JSON-RPC code 1400 with `data.errorCode`. */
export const A2A_ERROR = 1400;

export const A2A_ERROR_CODES = [
  'A2A_UNKNOWN_TOKEN',
  'A2A_UNKNOWN_AGENT',
  'A2A_UNKNOWN_TASK',
  'A2A_CROSS_CONTEXT_DENIED',
  'A2A_INVALID_TRANSITION',
  'A2A_TASK_TERMINAL',
  'A2A_SEND_CAP',
  'A2A_NO_PEERS',
  'A2A_PAYLOAD_TOO_LARGE',
] as const;
export type A2AErrorCode = (typeof A2A_ERROR_CODES)[number];

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export interface SchemaIssue {
  path: (string | number)[];
  message: string;
  code: string;
}

/**
 * The one error type of switchboard. `code` is the JSON-RPC code; A2A errors
 * carry `errorCode` (and it is copied into `data.errorCode` on the wire).
 */
export class SwitchboardError extends Error {
  readonly code: number;
  readonly errorCode: A2AErrorCode | undefined;
  readonly data: Record<string, unknown> | undefined;

  constructor(
    code: number,
    message: string,
    options: { errorCode?: A2AErrorCode; data?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SwitchboardError';
    this.code = code;
    this.errorCode = options.errorCode;
    this.data = options.data;
  }

  toJsonRpc(): JsonRpcErrorObject {
    return toJsonRpcError(this);
  }
}

export function a2aError(
  errorCode: A2AErrorCode,
  message: string,
  data: Record<string, unknown> = {},
): SwitchboardError {
  return new SwitchboardError(A2A_ERROR, message, { errorCode, data });
}

/** A bound was crossed: `data.limit` names the bound, `data.max` is its value. */
export function boundError(
  errorCode: 'A2A_PAYLOAD_TOO_LARGE' | 'A2A_SEND_CAP',
  limit: BoundName,
  message?: string,
): SwitchboardError {
  return a2aError(errorCode, message ?? `${limit} (${BOUNDS[limit]}) exceeded`, {
    limit,
    max: BOUNDS[limit],
  });
}

export function invalidParams(message: string, issues: SchemaIssue[] = []): SwitchboardError {
  return new SwitchboardError(JSONRPC_INVALID_PARAMS, message, { data: { issues } });
}

export function invalidRequest(message: string): SwitchboardError {
  return new SwitchboardError(JSONRPC_INVALID_REQUEST, message);
}

export function methodNotFound(method: string): SwitchboardError {
  return new SwitchboardError(JSONRPC_METHOD_NOT_FOUND, `Method not found: ${method}`, {
    data: { method },
  });
}

export function parseError(message = 'Parse error'): SwitchboardError {
  return new SwitchboardError(JSONRPC_PARSE_ERROR, message);
}

export function internalError(message = 'Internal error'): SwitchboardError {
  return new SwitchboardError(JSONRPC_INTERNAL_ERROR, message);
}

export function isSwitchboardError(value: unknown): value is SwitchboardError {
  return value instanceof SwitchboardError;
}

/**
 * Turns any thrown value into a JSON-RPC error object. Anything that is not a
 * SwitchboardError becomes -32603 without leaking its message or stack.
 */
export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (!(error instanceof SwitchboardError)) {
    return { code: JSONRPC_INTERNAL_ERROR, message: 'Internal error' };
  }
  const out: JsonRpcErrorObject = { code: error.code, message: error.message };
  if (error.errorCode !== undefined) {
    out.data = { ...(error.data ?? {}), errorCode: error.errorCode };
  } else if (error.data !== undefined) {
    out.data = error.data;
  }
  return out;
}

/** Rebuilds a SwitchboardError from a JSON-RPC error object (client side). */
export function fromJsonRpcError(error: JsonRpcErrorObject): SwitchboardError {
  const data =
    error.data !== null && typeof error.data === 'object' ? { ...(error.data as Record<string, unknown>) } : undefined;
  const errorCode =
    data && typeof data.errorCode === 'string' && (A2A_ERROR_CODES as readonly string[]).includes(data.errorCode)
      ? (data.errorCode as A2AErrorCode)
      : undefined;
  const options: { errorCode?: A2AErrorCode; data?: Record<string, unknown> } = {};
  if (errorCode !== undefined) options.errorCode = errorCode;
  if (data !== undefined) options.data = data;
  return new SwitchboardError(error.code, error.message, options);
}
