import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  FAILED_DELAY_MS,
  MAX_UNAVAILABLE_DELAY_MS,
  resultRetry,
  unavailable,
} from '../../src/decisions/result-retry.js';

/**
 * The retry of a result the Coordinator could not apply, as rules: a
 * failure of the Coordinator's means (a code or message of an unavailable
 * store or connection, on the error or up to four causes down) is retried
 * without using up an attempt, after 1 s doubling to 30 s; any other failure
 * uses up an attempt and is retried after 1 s.
 */

const UNAVAILABLE = [
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'ENOTCONN',
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_LOCKED',
  'SQLITE_LOCKED_SHAREDCACHE',
  'SQLITE_IOERR',
  'SQLITE_IOERR_WRITE',
  'SQLITE_FULL',
  'SQLITE_CANTOPEN',
  'SQLITE_PROTOCOL',
  'SQLITE_NOMEM',
  'SQLITE_READONLY',
  'SQLITE_READONLY_DBMOVED',
  '08006',
  '08P01',
  '40001',
  '40P01',
  '53300',
  '57P01',
  '57014',
  '58030',
];
const OWN = [
  'SQLITE_CONSTRAINT',
  'SQLITE_CONSTRAINT_CHECK',
  'SQLITE_CONSTRAINT_TRIGGER',
  'SQLITE_MISMATCH',
  'SQLITE_TOOBIG',
  'SQLITE_ERROR',
  'SQLITE_BUSYNESS',
  'XSQLITE_BUSY',
  '23505',
  '22P02',
  '42P01',
  '0800',
  '080001',
  'COORD_UNKNOWN_ITEM',
  'COORD_FENCED_NOT',
  'ECONNREFUSEDX',
  'A08006',
  'X40001',
  'WORKFLOW_RUN_SNAPSHOT_INVALID',
];
const UNAVAILABLE_MESSAGES = [
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
  'timeout exceeded when trying to connect',
  'Client has encountered a connection error and is not queryable',
  'The client is closed',
  'connection is closed',
];

/** `error` wrapped `depth` times, each wrapper naming the one below as its cause. */
function wrapped(error: unknown, depth: number): unknown {
  let e = error;
  for (let i = 0; i < depth; i++) e = Object.assign(new Error(`wrapper ${i}`), { cause: e });
  return e;
}

const deliveriesArb = fc.integer({ min: -2, max: 40 });

function backoff(deliveries: number): number {
  const n = Math.min(Math.max(deliveries, 1), 16);
  return Math.min(MAX_UNAVAILABLE_DELAY_MS, 1_000 * 2 ** (n - 1));
}

describe('the retry of a result that failed to apply', () => {
  test.prop([fc.constantFrom(...UNAVAILABLE), fc.integer({ min: 0, max: 4 }), deliveriesArb])(
    'an unavailable code, on the error or a cause up to four down: not counted, 1 s doubling to 30 s',
    (code, depth, deliveries) => {
      const error = wrapped(Object.assign(new Error('down'), { code }), depth);
      expect(unavailable(error)).toBe(true);
      expect(resultRetry(error, deliveries)).toEqual({
        cause: 'unavailable',
        counted: false,
        delayMs: backoff(deliveries),
      });
    },
  );

  test.prop([fc.constantFrom('COORD_FENCED', 'COORD_CLOSED'), fc.integer({ min: 0, max: 4 }), deliveriesArb])(
    'a Coordinator that no longer leads or is closing: back to the leader after 1 s, not counted, however many deliveries',
    (code, depth, deliveries) => {
      const error = wrapped(Object.assign(new Error('not the leader'), { code }), depth);
      expect(unavailable(error)).toBe(false);
      expect(resultRetry(error, deliveries)).toEqual({ cause: 'elsewhere', counted: false, delayMs: FAILED_DELAY_MS });
      // Whatever else its causes say.
      const down = Object.assign(new Error('down'), {
        code,
        cause: Object.assign(new Error('x'), { code: 'ECONNRESET' }),
      });
      expect(resultRetry(down, deliveries).cause).toBe('elsewhere');
    },
  );

  test.prop([fc.constantFrom(...UNAVAILABLE_MESSAGES), fc.integer({ min: 0, max: 4 }), deliveriesArb])(
    'a message of a connection gone, without a code: unavailable',
    (message, depth, deliveries) => {
      const error = wrapped(new Error(message), depth);
      expect(resultRetry(error, deliveries)).toEqual({
        cause: 'unavailable',
        counted: false,
        delayMs: backoff(deliveries),
      });
    },
  );

  test.prop([
    fc.oneof(
      fc.constantFrom(...OWN).map((code) => Object.assign(new Error('its own'), { code })),
      fc.string().map((message) => new Error(`boom ${message.replace(/conn/gi, '')}`)),
      fc.constantFrom(
        null,
        undefined,
        'a string',
        42,
        { code: 7 },
        { message: 9 },
        // Not strings, though they read as one that would say unavailable.
        { code: 40001 },
        { code: ['SQLITE_BUSY'] },
        { message: ['connection terminated'] },
      ),
    ),
    fc.integer({ min: 0, max: 4 }),
    deliveriesArb,
  ])('any other failure: counted, after 1 s', (error, depth, deliveries) => {
    const e = wrapped(error, depth);
    expect(unavailable(e)).toBe(false);
    expect(resultRetry(e, deliveries)).toEqual({ cause: 'failed', counted: true, delayMs: FAILED_DELAY_MS });
  });

  it('every unavailable code and message, each on its own', () => {
    for (const code of UNAVAILABLE) {
      expect(resultRetry(Object.assign(new Error('down'), { code }), 1)).toMatchObject({ cause: 'unavailable' });
    }
    for (const message of UNAVAILABLE_MESSAGES) expect(unavailable(new Error(message))).toBe(true);
    for (const code of OWN) expect(unavailable(Object.assign(new Error('its own'), { code }))).toBe(false);
  });

  it('reads five errors down at most: a cause below that is not looked at', () => {
    const down = Object.assign(new Error('down'), { code: 'SQLITE_BUSY' });
    expect(unavailable(wrapped(down, 4))).toBe(true);
    expect(unavailable(wrapped(down, 5))).toBe(false);
  });

  it('the unavailable backoff by delivery: 1, 2, 4, 8, 16 s, then 30 s', () => {
    const down = Object.assign(new Error('down'), { code: 'ECONNREFUSED' });
    expect([0, 1, 2, 3, 4, 5, 6, 7, 100].map((d) => resultRetry(down, d).delayMs)).toEqual([
      1_000, 1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000,
    ]);
    expect(FAILED_DELAY_MS).toBe(1_000);
    expect(MAX_UNAVAILABLE_DELAY_MS).toBe(30_000);
  });
});
