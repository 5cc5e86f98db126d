import { createHash, randomBytes } from 'node:crypto';
import { type ErrorCodeOf, SwitchboardError } from '../protocol/switchboard-error.js';
import type { ConsoleUserRow, ConsoleUserTable } from '../persistence/coordinator/console-users.js';

/**
 * The console's users: each approver holds an access token of their own,
 * minted once (32 random bytes, hex) and kept only as its SHA-256 in the
 * Coordinator's database. An action with a user's token acts as that user:
 * the approver of a decision is the name the token belongs to, never a name
 * the request gives.
 */

/** `console users add` of a name holding a live token, or `revoke` of no live user (`details.name`). */
export class ConsoleUserError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'ConsoleUserError'>;
  constructor(code: ErrorCodeOf<'ConsoleUserError'>, name: string) {
    super(
      code,
      code === 'CONSOLE_USER_EXISTS'
        ? `console user ${name} already holds a token: revoke it first (switchboard console users revoke ${name}) to mint a new one`
        : `no console user ${name} with a live token: list them with switchboard console users list`,
      { details: { name } },
    );
  }
}

/** A fresh access token: 32 random bytes as 64 hex characters. */
export function mintConsoleToken(): string {
  return randomBytes(32).toString('hex');
}

/** What is stored of a token: its SHA-256, hex. */
export function consoleTokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Mints a token for `name`, stores its hash, and returns the token (shown once, never stored). */
export async function addConsoleUser(users: ConsoleUserTable, name: string, now = Date.now()): Promise<string> {
  const token = mintConsoleToken();
  if (!(await users.add(name, consoleTokenHash(token), now))) throw new ConsoleUserError('CONSOLE_USER_EXISTS', name);
  return token;
}

/** Revokes `name`'s token: the console refuses it from the next action on. */
export async function revokeConsoleUser(users: ConsoleUserTable, name: string, now = Date.now()): Promise<void> {
  if (!(await users.revoke(name, now))) throw new ConsoleUserError('CONSOLE_USER_UNKNOWN', name);
}

export type { ConsoleUserRow, ConsoleUserTable };
