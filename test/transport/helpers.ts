import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';

/** A fresh directory for one test's database files; `cleanup` removes it. */
export function tempDir(): { dir: string; db: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-transport-'));
  return { dir, db: join(dir, 'broker.db'), cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A broker on a fresh file; what closes it and removes the file is handed to `cleanups`. */
export function openTempBroker(cleanups: (() => Promise<void> | void)[]): Broker {
  const tmp = tempDir();
  const broker = createBroker({ path: tmp.db });
  cleanups.push(async () => {
    await broker.close();
    tmp.cleanup();
  });
  return broker;
}

export type Line = Record<string, unknown> & { id?: unknown; method?: string; params?: unknown };

/**
 * The real `switchboard serve` on real pipes, driven line by line: what a
 * test written from docs/protocol.md alone would do.
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

/** What a test keeps of one stdout line of `LeanServe`: the line's size and its answer, minus any large result. */
export interface LineSummary {
  bytes: number;
  /** The parsed line when it is short (under 64 KiB); a long one is parsed, checked and dropped. */
  line?: unknown;
  id?: unknown;
  error?: { code: number; message: string; data?: Record<string, unknown> };
  /** For a batch answer: the summary of each entry. */
  entries?: LineSummary[];
  /** Messages in the answer's task, when it has one. */
  history?: number;
  /** The answer's task id, when it has one. */
  taskId?: string;
}

const KEEP_LINE_BYTES = 64 * 1024;

function summarize(parsed: unknown, bytes: number): LineSummary {
  if (Array.isArray(parsed)) return { bytes, entries: parsed.map((entry) => summarize(entry, -1)) };
  const summary: LineSummary = { bytes };
  if (bytes >= 0 && bytes < KEEP_LINE_BYTES) summary.line = parsed;
  if (isObject(parsed)) {
    summary.id = parsed.id;
    if (isObject(parsed.error)) summary.error = parsed.error as LineSummary['error'];
    const task = isObject(parsed.result) ? parsed.result.task : undefined;
    if (isObject(task) && Array.isArray(task.history)) summary.history = task.history.length;
    if (isObject(task) && typeof task.id === 'string') summary.taskId = task.id;
  }
  return summary;
}

/**
 * The real `switchboard serve` for answers of tens of MiB: stdout is split
 * into lines as buffers, each parsed (a line that is not JSON fails the
 * test) and kept only as a `LineSummary`; the child's RSS is sampled from
 * /proc/<pid>/status.
 */
export class LeanServe {
  readonly child: ChildProcessWithoutNullStreams;
  readonly summaries: LineSummary[] = [];
  stderr = '';
  /** Highest VmRSS seen, in bytes. */
  maxRss = 0;
  private chunks: Buffer[] = [];
  private nextId = 1;
  private readonly listeners = new Set<() => void>();
  private readonly sampler: NodeJS.Timeout;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(db: string) {
    this.child = spawn(process.execPath, [SWITCHBOARD_BIN, 'serve', '--db', db], { stdio: 'pipe' });
    this.exited = new Promise((resolve) => this.child.once('close', (code, signal) => resolve({ code, signal })));
    this.child.stdout.on('data', (chunk: Buffer) => this.onData(chunk));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderr = (this.stderr + text).slice(-16_384);
    });
    this.child.stdin.on('error', () => {});
    this.sampler = setInterval(() => this.sampleRss(), 10);
    void this.exited.then(() => clearInterval(this.sampler));
  }

  /** The child's current VmRSS in bytes (0 once it has exited). */
  rss(): number {
    try {
      const status = readFileSync(`/proc/${this.child.pid}/status`, 'utf8');
      const match = /VmRSS:\s+(\d+) kB/.exec(status);
      return match ? Number(match[1]) * 1024 : 0;
    } catch {
      return 0;
    }
  }

  private sampleRss(): void {
    this.maxRss = Math.max(this.maxRss, this.rss());
  }

  private onData(chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(0x0a, start);
    while (newline >= 0) {
      this.chunks.push(chunk.subarray(start, newline));
      const line = this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks);
      this.chunks = [];
      this.summaries.push(summarize(JSON.parse(line.toString('utf8')), line.length));
      start = newline + 1;
      newline = chunk.indexOf(0x0a, start);
    }
    if (start < chunk.length) this.chunks.push(chunk.subarray(start));
    this.sampleRss();
    for (const listener of [...this.listeners]) listener();
  }

  write(data: string): void {
    this.child.stdin.write(data);
  }

  /** The line for a request (`id` given or the next one), written as is. */
  requestLine(method: string, params: unknown, id: unknown = this.nextId++): string {
    return `${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`;
  }

  /** Sends a request and resolves with the summary of its answer. */
  async request(method: string, params: unknown, timeoutMs?: number): Promise<LineSummary> {
    const id = this.nextId++;
    this.write(this.requestLine(method, params, id));
    return this.waitFor((s) => s.id === id, timeoutMs);
  }

  /** Sends a request and resolves with its (short) result. */
  async call(method: string, params: unknown): Promise<Record<string, unknown>> {
    const answer = await this.request(method, params);
    const line = answer.line as { result?: Record<string, unknown> } | undefined;
    if (answer.error !== undefined || line?.result === undefined) {
      throw new Error(`${method} failed: ${JSON.stringify(answer.error ?? answer.bytes)}`);
    }
    return line.result;
  }

  /** Resolves once `count` summaries match. */
  async waitForCount(match: (summary: LineSummary) => boolean, count: number, timeoutMs = 120_000): Promise<void> {
    await this.until(() => this.summaries.filter(match).length >= count, timeoutMs);
  }

  waitFor(match: (summary: LineSummary) => boolean, timeoutMs = 120_000): Promise<LineSummary> {
    return this.until(() => this.summaries.find(match), timeoutMs) as Promise<LineSummary>;
  }

  private until<T>(probe: () => T | undefined | false, timeoutMs: number): Promise<T> {
    const found = probe();
    if (found !== undefined && found !== false) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`no matching line within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      const listener = () => {
        const value = probe();
        if (value === undefined || value === false) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(value);
      };
      this.listeners.add(listener);
    });
  }

  async end(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.stdin.end();
    return this.exited;
  }

  kill(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    this.child.kill('SIGKILL');
    return this.exited;
  }
}
