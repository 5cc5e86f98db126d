import { ERROR_CODES, type ErrorCodeOf, SwitchboardError } from '../../protocol/switchboard-error.js';

/** Every code an `AuditError` carries. */
export const AUDIT_ERROR_CODES = ERROR_CODES.AuditError;
/** One code an `AuditError` carries (one of `AUDIT_ERROR_CODES`). */
export type AuditErrorCode = ErrorCodeOf<'AuditError'>;

/** A refused audit append (nothing written); `path` (also `details.path`) points into the entry. */
export class AuditError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: AuditErrorCode;
  constructor(
    code: AuditErrorCode,
    message: string,
    /** Where in the entry the problem is (its field path; empty for the entry as a whole). */
    readonly path: (string | number)[] = [],
  ) {
    super(code, message, { details: { path } });
  }
}
