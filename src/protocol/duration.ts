import { z } from 'zod';

/**
 * A duration as written in a definition: a whole number of milliseconds, or
 * a string with a unit (`'250ms'`, `'1s'`, `'1.5s'`, `'2m'`, `'1h'`), as in
 * the Temporal TypeScript SDK. Parsed to milliseconds.
 */
export const DurationSchema = z
  .union([
    z.number().int().nonnegative(),
    z.string().regex(/^\d+(\.\d+)?(ms|s|m|h)$/, 'expected a duration such as 500, "500ms", "1s", "1.5s", "2m" or "1h"'),
  ])
  .transform((value) => (typeof value === 'number' ? value : parseDurationMs(value)))
  .pipe(z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER));

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 } as const;

/** Milliseconds of a duration string such as `'1.5s'` (rounded to a whole millisecond); NaN if it is not one. */
export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!match) return Number.NaN;
  return Math.round(Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS]);
}
