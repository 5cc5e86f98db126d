import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';

/** A fresh directory for one test's database files; `cleanup` removes it. */
export function tempDir(): { dir: string; db: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-transport-'));
  return { dir, db: join(dir, 'broker.db'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export type Line = Record<string, unknown> & { id?: unknown; method?: string; params?: unknown };

/**
 * The real `switchboard serve` on real pipes, driven line by line: what a
 * test written from PROTOCOL.md alone would do.
 */
export class RawServe {
  readonly child: ChildProcessWithoutNullStreams;
  /** Every line written to stdout, parsed (a line that is not JSON fails the test). */
  readonly lines: unknown[] = [];
  readonly rawStdout: string[] = [];
  stderr = '';
  private buffered = '';
  private nextId = 1;
  private readonly listeners = new Set<() => void>();
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  /** `cwd`: the child's working directory (default: this process's). */
  constructor(db: string, args: string[] = [], cwd?: string) {
    this.child = spawn(process.execPath, [SWITCHBOARD_BIN, 'serve', '--db', db, ...args], { stdio: 'pipe', cwd });
    // 'close': the process exited and its stdout was read to the end.
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (text: string) => {
      this.buffered += text;
      let newline = this.buffered.indexOf('\n');
      while (newline >= 0) {
        const line = this.buffered.slice(0, newline);
        this.buffered = this.buffered.slice(newline + 1);
        this.rawStdout.push(line);
        this.lines.push(JSON.parse(line));
        newline = this.buffered.indexOf('\n');
      }
      for (const listener of [...this.listeners]) listener();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderr += text;
    });
    this.child.stdin.on('error', () => {});
  }

  write(data: string | Uint8Array): void {
    this.child.stdin.write(data);
  }

  /** Sends a request and resolves with its answer (the whole response object). */
  async request(method: string, params?: unknown): Promise<Line> {
    const id = this.nextId++;
    const message = params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
    this.write(`${JSON.stringify(message)}\n`);
    return (await this.waitFor((line) => isObject(line) && line.id === id)) as Line;
  }

  /** Sends a request and resolves with its result (fails on an error answer). */
  async call(method: string, params?: unknown): Promise<Record<string, unknown>> {
    const answer = await this.request(method, params);
    if (!('result' in answer)) throw new Error(`${method} failed: ${JSON.stringify(answer.error)}`);
    return answer.result as Record<string, unknown>;
  }

  /** The notifications written so far. */
  notifications(method?: string): Line[] {
    return this.lines.filter(
      (line): line is Line => isObject(line) && !('id' in line) && (method === undefined || line.method === method),
    );
  }

  /** Resolves with the first line (already written or to come) that matches. */
  waitFor(match: (line: unknown) => boolean, timeoutMs = 10_000): Promise<unknown> {
    const found = this.lines.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`no matching line within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      const listener = () => {
        const line = this.lines.find(match);
        if (line === undefined) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(line);
      };
      this.listeners.add(listener);
    });
  }

  /** Ends stdin and waits for the process to exit. */
  async end(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    return this.exited;
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill(signal);
    return this.exited;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function text(value: string) {
  return { parts: [{ kind: 'text' as const, text: value }] };
}
