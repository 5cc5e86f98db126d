/**
 * A live event carries the JSON text of its params exactly as the broker
 * wrote it to the durable log, so a connection relays that text instead of
 * serializing the params again; the event object is otherwise unchanged.
 */
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { LOGGED_PARAMS_TEXT, paramsText } from '../../src/persistence/a2a/store.js';
import { type Harness, harness, register, settle, text } from './helpers.js';

let h: Harness;
afterEach(async () => {
  await h.close();
});

describe('logged params text', () => {
  it('is the params column of the event row, hidden from JSON and from equality', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const { task } = await h.broker.send({ token: req.token, to: 'wrk', message: text('héllo "quoted"\u2028') });
    await h.broker.setStatus({ token: wrk.token, id: task.id, state: 'completed', message: text('done') });
    await settle();
    const db = new Database(h.path, { readonly: true });
    const rows = db.prepare('SELECT party_name, seq, params FROM a2a_events ORDER BY party_name, seq').all() as {
      party_name: string;
      seq: number;
      params: string;
    }[];
    // Since schema 16 a compact event names its recipient by its registration's integer key.
    const agentKeys = new Map(
      (db.prepare('SELECT agent, agent_id FROM a2a_agents').all() as { agent: number; agent_id: string }[]).map((r) => [
        r.agent_id,
        r.agent,
      ]),
    );
    const positions = new Map(
      (
        db.prepare('SELECT message_id, position FROM a2a_messages').all() as { message_id: string; position: number }[]
      ).map((r) => [r.message_id, r.position]),
    );
    db.close();
    const live = [...wrk.received, ...req.received];
    expect(live).toHaveLength(2);
    for (const event of live) {
      const party = wrk.received.includes(event) ? 'wrk' : 'req';
      const row = rows.find((r) => r.seq === event.seq && r.party_name === party);
      expect(row).toBeDefined();
      // The row holds the status's message as a reference to its message row, and not what its columns hold.
      const message =
        event.method === 'a2a.task.event' && event.params.event.kind === 'status-update'
          ? event.params.event.status.message
          : undefined;
      expect(message).toBeDefined();
      const whole = JSON.stringify(message);
      // A status-update of its task's context: the array of its values, the message by its position.
      if (event.method === 'a2a.task.event' && event.params.event.kind === 'status-update') {
        const { status, final } = event.params.event;
        // The recipient by its key, the task's own contextId as 0, the timestamp in milliseconds.
        expect(agentKeys.get(event.params.recipient)).toBeGreaterThan(0);
        expect(JSON.parse(row?.params ?? '')).toEqual([
          agentKeys.get(event.params.recipient),
          0,
          status.state,
          Date.parse(status.timestamp),
          final ? 1 : 0,
          positions.get(message?.messageId ?? ''),
        ]);
        expect(positions.get(message?.messageId ?? '')).toBeGreaterThan(0);
      }
      expect(row?.params).not.toContain(whole);
      expect(row?.params).not.toContain('"recipientName"');
      expect(row?.params).not.toContain('"seq"');
      expect(row?.params).not.toContain(task.id);
      expect(row?.params.length).toBeLessThan(paramsText(event).length - whole.length / 2);
      expect(Object.keys(event)).toEqual(['seq', 'method', 'params']);
      expect(JSON.stringify(event)).toBe(
        JSON.stringify({ seq: event.seq, method: event.method, params: event.params }),
      );
      expect(Object.getOwnPropertyDescriptor(event, LOGGED_PARAMS_TEXT)?.enumerable).toBe(false);
    }
    // An event read back from the log has no attached text: it is serialized.
    const { events } = await h.broker.eventsSince({ token: req.token, after: 0 });
    expect(paramsText(events[0] as (typeof events)[0])).toBe(JSON.stringify(events[0]?.params));
    // Rebuilt on read: the wire is the same as the live event's, byte for byte.
    expect(JSON.stringify(events[0]?.params)).toBe(paramsText(req.received[0] as (typeof events)[0]));
    const { events: toWorker } = await h.broker.eventsSince({ token: wrk.token, after: 0 });
    expect(JSON.stringify(toWorker[0]?.params)).toBe(paramsText(wrk.received[0] as (typeof events)[0]));
  });
});

describe('message rows', () => {
  it('keep a body without what their columns hold, and read back byte for byte as sent', async () => {
    h = harness();
    const req = await register(h.broker, 'req', 'ctx-a');
    const wrk = await register(h.broker, 'wrk', 'ctx-b');
    const sent = await h.broker.send({
      token: req.token,
      to: 'wrk',
      message: { parts: [{ kind: 'text', text: 'with metadata' }], metadata: { switchboard: { parentTaskId: 'p' } } },
    });
    const answered = await h.broker.setStatus({
      token: wrk.token,
      id: sent.task.id,
      state: 'completed',
      message: text('done'),
    });
    const read = (await h.broker.getTask({ token: req.token, id: sent.task.id })).task;
    expect(JSON.stringify(read.history[0])).toBe(JSON.stringify(sent.task.history[0]));
    expect(JSON.stringify(read.history)).toBe(JSON.stringify(answered.task.history));
    expect(JSON.stringify(read.status)).toBe(JSON.stringify(answered.task.status));
    await settle();
    const db = new Database(h.path, { readonly: true });
    const bodies = db.prepare('SELECT body, parent_task_id FROM a2a_messages ORDER BY position').all() as {
      body: string;
      parent_task_id: string | null;
    }[];
    db.close();
    expect(bodies).toHaveLength(2);
    // The parent task its metadata names is a column of its own (what a prune checks), NULL when none.
    expect(bodies.map((b) => b.parent_task_id)).toEqual(['p', null]);
    for (const { body } of bodies) {
      expect(body).not.toContain('"contextId"');
      expect(body).not.toContain(sent.task.id);
    }
    // Nor the task's contextId (rebuilt from the task row): the timestamp comes first.
    expect(Object.keys(JSON.parse(bodies[0]?.body ?? '{}'))).toEqual(['timestamp', 'parts', 'metadata']);
    // A message of its timestamp and one text part only: `[milliseconds, text]`.
    expect(JSON.parse(bodies[1]?.body ?? '')).toEqual([Date.parse(answered.task.status.timestamp), 'done']);
  });
});
