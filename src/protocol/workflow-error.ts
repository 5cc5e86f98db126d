import { ERROR_CODES, type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from './switchboard-error.js';

/** Every code a `WorkflowError` carries. */
export const WORKFLOW_ERROR_CODES = ERROR_CODES.WorkflowError;
/** One code a `WorkflowError` carries (one of `WORKFLOW_ERROR_CODES`). */
export type WorkflowErrorCode = ErrorCodeOf<'WorkflowError'>;

/**
 * A workflow refused before anything ran: a definition (`WORKFLOW_INVALID`,
 * `details.problems`), a governance policy's arguments, a retry policy
 * (`details.path`), or a persisted run snapshot that cannot be restored.
 */
export class WorkflowError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: WorkflowErrorCode;

  constructor(code: WorkflowErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}
