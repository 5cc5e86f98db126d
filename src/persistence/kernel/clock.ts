/** Where time comes from. Injectable so that tests control it. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

export function isoTime(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}
