import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../protocol/switchboard-error.js';

/**
 * Why a client-side connection failed; not a wire error (those are
 * `BrokerError`). `CONNECTION_CLOSED`: closed (or the broker process exited)
 * before the answer came; `INCOMPATIBLE_HOST`: the handshake is too old or
 * lacks the `a2a` capability; `SPAWN_FAILED`: the broker process could not be
 * started; `PROTOCOL_VIOLATION`: the peer wrote something that is not JSON-RPC;
 * `NO_BROKER`: nothing listens on the socket given to `connect({ socket })`.
 */
export const TRANSPORT_ERROR_CODES = ERROR_CODES.TransportError;
/** One code a `TransportError` carries (one of `TRANSPORT_ERROR_CODES`). */
export type TransportErrorCode = ErrorCodeOf<'TransportError'>;

/** A client-side connection that failed (closed, incompatible host, spawn failure, protocol violation). */
export class TransportError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: TransportErrorCode;

  constructor(code: TransportErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

/** Whether a value is a `TransportError`. */
export function isTransportError(value: unknown): value is TransportError {
  return value instanceof TransportError;
}
