import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { addKey, startGateway } from '../gateway/gateway-helpers.js';
import { SocketServe, hostDir, text } from '../host/helpers.js';
import { type BridgeProcess, agentNames, agentsCli, followTask, startBridge, textOf, until } from './remote-helpers.js';

/** A worker on broker B: answers each task with the artifact "echo: TEXT"; "slow" waits for `release`, "wait" for a cancel. */
async function startWorker(socket: string, name: string) {
  const client = await connect({ socket, client: { name: 'test-worker', version: '0' } });
  const { token } = await client.register({ name, contextId: 'workers' });
  const held = new Map<string, () => Promise<void>>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const events = await client.wait({ token, timeoutSeconds: 1 }).catch(() => []);
      for (const event of events) {
        if (event.method !== 'a2a.task.event') continue;
        const e = event.params.event;
        if (e.kind !== 'status-update' || e.status.state !== 'submitted') continue;
        await answer(e.taskId).catch(() => {});
      }
    }
  })();
  async function answer(taskId: string): Promise<void> {
    const { task } = await client.getTask({ token, id: taskId });
    const said = textOf(task.history[0]?.parts);
    await client.setStatus({ token, id: task.id, state: 'working' });
    const finish = async () => {
      await client.addArtifact({
        token,
        id: task.id,
        artifact: { artifactId: 'answer', parts: [{ kind: 'text', text: `echo: ${said}` }] },
      });
      await client.setStatus({ token, id: task.id, state: 'completed', message: text('done') });
    };
    if (said === 'wait') return;
    if (said.startsWith('slow')) held.set(task.id, finish);
    else await finish();
  }
  return {
    client,
    token,
    /** Finishes the one task held back whose text is `said`. */
    release: async (said: string) => {
      const id = await until(async () => {
        for (const taskId of held.keys()) {
          const { task } = await client.getTask({ token, id: taskId });
          if (textOf(task.history[0]?.parts) === said) return taskId;
        }
        return undefined;
      });
      const finish = held.get(id) as () => Promise<void>;
      held.delete(id);
      await finish();
    },
    stop: async () => {
      running = false;
      await loop;
      await client.close();
    },
  };
}

describe('two hosts: broker A calls the agent of broker B through B’s own gateway', () => {
  const a = hostDir();
  const b = hostDir();
  const keysFile = join(b.dir, 'gateway-keys.json');
  let serveA: SocketServe;
  let serveB: SocketServe;
  let worker: Awaited<ReturnType<typeof startWorker>>;
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let gatewayArgs: string[];
  let bridge: BridgeProcess;
  let client: SwitchboardClient;
  let token: string;

  const restartGateway = async () => {
    gateway.child.kill('SIGKILL');
    await new Promise((resolve) => gateway.child.once('exit', resolve));
    gateway = await startGateway(gatewayArgs);
  };

  beforeAll(async () => {
    serveA = new SocketServe(a.db, ['--listen', `unix:${a.socket}`, '--no-remote-agents']);
    serveB = new SocketServe(b.db, ['--listen', `unix:${b.socket}`]);
    await Promise.all([serveA.listening(a.socket), serveB.listening(b.socket)]);
    worker = await startWorker(b.socket, 'echo');
    gatewayArgs = ['--agents', 'echo', '--socket', b.socket, '--keys', keysFile, '--listen', '127.0.0.1:0'];
    gateway = await startGateway(gatewayArgs);
    // The same port from now on: a restarted gateway is where the bridge left it.
    gatewayArgs[gatewayArgs.length - 1] = gateway.url.replace('http://', '');
    const key = addKey(keysFile, 'host-a', 'echo');
    const added = agentsCli(['add-remote', `${gateway.url}/agents/echo/`, '--db', a.db, '--token', key]);
    expect(added.status, added.stderr).toBe(0);
    bridge = await startBridge(a.db, ['--reconnect', '20']);
    client = await connect({ socket: a.socket });
    token = (await client.register({ name: 'lead', contextId: 'local' })).token;
    await until(async () => ((await agentNames(client, token)).includes('echo') ? true : undefined));
  }, 60_000);

  afterAll(async () => {
    await bridge?.stop();
    gateway?.child.kill('SIGKILL');
    await client?.close().catch(() => {});
    await worker?.stop();
    await serveA?.stop();
    await serveB?.stop();
    a.cleanup();
    b.cleanup();
  }, 30_000);

  it('an agent on A sends to B’s echo and gets its answer (two-host delegation)', async () => {
    const { task } = await client.send({ token, to: 'echo', message: text('hello B') });
    const followed = await followTask(client, token, task.id);
    expect(followed.steps).toEqual(['working', 'artifact:answer', 'completed']);
    expect(textOf(followed.task.artifacts[0]?.parts)).toBe('echo: hello B');
    // On B, the task's requester is the gateway key's agent: no capability token of A's went out.
    const onB = await worker.client.listTasks({ token: worker.token, role: 'worker' });
    const there = onB.tasks.find((t) => textOf(t.history[0]?.parts) === 'hello B');
    expect(there?.requesterName).toBe('gateway-host-a');
    expect(there?.history[0]?.messageId).toBe(task.history[0]?.messageId);
  }, 60_000);

  it('B’s gateway killed mid-task and started again: the bridge resubscribes, each event reaches A once', async () => {
    const { task } = await client.send({ token, to: 'echo', message: text('slow 1') });
    await followTask(client, token, task.id, ['working']);
    await restartGateway();
    await worker.release('slow 1');
    const followed = await followTask(client, token, task.id);
    expect(followed.steps).toEqual(['artifact:answer', 'completed']);
    expect((await client.getTask({ token, id: task.id })).task.artifacts).toHaveLength(1);
  }, 60_000);

  it('the bridge killed mid-task and started again: it picks the task up, each event once', async () => {
    const first = await client.send({ token, to: 'echo', message: text('slow 2') });
    const second = await client.send({ token, to: 'echo', message: text('slow 3') });
    await followTask(client, token, first.task.id, ['working']);
    await followTask(client, token, second.task.id, ['working']);
    await bridge.stop('SIGKILL');
    // One ends while no bridge runs; the other after the bridge is back.
    await worker.release('slow 2');
    bridge = await startBridge(a.db, ['--reconnect', '20']);
    const one = await followTask(client, token, first.task.id);
    expect(one.steps).toEqual(['artifact:answer', 'completed']);
    await worker.release('slow 3');
    const two = await followTask(client, token, second.task.id);
    expect(two.steps).toEqual(['artifact:answer', 'completed']);
    expect(textOf(two.task.artifacts[0]?.parts)).toBe('echo: slow 3');
  }, 90_000);

  it('a cancel on A cancels the task on B', async () => {
    const { task } = await client.send({ token, to: 'echo', message: text('wait') });
    await followTask(client, token, task.id, ['working']);
    await client.cancel({ token, id: task.id });
    const onB = await until(async () => {
      const { tasks } = await worker.client.listTasks({ token: worker.token, role: 'worker', states: ['canceled'] });
      return tasks.find((t) => textOf(t.history[0]?.parts) === 'wait');
    });
    expect(onB.status.state).toBe('canceled');
  }, 60_000);
});
