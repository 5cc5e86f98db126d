import { join } from 'node:path';
import {
  CancelTaskRequest,
  GetTaskRequest,
  ListTasksRequest,
  type StreamResponse,
  SubscribeToTaskRequest,
  TaskState,
} from '@a2a-js/sdk';
import { LegacyJsonRpcTransport } from '@a2a-js/sdk/compat/v0_3/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { addKey, collect, keysCli, sdkClient, send, startGateway, stateOf } from './gateway-helpers.js';

/** A worker agent over this package's client: answers each task by the text it was sent. */
async function startWorker(socket: string, name: string) {
  const client = await connect({ socket, client: { name: 'test-worker', version: '0' } });
  const { token } = await client.register({ name, contextId: 'workers' });
  const held = new Map<string, () => Promise<void>>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const events = await client.wait({ token, timeoutSeconds: 1 });
      for (const event of events) {
        if (event.method !== 'a2a.task.event') continue;
        const e = event.params.event;
        if (e.kind !== 'status-update' || e.status.state !== 'submitted') continue;
        try {
          await answer(e.taskId);
        } catch {
          // A task canceled before the worker moved it: nothing to do.
        }
      }
    }
  })();
  async function answer(taskId: string): Promise<void> {
    const { task } = await client.getTask({ token, id: taskId });
    const first = task.history?.[0]?.parts[0];
    const text = first?.kind === 'text' ? first.text : '';
    await client.setStatus({ token, id: task.id, state: 'working' });
    const finish = async () => {
      await client.addArtifact({
        token,
        id: task.id,
        artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: `echo: ${text}` }] },
      });
      await client.setStatus({
        token,
        id: task.id,
        state: 'completed',
        message: { parts: [{ kind: 'text', text: 'done' }] },
      });
    };
    if (text === 'wait') return; // stays working until canceled
    if (text === 'slow') held.set(task.id, finish);
    else await finish();
  }
  return {
    client,
    /** Finishes a task held back ("slow"). */
    release: async (taskId: string) => {
      for (let i = 0; i < 200 && !held.has(taskId); i++) await new Promise((r) => setTimeout(r, 25));
      const finish = held.get(taskId);
      if (finish === undefined) throw new Error(`the worker holds no task ${taskId}`);
      await finish();
    },
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.close();
    },
  };
}

