import { pino, type Logger as PinoLogger, type DestinationStream } from 'pino';

/** The structured logger every part of switchboard takes (pino's), writing JSON lines to stderr by default. */
export type Logger = PinoLogger;
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Field names that are never logged, wherever they appear: capability tokens
 * and payload bodies. Log sizes instead.
 */
export const REDACTED_PATHS = [
  'token',
  '*.token',
  '*.*.token',
  'params.token',
  'text',
  '*.text',
  'bytes',
  '*.bytes',
  'parts',
  '*.parts',
];

/**
 * A JSON logger writing to stderr (fd 2) by default: stdout of `switchboard
 * serve` carries protocol lines only.
 */
export function createLogger(
  options: { level?: LogLevel; name?: string; destination?: DestinationStream } = {},
): Logger {
  const destination = options.destination ?? pino.destination({ fd: 2, sync: true });
  return pino(
    {
      name: options.name ?? 'switchboard',
      level: options.level ?? 'info',
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
    },
    destination,
  );
}

/** A logger that drops everything: the default of embedded instances. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
