import {
  A2A_ERROR_CODES,
  type A2AErrorCode,
  BrokerError,
  type BrokerErrorCode,
  isA2AErrorCode,
} from '../protocol/broker-error.js';
import type { Logger } from '../log/logger.js';

/**
 * The one place where string error codes meet JSON-RPC numbers. The broker
 * throws `BrokerError`s with string codes; this maps them onto the wire and,
 * on the client side, back into the same `BrokerError`.
 */

/** Standard JSON-RPC 2.0 error codes. */
export const JSONRPC_PARSE_ERROR = -32700;
/** JSON-RPC 2.0 error code: the line is JSON but not a valid request. */
export const JSONRPC_INVALID_REQUEST = -32600;
/** JSON-RPC 2.0 error code: no method of that name. */
export const JSONRPC_METHOD_NOT_FOUND = -32601;
/** JSON-RPC 2.0 error code: the params do not match the method's schema. */
export const JSONRPC_INVALID_PARAMS = -32602;
/** JSON-RPC 2.0 error code: the server failed (no message or stack of the cause is sent). */
export const JSONRPC_INTERNAL_ERROR = -32603;
/** Server-defined JSON-RPC code: a batch call was not run, or its answer not sent, because its batch's answers reached a bound. */
export const JSONRPC_ANSWER_BUDGET_SPENT = -32000;
/** Every A2A error is JSON-RPC code 1400 with `data.errorCode`. */
export const A2A_ERROR = 1400;

/** The JSON-RPC code of each broker error code on the wire. */
export const JSONRPC_CODE_OF: Readonly<Record<BrokerErrorCode, number>> = {
  PARSE_ERROR: JSONRPC_PARSE_ERROR,
  INVALID_REQUEST: JSONRPC_INVALID_REQUEST,
  METHOD_NOT_FOUND: JSONRPC_METHOD_NOT_FOUND,
  INVALID_PARAMS: JSONRPC_INVALID_PARAMS,
  INTERNAL_ERROR: JSONRPC_INTERNAL_ERROR,
  ANSWER_BUDGET_SPENT: JSONRPC_ANSWER_BUDGET_SPENT,
  ...(Object.fromEntries(A2A_ERROR_CODES.map((code) => [code, A2A_ERROR])) as Record<A2AErrorCode, number>),
};

const CODE_OF_JSONRPC: ReadonlyMap<number, BrokerErrorCode> = new Map([
  [JSONRPC_PARSE_ERROR, 'PARSE_ERROR'],
  [JSONRPC_INVALID_REQUEST, 'INVALID_REQUEST'],
  [JSONRPC_METHOD_NOT_FOUND, 'METHOD_NOT_FOUND'],
  [JSONRPC_INVALID_PARAMS, 'INVALID_PARAMS'],
  [JSONRPC_INTERNAL_ERROR, 'INTERNAL_ERROR'],
  [JSONRPC_ANSWER_BUDGET_SPENT, 'ANSWER_BUDGET_SPENT'],
]);

/** A JSON-RPC 2.0 error object as `toJsonRpcError` builds it: code, message and optional data. */
export interface JsonRpcErrorObject {
  /** The JSON-RPC error code (A2A errors have codes of their own). */
  code: number;
  /** What went wrong and what to do. */
  message: string;
  /** Details: the switchboard error code and what it names. */
  data?: unknown;
}

/**
 * Turns any thrown value into a JSON-RPC error object. Only a `BrokerError`
 * crosses as it is (an A2A code as 1400 with `data.errorCode`); anything else
 * becomes -32603 without leaking its message or stack.
 */
export function toJsonRpcError(error: unknown): JsonRpcErrorObject {
  if (!(error instanceof BrokerError)) {
    return { code: JSONRPC_INTERNAL_ERROR, message: 'Internal error' };
  }
  const out: JsonRpcErrorObject = { code: JSONRPC_CODE_OF[error.code], message: error.message };
  if (isA2AErrorCode(error.code)) {
    out.data = { ...(error.details ?? {}), errorCode: error.code };
  } else if (error.details !== undefined) {
    out.data = error.details;
  }
  return out;
}

/**
 * Rebuilds the `BrokerError` of a JSON-RPC error object (client side): the
 * string code, and `data` as `details` (without `errorCode`, which is the
 * code). A code switchboard does not define is `INTERNAL_ERROR` with
 * `details.jsonRpcCode`.
 */
export function fromJsonRpcError(error: JsonRpcErrorObject): BrokerError {
  const data =
    error.data !== null && typeof error.data === 'object' && !Array.isArray(error.data)
      ? { ...(error.data as Record<string, unknown>) }
      : undefined;
  if (error.code === A2A_ERROR && typeof data?.errorCode === 'string' && isA2AErrorCode(data.errorCode)) {
    const { errorCode, ...details } = data;
    return new BrokerError(errorCode as A2AErrorCode, error.message, { details });
  }
  const code = CODE_OF_JSONRPC.get(error.code);
  if (code === undefined) {
    return new BrokerError('INTERNAL_ERROR', error.message, { details: { ...(data ?? {}), jsonRpcCode: error.code } });
  }
  return new BrokerError(code, error.message, data === undefined ? {} : { details: data });
}

/**
 * Logs a call that failed with something other than a `BrokerError` (a
 * defect, not a refusal): its method and the error's message and stack,
 * never its params. Its caller answers `INTERNAL_ERROR`.
 */
export function logInternalFailure(logger: Logger, method: string, error: unknown): void {
  if (error instanceof BrokerError) return;
  logger.error(
    {
      method,
      err: error instanceof Error ? { message: error.message, stack: error.stack } : { value: typeof error },
    },
    'internal error while handling a call',
  );
}
