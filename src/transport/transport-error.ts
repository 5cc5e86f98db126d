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
 * started; `PROTOCOL_VIOLATION`: the peer wrote something that is not JSON-RPC.
 */
export const TRANSPORT_ERROR_CODES = ERROR_CODES.TransportError;
export type TransportErrorCode = ErrorCodeOf<'TransportError'>;

export class TransportError extends SwitchboardError {
  declare readonly code: TransportErrorCode;

  constructor(code: TransportErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

export function isTransportError(value: unknown): value is TransportError {
  return value instanceof TransportError;
}
