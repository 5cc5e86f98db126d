import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  SendMessageRequest,
  TaskPushNotificationConfig,
  TaskState,
} from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { addKey, keysCli, sdkClient, send, startGateway } from './gateway-helpers.js';

/** A worker that moves each task to working and finishes it (an artifact, then completed) when told. */
async function startWorker(socket: string, name: string) {
  const client = await connect({ socket, client: { name: 'push-worker', version: '0' } });
  const { token } = await client.register({ name, contextId: 'workers' });
  const working = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const events = await client.wait({ token, timeoutSeconds: 1 });
      for (const event of events) {
        if (event.method !== 'a2a.task.event') continue;
        const e = event.params.event;
        if (e.kind !== 'status-update' || e.status.state !== 'submitted') continue;
        await client.setStatus({ token, id: e.taskId, state: 'working' }).catch(() => {});
        working.add(e.taskId);
      }
    }
  })();
  return {
    finish: async (taskId: string) => {
      for (let i = 0; i < 400 && !working.has(taskId); i++) await new Promise((r) => setTimeout(r, 25));
      await client.addArtifact({
        token,
        id: taskId,
        artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: 'one' }] },
      });
      await client.addArtifact({
        token,
        id: taskId,
        artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: ' two' }] },
        append: true,
      });
      await client.setStatus({ token, id: taskId, state: 'completed' });
    },
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.close();
    },
  };
}

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Record<string, Record<string, unknown>>;
}

/** A webhook receiver on a free port: keeps every POST it is sent. */
async function startReceiver(): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (t: string) => {
      text += t;
    });
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: JSON.parse(text) });
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

