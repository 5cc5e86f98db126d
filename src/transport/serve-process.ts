import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** How to start `switchboard serve` as a child process. */
export interface SpawnServeOptions {
  /** The SQLite file (`--db`); the CLI's default when absent. */
  db?: string;
  /** How commits reach the disk (`--durability`). */
  durability?: 'normal' | 'full';
  /** `--log-level` of the child (its logs go to its stderr). */
  logLevel?: string;
  /** More arguments after `serve`. */
  args?: string[];
  /** The program to run (default: this Node.js). */
  command?: string;
  /** The script given to `command` (default: this package's `bin/switchboard.js`). */
  script?: string;
  /** The child's environment. */
  env?: NodeJS.ProcessEnv;
  /** The child's working directory. */
  cwd?: string;
  /** The child's stderr: copied to ours (default) or kept only, its last 16 KiB read for error messages; or ignored. */
  stderr?: 'inherit' | 'ignore' | 'pipe';
}

const STDERR_TAIL_CHARS = 16 * 1024;

/** This package's `switchboard` command, from `src/transport/` or `dist/transport/` alike. */
export const SWITCHBOARD_BIN = fileURLToPath(new URL('../../bin/switchboard.js', import.meta.url));

/** The `switchboard serve` command-line arguments for the given spawn options. */
export function serveArguments(options: SpawnServeOptions): string[] {
  const args = ['serve'];
  if (options.db !== undefined) args.push('--db', options.db);
  if (options.durability !== undefined) args.push('--durability', options.durability);
  if (options.logLevel !== undefined) args.push('--log-level', options.logLevel);
  args.push(...(options.args ?? []));
  return args;
}

/** A running `switchboard serve` child. */
export class ServeProcess {
  /** The child process running `switchboard serve`. */
  readonly child: ChildProcess;
  private stderrTail = '';
  private readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private spawnError: Error | undefined;

  constructor(options: SpawnServeOptions) {
    const command = options.command ?? process.execPath;
    const script = options.script ?? SWITCHBOARD_BIN;
    const stderr = options.stderr ?? 'inherit';
    // 'inherit' is piped and copied to ours: the tail is kept to say why a start failed.
    this.child = spawn(command, [script, ...serveArguments(options)], {
      stdio: ['pipe', 'pipe', stderr === 'ignore' ? 'ignore' : 'pipe'],
      env: options.env ?? process.env,
      cwd: options.cwd,
    });
    this.exited = new Promise((resolve) => {
      this.child.once('exit', (code, signal) => resolve({ code, signal }));
      this.child.once('error', (error) => {
        this.spawnError = error;
        if (this.child.pid === undefined) resolve({ code: null, signal: null });
      });
    });
    this.child.stderr?.setEncoding('utf8');
    this.child.stderr?.on('data', (text: string) => {
      this.stderrTail = (this.stderrTail + text).slice(-STDERR_TAIL_CHARS);
      if (stderr === 'inherit') process.stderr.write(text);
    });
  }

  /** The child's process id (undefined when it could not be spawned). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Whether the child was spawned and has not exited. */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null && this.spawnError === undefined;
  }

  /**
   * What went wrong, for an error message: the spawn error, else the message
   * of the child's last fatal or error log line, else its usage error (an
   * unknown option), else the end of its stderr, else how it exited.
   */
  describeFailure(): string {
    if (this.spawnError) return this.spawnError.message;
    const lines = this.stderrTail.trim().split('\n');
    for (const line of [...lines].reverse()) {
      try {
        const entry = JSON.parse(line) as { level?: unknown; msg?: unknown };
        if (typeof entry.level === 'number' && entry.level >= 50 && typeof entry.msg === 'string') return entry.msg;
      } catch {
        // Not a log line.
      }
    }
    // A usage error is one line naming the command, before the help.
    const usage = [...lines].reverse().find((line) => line.startsWith('switchboard serve: '));
    if (usage !== undefined) return usage.slice('switchboard serve: '.length);
    const tail = lines.slice(-5).join('\n');
    if (tail !== '') return tail;
    const how = this.child.signalCode ?? this.child.exitCode;
    return how === null ? 'it closed its output without a word' : `it exited (${how})`;
  }

  /** Whether the child exits within `ms` (true at once if it already has). */
  exitedWithin(ms: number): Promise<boolean> {
    return settlesWithin(this.exited, ms);
  }

  /** The end of the child's stderr (kept unless `stderr: 'ignore'`). */
  get stderr(): string {
    return this.stderrTail;
  }

  /** Resolves with the child's exit code or signal once it has exited (both null when it never started). */
  whenExited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.exited;
  }

  /**
   * Waits for the child to exit after its stdin was ended; after `graceMs`
   * sends SIGTERM, and SIGKILL after as long again.
   */
  async stop(graceMs = 5000): Promise<void> {
    if (!this.running) {
      await this.exited;
      return;
    }
    if (!this.child.stdin?.writableEnded) this.child.stdin?.end();
    if (await settlesWithin(this.exited, graceMs)) return;
    this.child.kill('SIGTERM');
    if (await settlesWithin(this.exited, graceMs)) return;
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Sends the child a signal (SIGKILL unless given). */
  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.child.kill(signal);
  }
}

async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  const settled = await Promise.race([promise.then(() => true as const), timeout]);
  clearTimeout(timer);
  return settled;
}
