import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';

/** Thrown by a handler (or any error with `retryable: false`): the hop is dead-lettered without retries. */
export class NonRetryableError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'NonRetryableError'>;
  /** Always false: the hop fails at once, without a retry. */
  readonly retryable = false as const;
  /** The error type a workflow's next rules route on (`NonRetryableError` unless given). */
  readonly type: string;
  constructor(message: string, options: { type?: string; details?: Record<string, unknown>; cause?: unknown } = {}) {
    super('WORKER_NON_RETRYABLE', message, options);
    this.type = options.type ?? 'NonRetryableError';
  }
}

/** Every code a `WorkerError` carries. */
export const WORKER_ERROR_CODES = ERROR_CODES.WorkerError;
/** One code a `WorkerError` carries (one of `WORKER_ERROR_CODES`). */
export type WorkerErrorCode = ErrorCodeOf<'WorkerError'>;

/** A refused worker or pool call, a hop's lost lease or stop, or a handler that cannot be loaded. */
export class WorkerError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: WorkerErrorCode;
  constructor(code: WorkerErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
