import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { GatewayParties } from '../../src/gateway/gateway-parties.js';
import { GatewayPush } from '../../src/gateway/gateway-push.js';
import { PushSender } from '../../src/gateway/gateway-push-sender.js';
import {
  MAX_PUSH_CONFIGS_PER_KEY,
  MAX_PUSH_CONFIGS_PER_TASK,
  PushStore,
} from '../../src/gateway/gateway-push-store.js';
import { createLogger } from '../../src/log/logger.js';
import { type InProcessConnection, connectInProcess } from '../../src/transport/in-process.js';

// The bound on a key's push configs counts the configs of its open tasks: a key at the bound
// gives up those of its ended (or pruned) tasks before a new one is refused.

describe('the gateway’s bound on push configs per key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-push-bound-'));
  const logger = createLogger({ level: 'silent' });
  let broker: Broker | undefined;
  const connections: InProcessConnection[] = [];

  afterEach(async () => {
    for (const c of connections.splice(0)) await c.client.close();
    await broker?.close();
    broker = undefined;
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  async function setup() {
    broker = createBroker({ path: join(dir, `b-${Math.random().toString(36).slice(2)}.db`), logger });
    const worker = await connectInProcess(broker, { logger });
    const gateway = await connectInProcess(broker, { logger });
    connections.push(worker, gateway);
    const { token } = await worker.client.register({ name: 'echo', contextId: 'workers' });
    const parties = new GatewayParties(gateway.client, logger);
    const store = new PushStore(undefined);
    const push = new GatewayPush(gateway.client, parties, store, new PushSender(logger), logger);
    const newTask = async () => {
      const { task } = await parties.call('alice', (t) =>
        gateway.client.send({ token: t, to: 'echo', message: { parts: [{ kind: 'text', text: 'hi' }] } }),
      );
      return task.id;
    };
    const create = (taskId: string, id: string) =>
      push.handle('alice', 'CreateTaskPushNotificationConfig', { taskId, id, url: 'http://127.0.0.1:9/hook' });
    const end = (taskId: string) => worker.client.setStatus({ token, id: taskId, state: 'completed' });
    return { push, store, newTask, create, end, close: () => parties.close() };
  }

  it('drops the configs of ended tasks when the bound is reached, and refuses only when all are open', async () => {
    const g = await setup();
    const tasks: string[] = [];
    const perTask = MAX_PUSH_CONFIGS_PER_TASK;
    for (let t = 0; t < MAX_PUSH_CONFIGS_PER_KEY / perTask; t++) {
      const taskId = await g.newTask();
      tasks.push(taskId);
      for (let c = 0; c < perTask; c++) await g.create(taskId, `c${c}`);
    }
    expect(g.store.keyHasRoom('alice')).toBe(false);
    const open = await g.newTask();
    // Every task open: the bound holds, nothing changes.
    await expect(g.create(open, 'new')).rejects.toThrow(/1000 push notification configs of open tasks/);
    expect(g.store.list('alice', open)).toEqual([]);
    // Replacing one by its id is not a new config.
    await g.create(tasks[0] as string, 'c0');
    // Two tasks end: their configs go at the next create, which then fits.
    await g.end(tasks[1] as string);
    await g.end(tasks[2] as string);
    await g.create(open, 'new');
    expect(g.store.list('alice', open).map((c) => c.id)).toEqual(['new']);
    expect(g.store.list('alice', tasks[1] as string)).toEqual([]);
    expect(g.store.list('alice', tasks[2] as string)).toEqual([]);
    expect(g.store.list('alice', tasks[3] as string)).toHaveLength(perTask);
    expect(g.store.tasksOf('alice')).toHaveLength(MAX_PUSH_CONFIGS_PER_KEY / perTask - 1);
    g.close();
  }, 60_000);

  it('counts a pruned task as ended', async () => {
    const g = await setup();
    const tasks: string[] = [];
    for (let t = 0; t < MAX_PUSH_CONFIGS_PER_KEY / MAX_PUSH_CONFIGS_PER_TASK; t++) {
      const taskId = await g.newTask();
      tasks.push(taskId);
      for (let c = 0; c < MAX_PUSH_CONFIGS_PER_TASK; c++) await g.create(taskId, `c${c}`);
    }
    await g.end(tasks[0] as string);
    await broker?.pruneTasks({ endedBefore: new Date(Date.now() + 60_000).toISOString() });
    const open = await g.newTask();
    await g.create(open, 'new');
    expect(g.store.tasksOf('alice')).not.toContain(tasks[0]);
    g.close();
  }, 60_000);
});