/** A URL nothing listens on (a port taken and given back). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/hook`;
}

async function until(what: string, done: () => boolean): Promise<void> {
  for (let i = 0; i < 800; i++) {
    if (done()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`never: ${what}`);
}

describe('switchboard gateway push notifications, with the official A2A SDK as its client', () => {
  const h = hostDir();
  const keysFile = join(h.dir, 'broker.gateway-keys.json');
  let serve: SocketServe;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let alice: string;
  let bob: string;
  let observer: SwitchboardClient;
  const gatewayArgs = () => [
    '--agents',
    'echo',
    '--socket',
    h.socket,
    '--keys',
    keysFile,
    '--listen',
    '127.0.0.1:0',
    '--rate',
    '1000',
  ];

  /** A raw JSON-RPC call as a key (v1.0 unless `v03`); answers the response object. */
  async function rpc(key: string, method: string, params: unknown, v03 = false) {
    const response = await fetch(`${gateway.url}/agents/echo/`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${key}`,
        'Content-Type': 'application/json',
        ...(v03 ? {} : { 'A2A-Version': '1.0' }),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    return (await response.json()) as { result?: unknown; error?: { code: number; message: string } };
  }

  async function newTask(key: string): Promise<string> {
    const client = await sdkClient(gateway.url, 'echo', key);
    const answer = await client.sendMessage(send('slow', undefined, true));
    if (!('id' in answer) || !('status' in answer)) throw new Error('expected a task');
    return answer.id;
  }

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    worker = await startWorker(h.socket, 'echo');
    alice = addKey(keysFile, 'alice', 'echo');
    bob = addKey(keysFile, 'bob', 'echo');
    gateway = await startGateway(gatewayArgs());
    receiver = await startReceiver();
    observer = await connect({ socket: h.socket });
  }, 60_000);

  afterAll(async () => {
    gateway?.child.kill('SIGTERM');
    receiver?.server.close();
    await observer?.close().catch(() => {});
    await worker?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  it('says pushNotifications: true on the card', async () => {
    const card = (await (await fetch(`${gateway.url}/agents/echo/.well-known/agent-card.json`)).json()) as {
      capabilities: { pushNotifications?: boolean };
    };
    expect(card.capabilities.pushNotifications).toBe(true);
  });

  for (const binding of ['jsonrpc', 'rest'] as const) {
    it(`creates, gets, lists and deletes configs (${binding})`, async () => {
      const client = await sdkClient(gateway.url, 'echo', alice, binding);
      const taskId = await newTask(alice);
      const made = await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId, id: 'c1', url: `${receiver.url}/a`, token: 'tok-1' }),
      );
      expect(made).toMatchObject({ taskId, id: 'c1', url: `${receiver.url}/a`, token: 'tok-1' });
      const unnamed = await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({
          taskId,
          url: `${receiver.url}/b`,
          authentication: { scheme: 'Bearer', credentials: 'cred' },
        }),
      );
      expect(unnamed.id).not.toBe('');
      expect(unnamed.authentication).toEqual({ scheme: 'Bearer', credentials: 'cred' });
      const got = await client.getTaskPushNotificationConfig(
        GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'c1' }),
      );
      expect(got).toMatchObject({ taskId, id: 'c1', url: `${receiver.url}/a`, token: 'tok-1' });
      const listed = await client.listTaskPushNotificationConfig(
        ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }),
      );
      expect(listed.configs.map((c) => c.id).sort()).toEqual(['c1', unnamed.id].sort());
      // The same id again replaces the config.
      await client.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId, id: 'c1', url: `${receiver.url}/c` }),
      );
      const replaced = await client.getTaskPushNotificationConfig(
        GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'c1' }),
      );
      expect(replaced.url).toBe(`${receiver.url}/c`);
      expect(replaced.token).toBe('');
      await client.deleteTaskPushNotificationConfig(
        DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'c1' }),
      );
      const after = await client.listTaskPushNotificationConfig(
        ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }),
      );
      expect(after.configs.map((c) => c.id)).toEqual([unnamed.id]);
      await expect(
        client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'c1' })),
      ).rejects.toThrow(/no push notification config/);
      await expect(
        client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: 'c1' })),
      ).rejects.toThrow(/no push notification config/);
      await client.deleteTaskPushNotificationConfig(
        DeleteTaskPushNotificationConfigRequest.fromJSON({ taskId, id: unnamed.id }),
      );
      await worker.finish(taskId);
    });

    it(`lists a task's configs a page at a time (${binding})`, async () => {
      const client = await sdkClient(gateway.url, 'echo', alice, binding);
      const taskId = await newTask(alice);
      for (const id of ['p1', 'p2', 'p3']) {
        await client.createTaskPushNotificationConfig(
          TaskPushNotificationConfig.fromJSON({ taskId, id, url: `${receiver.url}/${id}` }),
        );
      }
      // The SDK's HTTP+JSON client sends no paging: its query is written here.
      const list = async (pageSize: number, pageToken = '') => {
        if (binding === 'jsonrpc') {
          return client.listTaskPushNotificationConfig(
            ListTaskPushNotificationConfigsRequest.fromJSON({ taskId, pageSize, pageToken }),
          );
        }
        const query = new URLSearchParams({ pageSize: String(pageSize), pageToken });
        const response = await fetch(`${gateway.url}/agents/echo/tasks/${taskId}/pushNotificationConfigs?${query}`, {
          headers: { Authorization: `Bearer ${alice}`, 'A2A-Version': '1.0' },
        });
        const body = (await response.json()) as { configs: { id: string }[]; nextPageToken: string; message?: string };
        if (!response.ok) throw new Error(JSON.stringify(body));
        return body;
      };
      const first = await list(2);
      expect(first.configs.map((c) => c.id)).toEqual(['p1', 'p2']);
      expect(first.nextPageToken).not.toBe('');
      const second = await list(2, first.nextPageToken);
      expect(second.configs.map((c) => c.id)).toEqual(['p3']);
      expect(second.nextPageToken).toBe('');
      expect((await list(0)).configs.map((c) => c.id)).toEqual(['p1', 'p2', 'p3']);
      expect((await list(3)).nextPageToken).toBe('');
      await expect(list(2, 'bm90LWEtY29uZmln')).rejects.toThrow(/pageToken is not a token of this list/);
      await worker.finish(taskId);
    });
  }

  it("sends a task's updates to the webhook, in order, with the token, ending with the final state", async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const taskId = await newTask(alice);
    await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId,
        id: 'hook',
        url: `${receiver.url}/hook/${taskId}`,
        token: 'sekret',
      }),
    );
    await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({
        taskId,
        id: 'authed',
        url: `${receiver.url}/authed/${taskId}`,
        authentication: { scheme: 'Bearer', credentials: 'abc' },
      }),
    );
    await worker.finish(taskId);
    const mine = (prefix: string) => receiver.received.filter((r) => r.path === `/${prefix}/${taskId}`);
    const final = (r: Received) =>
      (r.body.statusUpdate?.status as { state?: string } | undefined)?.state === 'TASK_STATE_COMPLETED';
    await until(
      'the completed state reaches both webhooks',
      () => mine('hook').some(final) && mine('authed').some(final),
    );
    const hook = mine('hook');
    expect(hook.every((r) => r.headers['x-a2a-notification-token'] === 'sekret')).toBe(true);
    expect(hook.every((r) => r.headers['content-type'] === 'application/a2a+json')).toBe(true);
    expect(mine('authed').every((r) => r.headers.authorization === 'Bearer abc')).toBe(true);
    for (const got of [hook, mine('authed')]) {
      const kinds = got.map((r) =>
        'statusUpdate' in r.body
          ? `status:${(r.body.statusUpdate?.status as { state?: string } | undefined)?.state}`
          : `artifact:${JSON.stringify((r.body.artifactUpdate?.artifact as { parts?: unknown[] } | undefined)?.parts)}`,
      );
      // The worker's move to working may reach the gateway before or after the configs are made.
      if (kinds[0] === 'status:TASK_STATE_WORKING') kinds.shift();
      expect(kinds).toEqual(['artifact:[{"text":"one"}]', 'artifact:[{"text":" two"}]', 'status:TASK_STATE_COMPLETED']);
      for (const r of got) expect(Object.values(r.body)[0]?.taskId).toBe(taskId);
    }
  });

  it("refuses another key the task's configs (TASK_NOT_FOUND), changing nothing", async () => {
    const taskId = await newTask(alice);
    const own = await rpc(alice, 'CreateTaskPushNotificationConfig', { taskId, id: 'a', url: `${receiver.url}/x` });
    expect(own.error).toBeUndefined();
    for (const [method, params] of [
      ['CreateTaskPushNotificationConfig', { taskId, id: 'b', url: `${receiver.url}/steal` }],
      ['GetTaskPushNotificationConfig', { taskId, id: 'a' }],
      ['ListTaskPushNotificationConfigs', { taskId }],
      ['DeleteTaskPushNotificationConfig', { taskId, id: 'a' }],
    ] as const) {
      const answer = await rpc(bob, method, params);
      expect(answer.error?.code, method).toBe(-32001);
    }
    const bobClient = await sdkClient(gateway.url, 'echo', bob, 'rest');
    await expect(
      bobClient.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON({ taskId })),
    ).rejects.toThrow();
    const listed = (await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId })) as {
      result: { configs: { id: string; url: string }[] };
    };
    expect(listed.result.configs).toEqual([{ taskId, id: 'a', url: `${receiver.url}/x` }]);
    await worker.finish(taskId);
  });

  it('refuses bad configs with what to send (-32602 / 400), changing nothing', async () => {
    const taskId = await newTask(alice);
    const bad: [unknown, RegExp][] = [
      [{ taskId }, /needs a url/],
      [{ taskId, url: 'ftp://example.com/x' }, /http or https/],
      [{ taskId, url: 'javascript:alert(1)' }, /http or https/],
      [{ taskId, url: 'not a url' }, /not a URL/],
      [{ taskId, url: `${receiver.url}/${'x'.repeat(3000)}` }, /longer than/],
      [{ taskId, url: `${receiver.url}/x`, token: 'a\r\nX-Evil: 1' }, /one line/],
      [{ taskId, url: `${receiver.url}/x`, authentication: { scheme: 'Bearer x', credentials: 'c' } }, /scheme/],
      [{ taskId, url: 42 }, /not one A2A v1.0 takes/],
      [{ taskId, url: `${receiver.url}/x`, id: 'i'.repeat(200) }, /id is longer/],
    ];
    for (const [params, message] of bad) {
      const answer = await rpc(alice, 'CreateTaskPushNotificationConfig', params);
      expect(answer.error?.code, JSON.stringify(params).slice(0, 80)).toBe(-32602);
      expect(answer.error?.message).toMatch(message);
    }
    const rest = await fetch(`${gateway.url}/agents/echo/tasks/${taskId}/pushNotificationConfigs`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ url: 'file:///etc/passwd' }),
    });
    expect(rest.status).toBe(400);
    const none = (await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId })) as {
      result: { configs: unknown[] };
    };
    expect(none.result.configs).toEqual([]);
    // At most 10 configs a task: the 11th is refused, the list stays at 10.
    for (let i = 0; i < 10; i++) {
      expect(
        (await rpc(alice, 'CreateTaskPushNotificationConfig', { taskId, id: `n${i}`, url: `${receiver.url}/n` })).error,
      ).toBeUndefined();
    }
    const eleventh = await rpc(alice, 'CreateTaskPushNotificationConfig', {
      taskId,
      id: 'n10',
      url: `${receiver.url}/n`,
    });
    expect(eleventh.error?.code).toBe(-32602);
    expect(eleventh.error?.message).toMatch(/delete one first/);
    const ten = (await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId })) as { result: { configs: unknown[] } };
    expect(ten.result.configs).toHaveLength(10);
    for (let i = 0; i < 10; i++) await rpc(alice, 'DeleteTaskPushNotificationConfig', { taskId, id: `n${i}` });
    await worker.finish(taskId);
  });

  it('serves the v0.3 names under the v0.3 header', async () => {
    const taskId = await newTask(alice);
    const set = await rpc(
      alice,
      'tasks/pushNotificationConfig/set',
      {
        taskId,
        pushNotificationConfig: {
          id: 'old',
          url: `${receiver.url}/v03`,
          token: 't',
          authentication: { schemes: ['Basic'], credentials: 'eA==' },
        },
      },
      true,
    );
    expect(set.result).toEqual({
      taskId,
      pushNotificationConfig: {
        id: 'old',
        url: `${receiver.url}/v03`,
        token: 't',
        authentication: { schemes: ['Basic'], credentials: 'eA==' },
      },
    });
    expect(
      (await rpc(alice, 'tasks/pushNotificationConfig/get', { id: taskId, pushNotificationConfigId: 'old' }, true))
        .result,
    ).toEqual(set.result);
    expect((await rpc(alice, 'tasks/pushNotificationConfig/list', { id: taskId }, true)).result).toEqual([set.result]);
    expect(
      (await rpc(alice, 'tasks/pushNotificationConfig/delete', { id: taskId, pushNotificationConfigId: 'old' }, true))
        .result,
    ).toBeNull();
    expect((await rpc(alice, 'tasks/pushNotificationConfig/list', { id: taskId }, true)).result).toEqual([]);
    // A v1.0 name under v0.3 is not found, as for the other methods.
    expect((await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId }, true)).error?.code).toBe(-32601);
    await worker.finish(taskId);
  });

  it("takes a send's own push config (v1.0 and v0.3), and refuses a bad one before making a task", async () => {
    const client = await sdkClient(gateway.url, 'echo', alice, 'rest');
    const request = send('slow', undefined, true);
    const answer = await client.sendMessage(
      SendMessageRequest.fromJSON({
        ...(SendMessageRequest.toJSON(request) as object),
        configuration: {
          returnImmediately: true,
          taskPushNotificationConfig: { id: 'on-send', url: `${receiver.url}/send`, token: 'st' },
        },
      }),
    );
    if (!('id' in answer) || !('status' in answer)) throw new Error('expected a task');
    const taskId = answer.id;
    const listed = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }),
    );
    expect(listed.configs).toMatchObject([{ taskId, id: 'on-send', url: `${receiver.url}/send`, token: 'st' }]);
    await worker.finish(taskId);
    await until('the send config gets the completed state', () =>
      receiver.received.some(
        (r) =>
          r.path === '/send' &&
          r.headers['x-a2a-notification-token'] === 'st' &&
          r.body.statusUpdate?.taskId === taskId &&
          (r.body.statusUpdate?.status as { state?: string } | undefined)?.state === 'TASK_STATE_COMPLETED',
      ),
    );
    const v03 = (await rpc(
      alice,
      'message/send',
      {
        message: { kind: 'message', messageId: 'v03-push', role: 'user', parts: [{ kind: 'text', text: 'slow' }] },
        configuration: { pushNotificationConfig: { id: 'old-send', url: `${receiver.url}/send03`, token: 'o' } },
      },
      true,
    )) as { result?: { id: string } };
    const oldId = v03.result?.id as string;
    expect((await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId: oldId })).result).toEqual({
      configs: [{ taskId: oldId, id: 'old-send', url: `${receiver.url}/send03`, token: 'o' }],
      nextPageToken: '',
    });
    await worker.finish(oldId);
    const before = (await rpc(alice, 'ListTasks', {})) as { result: { tasks: unknown[] } };
    const refused = await rpc(alice, 'SendMessage', {
      message: { messageId: 'bad-push', role: 'ROLE_USER', parts: [{ text: 'slow' }] },
      configuration: { returnImmediately: true, taskPushNotificationConfig: { url: 'gopher://x' } },
    });
    expect(refused.error?.code).toBe(-32602);
    expect(refused.error?.message).toMatch(/http or https/);
    const after = (await rpc(alice, 'ListTasks', {})) as { result: { tasks: unknown[] } };
    expect(after.result.tasks).toHaveLength(before.result.tasks.length);
  });

  it('a webhook that is down does not break the task, and is logged', async () => {
    const client = await sdkClient(gateway.url, 'echo', alice);
    const taskId = await newTask(alice);
    await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId, id: 'dead', url: await deadUrl(), token: 'x' }),
    );
    await worker.finish(taskId);
    const task = await client.getTask(GetTaskRequest.fromJSON({ id: taskId }));
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await until('the failure is logged', () => gateway.stderr().includes('could not be delivered'));
    expect(gateway.stderr()).toContain(taskId);
    // The gateway still serves.
    expect((await rpc(alice, 'ListTaskPushNotificationConfigs', { taskId })).error).toBeUndefined();
  });

  it("drops a revoked key's configs: nothing more of its tasks reaches their webhooks, and a new key of the name finds none", async () => {
    const carol = addKey(keysFile, 'carol', 'echo');
    const taskId = await newTask(carol);
    const client = await sdkClient(gateway.url, 'echo', carol);
    await client.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId, id: 'hook', url: `${receiver.url}/revoked/${taskId}`, token: 't' }),
    );
    keysCli(['revoke', 'carol', '--keys', keysFile]);
    await worker.finish(taskId);
    await until('the configs are dropped', () =>
      gateway.stderr().includes('its push notification configs are dropped'),
    );
    // Only the move to working may have gone out, before the revocation; no artifact and no end after it.
    const got = receiver.received.filter((r) => r.path === `/revoked/${taskId}`);
    expect(
      got.filter(
        (r) =>
          !('statusUpdate' in r.body) ||
          (r.body.statusUpdate?.status as { state?: string })?.state !== 'TASK_STATE_WORKING',
      ),
    ).toEqual([]);
    const again = addKey(keysFile, 'carol', 'echo');
    const listed = await rpc(again, 'ListTaskPushNotificationConfigs', { taskId });
    expect(listed.error).toBeUndefined();
    expect(listed.result).toMatchObject({ configs: [] });
  });

  it('keeps the configs across a restart of the gateway, and sends from it again', async () => {
    const client0 = await sdkClient(gateway.url, 'echo', alice);
    const taskId = await newTask(alice);
    await client0.createTaskPushNotificationConfig(
      TaskPushNotificationConfig.fromJSON({ taskId, id: 'kept', url: `${receiver.url}/kept/${taskId}`, token: 'k' }),
    );
    gateway.child.kill('SIGTERM');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    gateway = await startGateway(gatewayArgs());
    const client = await sdkClient(gateway.url, 'echo', alice);
    const listed = await client.listTaskPushNotificationConfig(
      ListTaskPushNotificationConfigsRequest.fromJSON({ taskId }),
    );
    expect(listed.configs.map((c) => c.id)).toEqual(['kept']);
    await worker.finish(taskId);
    await until('the completed state reaches the webhook', () =>
      receiver.received.some(
        (r) =>
          r.path === `/kept/${taskId}` &&
          (r.body.statusUpdate?.status as { state?: string } | undefined)?.state === 'TASK_STATE_COMPLETED',
      ),
    );
  });

  it('sends on a restart what came while the gateway was down, and nothing it had sent before', async () => {
    const client0 = await sdkClient(gateway.url, 'echo', alice);
    const early = await newTask(alice);
    const late = await newTask(alice);
    for (const taskId of [early, late]) {
      await client0.createTaskPushNotificationConfig(
        TaskPushNotificationConfig.fromJSON({ taskId, id: 'down', url: `${receiver.url}/down/${taskId}` }),
      );
    }
    const mine = (taskId: string) => receiver.received.filter((r) => r.path === `/down/${taskId}`);
    const kinds = (taskId: string) =>
      mine(taskId).map((r) =>
        'statusUpdate' in r.body
          ? `status:${(r.body.statusUpdate?.status as { state?: string } | undefined)?.state}`
          : `artifact:${JSON.stringify((r.body.artifactUpdate?.artifact as { parts?: unknown[] } | undefined)?.parts)}`,
      );
    // One task ends while the gateway runs: its updates are sent once.
    await worker.finish(early);
    await until('the early task completes at its webhook', () => kinds(early).includes('status:TASK_STATE_COMPLETED'));
    const sentBefore = kinds(early).length;
    gateway.child.kill('SIGTERM');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    // The other ends while it is down: its artifact, its append and its end wait in the broker's log.
    await worker.finish(late);
    expect(kinds(late).filter((k) => k !== 'status:TASK_STATE_WORKING')).toEqual([]);
    gateway = await startGateway(gatewayArgs());
    await until('what came while down reaches the webhook', () => kinds(late).includes('status:TASK_STATE_COMPLETED'));
    expect(kinds(late).filter((k) => k !== 'status:TASK_STATE_WORKING')).toEqual([
      'artifact:[{"text":"one"}]',
      'artifact:[{"text":" two"}]',
      'status:TASK_STATE_COMPLETED',
    ]);
    // Nothing of the task that ended before the stop is sent again.
    await new Promise((r) => setTimeout(r, 500));
    expect(kinds(early)).toHaveLength(sentBefore);
  });
});
