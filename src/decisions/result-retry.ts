/**
 * What the Coordinator does with a result it could not apply (its decision or
 * its commit threw): the result goes back to the bus for another try.
 *
 * - A Coordinator that no longer leads (fenced) or is closing: `elsewhere`.
 *   The leader takes the result: it goes back after 1 s, using up none of
 *   its attempts (`counted: false`), however many failovers it sees.
 * - A failure of the Coordinator's own means is `unavailable`: its database
 *   unreachable, busy, locked or full, its connection lost. That is not the
 *   result's doing: the retry uses up none of the result's attempts, so no
 *   outage however long dead-letters a result. It backs off from 1 s to 30 s.
 * - Any other failure is `failed`: a constraint the commit broke, a decision
 *   that threw. It may be the result's own, so the retry, after 1 s, uses up
 *   an attempt: a result that fails every time is dead-lettered on the
 *   results role once its attempts are spent, where `switchboard dlq` shows
 *   it and replays it once the cause is fixed.
 */
export interface ResultRetry {
  cause: 'elsewhere' | 'unavailable' | 'failed';
  /** Whether the retry uses up one of the result's attempts. */
  counted: boolean;
  /** How long before the result is delivered again. */
  delayMs: number;
}

/** The longest wait between two tries of a result the Coordinator's store could not take. */
export const MAX_UNAVAILABLE_DELAY_MS = 30_000;
/** The wait before a result whose application failed is tried again. */
export const FAILED_DELAY_MS = 1_000;

/** Codes of a Coordinator that no longer leads, or is closing: another one applies the result. */
const ELSEWHERE_CODES: ReadonlySet<string> = new Set(['COORD_FENCED', 'COORD_CLOSED']);
/** Codes of errors that say the Coordinator's store cannot work now (Node's sockets). */
const UNAVAILABLE_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTCONN',
]);
/** SQLite's result codes (and their extended codes) of a database that cannot write now. */
const SQLITE_UNAVAILABLE = /^SQLITE_(BUSY|LOCKED|IOERR|FULL|CANTOPEN|PROTOCOL|NOMEM|READONLY)(_[A-Z_]+)?$/;
/**
 * PostgreSQL's SQLSTATE classes of a server that cannot serve now: 08
 * connection exception, 40 transaction rollback (serialization, deadlock),
 * 53 insufficient resources, 57 operator intervention (shutdown, canceled),
 * 58 system error.
 */
const POSTGRES_UNAVAILABLE = /^(08|40|53|57|58)[0-9A-Z]{3}$/;
/** What node-postgres says, without a code, when its connection went or never came. */
const UNAVAILABLE_MESSAGE =
  /connection terminated|timeout exceeded when trying to connect|connection error|client is closed|connection is closed/i;

/** `error` and the errors it was caused by, five at most. */
function* causes(error: unknown): Generator<{ code?: unknown; message?: unknown }> {
  let e: unknown = error;
  for (let depth = 0; depth < 5 && e !== null && typeof e === 'object'; depth++) {
    yield e as { code?: unknown; message?: unknown };
    e = (e as { cause?: unknown }).cause;
  }
}

/** Whether `error`, or an error it was caused by, says the Coordinator's means are unavailable. */
export function unavailable(error: unknown): boolean {
  return [...causes(error)].some(
    ({ code, message }) =>
      (typeof code === 'string' &&
        (UNAVAILABLE_CODES.has(code) || SQLITE_UNAVAILABLE.test(code) || POSTGRES_UNAVAILABLE.test(code))) ||
      (typeof message === 'string' && UNAVAILABLE_MESSAGE.test(message)),
  );
}

/** The retry of a result that failed to apply on its `deliveries`-th delivery (1 for the first). */
export function resultRetry(error: unknown, deliveries: number): ResultRetry {
  // A code that is not a string is in no set of codes.
  if ([...causes(error)].some(({ code }) => ELSEWHERE_CODES.has(code as string))) {
    return { cause: 'elsewhere', counted: false, delayMs: FAILED_DELAY_MS };
  }
  if (!unavailable(error)) return { cause: 'failed', counted: true, delayMs: FAILED_DELAY_MS };
  const doublings = Math.min(Math.max(deliveries, 1), 16) - 1;
  return { cause: 'unavailable', counted: false, delayMs: Math.min(MAX_UNAVAILABLE_DELAY_MS, 1_000 * 2 ** doublings) };
}
