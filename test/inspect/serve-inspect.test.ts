import { createServer } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { RawServe, isObject, tempDir, text } from '../transport/helpers.js';
import { freePort } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function serve(args: string[]): RawServe {
  const tmp = tempDir();
  const server = new RawServe(tmp.db, args);
  cleanups.push(async () => {
    if (server.child.exitCode === null && server.child.signalCode === null) await server.kill();
    tmp.cleanup();
  });
  return server;
}

async function waitUntil(check: () => boolean, what: string, server: RawServe, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; stderr: ${server.stderr.slice(-1500)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A client of the inspector's WebSocket, as the inspector page connects: it only receives frames. */
async function connectInspector(url: string): Promise<{ frames: string[]; socket: WebSocket }> {
  const socket = new WebSocket(url);
  const frames: string[] = [];
  socket.on('message', (data) => frames.push(data.toString()));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  cleanups.push(() => socket.terminate());
  return { frames, socket };
}

interface Frame {
  type: string;
  name?: string;
  sessionId: string;
  event?: { type: string; [key: string]: unknown };
  snapshot?: { value?: unknown; context?: Record<string, unknown>; status?: string };
  _version?: string;
}

describe('switchboard serve --inspect', () => {
  it('streams the broker and task actors to a WebSocket client, never a token or a payload', async () => {
    const port = await freePort();
    const server = serve([`--inspect=${port}`, '--log-level', 'info']);
    await waitUntil(() => server.stderr.includes(`http://127.0.0.1:${port}/`), 'the inspector URL', server);
    const logLine = server.stderr.split('\n').find((line) => line.includes('Stately inspector'));
    expect(JSON.parse(logLine ?? '{}')).toMatchObject({ inspector: { host: '127.0.0.1', port } });
    const { frames } = await connectInspector(`ws://127.0.0.1:${port}`);

    const worker = (await server.call('a2a.agents.register', { name: 'w', contextId: 'c' })) as { token: string };
    const requester = (await server.call('a2a.agents.register', { name: 'r', contextId: 'c' })) as { token: string };
    const secretText = 'the-secret-question-body';
    const secretData = 'the-secret-data-value';
    const secretBytes = Buffer.from('the-secret-file-bytes').toString('base64');
    const { task } = (await server.call('a2a.message.send', {
      token: requester.token,
      to: 'w',
      message: {
        parts: [
          { kind: 'text', text: secretText },
          { kind: 'data', data: { answer: secretData } },
          { kind: 'file', file: { name: 'f.bin', bytes: secretBytes } },
        ],
      },
    })) as { task: { id: string } };
    await server.call('a2a.tasks.status', { token: worker.token, id: task.id, state: 'working' });
    await server.call('a2a.tasks.artifact', {
      token: worker.token,
      id: task.id,
      artifact: { artifactId: 'a1', parts: [{ kind: 'text', text: 'the-secret-answer-body' }] },
    });
    await server.call('a2a.tasks.status', {
      token: worker.token,
      id: task.id,
      state: 'completed',
      message: text('the-secret-reply-body'),
    });
    await server.waitFor(
      (l) =>
        isObject(l) &&
        l.method === 'a2a.task.event' &&
        JSON.stringify(l).includes('"completed"') &&
        JSON.stringify(l).includes('"final":true'),
    );

    const parsed = () => frames.map((frame) => JSON.parse(frame) as Frame);
    // The task actor reaches its terminal state (the broker then stops it).
    await waitUntil(
      () => parsed().some((f) => f.type === '@xstate.snapshot' && f.snapshot?.value === 'completed'),
      'the task actor in completed',
      server,
    );
    const events = parsed();
    for (const f of events) expect(f._version).toBe('0.7.2');

    // The broker (its registry) is an actor: registered, then a transition per registration.
    const broker = events.find((f) => f.type === '@xstate.actor' && f.name === 'broker');
    expect(broker).toBeDefined();
    const brokerEvents = events.filter((f) => f.sessionId === broker?.sessionId && f.type === '@xstate.event');
    expect(brokerEvents.map((f) => f.event?.type)).toEqual(expect.arrayContaining(['added']));
    const brokerSnapshots = events.filter((f) => f.sessionId === broker?.sessionId && f.type === '@xstate.snapshot');
    expect(brokerSnapshots.length).toBeGreaterThanOrEqual(2);

    // The task actor: registered with the task machine, moved by MOVE events through working to completed.
    const taskActor = events.find(
      (f) => f.type === '@xstate.actor' && f.name === `task ${task.id}` && f.snapshot?.context?.taskId === task.id,
    );
    expect(taskActor).toBeDefined();
    const taskFrames = events.filter((f) => f.sessionId === taskActor?.sessionId);
    const moves = taskFrames.filter((f) => f.type === '@xstate.event' && f.event?.type === 'MOVE');
    expect(moves.map((f) => f.event?.to)).toEqual(['working', 'completed']);
    const states = taskFrames.filter((f) => f.type === '@xstate.snapshot').map((f) => f.snapshot?.value);
    expect(states).toEqual(expect.arrayContaining(['working', 'completed']));

    // The agent actors are there too.
    expect(events.filter((f) => f.type === '@xstate.actor' && f.name?.startsWith('agent '))).toHaveLength(2);

    // Nothing secret in any raw frame.
    const raw = frames.join('\n');
    for (const secret of [
      worker.token,
      requester.token,
      secretText,
      secretData,
      secretBytes,
      'the-secret-answer-body',
      'the-secret-reply-body',
    ]) {
      expect(raw).not.toContain(secret);
    }

    // Shutdown stops the inspector server even with a client connected.
    expect(await server.end()).toEqual({ code: 0, signal: null });
  });

  it('replays the last frames to a late client and binds to 127.0.0.1 only', async () => {
    const port = await freePort();
    const server = serve([`--inspect=${port}`, '--log-level', 'silent']);
    await waitUntil(() => server.stderr.includes(`http://127.0.0.1:${port}/`), 'the inspector URL', server);
    // Silent logs: the URL is still printed, as a plain line on stderr.
    expect(server.stderr.trim()).toBe(
      `Stately inspector: open http://127.0.0.1:${port}/ (events on ws://127.0.0.1:${port})`,
    );
    await server.call('a2a.agents.register', { name: 'w', contextId: 'c' });
    const { frames } = await connectInspector(`ws://127.0.0.1:${port}`);
    await waitUntil(() => frames.some((f) => f.includes('"name":"broker"')), 'the replayed broker actor', server);

    const page = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
    expect(page).toContain('https://stately.ai/inspect');
    expect(page).toContain(`ws://127.0.0.1:${port}`);

    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && address.family === 'IPv4' && !address.internal);
    if (external !== undefined) {
      const refused = await new Promise<boolean>((resolve) => {
        const socket = new WebSocket(`ws://${external.address}:${port}`);
        socket.once('open', () => {
          socket.terminate();
          resolve(false);
        });
        socket.once('error', () => resolve(true));
      });
      expect(refused).toBe(true);
    }
    expect(await server.end()).toEqual({ code: 0, signal: null });
  });

  it('refuses a bad --inspect value and a port in use, changing nothing', async () => {
    const bad = serve(['--inspect=notaport']);
    expect((await bad.exited).code).toBe(2);
    expect(bad.stderr).toContain('--inspect takes [HOST:]PORT');

    const port = await freePort();
    const holder = createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const busy = serve([`--inspect=${port}`]);
    expect((await busy.exited).code).toBe(1);
    expect(busy.stderr).toContain('cannot start the inspector');
    expect(busy.stderr).toContain('EADDRINUSE');
  });
});
