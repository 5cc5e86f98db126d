import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../cli/helpers.js';
import { createTestDatabase } from '../postgres-availability.js';
import { REDIS_URL, deleteRedisPrefix } from '../redis-availability.js';
import { type Proc, isLog, startCli, terminate } from '../scaleout/processes.js';

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
export { runCli };

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

/** A Coordinator's deployment on PostgreSQL and Redis for the console's tests: a fresh database and a fresh bus prefix. */
export interface PostgresDeployment {
  /** The database's URL with a password in it (trust auth ignores it): it must appear nowhere. */
  url: string;
  /** The same URL without the password (as messages name it). */
  safeUrl: string;
  secret: string;
  /** `--bus URL --bus-prefix NAME` of the deployment. */
  bus: string[];
  /** The same URL through another port (a proxy's), with the password. */
  urlVia(port: number): string;
  /** `switchboard coordinator` on the deployment, with the demo's workers in it; resolves once it is ready. */
  startCoordinator(extra?: readonly string[]): Promise<Proc>;
  /** Runs `switchboard items list` until `done` holds for the items, and returns them. */
  waitForItems(
    done: (items: { id: string; state: string }[]) => boolean,
    what: string,
  ): Promise<{ id: string; state: string }[]>;
  cleanup(): Promise<void>;
}

export async function postgresDeployment(): Promise<PostgresDeployment> {
  const database = await createTestDatabase('sb_console');
  const prefix = `console-${randomUUID().slice(0, 8)}`;
  const secret = `pw-${randomUUID().slice(0, 12)}`;
  const withPassword = (port?: number) => {
    const u = new URL(database.url);
    u.password = secret;
    if (port !== undefined) u.port = String(port);
    return u.toString();
  };
  const url = withPassword();
  const bus = ['--bus', REDIS_URL, '--bus-prefix', prefix];
  const procs: Proc[] = [];
  return {
    url,
    safeUrl: database.url.replace(/\/$/, ''),
    secret,
    bus,
    urlVia: (port) => withPassword(port),
    async startCoordinator(extra = []) {
      const p = startCli('coordinator', [
        'coordinator',
        '--db',
        url,
        ...bus,
        '--local-workers',
        '--log-level',
        'info',
        ...extra,
      ]);
      procs.push(p);
      await p.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
      return p;
    },
    async waitForItems(done, what) {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const r = await runCli(['items', 'list', '--db', url, '--json']);
        if (r.code !== 0) throw new Error(r.stderr);
        const items = (JSON.parse(r.stdout) as { items: { id: string; state: string }[] }).items;
        if (done(items)) return items;
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(items)}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
    async cleanup() {
      for (const p of procs) await terminate(p);
      await deleteRedisPrefix(prefix);
      await database.drop();
    },
  };
}
