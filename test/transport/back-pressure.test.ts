import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { BrokerSession } from '../../src/transport/broker-session.js';
import { tempDir, text } from './helpers.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A real broker on a temp file, served over in-memory pipes whose output nobody reads yet. */
function setup(outputHighWaterMark: number) {
  const tmp = tempDir();
  const broker: Broker = createBroker({ path: tmp.db });
  const input = new PassThrough();
  const output = new PassThrough({ highWaterMark: 4096 });
  const session = new BrokerSession({ broker, input, output, outputHighWaterMark });
  cleanups.push(async () => {
    input.end();
    output.resume();
    await session.close();
    await broker.close();
    tmp.cleanup();
  });
  let nextId = 1;
  const answers = new Map<number, (value: unknown) => void>();
  const notifications: { method: string; params: { seq: number; recipient: string } }[] = [];
  let buffered = '';
  let reading = false;
  const read = () => {
    if (reading) return;
    reading = true;
    output.setEncoding('utf8');
    output.on('data', (chunk: string) => {
      buffered += chunk;
      const lines = buffered.split('\n');
      buffered = lines.pop() ?? '';
      for (const line of lines) {
        const message = JSON.parse(line) as { id?: number; result?: unknown; method?: string; params?: never };
        if (message.id !== undefined) answers.get(message.id)?.(message.result);
        else notifications.push({ method: message.method as string, params: message.params as never });
      }
    });
  };
  const call = (method: string, params: unknown) =>
    new Promise<unknown>((resolve) => {
      const id = nextId++;
      answers.set(id, resolve);
      input.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    });
  return { broker, session, output, call, read, notifications };
}

describe('notifications under back-pressure', () => {
  it('never drops, duplicates or reorders events when the reader stalls, and keeps the backlog bounded', async () => {
    const highWaterMark = 8 * 1024;
    const h = setup(highWaterMark);
    h.read();
    const worker = (await h.call('a2a.agents.register', { name: 'w', contextId: 'c' })) as { token: string };
    const requester = (await h.call('a2a.agents.register', { name: 'r', contextId: 'c' })) as {
      token: string;
      agentId: string;
    };
    const sent = (await h.call('a2a.message.send', { token: requester.token, to: 'w', message: text('x') })) as {
      task: { id: string };
    };
    // The reader stops reading; the worker reports progress 3,000 times (each wakes the requester).
    h.output.pause();
    h.output.removeAllListeners('data');
    const total = 3000;
    let maxBacklog = 0;
    for (let round = 0; round < total / 100; round++) {
      const calls = [];
      for (let i = 0; i < 100; i++) {
        calls.push(h.broker.setStatus({ token: worker.token, id: sent.task.id, state: 'working' }));
      }
      await Promise.all(calls);
      maxBacklog = Math.max(maxBacklog, h.session.outputBacklog);
    }
    // While nobody reads, the session holds at most about one high-water mark of output.
    expect(maxBacklog).toBeLessThan(highWaterMark + 2048);
    expect(h.session.relayPauses).toBeGreaterThan(0);

    // The reader comes back: every event arrives once, in seq order, from the relay's catch-up.
    const seen: number[] = [];
    let rest = '';
    h.output.setEncoding('utf8');
    const done = new Promise<void>((resolve) => {
      h.output.on('data', (chunk: string) => {
        rest += chunk;
        const lines = rest.split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          const message = JSON.parse(line) as { method?: string; params?: { seq: number; recipient: string } };
          if (message.method === 'a2a.task.event' && message.params?.recipient === requester.agentId) {
            seen.push(message.params.seq);
          }
        }
        if (seen.length > 0 && seen[seen.length - 1] === total) resolve();
      });
    });
    h.output.resume();
    await done;
    const before = h.notifications.filter((n) => n.params.recipient === requester.agentId).map((n) => n.params.seq);
    const all = [...before, ...seen];
    expect(all).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  });

  it('relays only for agents registered through the session, and stops when they deregister', async () => {
    const h = setup(64 * 1024);
    h.read();
    const worker = (await h.call('a2a.agents.register', { name: 'w', contextId: 'c' })) as {
      token: string;
      agentId: string;
    };
    // An agent registered in-process, not through this session: its events are not relayed here.
    const outsider = await h.broker.register({ name: 'r', contextId: 'c' });
    expect(h.session.relayCount).toBe(1);
    await h.broker.send({ token: outsider.token, to: 'w', message: text('one') });
    await h.broker.send({ token: outsider.token, to: 'w', message: text('two') });
    await h.call('a2a.agents.list', { token: worker.token });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(h.notifications.map((n) => [n.params.recipient, n.params.seq])).toEqual([
      [worker.agentId, 1],
      [worker.agentId, 2],
    ]);
    await h.call('a2a.agents.deregister', { token: worker.token });
    expect(h.session.relayCount).toBe(0);
  });
});
