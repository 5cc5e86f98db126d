import { createStore } from '@xstate/store';
import { assign, createActor, setup } from 'xstate';
import { describe, expect, it } from 'vitest';
import { inspectStore } from '../../src/actors/inspection.js';
import { parseInspectValue, takeInspectOption } from '../../src/cli/inspect-option.js';
import { REDACTED, sanitizeForInspection } from '../../src/inspect/sanitize.js';
import { createStatelyInspection } from '../../src/inspect/stately-inspection.js';

const TOKEN = 'tok_3f9a1c-very-secret-capability';

describe('sanitizeForInspection', () => {
  it('redacts token keys at any depth and replaces payload bodies by their sizes', () => {
    const out = sanitizeForInspection({
      token: TOKEN,
      params: { token: TOKEN, pushToken: TOKEN, usage: { inputTokens: 12, outputTokens: 3 } },
      message: {
        parts: [
          { kind: 'text', text: 'hello' },
          { kind: 'file', file: { name: 'a.bin', bytes: 'AAAA' } },
          { kind: 'data', data: { secret: 'x' } },
        ],
      },
      list: [[[{ token: TOKEN }]]],
    });
    expect(out).toEqual({
      token: REDACTED,
      params: { token: REDACTED, pushToken: REDACTED, usage: { inputTokens: 12, outputTokens: 3 } },
      message: {
        parts: [
          { kind: 'text', text: { redacted: true, chars: 5 } },
          { kind: 'file', file: { name: 'a.bin', bytes: { redacted: true, chars: 4 } } },
          { kind: 'data', data: { redacted: true, chars: JSON.stringify({ secret: 'x' }).length } },
        ],
      },
      list: [[[{ token: REDACTED }]]],
    });
    expect(JSON.stringify(out)).not.toContain(TOKEN);
  });

  it('copies Maps, Sets, Buffers, actor refs, class instances and cycles into plain JSON', () => {
    class Outbox {
      secret = TOKEN;
    }
    const cyclic: Record<string, unknown> = { name: 'c' };
    cyclic.self = cyclic;
    const ref = { sessionId: 'x:1', id: 'agent', send: () => undefined, getSnapshot: () => ({ token: TOKEN }) };
    const out = sanitizeForInspection({
      byId: new Map([['a1', { token: { key: 'k', digest: Buffer.alloc(32) }, actor: ref, outbox: new Outbox() }]]),
      names: new Map([['w', new Set(['a1', 'a2'])]]),
      keyed: new Map([[1, 'one']]),
      cyclic,
      at: new Date(0),
      fn: function named() {},
    });
    expect(out).toEqual({
      byId: { a1: { token: REDACTED, actor: { actor: 'x:1', id: 'agent' }, outbox: '[Outbox]' } },
      names: { w: ['a1', 'a2'] },
      keyed: [[1, 'one']],
      cyclic: { name: 'c', self: '[circular]' },
      at: '1970-01-01T00:00:00.000Z',
      fn: '[function named]',
    });
    expect(sanitizeForInspection({ digest: Buffer.alloc(32) })).toEqual({ digest: '[32 bytes]' });
    let deep: Record<string, unknown> = {};
    const root = deep;
    for (let i = 0; i < 40; i++) {
      deep.next = {};
      deep = deep.next as Record<string, unknown>;
    }
    expect(JSON.stringify(sanitizeForInspection(root))).toContain('[depth]');
  });
});

describe('createStatelyInspection', () => {
  it('sends Stately events for machine actors and stores, with no token or payload in any frame', async () => {
    const frames: string[] = [];
    const inspection = createStatelyInspection({ broadcast: (frame) => frames.push(frame) });
    const machine = setup({
      types: {
        context: {} as { token: string; parts: { kind: 'text'; text: string }[] },
        events: {} as { type: 'SEND'; token: string; parts: { kind: 'text'; text: string }[] },
      },
    }).createMachine({
      id: 'leaky',
      context: { token: TOKEN, parts: [] },
      initial: 'idle',
      states: {
        idle: { on: { SEND: { target: 'sent', actions: assign({ parts: ({ event }) => event.parts }) } } },
        sent: {},
      },
    });
    const actor = createActor(machine, { inspect: inspection.inspect }).start();
    actor.send({ type: 'SEND', token: TOKEN, parts: [{ kind: 'text', text: 'payload-body-text' }] });
    const store = createStore({
      context: { sessions: new Map<string, { token: string }>() },
      on: {
        opened: (context, event: { id: string; token: string }) => ({
          sessions: new Map(context.sessions).set(event.id, { token: event.token }),
        }),
      },
    });
    inspectStore(store, 'broker', inspection.inspect);
    store.trigger.opened({ id: 's1', token: TOKEN });
    // The library converts machine events on a timer.
    await new Promise((resolve) => setTimeout(resolve, 50));
    inspection.stop();
    actor.send({ type: 'SEND', token: TOKEN, parts: [] });
    await new Promise((resolve) => setTimeout(resolve, 20));

    const raw = frames.join('\n');
    expect(raw).not.toContain(TOKEN);
    expect(raw).not.toContain('payload-body-text');
    const events = frames.map(
      (f) =>
        JSON.parse(f) as {
          type: string;
          name?: string;
          sessionId: string;
          snapshot?: { value?: unknown; context?: unknown };
          event?: { type: string };
        },
    );
    expect(events.find((e) => e.type === '@xstate.actor' && e.name === 'leaky')).toBeDefined();
    const sent = events.find((e) => e.type === '@xstate.snapshot' && e.snapshot?.value === 'sent');
    expect(sent?.snapshot?.context).toEqual({
      token: REDACTED,
      parts: [{ kind: 'text', text: { redacted: true, chars: 17 } }],
    });
    const broker = events.find((e) => e.type === '@xstate.actor' && e.name === 'broker');
    expect(broker).toBeDefined();
    const brokerSnapshot = events
      .filter((e) => e.sessionId === broker?.sessionId && e.type === '@xstate.snapshot')
      .at(-1);
    expect(brokerSnapshot?.snapshot?.context).toEqual({ sessions: { s1: { token: REDACTED } } });
    expect(inspection.sent).toBe(frames.length);
    // Nothing after stop().
    expect(events.filter((e) => e.type === '@xstate.event' && e.event?.type === 'SEND')).toHaveLength(1);
  });
});

describe('--inspect parsing', () => {
  it('takes --inspect, --inspect=PORT and --inspect=HOST:PORT out of argv', () => {
    expect(takeInspectOption(['--db', 'x', '--inspect'])).toEqual({
      argv: ['--db', 'x'],
      inspect: { host: '127.0.0.1', port: 8080 },
    });
    expect(takeInspectOption(['--inspect=9000']).inspect).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(takeInspectOption(['--inspect=0.0.0.0:9001']).inspect).toEqual({ host: '0.0.0.0', port: 9001 });
    expect(takeInspectOption(['--inspect=[::1]:9002']).inspect).toEqual({ host: '::1', port: 9002 });
    expect(takeInspectOption(['--log-level', 'info']).inspect).toBeNull();
    for (const bad of ['', 'abc', '70000', ':80', 'host:', '-1', '8080x']) {
      expect(() => parseInspectValue(bad), bad).toThrow(
        expect.objectContaining({ name: 'CliUsageError', code: 'CLI_USAGE' }),
      );
    }
  });
});

describe('sanitizeForInspection twice', () => {
  it('changes nothing the second time', () => {
    const once = sanitizeForInspection({ token: TOKEN, parts: [{ kind: 'text', text: 'abc' }], data: [1, 2] });
    expect(sanitizeForInspection(once)).toEqual(once);
  });
});
