/** Why a client-side connection failed; not a wire error (those are `SwitchboardError`). */
export const TRANSPORT_ERROR_CODES = [
  /** The connection closed (or the broker process exited) before the answer came. */
  'CONNECTION_CLOSED',
  /** The host's handshake is too old or lacks the `a2a` capability. */
  'INCOMPATIBLE_HOST',
  /** The broker process could not be started. */
  'SPAWN_FAILED',
  /** The peer wrote something that is not JSON-RPC. */
  'PROTOCOL_VIOLATION',
] as const;
export type TransportErrorCode = (typeof TRANSPORT_ERROR_CODES)[number];

export class TransportError extends Error {
  readonly code: TransportErrorCode;

  constructor(code: TransportErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TransportError';
    this.code = code;
  }
}

export function isTransportError(value: unknown): value is TransportError {
  return value instanceof TransportError;
}
