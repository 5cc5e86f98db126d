import type { BoundName } from './bounds.js';
import { BOUNDS, MAX_LINE_BYTES } from './bounds.js';
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
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
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

/**
 * A call that succeeded (its changes are committed) but whose answer cannot be
 * given: it is longer than a line may be (`MAX_LINE_BYTES`), or would take its
 * batch's answer past it. `bytes` is its size, or an estimate from the stored
 * rows (then the task was not loaded at all), when known.
 */
export function answerTooLarge(
  bytes: number | undefined,
  inBatch = false,
  hint = 'read the task with a2a.tasks.get and a smaller historyLength (a2a.message.send and a2a.tasks.status take historyLength too)',
): BrokerError {
  const size = bytes === undefined ? 'too large to serialize' : `${bytes} bytes`;
  const where = inBatch ? 'would take its batch answer past' : 'is over';
  return new BrokerError(
    'INTERNAL_ERROR',
    `the call succeeded but its answer (${size}) ${where} the ${MAX_LINE_BYTES}-byte line bound (MAX_LINE_BYTES): ${
      inBatch ? 'send the call on its own line, or ' : ''
    }${hint}`,
    { details: { limit: 'MAX_LINE_BYTES', max: MAX_LINE_BYTES, ...(bytes === undefined ? {} : { bytes }) } },
  );
}

/**
 * A call of a batch whose answers already reached a bound (its line,
 * `MAX_LINE_BYTES`, or its connection's `CONNECTION_ANSWER_BUDGET_BYTES`):
 * not run (`ran: false`: nothing changed), or run and its answer not sent
 * (`ran: true`). `hint` says how to ask for less (e.g. page a list).
 */
export function answerBudgetSpent(limit: string, max: number, ran: boolean, hint: string): BrokerError {
  const what = ran ? 'the call ran but its answer was not sent' : 'the call was not run (nothing changed)';
  return new BrokerError(
    'ANSWER_BUDGET_SPENT',
    `${what}: the answers of its batch reached the ${max}-byte bound ${limit}; send it again in a later batch or on its own line${hint === '' ? '' : `, and ${hint}`}`,
    { details: { limit, max, ran } },
  );
}

export function invalidParams(
  message: string,
  issues: SchemaIssue[] = [],
  extra: Record<string, unknown> = {},
): BrokerError {
  return new BrokerError('INVALID_PARAMS', message, { details: { issues, ...extra } });
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
