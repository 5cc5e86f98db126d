import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { type Harness, openHarness, takeResults } from '../worker/helpers.js';
import { freePort, until } from './helpers.js';

const HANDLER = new URL('./fixtures/echo-handler.mjs', import.meta.url).pathname;

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** `switchboard worker` on the harness's SQLite file, its stderr collected. */
function startWorker(harness: Harness, extra: string[]) {
  const child = spawn(
    process.execPath,
    [SWITCHBOARD_BIN, 'worker', '--db', harness.path, '--role', 'coding', '--handler', HANDLER, ...extra],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const out = { stderr: '', child, exited: new Promise<number | null>((resolve) => child.once('close', resolve)) };
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    out.stderr += chunk;
  });
  cleanups.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return out;
}

interface Frame {
  type: string;
  name?: string;
  sessionId: string;
  parentId?: string;
  event?: { type: string; depth?: number; workers?: { id: string; idleSince: number | null }[] };
  snapshot?: { value?: unknown; context?: { role?: string; workers?: string[] } };
}

describe('switchboard worker --inspect', () => {
  it("shows the role's pool and its worker while a hop runs, never a token or a payload, and stops on SIGTERM", async () => {
    const harness = openHarness();
    cleanups.push(() => harness.close());
    const port = await freePort();
    const worker = startWorker(harness, [`--inspect=${port}`, '--log-level', 'info']);
    await until(() => worker.stderr.includes('worker ready'), `the worker to start; stderr: ${worker.stderr}`);
    const urlLine = worker.stderr.split('\n').find((line) => line.includes('Stately inspector'));
    expect(JSON.parse(urlLine ?? '{}')).toMatchObject({
      msg: `Stately inspector: open http://127.0.0.1:${port}/ (events on ws://127.0.0.1:${port})`,
      inspector: { host: '127.0.0.1', port },
    });

    const socket = new WebSocket(`ws://127.0.0.1:${port}`, { handshakeTimeout: 5000 });
    cleanups.push(() => socket.terminate());
    const raw: string[] = [];
    socket.on('message', (data) => raw.push(data.toString()));
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', reject);
    });
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const frames = () => raw.map((f) => JSON.parse(f) as Frame);

    // A hop whose body and metadata hold what the inspector must never show.
    const secretBody = 'the-secret-hop-body';
    const secretToken = 'the-secret-capability-token';
    await harness.bus.publish(
      'coding',
      {
        kind: 'work',
        headers: { taskId: 'task-1', runId: 'item-1', hop: 0, attempt: 1, idempotencyKey: 'hop-1' },
        message: { role: 'user', parts: [{ kind: 'text', text: secretBody }], metadata: { token: secretToken } },
      },
      { idempotencyKey: 'hop-1' },
    );
    const [result] = await takeResults(harness.bus, 1, 30_000);
    // The worker ran it: the result carries the body (the bus does; the inspector must not).
    expect(result).toMatchObject({ outcome: 'completed', parts: [{ kind: 'text', text: `echo: ${secretBody}` }] });

    // The supervisor of the role (a root actor named for it) and its worker (a child) ...
    const pool = () => frames().find((f) => f.type === '@xstate.actor' && f.name === 'pool coding');
    await until(() => pool() !== undefined, 'the pool actor');
    const poolSession = pool()!.sessionId;
    await until(
      () => frames().some((f) => f.type === '@xstate.actor' && f.name === 'coding#1' && f.parentId === poolSession),
      'the worker actor under the pool',
    );
    // ... watching the queue: OBSERVE events with the worker in them, after the hop was done.
    const observedAfter = raw.length;
    await until(
      () =>
        frames()
          .slice(observedAfter)
          .some(
            (f) =>
              f.type === '@xstate.event' &&
              f.sessionId === poolSession &&
              f.event?.type === 'OBSERVE' &&
              f.event.workers?.[0]?.id === 'coding#1',
          ),
      'an OBSERVE of the pool after the hop',
    );
    const running = frames().filter((f) => f.type === '@xstate.snapshot' && f.sessionId === poolSession);
    expect(running.at(-1)?.snapshot).toMatchObject({
      value: 'running',
      context: { role: 'coding', workers: ['coding#1'] },
    });

    const all = raw.join('\n');
    expect(all).not.toContain(secretBody);
    expect(all).not.toContain(secretToken);

    worker.child.kill('SIGTERM');
    expect(await worker.exited).toBe(0);
    // The server went with the process: the client was disconnected.
    await closed;
    expect(worker.stderr).toContain('"settled":1');
  }, 120_000);

  it('refuses a bad --inspect value (exit 2) and a port in use (exit 1)', async () => {
    const harness = openHarness();
    cleanups.push(() => harness.close());
    const bad = startWorker(harness, ['--inspect=not-a-port']);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr).toContain("--inspect takes [HOST:]PORT (a port from 0 to 65535), not 'not-a-port'");

    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const address = holder.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const taken = startWorker(harness, [`--inspect=${address.port}`]);
    expect(await taken.exited).toBe(1);
    expect(taken.stderr).toContain('cannot start the inspector');
    expect(taken.stderr).toContain('EADDRINUSE');
  }, 120_000);
});
