/**
 * A blocking SendMessage through the gateway: the broker answers it once its
 * task settles (`blocking: true`, one broker call); before a broker that
 * does not read `blocking` (no `a2a.send.blocking` capability) the gateway
 * waits for the task's end event and reads the task. Both answer the
 * official SDK client the completed task, over JSON-RPC and over REST.
 */
import { TaskState } from '@a2a-js/sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { KeyRing, addKey } from '../../src/gateway/gateway-keys.js';
import { startGatewayServer } from '../../src/gateway/gateway-server.js';
import { createLogger } from '../../src/log/logger.js';
import { BLOCKING_SEND_CAPABILITY } from '../../src/protocol/handshake.js';
import type { SwitchboardClient } from '../../src/transport/client.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { tempDir } from '../transport/helpers.js';
import { sdkClient, send } from './gateway-helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** Broker, a worker that completes each task at once, and the gateway serving it, in this process. */
async function serve(options: { oldBroker: boolean }) {
  const tmp = tempDir();
  const logger = createLogger({ level: 'warn' });
  const broker = createBroker({ path: tmp.db, logger });
  /** The broker calls of every session, by method (and whether a send blocks). */
  const calls: string[] = [];
  const dispatch = broker.dispatch.bind(broker);
  broker.dispatch = (method, params, callOptions) => {
    const blocking = (params as { blocking?: unknown } | undefined)?.blocking === true;
    calls.push(blocking ? `${method} (blocking)` : method);
    return dispatch(method, params, callOptions);
  };
  cleanups.push(async () => {
    await broker.close();
    tmp.cleanup();
  });
  const worker = await connectInProcess(broker, { logger });
  cleanups.push(() => worker.client.close());
  const { token } = await worker.client.register({ name: 'worker-0', contextId: 'workers' });
  let stopped = false;
  cleanups.push(() => {
    stopped = true;
  });
  void (async () => {
    while (!stopped) {
      const events = await worker.client.wait({ token, timeoutSeconds: 1 }).catch(() => []);
      for (const event of events) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state !== 'submitted') continue;
        const id = event.params.event.taskId;
        void worker.client.setStatus({
          token,
          id,
          state: 'completed',
          message: { parts: [{ kind: 'text', text: 'done' }] },
        });
      }
    }
  })();
  const gateway = await connectInProcess(broker, { logger });
  cleanups.push(() => gateway.client.close());
  if (options.oldBroker) hideBlockingSend(gateway.client);
  const keysFile = `${tmp.dir}/keys.json`;
  const key = addKey(keysFile, 'alice', ['worker-0']);
  const server = await startGatewayServer({
    client: gateway.client,
    keys: new KeyRing(keysFile),
    agents: ['worker-0'],
    port: 0,
    logger,
  });
  cleanups.push(() => server.stop());
  return { calls, url: server.url, key };
}

/** The client's host as one that predates `blocking`: its handshake without the capability. */
function hideBlockingSend(client: SwitchboardClient): void {
  const host = client.host;
  Object.defineProperty(client, 'host', {
    get: () => ({ ...host, capabilities: host.capabilities.filter((c) => c !== BLOCKING_SEND_CAPABILITY) }),
  });
}

describe('a blocking SendMessage through the gateway', () => {
  for (const oldBroker of [false, true]) {
    const how = oldBroker
      ? 'before a broker without the capability: the end event, then a read of the task'
      : 'the broker answers once the task settles: one broker call';
    it(`${how}; answered the completed task over JSON-RPC and REST`, async () => {
      const { calls, url, key } = await serve({ oldBroker });
      for (const binding of ['jsonrpc', 'rest'] as const) {
        const client = await sdkClient(url, 'worker-0', key, binding);
        // The first send registers the key's agent.
        await client.sendMessage(send('warm up'));
        calls.length = 0;
        const result = (await client.sendMessage(send('do it'))) as {
          status?: { state: TaskState };
          history?: unknown[];
        };
        expect(result.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
        expect(result.history).toHaveLength(2);
        // The gateway's send and the worker's status; the old way reads the task too.
        expect(calls.sort()).toEqual(
          oldBroker
            ? ['a2a.message.send', 'a2a.tasks.get', 'a2a.tasks.status']
            : ['a2a.message.send (blocking)', 'a2a.tasks.status'],
        );
      }
    });
  }
});
