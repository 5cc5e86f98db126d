/**
 * The Context Engine's argument checks and its error, shared by every
 * backend (`SqliteContextStore`, `RedisContextStore`): the same bad input is
 * refused with the same code and message whichever store holds the context.
 */

import {
  ERROR_CODES,
  type ErrorCodeOf,
  SwitchboardError,
  type SwitchboardErrorOptions,
} from '../../protocol/switchboard-error.js';

/** Every code a `ContextStoreError` carries. */
export const CONTEXT_STORE_ERROR_CODES = ERROR_CODES.ContextStoreError;
/** One code a `ContextStoreError` carries (one of `CONTEXT_STORE_ERROR_CODES`). */
export type ContextStoreErrorCode = ErrorCodeOf<'ContextStoreError'>;

/** A refused Context Engine call (nothing changed), or a backend it cannot reach (`CONTEXT_BACKEND`). */
export class ContextStoreError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ContextStoreErrorCode;
  constructor(code: ContextStoreErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A value as stored (`undefined` is `null`), or `CONTEXT_NOT_JSON` naming `what`. */
export function toJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value === undefined ? null : value);
  } catch (error) {
    throw new ContextStoreError('CONTEXT_NOT_JSON', `${what} is not JSON-serializable: ${(error as Error).message}`);
  }
  if (text === undefined) throw new ContextStoreError('CONTEXT_NOT_JSON', `${what} is not JSON-serializable`);
  return text;
}

/** A key (run id, token, scope, memory key): a non-empty string of at most 1024 characters. */
export function checkKey(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 1024) {
    throw new ContextStoreError(
      'CONTEXT_INVALID_ARGUMENT',
      `${what} must be a non-empty string of at most 1024 characters`,
    );
  }
  return value;
}

/** A memory patch: an object of keys to JSON values (`null` deletes the key). */
export function checkPatch(patch: unknown): Record<string, unknown> {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
    throw new ContextStoreError('CONTEXT_INVALID_ARGUMENT', 'a memory patch is an object');
  }
  for (const [key, value] of Object.entries(patch)) {
    checkKey(key, 'a memory key');
    toJson(value, `memory.${key}`);
  }
  return patch as Record<string, unknown>;
}
