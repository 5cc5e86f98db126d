import { spawn } from 'node:child_process';

/** What a finished child process printed, and how it exited. */
export interface NodeRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `node ARGS...` (this Node.js) to its end, collecting stdout and stderr. */
export function runNode(args: readonly string[]): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}
