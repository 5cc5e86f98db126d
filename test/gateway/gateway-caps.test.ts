import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { type GatewayProcess, addKey, collect, sdkClient, send, startGateway, stateOf } from './gateway-helpers.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../src/protocol/bounds.js';
import { TaskState } from '@a2a-js/sdk';

/** A worker that completes every task it is sent at once. */
async function instantWorker(socket: string) {
  const client: SwitchboardClient = await connect({ socket });
  const { token } = await client.register({ name: 'instant', contextId: 'workers' });
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const event of await client.wait({ token, timeoutSeconds: 1 })) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state !== 'submitted') continue;
        await client.setStatus({ token, id: event.params.event.taskId, state: 'completed' });
      }
    }
  })();
  return {
    client,
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.close();
    },
  };
}

/** A worker that holds every task it is sent until `release()` completes them all. */
async function holdingWorker(socket: string) {
  const client: SwitchboardClient = await connect({ socket });
  const { token } = await client.register({ name: 'holder', contextId: 'workers' });
  const held: string[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      for (const event of await client.wait({ token, timeoutSeconds: 1 })) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state === 'submitted') held.push(event.params.event.taskId);
      }
    }
  })();
  return {
    held,
    /** Completes every task held; the answers (a refusal is an error's code). */
    release: async () =>
      Promise.all(
        held.splice(0).map((id) =>
          client.setStatus({ token, id, state: 'completed' }).then(
            (r) => r.task.status.state as string,
            (error: { code?: string }) => error.code ?? String(error),
          ),
        ),
      ),
    stop: async () => {
      running = false;
      await loop.catch(() => {});
      await client.close();
    },
  };
}

describe('switchboard gateway past the broker’s per-registration bounds', () => {
  const h = hostDir();
  const keysFile = join(h.dir, 'keys.json');
  let serve: SocketServe;
  let worker: Awaited<ReturnType<typeof instantWorker>>;
  let holder: Awaited<ReturnType<typeof holdingWorker>>;
  let gateway: GatewayProcess;
  let key: string;
  let bobKey: string;

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    worker = await instantWorker(h.socket);
    holder = await holdingWorker(h.socket);
    key = addKey(keysFile, 'alice', 'instant');
    bobKey = addKey(keysFile, 'bob', 'instant,holder');
    gateway = await startGateway([
      '--agents',
      'instant,holder',
      '--socket',
      h.socket,
      '--keys',
      keysFile,
      '--listen',
      '127.0.0.1:0',
      '--rate',
      '100000',
    ]);
  }, 60_000);

  afterAll(async () => {
    gateway?.child.kill('SIGTERM');
    await worker?.stop();
    await holder?.stop();
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  it(`a key sends more than ${A2A_MAX_SENDS_PER_RUN} messages in one gateway run (its agent is registered again)`, async () => {
    const client = await sdkClient(gateway.url, 'instant', key);
    const batch = 100;
    let sent = 0;
    while (sent <= A2A_MAX_SENDS_PER_RUN) {
      for (let i = 0; i < batch; i++) {
        const task = (await client.sendMessage(send(`n${sent}`))) as { status?: { state?: TaskState } };
        expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        sent++;
      }
      // The context's bound on tasks held is the operator's to lift, by pruning ended ones.
      await worker.client.call('broker.tasks.prune', { endedBefore: new Date(Date.now() + 1000).toISOString() });
    }
    // Streams still hear their tasks after the registration changed.
    const streamed = await collect(client.sendMessageStream(send('after')));
    expect(stateOf(streamed.at(-1) as (typeof streamed)[number])).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 120_000);

  it('the tasks a key has open when its agent is registered again stay open, and end as their worker says', async () => {
    const prune = () =>
      worker.client.call('broker.tasks.prune', { endedBefore: new Date(Date.now() + 1000).toISOString() });
    const instant = await sdkClient(gateway.url, 'instant', bobKey);
    const held = await sdkClient(gateway.url, 'holder', bobKey);
    // Bob's registration sends up to 10 short of the cap, ...
    const first = A2A_MAX_SENDS_PER_RUN - 10;
    for (let sent = 0; sent < first; sent++) {
      await instant.sendMessage(send(`n${sent}`));
      if (sent % 100 === 99) await prune();
    }
    await prune();
    // ... then 20 to the holder, answered at once: the 11th is refused for the cap and sent again
    // under a new registration while the first 10 are open.
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) {
      const task = (await held.sendMessage(send(`held ${i}`, undefined, true))) as { id: string };
      ids.push(task.id);
    }
    await expect.poll(() => holder.held.length, { timeout: 10_000 }).toBe(20);
    // Every one was still the holder's to complete (a task canceled with the old registration is not).
    expect(await holder.release()).toEqual(ids.map(() => 'completed'));
    for (const id of ids) {
      const task = (await held.getTask({ tenant: '', id })) as { status?: { state?: TaskState } };
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    }
  }, 120_000);
});
