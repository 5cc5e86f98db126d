import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Helpers of the console tests: a real `switchboard console` process and a demo database. */

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

export interface ConsoleProcess {
  child: ChildProcess;
  /** The page's address (no token). */
  url: string;
  /** The address with `#token=` as printed at start. */
  tokenUrl: string;
  token: string;
  stdout: string;
  stderr: () => string;
  stop(): Promise<void>;
}

export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-console-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs a command to its end. */
export function runCli(
  args: readonly string[],
  timeoutMs = 120_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => {
      stderr += c;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`switchboard ${args.join(' ')} did not end within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A database the demo filled (two items of the dev SDLC workflow, completed, 72 audit rows). */
export async function demoDatabase(dir: string): Promise<string> {
  const db = join(dir, 'demo.db');
  const run = await runCli(['demo', '--db', db, '--approve', '--json']);
  if (run.code !== 0) throw new Error(`the demo failed: ${run.stderr}`);
  return db;
}

/** Starts `switchboard console` on a free port and reads the address it prints. */
export function startConsole(args: readonly string[]): Promise<ConsoleProcess> {
  const child = spawn(process.execPath, [bin, 'console', '--listen', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    stderr += c;
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the console did not start:\n${stderr}`)), 30_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the console exited (${code}) before it listened:\n${stderr}`));
    });
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      stdout += c;
      const match = /Open (http:\/\/[^\s#]+)#token=([0-9a-f]+)/.exec(stdout);
      if (match === null) return;
      clearTimeout(timer);
      const [, url, token] = match as unknown as [string, string, string];
      resolve({
        child,
        url,
        token,
        tokenUrl: `${url}#token=${token}`,
        stdout,
        stderr: () => stderr,
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
  });
}

export async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