describe('switchboard gateway, with the official A2A SDK as its client', () => {
  const h = hostDir();
  const keysFile = join(h.dir, 'gateway-keys.json');
  let serve: SocketServe;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let other: Awaited<ReturnType<typeof startWorker>>;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let alice: string;
  let bob: string;
  let carol: string;
  let observer: SwitchboardClient;

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    worker = await startWorker(h.socket, 'echo');
    other = await startWorker(h.socket, 'other');
    alice = addKey(keysFile, 'alice', 'echo');
    bob = addKey(keysFile, 'bob', 'echo,other');
    carol = addKey(keysFile, 'carol', 'other');
    gateway = await startGateway([
      '--agents',
      'echo,other',
      '--socket',
      h.socket,
      '--keys',
      keysFile,
      '--listen',
      '127.0.0.1:0',
    ]);
    observer = await connect({ socket: h.socket });
  }, 60_000);

  afterAll(async () => {
    gateway?.child.kill('SIGTERM');
    await observer?.close().catch(() => {});
    await worker?.stop();
    await other?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  it('serves the agent card at the well-known path, with the JSON-RPC interface and the bearer scheme', async () => {
    const response = await fetch(`${gateway.url}/agents/echo/.well-known/agent-card.json`);
    expect(response.status).toBe(200);
    const card = (await response.json()) as Record<string, unknown>;
    expect(card.name).toBe('echo');
    expect(card.supportedInterfaces).toEqual([
      { url: `${gateway.url}/agents/echo/`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${gateway.url}/agents/echo/`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ]);
    expect(card.securitySchemes).toEqual({
      gatewayKey: { httpAuthSecurityScheme: { scheme: 'Bearer', description: expect.any(String) } },
    });
    expect((card.capabilities as { streaming?: boolean }).streaming).toBe(true);
    expect((await fetch(`${gateway.url}/agents/nobody/.well-known/agent-card.json`)).status).toBe(404);
  });

  it('serves the extended card to a key scoped to the agent, over both bindings, and to nobody else', async () => {
    for (const binding of ['jsonrpc', 'rest'] as const) {
      const client = await sdkClient(gateway.url, 'echo', alice, binding);
      // The SDK's client reads the extended card when the card says there is one.
      const card = await client.getAgentCard();
      expect(card.name, binding).toBe('echo');
      expect(card.capabilities?.extendedAgentCard, binding).toBe(true);
      const none = await sdkClient(gateway.url, 'echo', undefined, binding);
      await expect(none.getAgentCard(), binding).rejects.toMatchObject({ message: /Authorization: Bearer KEY/ });
      const scoped = await sdkClient(gateway.url, 'echo', carol, binding);
      await expect(scoped.getAgentCard(), binding).rejects.toMatchObject({ message: /may reach other, not echo/ });
    }
  });

  it('sends, gets and lists: the task is an ordinary broker task whose sender is the key’s agent', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const sent = await client.sendMessage(send('hello'));
    expect('id' in sent && 'status' in sent).toBe(true);
    // Sent without returnImmediately: answered once the task has ended, as A2A says.
    expect((sent as { status?: { state?: TaskState } }).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const taskId = (sent as { id: string }).id;
    let task = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    for (let i = 0; i < 200 && task.status?.state !== TaskState.TASK_STATE_COMPLETED; i++) {
      await new Promise((r) => setTimeout(r, 25));
      task = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    }
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: hello' });

    const listed = await client.listTasks(ListTasksRequest.fromJSON({}));
    expect(listed.tasks.map((t) => t.id)).toContain(taskId);

    // Seen from the broker: requester gateway-alice, worker echo.
    const { token } = await observer.register({ name: 'observer', contextId: 'tests' });
    const seen = await observer.listTasks({ token });
    expect(seen.tasks.map((t) => t.id)).not.toContain(taskId); // not the observer's
    const keysList = JSON.parse(keysCli(['list', '--keys', keysFile, '--json'])) as { keys: { name: string }[] };
    expect(keysList.keys.map((k) => k.name)).toEqual(['alice', 'bob', 'carol']);
    expect(JSON.stringify(task.metadata)).toContain('gateway-alice');
  });

  it('streams a task over SSE: the task first, then its updates, until it ends', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const responses = await collect(client.sendMessageStream(send('streamed')));
    expect(responses[0]?.payload?.$case).toBe('task');
    expect(stateOf(responses.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifacts = responses.filter((r) => r.payload?.$case === 'artifactUpdate');
    expect(artifacts).toHaveLength(1);
  });

  it('resubscribes after a dropped stream and loses nothing', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const abort = new AbortController();
    const stream = client.sendMessageStream(send('slow'), { signal: abort.signal });
    const first = await stream.next();
    const taskId =
      (first.value as StreamResponse).payload?.$case === 'task' ? (first.value as StreamResponse) : undefined;
    const id = taskId?.payload?.$case === 'task' ? taskId.payload.value.id : '';
    expect(id).not.toBe('');
    abort.abort(); // the connection drops while the task works
    await stream.return(undefined).catch(() => {});
    await worker.release(id); // the artifact and the end happen while nobody streams
    const again = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id })));
    const snapshot = again[0]?.payload;
    expect(snapshot?.$case).toBe('task');
    if (snapshot?.$case !== 'task') return;
    expect(snapshot.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(snapshot.value.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: slow' });
  });

  it('a stream opened on a working task carries what happens next, to the end', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const sent = (await client.sendMessage(send('slow', undefined, true))) as { id: string };
    const stream = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: sent.id }));
    const first = await stream.next();
    expect((first.value as StreamResponse).payload?.$case).toBe('task');
    await worker.release(sent.id);
    const rest = await collect(stream);
    expect(rest.map((r) => r.payload?.$case)).toContain('artifactUpdate');
    expect(stateOf(rest.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it('cancels a working task; an ended one is not cancelable', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const sent = (await client.sendMessage(send('wait', undefined, true))) as { id: string };
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: sent.id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask(CancelTaskRequest.fromJSON({ id: sent.id }))).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
    });
  });

  it('a stream ends with the canceled status when its own key cancels the task, over both bindings', async () => {
    for (const binding of ['jsonrpc', 'rest'] as const) {
      const client = await sdkClient(gateway.url, 'echo', alice, binding);
      const stream = client.sendMessageStream(send('wait'));
      const first = (await stream.next()).value as StreamResponse;
      const id = first.payload?.$case === 'task' ? first.payload.value.id : '';
      expect(id).not.toBe('');
      await client.cancelTask(CancelTaskRequest.fromJSON({ id }));
      const rest = await collect(stream);
      expect(stateOf(rest.at(-1) as StreamResponse), binding).toBe(TaskState.TASK_STATE_CANCELED);
    }
  });

  it('reaches nobody else’s task: another key’s task is TaskNotFound', async () => {
    const mine = await sdkClient(gateway.url, 'echo', alice);
    const theirs = await sdkClient(gateway.url, 'echo', bob);
    const sent = (await mine.sendMessage(send('private'))) as { id: string };
    await expect(theirs.getTask(GetTaskRequest.fromJSON({ id: sent.id }))).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    await expect(theirs.cancelTask(CancelTaskRequest.fromJSON({ id: sent.id }))).rejects.toMatchObject({
      name: 'TaskNotFoundError',
    });
    const listed = await theirs.listTasks(ListTasksRequest.fromJSON({}));
    expect(listed.tasks.map((t) => t.id)).not.toContain(sent.id);
  });

  it('refuses a request without a key, with an unknown key, and with a key scoped to another agent', async () => {
    const none = await sdkClient(gateway.url, 'echo', undefined);
    await expect(none.sendMessage(send('x'))).rejects.toMatchObject({ message: /Authorization: Bearer KEY/ });
    const wrong = await sdkClient(gateway.url, 'echo', 'sbgw_not-a-key');
    await expect(wrong.sendMessage(send('x'))).rejects.toMatchObject({ message: /not one the gateway holds/ });
    const scoped = await sdkClient(gateway.url, 'echo', carol);
    await expect(scoped.sendMessage(send('x'))).rejects.toMatchObject({ message: /may reach other, not echo/ });

    const raw = await fetch(`${gateway.url}/agents/echo/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }),
    });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect(((await raw.json()) as { error: { code: number } }).error.code).toBe(-32040);
  });

  it('a revoked key is refused from the next request on', async () => {
    const dave = addKey(keysFile, 'dave', 'echo');
    const client = await sdkClient(gateway.url, 'echo', dave);
    await client.listTasks(ListTasksRequest.fromJSON({}));
    keysCli(['revoke', 'dave', '--keys', keysFile]);
    await expect(client.listTasks(ListTasksRequest.fromJSON({}))).rejects.toMatchObject({
      message: /not one the gateway holds/,
    });
  });
  it('serves the HTTP+JSON binding too, to the SDK’s REST transport', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice, 'rest');
    expect(client.transport.protocolName).toBe('HTTP+JSON');
    const streamed = await collect(client.sendMessageStream(send('over rest')));
    expect(streamed[0]?.payload?.$case).toBe('task');
    expect(stateOf(streamed.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
    const id = streamed[0]?.payload?.$case === 'task' ? streamed[0].payload.value.id : '';
    const task = await client.getTask(GetTaskRequest.fromJSON({ id }));
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: over rest' });
    const listed = await client.listTasks(ListTasksRequest.fromJSON({ pageSize: 100 }));
    expect(listed.tasks.map((t) => t.id)).toContain(id);
    const again = await collect(client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id })));
    expect(again[0]?.payload?.$case).toBe('task');

    const waiting = (await client.sendMessage(send('wait', undefined, true))) as { id: string };
    const canceled = await client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.cancelTask(CancelTaskRequest.fromJSON({ id: waiting.id }))).rejects.toMatchObject({
      name: 'TaskNotCancelableError',
    });

    const theirs = await sdkClient(gateway.url, 'echo', bob, 'rest');
    await expect(theirs.getTask(GetTaskRequest.fromJSON({ id }))).rejects.toMatchObject({ name: 'TaskNotFoundError' });
    const none = await sdkClient(gateway.url, 'echo', undefined, 'rest');
    await expect(none.getTask(GetTaskRequest.fromJSON({ id }))).rejects.toMatchObject({
      statusCode: 401,
      message: /Authorization: Bearer KEY/,
    });
  });
  it('reads the A2A-Version header as the SDK’s server does: none or 0.3 is v0.3, 1.0 is v1.0, another is refused', async () => {
    const post = async (method: string, params: unknown, version?: string) => {
      const headers: Record<string, string> = { 'Content-Type': 'application/json', Authorization: `Bearer ${alice}` };
      if (version !== undefined) headers['A2A-Version'] = version;
      const response = await fetch(`${gateway.url}/agents/echo/`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method, params }),
      });
      return (await response.json()) as { result?: Record<string, unknown>; error?: { code: number; message: string } };
    };
    const sent = await post('message/send', {
      message: { kind: 'message', messageId: `v-${Date.now()}`, role: 'user', parts: [{ kind: 'text', text: 'hi' }] },
    });
    expect(sent.result?.kind).toBe('task'); // v0.3's shape: the task itself
    const id = String(sent.result?.id);
    expect((await post('tasks/get', { id }, '0.3')).result?.id).toBe(id);
    expect((await post('GetTask', { id }, '1.0')).result?.id).toBe(id);
    expect((await post('GetTask', { id })).error).toMatchObject({ code: -32601, message: /A2A-Version: 1.0/ });
    expect((await post('tasks/get', { id }, '1.0')).error).toMatchObject({ code: -32601 });
    expect((await post('GetTask', { id }, '2.0')).error).toMatchObject({ code: -32009 });
  });

  it('serves A2A v0.3 clients too (its method names), to the SDK’s v0.3 JSON-RPC transport', async () => {
    const fetchImpl: typeof fetch = (input, init) => {
      const headers = new Headers(init?.headers);
      headers.set('Authorization', `Bearer ${alice}`);
      return fetch(input, { ...init, headers });
    };
    const legacy = new LegacyJsonRpcTransport({ endpoint: `${gateway.url}/agents/echo/`, fetchImpl });
    const streamed = await collect(legacy.sendMessageStream(send('v0.3')));
    expect(streamed[0]?.payload?.$case).toBe('task');
    expect(streamed.map((r) => r.payload?.$case)).toContain('artifactUpdate');
    expect(stateOf(streamed.at(-1) as StreamResponse)).toBe(TaskState.TASK_STATE_COMPLETED);
    const id = streamed[0]?.payload?.$case === 'task' ? streamed[0].payload.value.id : '';
    const task = await legacy.getTask(GetTaskRequest.fromJSON({ id }));
    expect(task.artifacts[0]?.parts[0]?.content).toEqual({ $case: 'text', value: 'echo: v0.3' });
    const sent = await legacy.sendMessage(send('wait', undefined, true));
    const canceled = await legacy.cancelTask(CancelTaskRequest.fromJSON({ id: (sent as { id: string }).id }));
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    const bobs = new LegacyJsonRpcTransport({
      endpoint: `${gateway.url}/agents/echo/`,
      fetchImpl: (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set('Authorization', `Bearer ${bob}`);
        return fetch(input, { ...init, headers });
      },
    });
    await expect(bobs.getTask(GetTaskRequest.fromJSON({ id }))).rejects.toMatchObject({ name: 'TaskNotFoundError' });
  });
});
