import { afterEach, describe, expect, it } from 'vitest';
import type { Broker } from '../../src/actors/broker/broker.js';
import { BrokerError } from '../../src/protocol/broker-error.js';
import { MAX_LINE_BYTES } from '../../src/protocol/bounds.js';
import type { BrokerApi } from '../../src/actors/broker/api.js';
import { createLogger } from '../../src/log/logger.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { TransportError } from '../../src/transport/transport-error.js';
import { openTempBroker, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function openBroker(): Broker {
  return openTempBroker(cleanups);
}

describe('connectInProcess: a client without JSON lines', () => {
  it('carries copies: what a caller changes after a call reaches neither the broker nor another party', async () => {
    const broker = openBroker();
    const { client } = await connectInProcess(broker);
    cleanups.push(() => client.close());
    const worker = await client.register({ name: 'w', contextId: 'c', description: 'the worker' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const data = { step: 1, items: ['a'] };
    const message = { parts: [{ kind: 'data' as const, data }] };
    const { task } = await client.send({ token: requester.token, to: 'w', message });
    // Changed once the call is answered: the log, the worker's event and the task keep what was sent.
    data.step = 2;
    data.items.push('b');
    message.parts.length = 0;
    const answered = task.history[0]?.parts[0];
    expect(answered).toEqual({ kind: 'data', data: { step: 1, items: ['a'] } });
    (answered as unknown as { data: { step: number } }).data.step = 3;
    const [event] = await client.wait({ token: worker.token, taskId: task.id, timeoutSeconds: 5 });
    expect(event?.method === 'a2a.task.event' && event.params.event.kind === 'status-update').toBe(true);
    const carried =
      event?.method === 'a2a.task.event' && event.params.event.kind === 'status-update'
        ? event.params.event.status.message
        : undefined;
    expect(carried?.parts).toEqual([{ kind: 'data', data: { step: 1, items: ['a'] } }]);
    const { task: read } = await client.getTask({ token: worker.token, id: task.id });
    expect(read.history[0]?.parts).toEqual([{ kind: 'data', data: { step: 1, items: ['a'] } }]);
    // An answer built from the broker's memory (the registry's cards) is a copy too.
    const listed = await client.listAgents({ token: requester.token });
    const card = listed.agents.find((a) => a.name === 'w');
    expect(card?.description).toBe('the worker');
    (card as { description: string }).description = 'changed by a caller';
    const again = await client.listAgents({ token: requester.token });
    expect(again.agents.find((a) => a.name === 'w')?.description).toBe('the worker');
  });

  it('refuses a value JSON cannot carry, as the wire does, and changes nothing', async () => {
    const broker = openBroker();
    const { client } = await connectInProcess(broker);
    cleanups.push(() => client.close());
    await client.register({ name: 'w', contextId: 'c' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    await expect(
      client.send({ token: requester.token, to: 'w', message: { parts: [{ kind: 'data', data: cyclic }] } }),
    ).rejects.toThrow(TypeError);
    await expect(
      client.send({ token: requester.token, to: 'w', message: { parts: [{ kind: 'data', data: { n: 1n } }] } }),
    ).rejects.toThrow(TypeError);
    expect((await client.listTasks({ token: requester.token })).tasks).toEqual([]);
    // A refusal of the broker is its BrokerError, as over stdio.
    const refused = await client.getTask({ token: requester.token, id: 'no-such-task' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(BrokerError);
    expect((refused as BrokerError).code).toBe('A2A_UNKNOWN_TASK');
  });

  it('close() answers the calls already made, refuses later ones, and ends the session', async () => {
    const broker = openBroker();
    const { client, session } = await connectInProcess(broker);
    await client.register({ name: 'w', contextId: 'c' });
    const requester = await client.register({ name: 'r', contextId: 'c' });
    const sends = Array.from({ length: 5 }, (_, i) =>
      client.send({ token: requester.token, to: 'w', message: text(`m${i}`) }),
    );
    const closing = client.close();
    const answered = await Promise.allSettled(sends);
    await closing;
    await session.closed;
    // Made before close: each answered.
    expect(answered.map((o) => o.status)).toEqual(Array(5).fill('fulfilled'));
    const late = await client.listAgents({ token: requester.token }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(TransportError);
    expect((late as TransportError).code).toBe('CONNECTION_CLOSED');
    // The broker lives on, with what was committed, and so do the agents (their tokens still work).
    expect(broker.closed).toBe(false);
    const other = await connectInProcess(broker);
    cleanups.push(() => other.client.close());
    const { tasks } = await other.client.listTasks({ token: requester.token });
    expect(tasks.length).toBe(5);
  });

  it('answers a defect inside the broker as INTERNAL_ERROR, logged, and an answer longer than a line with the wire refusal', async () => {
    const broker = openBroker();
    // The real broker, with two faults injected at its entry: a defect on one method, an oversized answer on another.
    const faulty: BrokerApi = Object.create(broker, {
      dispatch: {
        value: (method: string, params: unknown) => {
          if (method === 'a2a.agents.list') return Promise.reject(new TypeError('a defect'));
          if (method === 'a2a.events.since') return Promise.resolve({ events: [], pad: 'x'.repeat(MAX_LINE_BYTES) });
          return broker.dispatch(method, params);
        },
      },
    });
    const lines: string[] = [];
    const logger = createLogger({ level: 'error', destination: { write: (line: string) => lines.push(line) } });
    const { client } = await connectInProcess(faulty, { logger });
    cleanups.push(() => client.close());
    const agent = await client.register({ name: 'w', contextId: 'c' });
    const defect = await client.listAgents({ token: agent.token }).catch((e: unknown) => e);
    expect(defect).toBeInstanceOf(BrokerError);
    expect((defect as BrokerError).code).toBe('INTERNAL_ERROR');
    expect((defect as BrokerError).message).toBe('Internal error');
    expect(lines.some((line) => line.includes('a defect') && line.includes('a2a.agents.list'))).toBe(true);
    const large = await client.eventsSince({ token: agent.token, after: 0 }).catch((e: unknown) => e);
    expect(large).toBeInstanceOf(BrokerError);
    expect((large as BrokerError).message).toMatch(/bytes/);
    expect((large as BrokerError).message).toMatch(/fewer events/);
    // The channel is still up: the next call is answered.
    expect(await client.getTask({ token: agent.token, id: 'none' }).catch((e: BrokerError) => e.code)).toBe(
      'A2A_UNKNOWN_TASK',
    );
  });
});
