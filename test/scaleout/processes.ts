import { type ChildProcess, spawn } from 'node:child_process';
import Database from 'better-sqlite3';

/** Helpers of the multi-process tests: real `switchboard` processes on real pipes. */

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;
export const FIXTURE_HANDLER = new URL('./fixtures/effects-handler.mjs', import.meta.url).pathname;

export interface Proc {
  name: string;
  child: ChildProcess;
  /** Every stderr line so far. */
  lines: string[];
  /** Resolves with the first line (from now on, or already seen when `seen`) that matches. */
  waitForLine(match: (line: string) => boolean, timeoutMs: number, options?: { seen?: boolean }): Promise<string>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function startCli(name: string, args: readonly string[], env: Record<string, string> = {}): Proc {
  const child = spawn(process.execPath, [bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
  const lines: string[] = [];
  const waiters = new Set<(line: string) => void>();
  let partial = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    partial += chunk;
    const parts = partial.split('\n');
    partial = parts.pop() ?? '';
    for (const line of parts) {
      lines.push(line);
      for (const w of [...waiters]) w(line);
    }
  });
  child.stdout!.resume();
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return {
    name,
    child,
    lines,
    exited,
    waitForLine(match, timeoutMs, options = {}) {
      if (options.seen === true) {
        const found = lines.find(match);
        if (found !== undefined) return Promise.resolve(found);
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(`${name}: no matching line within ${timeoutMs} ms; last lines:\n${lines.slice(-10).join('\n')}`),
          );
        }, timeoutMs);
        const check = (line: string) => {
          if (!match(line)) return;
          clearTimeout(timer);
          waiters.delete(check);
          resolve(line);
        };
        waiters.add(check);
        void exited.then(({ code, signal }) => {
          if (!waiters.has(check)) return;
          clearTimeout(timer);
          waiters.delete(check);
          reject(
            new Error(`${name} exited (${code ?? signal}) before a matching line:\n${lines.slice(-10).join('\n')}`),
          );
        });
      });
    },
  };
}

/** Runs a command to its end. */
export { runCli } from '../cli/helpers.js';

export function logMessage(line: string): string | undefined {
  try {
    return (JSON.parse(line) as { msg?: string }).msg;
  } catch {
    return undefined;
  }
}

export function isLog(msg: string): (line: string) => boolean {
  return (line) => logMessage(line) === msg;
}

export function isHopStart(line: string): boolean {
  return line.includes('"fixture":"hop-start"');
}

export interface ItemRow {
  id: string;
  state: string;
  attributes: string | null;
}

/** The Coordinator's work items, read from its database (read-only, as another process would). */
export function readItems(path: string): ItemRow[] {
  let db: Database.Database;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
  } catch {
    return [];
  }
  try {
    return db.prepare('SELECT id, state, attributes FROM coord_items ORDER BY id').all() as ItemRow[];
  } catch {
    return [];
  } finally {
    db.close();
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `done()` holds, failing with `describe()` after `timeoutMs`. */
export async function until(done: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${describe()}`);
    await sleep(200);
  }
}

/** Stops a process with SIGTERM and returns its exit. */
export async function terminate(
  proc: Proc,
  timeoutMs = 15_000,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null) return proc.exited;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), timeoutMs);
  try {
    return await proc.exited;
  } finally {
    clearTimeout(timer);
  }
}
