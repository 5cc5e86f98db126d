import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('switchboard coordinator --inspect', () => {
  it('shows the broker and the pools of --local-workers, and stops its server on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchboard-coordinator-inspect-'));
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [SWITCHBOARD_BIN, 'coordinator', '--db', join(dir, 'c.db'), '--local-workers', `--inspect=${port}`],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    let socket: WebSocket | undefined;
    try {
      await until(() => stderr.includes('coordinator ready'), `the coordinator to start; stderr: ${stderr}`);
      expect(stderr).toContain(`Stately inspector: open http://127.0.0.1:${port}/`);
      const frames: string[] = [];
      socket = new WebSocket(`ws://127.0.0.1:${port}`, { handshakeTimeout: 5000 });
      const opened = socket;
      socket.on('message', (data) => frames.push(data.toString()));
      await new Promise<void>((resolve, reject) => {
        opened.once('open', () => resolve());
        opened.once('error', reject);
      });
      const names = () =>
        frames
          .map((f) => JSON.parse(f) as { type: string; name?: string })
          .filter((e) => e.type === '@xstate.actor')
          .map((e) => e.name);
      await until(
        () =>
          ['broker', 'pool architect', 'pool coding', 'pool testing', 'pool devops'].every((n) => names().includes(n)),
        'the broker and the four pools',
      );
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      socket?.terminate();
      if (child.exitCode === null) child.kill('SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
