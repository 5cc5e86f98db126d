/**
 * A blocking send over a connection: the server says it reads `blocking`
 * (capability `a2a.send.blocking`), the answer comes once the task settles,
 * and a client that closes its connection while one waits is answered at
 * once with the task as it is (its close waits for no task), in process and
 * over a spawned `switchboard serve` on real pipes.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/actors/broker/broker.js';
import { BLOCKING_SEND_CAPABILITY } from '../../src/protocol/handshake.js';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { openTempBroker, tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function openBroker(): Broker {
  return openTempBroker(cleanups);
}

/** A worker registered through `client` that completes each task it is sent with "done". */
async function completingWorker(client: SwitchboardClient): Promise<() => void> {
  const { token } = await client.register({ name: 'w', contextId: 'c' });
  let stopped = false;
  void (async () => {
    while (!stopped) {
      const events = await client.wait({ token, timeoutSeconds: 1 }).catch(() => []);
      for (const event of events) {
        if (event.method !== 'a2a.task.event' || event.params.event.kind !== 'status-update') continue;
        if (event.params.event.status.state !== 'submitted') continue;
        await client.setStatus({ token, id: event.params.event.taskId, state: 'completed', message: text('done') });
      }
    }
  })();
  return () => {
    stopped = true;
  };
}

describe('a blocking send over a connection', () => {
  it('in process: answered once the worker completes it; close() answers one still waiting at once', async () => {
    const broker = openBroker();
    const worker = await connectInProcess(broker);
    cleanups.push(() => worker.client.close());
    const stop = await completingWorker(worker.client);
    cleanups.push(stop);
    const { client, session } = await connectInProcess(broker);
    expect(client.host.capabilities).toContain(BLOCKING_SEND_CAPABILITY);
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const done = await client.send({ token: requester.token, to: 'w', message: text('go'), blocking: true });
    expect(done.task.status.state).toBe('completed');
    expect(done.task.history).toHaveLength(2);

    // A worker that never answers: the send waits until the client closes.
    await client.register({ name: 'silent', contextId: 'c' });
    const waiting = client.send({ token: requester.token, to: 'silent', message: text('hello?'), blocking: true });
    await new Promise((resolve) => setTimeout(resolve, 50));
    await client.close();
    const answered = await waiting;
    expect(answered.task.status.state).toBe('submitted');
    await session.closed;
  });

  it('over a spawned serve on pipes: the same, and ending its stdin answers the send still waiting', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const client = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
    cleanups.push(() => client.close());
    expect(client.host.capabilities).toContain(BLOCKING_SEND_CAPABILITY);
    const stop = await completingWorker(client);
    cleanups.push(stop);
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const done = await client.send({ token: requester.token, to: 'w', message: text('go'), blocking: true });
    expect(done.task.status.state).toBe('completed');

    await client.register({ name: 'silent', contextId: 'c' });
    const waiting = client.send({ token: requester.token, to: 'silent', message: text('hello?'), blocking: true });
    await new Promise((resolve) => setTimeout(resolve, 200));
    stop();
    await client.close();
    const answered = await waiting;
    expect(answered.task.status.state).toBe('submitted');
  });

  it('over pipes, waiting sends hold no slot of the connection: more of them than its window, and the worker on the same connection still gets through', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const client = await connect({ spawn: { db: tmp.db, stderr: 'pipe' } });
    cleanups.push(() => client.close());
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const { token } = await client.register({ name: 'slow', contextId: 'c' });
    // A new connection runs 8 calls at once at first, one more per answer: 30 sends that all wait would hold every slot.
    const sends = Array.from({ length: 30 }, (_, i) =>
      client.send({ token: requester.token, to: 'slow', message: text(`job ${i}`), blocking: true }),
    );
    const received: string[] = [];
    while (received.length < 30) {
      for (const event of await client.wait({ token, timeoutSeconds: 5 })) {
        if (event.method === 'a2a.task.event' && event.params.event.kind === 'status-update') {
          received.push(event.params.event.taskId);
        }
      }
    }
    // Every send waits; a call behind them is answered all the same.
    const { agents } = await client.listAgents({ token: requester.token });
    expect(agents.map((a) => a.name)).toContain('slow');
    for (const id of received) await client.setStatus({ token, id, state: 'completed' });
    const answered = await Promise.all(sends);
    expect(answered.map((a) => a.task.status.state)).toEqual(Array(30).fill('completed'));
  });
});
