import { mkdtempSync, rmSync } from 'node:fs';
import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { addRemoteAgent } from '../../src/remote/remote-agents.js';
import { type RemoteBridge, startRemoteBridge } from '../../src/remote/remote-bridge.js';
import type { SwitchboardClient } from '../../src/transport/client.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { followTask, textOf, until } from './remote-helpers.js';

// A remote that answers a stream with the task working and then says
// nothing more, holding the connection open (hung, or behind a proxy that
// swallowed the close). The bridge drops a stream silent for longer than
// its bound and resubscribes; the remote has finished meanwhile.

describe('a stream that goes silent without closing', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-silent-'));
  const db = join(dir, 'agents.db');
  const broker = createBroker({ path: db });
  const open: ServerResponse[] = [];
  const calls: string[] = [];
  let client: SwitchboardClient;
  let bridge: RemoteBridge;
  let base = '';

  const sse = (res: ServerResponse, id: unknown, result: unknown) => {
    if (!res.headersSent) res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id, result })}\n\n`);
  };
  const task = (state: string) => ({
    id: 'remote-1',
    contextId: 'remote-ctx',
    status: {
      state,
      timestamp: new Date().toISOString(),
      ...(state === 'TASK_STATE_COMPLETED'
        ? { message: { messageId: 'done-1', role: 'ROLE_AGENT', parts: [{ text: 'done' }] } }
        : {}),
    },
    ...(state === 'TASK_STATE_COMPLETED'
      ? { artifacts: [{ artifactId: 'answer', parts: [{ text: 'after the silence' }] }] }
      : {}),
  });

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'GET') {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          name: 'silent',
          description: 'goes quiet',
          supportedInterfaces: [{ url: base, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
          version: '1',
          capabilities: { streaming: true },
          defaultInputModes: ['text/plain'],
          defaultOutputModes: ['text/plain'],
          skills: [],
        }),
      );
      return;
    }
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => {
      body += chunk;
    });
    req.on('end', () => {
      const request = JSON.parse(body) as { id: unknown; method: string };
      calls.push(request.method);
      if (request.method === 'SendStreamingMessage') {
        sse(res, request.id, { task: task('TASK_STATE_WORKING') });
        open.push(res);
        return;
      }
      if (request.method === 'SubscribeToTask') {
        sse(res, request.id, { task: task('TASK_STATE_COMPLETED') });
        res.end();
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: request.id, result: task('TASK_STATE_COMPLETED') }));
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    client = (await connectInProcess(broker)).client;
    await addRemoteAgent({ db, url: base });
    bridge = await startRemoteBridge({ db, client, streamIdleMs: 500 });
  });

  afterAll(async () => {
    await bridge?.stop();
    await client?.close();
    await broker.close();
    for (const res of open) res.destroy();
    await new Promise((resolve) => server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  });

  it('is dropped after its bound and picked up again: the task completes, each event once', async () => {
    const { token } = await client.register({ name: 'lead', contextId: 'local' });
    await until(async () =>
      (await client.listAgents({ token })).agents.some((a) => a.name === 'silent') ? true : undefined,
    );
    const { task: sent } = await client.send({
      token,
      to: 'silent',
      message: { parts: [{ kind: 'text', text: 'hi' }] },
    });
    const followed = await followTask(client, token, sent.id);
    expect(followed.steps).toEqual(['working', 'artifact:answer', 'completed']);
    expect(textOf(followed.task.artifacts[0]?.parts)).toBe('after the silence');
    expect(calls.slice(0, 2)).toEqual(['SendStreamingMessage', 'SubscribeToTask']);
  }, 30_000);
});
