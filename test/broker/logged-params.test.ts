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
    db.close();
    const live = [...wrk.received, ...req.received];
    expect(live).toHaveLength(2);
    for (const event of live) {
      const row = rows.find((r) => r.seq === event.seq && r.params.includes(`"recipient":"${event.params.recipient}"`));
      expect(row).toBeDefined();
      expect(paramsText(event)).toBe(row?.params);
      expect(Object.keys(event)).toEqual(['seq', 'method', 'params']);
      expect(JSON.stringify(event)).toBe(
        JSON.stringify({ seq: event.seq, method: event.method, params: event.params }),
      );
      expect(Object.getOwnPropertyDescriptor(event, LOGGED_PARAMS_TEXT)?.enumerable).toBe(false);
    }
    // An event read back from the log has no attached text: it is serialized.
    const { events } = await h.broker.eventsSince({ token: req.token, after: 0 });
    expect(paramsText(events[0] as (typeof events)[0])).toBe(JSON.stringify(events[0]?.params));
  });
});
