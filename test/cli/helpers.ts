import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const bin = new URL('../../bin/switchboard.js', import.meta.url).pathname;

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `switchboard` command (the build in dist/) in a child process
 * to its end (in `cwd`, default ours); one that has not ended within
 * `timeoutMs` (default 120 s) is killed and the call fails with its stderr.
 */
export function runCli(
  args: readonly string[],
  options: { cwd?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.cwd });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`switchboard ${args.join(' ')} did not end within ${timeoutMs} ms:\n${stderr}`));
    }, timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `runCli` with `--json`, the stdout parsed. */
export async function runJson<T = Record<string, unknown>>(
  args: readonly string[],
): Promise<{ code: number | null; json: T; stderr: string }> {
  const r = await runCli([...args, '--json']);
  let json: T;
  try {
    json = JSON.parse(r.stdout) as T;
  } catch {
    throw new Error(`not JSON (exit ${r.code}): ${r.stdout}\n${r.stderr}`);
  }
  return { code: r.code, json, stderr: r.stderr };
}

export interface TempDir {
  dir: string;
  file(name: string): string;
  cleanup(): void;
}

export function tempDir(prefix = 'sb-cli-'): TempDir {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, file: (name) => join(dir, name), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The SHA-256 of a database file and its WAL (what a read-only command must leave alone). */
export function fingerprint(path: string): string {
  const hash = createHash('sha256').update(readFileSync(path));
  if (existsSync(`${path}-wal`)) hash.update(readFileSync(`${path}-wal`));
  return hash.digest('hex');
}
