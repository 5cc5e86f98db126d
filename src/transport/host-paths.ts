import { createHash } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';

/**
 * Where the host's broker of a database file is reached. One broker per
 * file: its socket and its log are named after the file's absolute path
 * (hashed: socket paths are short, about 100 bytes at most) in the user's
 * runtime directory, `$XDG_RUNTIME_DIR/switchboard` or, without it,
 * `$TMPDIR/switchboard-UID` (created mode 0700; a directory others can write
 * is refused when listening).
 */

/** The directory of this user's broker sockets and logs. */
export function runtimeDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg !== undefined && xdg !== '') return join(xdg, 'switchboard');
  const uid = process.getuid?.() ?? 'user';
  return join(tmpdir(), `switchboard-${uid}`);
}

/** The absolute path of a database file, its directory's symlinks resolved (the file may not exist yet). */
export function canonicalDatabasePath(db: string): string {
  const absolute = resolve(db);
  try {
    return join(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

function fileKey(db: string): string {
  return createHash('sha256').update(canonicalDatabasePath(db)).digest('hex').slice(0, 16);
}

/** The default socket of the broker that owns `db` (`serve --listen unix`, `connect({ db })`). */
export function defaultSocketPath(db: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(runtimeDirectory(env), `broker-${fileKey(db)}.sock`);
}

/** Where a broker started in the background by `connect({ db })` writes its log (stderr). */
export function backgroundLogPath(db: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(runtimeDirectory(env), `broker-${fileKey(db)}.log`);
}
