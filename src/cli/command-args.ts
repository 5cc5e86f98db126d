import { IN_MEMORY_PATH, isInMemoryPath } from '../persistence/kernel/database.js';
import { parseArgs } from 'node:util';
import { type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from '../protocol/switchboard-error.js';

/**
 * Flag parsing shared by the operator commands (`audit`, `usage`, `tasks`,
 * `dlq`): strict `node:util` parsing whose every failure is a
 * `CliUsageError` (exit code 2, the command's help on stderr).
 */

/** A bad command line: nothing ran; the message names the flag and what it takes. */
export class CliUsageError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'CliUsageError'>;
  constructor(message: string, options: SwitchboardErrorOptions = {}) {
    super('CLI_USAGE', message, options);
  }
}

export type FlagSpec = Record<string, { type: 'string' | 'boolean'; multiple?: boolean }>;

export interface ParsedArgs {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
}

export function parseCommandArgs(argv: string[], options: FlagSpec, maxPositionals: number): ParsedArgs {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs({ args: argv, options, strict: true, allowPositionals: true }) as ParsedArgs;
  } catch (error) {
    throw new CliUsageError(error instanceof Error ? error.message : String(error));
  }
  if (parsed.positionals.length > maxPositionals) {
    throw new CliUsageError(`unexpected argument '${parsed.positionals[maxPositionals]}'`);
  }
  return parsed;
}

/** A string flag's value (undefined when absent); an empty value is a usage error. */
export function stringFlag(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0) throw new CliUsageError(`--${name} needs a value`);
  return value;
}

/**
 * `--db PATH` of a command whose file other processes open by name or a
 * restart reopens (the Coordinator, workers, the demo, the control-plane
 * commands): `:memory:` would be a database no one else can see, gone with
 * the process, so it is refused. Only `switchboard serve` takes it.
 */
export function databaseFileFlag(args: ParsedArgs): string | undefined {
  const value = stringFlag(args, 'db');
  if (value !== undefined && isInMemoryPath(value)) {
    throw new CliUsageError(
      `--db ${IN_MEMORY_PATH} is a database in memory, which no other process can open and which is gone with this one: give a file path (only switchboard serve keeps a broker in memory)`,
    );
  }
  return value;
}

/** A string flag that may be repeated (`--id 1 --id 2`). */
export function stringListFlag(args: ParsedArgs, name: string): string[] | undefined {
  const value = args.values[name];
  if (value === undefined) return undefined;
  const list = (Array.isArray(value) ? value : [value]).map(String);
  if (list.some((v) => v.length === 0)) throw new CliUsageError(`--${name} needs a value`);
  return list;
}

export function booleanFlag(args: ParsedArgs, name: string): boolean {
  return args.values[name] === true;
}

/** One of a fixed set of words. */
export function choiceFlag<T extends string>(args: ParsedArgs, name: string, choices: readonly T[], fallback: T): T {
  const value = stringFlag(args, name);
  if (value === undefined) return fallback;
  if (!(choices as readonly string[]).includes(value)) {
    throw new CliUsageError(`--${name} must be one of ${choices.join(', ')} (got '${value}')`);
  }
  return value as T;
}

/** A duration in milliseconds from `--NAME MS` (its text `value`), a whole number from `min` to `max`. */
export function msFlag(value: string | undefined, name: string, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  if (!/^[0-9]+$/.test(value) || Number(value) < min || Number(value) > max) {
    throw new CliUsageError(`--${name} must be a whole number from ${min} to ${max} (got '${value}')`);
  }
  return Number(value);
}

/** A positive whole number. */
export function countFlag(args: ParsedArgs, name: string, fallback: number, max: number): number {
  const value = stringFlag(args, name);
  if (value === undefined) return fallback;
  if (!/^[0-9]+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw new CliUsageError(`--${name} must be a whole number from 1 to ${max} (got '${value}')`);
  }
  return Number(value);
}

/** Writes `switchboard <command>: <message>` and the help to stderr; returns exit code 2. */
/**
 * The `list | show ID` positionals of a reading command (`items`, `tasks`):
 * `what` names the id in the error (`a work item id`), `command` the command.
 */
export function listOrShow(
  args: ParsedArgs,
  what: string,
  command: string,
): { sub: 'list' | 'show'; id: string | undefined } {
  const [sub, id] = args.positionals;
  if (sub === undefined) throw new CliUsageError("missing subcommand: 'list' or 'show ID'");
  if (sub !== 'list' && sub !== 'show')
    throw new CliUsageError(
      `unknown subcommand '${sub}' (expected ${command === 'items' ? 'list, show, cancel or retry' : 'list or show'})`,
    );
  if (sub === 'show' && id === undefined) throw new CliUsageError(`show needs ${what}: ${command} show ID --db PATH`);
  if (sub === 'list' && id !== undefined) throw new CliUsageError(`unexpected argument '${id}'`);
  return { sub, id };
}

export function reportUsageError(command: string, error: CliUsageError, usage: string): number {
  process.stderr.write(`switchboard ${command}: ${error.message}\n\n${usage}\n`);
  return 2;
}
