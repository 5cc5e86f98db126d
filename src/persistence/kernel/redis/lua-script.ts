import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { type CommandTimeouts, UNTIMED } from './command-timeouts.js';

/** A Lua script as Redis runs it: the whole source and its SHA1 (for `EVALSHA`). */
export interface LuaScript {
  readonly name: string;
  readonly source: string;
  readonly sha: string;
}

/** The connection a script runs on: what `sendCommand` of a node-redis client offers. */
export interface ScriptConnection {
  sendCommand(args: string[], options?: { timeout?: number }): Promise<unknown>;
}

export function luaScript(name: string, source: string): LuaScript {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/** The text of a `.lua` file shipped beside the module that names it (`new URL('./scripts/x.lua', import.meta.url)`). */
export function readLua(url: URL): string {
  try {
    return readFileSync(url, 'utf8');
  } catch (error) {
    throw new Error(
      `the Lua script ${url.pathname} is missing: a build must copy src/**/*.lua into dist (npm run build)`,
      { cause: error },
    );
  }
}

/**
 * Runs a script with `EVALSHA`, sending the source (`EVAL`, which also caches
 * it) only when the server does not know it yet (`NOSCRIPT`: first call,
 * restart, `SCRIPT FLUSH`). The reply is Redis's, untransformed. With
 * `timeouts`, the call's answer is waited for under them instead of
 * node-redis's per-command timeout.
 */
export async function runScript(
  connection: ScriptConnection,
  script: LuaScript,
  keys: readonly string[],
  args: readonly string[],
  timeouts?: CommandTimeouts,
): Promise<unknown> {
  const tail = [String(keys.length), ...keys, ...args];
  const send = (command: string[]) =>
    timeouts === undefined
      ? connection.sendCommand(command)
      : timeouts.watch(() => connection.sendCommand(command, UNTIMED));
  try {
    return await send(['EVALSHA', script.sha, ...tail]);
  } catch (error) {
    if (!String((error as Error)?.message).startsWith('NOSCRIPT')) throw error;
    return send(['EVAL', script.source, ...tail]);
  }
}
