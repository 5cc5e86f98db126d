import { BrokerError } from '../protocol/broker-error.js';

/**
 * The JSON-RPC errors of the gateway: the A2A v1.0 codes for what A2A names
 * (task not found, not cancelable, unsupported operation), JSON-RPC's own
 * for a bad request, and codes of the gateway's own (-32040 to -32043) for
 * refusals at the HTTP edge, each with the HTTP status it is sent under.
 */

/** A2A v1.0: the task does not exist, or is not the caller's. */
export const A2A_TASK_NOT_FOUND = -32001;
/** A2A v1.0: the task has ended and cannot be canceled. */
export const A2A_TASK_NOT_CANCELABLE = -32002;
/** A2A v1.0: push notifications are not offered. */
export const A2A_PUSH_NOT_SUPPORTED = -32003;
/** A2A v1.0: the operation is not offered. */
export const A2A_UNSUPPORTED_OPERATION = -32004;
/** A2A v1.0: the request's media type is not one the binding takes (JSON). */
export const A2A_CONTENT_TYPE_NOT_SUPPORTED = -32005;
/** Gateway: no key, or a key the gateway does not hold (HTTP 401). */
export const GATEWAY_UNAUTHENTICATED = -32040;
/** Gateway: the key is not scoped to this agent (HTTP 403). */
export const GATEWAY_FORBIDDEN = -32041;
/** Gateway: the key sent more requests than its rate allows (HTTP 429). */
export const GATEWAY_RATE_LIMITED = -32042;
/** Gateway: the request body is larger than the bound (HTTP 413). */
export const GATEWAY_BODY_TOO_LARGE = -32043;

/** A refusal as the gateway answers it: the JSON-RPC error and its HTTP status. */
export class GatewayRefusal extends Error {
  readonly code: number;
  readonly status: number;
  readonly data: Record<string, unknown> | undefined;
  constructor(code: number, status: number, message: string, data?: Record<string, unknown>) {
    super(message);
    this.code = code;
    this.status = status;
    this.data = data;
  }
}

/** The JSON-RPC error object of anything a call threw (no stack or internal message leaks). */
export function rpcErrorOf(error: unknown, method: string): { code: number; message: string; data?: unknown } {
  if (error instanceof GatewayRefusal) {
    return { code: error.code, message: error.message, ...(error.data === undefined ? {} : { data: error.data }) };
  }
  if (!(error instanceof BrokerError)) return { code: -32603, message: 'Internal error' };
  const data = { ...(error.details ?? {}), errorCode: error.code };
  switch (error.code) {
    case 'A2A_UNKNOWN_TASK':
    case 'A2A_CROSS_CONTEXT_DENIED':
      return {
        code: A2A_TASK_NOT_FOUND,
        message: 'no task of yours has this id: list yours with ListTasks',
        data: { errorCode: 'A2A_UNKNOWN_TASK' },
      };
    case 'A2A_TASK_TERMINAL':
    case 'A2A_INVALID_TRANSITION':
      return {
        code: method === 'CancelTask' ? A2A_TASK_NOT_CANCELABLE : -32602,
        message: error.message,
        data,
      };
    case 'PARSE_ERROR':
      return { code: -32700, message: error.message, data };
    case 'INVALID_REQUEST':
      return { code: -32600, message: error.message, data };
    case 'METHOD_NOT_FOUND':
      return { code: A2A_UNSUPPORTED_OPERATION, message: error.message, data };
    case 'INTERNAL_ERROR':
      return { code: -32603, message: 'Internal error: the broker failed; retry, and see its log if it persists' };
    default:
      return { code: -32602, message: error.message, data };
  }
}
