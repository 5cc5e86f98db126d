import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { type Socket, connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';

/** A fresh directory (mode 0700, as mkdtemp makes it) for a database and its socket. */
export function hostDir(): { dir: string; db: string; socket: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-host-'));
  return {
    dir,
    db: join(dir, 'agents.db'),
    socket: join(dir, 'broker.sock'),
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A real `switchboard serve --listen` process. */
export class SocketServe {
  readonly child: ChildProcess;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(db: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(process.execPath, [SWITCHBOARD_BIN, 'serve', '--db', db, ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env,
    });
    this.exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve({ code, signal })));
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (text: string) => {
      this.stderr += text;
    });
  }

  /** Resolves once the socket accepts connections (fails if the process exits first). */
  async listening(socket: string, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (Date.now() < deadline) {
      if (exited) throw new Error(`serve exited before listening: ${this.stderr.slice(-2000)}`);
      const probe = await rawSocket(socket).catch(() => undefined);
      if (probe) {
        probe.destroy();
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    throw new Error(`serve did not listen within ${timeoutMs} ms: ${this.stderr.slice(-2000)}`);
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

export function rawSocket(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = netConnect(path);
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
  });
}

/** A raw NDJSON connection: writes requests, collects every line it reads. */
export class RawConnection {
  readonly lines: Record<string, unknown>[] = [];
  private buffered = '';
  private nextId = 1;
  private readonly waiters = new Set<() => void>();

  constructor(readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.onData(chunk));
    socket.on('error', () => {});
  }

  private onData(chunk: string): void {
    this.buffered += chunk;
    let newline = this.buffered.indexOf('\n');
    while (newline >= 0) {
      this.lines.push(JSON.parse(this.buffered.slice(0, newline)) as Record<string, unknown>);
      this.buffered = this.buffered.slice(newline + 1);
      newline = this.buffered.indexOf('\n');
    }
    for (const waiter of [...this.waiters]) waiter();
  }

  /** Stops reading (the socket's data waits in the kernel and the broker's buffers). */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  send(method: string, params: unknown): number {
    const id = this.nextId++;
    this.socket.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return id;
  }

  async call(method: string, params: unknown): Promise<Record<string, unknown>> {
    const id = this.send(method, params);
    const line = await this.waitFor((l) => l.id === id);
    if (!('result' in line)) throw new Error(`${method} failed: ${JSON.stringify(line.error)}`);
    return line.result as Record<string, unknown>;
  }

  waitFor(match: (line: Record<string, unknown>) => boolean, timeoutMs = 30_000): Promise<Record<string, unknown>> {
    const found = this.lines.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(new Error(`no matching line within ${timeoutMs} ms`));
      }, timeoutMs);
      const check = () => {
        const line = this.lines.find(match);
        if (!line) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(line);
      };
      this.waiters.add(check);
    });
  }
}

export function text(value: string) {
  return { parts: [{ kind: 'text' as const, text: value }] };
}
