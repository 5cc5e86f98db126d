import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import type { ConnectOptions } from '../../src/transport/client.js';

const RUNTIME = fileURLToPath(new URL('./fixtures/runtime.mjs', import.meta.url));

interface Reply {
  id?: number;
  ready?: boolean;
  failed?: boolean;
  pid?: number;
  code?: string;
  message?: string;
  result?: unknown;
  error?: { code: string; message: string; details?: Record<string, unknown> };
}

/** An agent runtime process (the client of `connect()`), driven by calls. */
export class RuntimeProcess {
  readonly child: ChildProcessWithoutNullStreams;
  stderr = '';
  private nextId = 1;
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private readonly first: Promise<Reply>;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(options: ConnectOptions, env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(process.execPath, [RUNTIME, JSON.stringify(options)], { stdio: 'pipe', env });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderr += text;
    });
    this.child.stdin.on('error', () => {});
    let resolveFirst!: (reply: Reply) => void;
    this.first = new Promise((resolve) => {
      resolveFirst = resolve;
    });
    createInterface({ input: this.child.stdout }).on('line', (line) => {
      const reply = JSON.parse(line) as Reply;
      if (reply.id === undefined) resolveFirst(reply);
      else this.pending.get(reply.id)?.(reply);
    });
    void this.exited.then(() => resolveFirst({ failed: true, message: `exited: ${this.stderr.slice(-1000)}` }));
  }

  /** The first line: ready (connected) or failed (with the connect error's code and message). */
  started(): Promise<Reply> {
    return this.first;
  }

  async ready(): Promise<this> {
    const first = await this.first;
    if (!first.ready) throw new Error(`runtime did not connect: ${first.code} ${first.message}`);
    return this;
  }

  /** Calls a client method in the runtime; rejects with `{ code, message }` on an error. */
  async call<T = Record<string, unknown>>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    const reply = await new Promise<Reply>((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin.write(`${JSON.stringify({ id, method, params })}\n`);
    });
    this.pending.delete(id);
    if (reply.error) throw Object.assign(new Error(reply.error.message), reply.error);
    return reply.result as T;
  }

  async end(): Promise<void> {
    this.child.stdin.end();
    await this.exited;
  }

  kill(): void {
    this.child.kill('SIGKILL');
  }
}

/** The pid of the broker that owns a file, from its owner row (undefined if none). */
export function ownerPid(db: string): number | undefined {
  try {
    const handle = new Database(db, { readonly: true });
    try {
      return (handle.prepare('SELECT pid FROM a2a_owner').get() as { pid: number } | undefined)?.pid;
    } finally {
      handle.close();
    }
  } catch {
    return undefined;
  }
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Polls until `check` holds (or fails after `timeoutMs`). */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`not within ${timeoutMs} ms`);
}
