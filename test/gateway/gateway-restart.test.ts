import { createServer } from 'node:net';
import { join } from 'node:path';
import { type StreamResponse, SubscribeToTaskRequest, TaskState } from '@a2a-js/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { type GatewayProcess, addKey, collect, sdkClient, send, startGateway, stateOf } from './gateway-helpers.js';

/** A free TCP port on loopback (the restarted gateway must listen where the client knows it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** A worker that adds one artifact (`step-N`) per `step(taskId)`, and completes the task on `finish`. */
async function stepWorker(socket: string) {
  const client: SwitchboardClient = await connect({ socket, client: { name: 'step-worker', version: '0' } });
  const { token } = await client.register({ name: 'steps', contextId: 'workers' });
  const counts = new Map<string, number>();
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const event of await client.wait({ token, timeoutSeconds: 1 })) {
        if (event.method !== 'a2a.task.event') continue;
        const e = event.params.event;
        if (e.kind !== 'status-update' || e.status.state !== 'submitted') continue;
        await client.setStatus({ token, id: e.taskId, state: 'working' });
        counts.set(e.taskId, 0);
      }
    }
  })();
  const taken = async (taskId: string) => {
    for (let i = 0; i < 400 && !counts.has(taskId); i++) await new Promise((r) => setTimeout(r, 25));
    if (!counts.has(taskId)) throw new Error(`the worker did not take ${taskId}`);
  };
  return {
    async step(taskId: string): Promise<string> {
      await taken(taskId);
      const n = (counts.get(taskId) ?? 0) + 1;
      counts.set(taskId, n);
      await client.addArtifact({
        token,
        id: taskId,
        artifact: { artifactId: `step-${n}`, parts: [{ kind: 'text', text: `step ${n}` }] },
      });
      return `step-${n}`;
    },
    async finish(taskId: string): Promise<void> {
      await client.setStatus({ token, id: taskId, state: 'completed' });
    },
    async stop() {
      running = false;
      await loop.catch(() => {});
      await client.close();
    },
  };
}

/** What a stream response says, in a line: `task`, `status:STATE`, `artifact:ID`. */
function describeResponse(response: StreamResponse): string {
  const p = response.payload;
  if (p?.$case === 'task') return 'task';
  if (p?.$case === 'statusUpdate') return `status:${TaskState[p.value.status?.state ?? 0]}`;
  if (p?.$case === 'artifactUpdate') return `artifact:${p.value.artifact?.artifactId}`;
  return String(p?.$case);
}

describe('switchboard gateway, SIGKILLed mid-stream and restarted', () => {
  const h = hostDir();
  const keysFile = join(h.dir, 'gateway-keys.json');
  let serve: SocketServe;
  let worker: Awaited<ReturnType<typeof stepWorker>>;
  let key: string;
  let port: number;
  let gateway: GatewayProcess | undefined;

  const start = async () => {
    gateway = await startGateway([
      '--agents',
      'steps',
      '--socket',
      h.socket,
      '--keys',
      keysFile,
      '--listen',
      `127.0.0.1:${port}`,
      '--rate',
      '1000',
    ]);
    return gateway;
  };

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    worker = await stepWorker(h.socket);
    key = addKey(keysFile, 'alice', 'steps');
    port = await freePort();
    await start();
  }, 60_000);

  afterAll(async () => {
    gateway?.child.kill('SIGTERM');
    await worker?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  for (const binding of ['jsonrpc', 'rest'] as const) {
    it(`over ${binding}: the client's resubscribe gets every event once, in order`, async () => {
      const url = (gateway as GatewayProcess).url;
      const client = await sdkClient(url, 'steps', key, binding);
      const stream = client.sendMessageStream(send('steps'));
      const first = (await stream.next()).value as StreamResponse;
      expect(first.payload?.$case).toBe('task');
      const id = first.payload?.$case === 'task' ? first.payload.value.id : '';

      // Before the kill: the client reads every event up to step 2.
      const before: string[] = [];
      const produced: string[] = [];
      produced.push(await worker.step(id), await worker.step(id));
      while (!before.includes('artifact:step-2')) {
        const next = await stream.next();
        expect(next.done).toBe(false);
        before.push(describeResponse(next.value as StreamResponse));
      }
      expect(before.filter((d) => d.startsWith('artifact:'))).toEqual(['artifact:step-1', 'artifact:step-2']);

      // The gateway dies mid-stream; the task goes on without it.
      const dead = gateway as GatewayProcess;
      const exited = new Promise((resolve) => dead.child.once('exit', resolve));
      dead.child.kill('SIGKILL');
      await exited;
      await expect(stream.next()).rejects.toThrow();
      produced.push(await worker.step(id), await worker.step(id));

      await start();
      const again = client.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id }));
      const snapshot = (await again.next()).value as StreamResponse;
      expect(snapshot.payload?.$case).toBe('task');
      if (snapshot.payload?.$case !== 'task') return;
      expect(snapshot.payload.value.status?.state).toBe(TaskState.TASK_STATE_WORKING);
      expect(snapshot.payload.value.artifacts.map((a) => a.artifactId)).toEqual(produced);

      produced.push(await worker.step(id), await worker.step(id));
      await worker.finish(id);
      const after = (await collect(again)).map(describeResponse);
      // Nothing the snapshot holds comes again (no status it already says, no artifact it has), nothing is lost.
      expect(after).toEqual(['artifact:step-5', 'artifact:step-6', 'status:TASK_STATE_COMPLETED']);
      expect(stateOf(snapshot)).toBe(TaskState.TASK_STATE_WORKING);
    }, 60_000);
  }
});
