import { execFile, execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * A terminal for the `switchboard top` tests: one tmux server of our own
 * (its own socket, so nothing else's sessions are touched) running one
 * command in a session of a given size, whose screen is read as text.
 */

const run = promisify(execFile);

export class Tmux {
  readonly socket: string;

  constructor(name = 'switchboard-top') {
    this.socket = `${name}-${randomUUID().slice(0, 8)}`;
  }

  async start(command: string, width = 120, height = 40): Promise<void> {
    const args = ['-L', this.socket, '-f', '/dev/null', 'new-session', '-d', '-s', 'top'];
    await run('tmux', [...args, '-x', String(width), '-y', String(height), command], {
      env: { ...process.env, TERM: 'xterm-256color' },
    });
  }

  async screen(): Promise<string> {
    const { stdout } = await run('tmux', ['-L', this.socket, 'capture-pane', '-p', '-t', 'top']);
    return stdout;
  }

  async keys(...keys: string[]): Promise<void> {
    await run('tmux', ['-L', this.socket, 'send-keys', '-t', 'top', ...keys]);
  }

  async waitForScreen(check: (screen: string) => boolean, what: string, timeoutMs = 30_000): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let screen = '';
    while (Date.now() < deadline) {
      screen = await this.screen();
      if (check(screen)) return screen;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`the screen never showed ${what}; last screen:\n${screen}`);
  }

  kill(): void {
    try {
      execFileSync('tmux', ['-L', this.socket, 'kill-server'], { stdio: 'ignore' });
    } catch {
      // Already gone.
    }
  }
}

/** One argument quoted for the shell tmux runs the command in. */
export function quote(value: string): string {
  return `'${value.replaceAll("'", "'\\''")}'`;
}
