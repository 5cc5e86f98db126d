import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { createClient } from 'redis';

/**
 * A private `redis-server` for the tests that restart or kill Redis: on a
 * free port of its own, with no persistence (a restart comes back empty).
 * Never the shared server on 6379.
 */

/** Whether `redis-server` can be started here. */
export async function hasRedisServer(): Promise<boolean> {
  try {
    await new Promise<void>((resolve, reject) => {
      const probe = spawn('redis-server', ['--version'], { stdio: 'ignore' });
      probe.on('error', reject);
      probe.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
    });
    return true;
  } catch {
    return false;
  }
}

/** A TCP port nobody listens on now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Starts an empty `redis-server` on `port` and resolves once it answers a PING. */
export async function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = createClient({ url, socket: { reconnectStrategy: false } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.ping();
      await client.close();
      return child;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server on ${port} did not start`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** SIGKILLs a `redis-server` started by `startRedis` (what it held is gone). */
export async function stopRedis(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}
