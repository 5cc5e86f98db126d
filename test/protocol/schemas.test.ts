import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  A2A_MAX_FILE_BYTES,
  A2A_MAX_TEXT_CHARS,
  AgentCardSchema,
  DurableEventSchema,
  MessageSchema,
  MessageSendSchema,
  METHODS,
  METHOD_NAMES,
  PartSchema,
  SendParamsSchema,
  BrokerError,
  TaskSchema,
  a2aError,
  base64DecodedLength,
  codePointLength,
  parseParams,
} from '../../src/protocol/index.js';
import {
  A2A_ERROR,
  JSONRPC_INVALID_PARAMS,
  fromJsonRpcError,
  toJsonRpcError,
} from '../../src/transport/jsonrpc-errors.js';

function errorOf(fn: () => unknown): BrokerError {
  try {
    fn();
  } catch (error) {
    if (error instanceof BrokerError) return error;
    throw error;
  }
  throw new Error('expected a BrokerError');
}

// --- generators ------------------------------------------------------------

const textArb = fc.string({ unit: 'binary', maxLength: 200 });
const metadataArb = fc.option(fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })), {
  nil: undefined,
});
const base64Arb = fc.uint8Array({ maxLength: 256 }).map((b) => Buffer.from(b).toString('base64'));

const partArb = fc.oneof(
  fc.record({ kind: fc.constant('text' as const), text: textArb }),
  fc.record(
    {
      kind: fc.constant('file' as const),
      file: fc.oneof(
        fc.record(
          {
            name: fc.string({ maxLength: 20 }),
            mimeType: fc.constantFrom('text/plain', 'image/png'),
            uri: fc.webUrl(),
          },
          { requiredKeys: ['uri'] },
        ),
        fc.record(
          {
            name: fc.string({ maxLength: 20 }),
            mimeType: fc.constantFrom('text/plain', 'image/png'),
            bytes: base64Arb,
          },
          { requiredKeys: ['bytes'] },
        ),
      ),
    },
    { requiredKeys: ['kind', 'file'] },
  ),
  fc.record({
    kind: fc.constant('data' as const),
    data: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 3 })),
  }),
);

const idArb = fc.string({ minLength: 1, maxLength: 40 });
const isoArb = fc.integer({ min: 0, max: 4_102_444_800_000 }).map((ms) => new Date(ms).toISOString());

const stampedMessageArb = fc
  .record({
    messageId: idArb,
    role: fc.constantFrom('user' as const, 'agent' as const),
    from: fc.string({ minLength: 1, maxLength: 30 }),
    taskId: idArb,
    contextId: idArb,
    timestamp: isoArb,
    parts: fc.array(partArb, { minLength: 1, maxLength: 4 }),
    metadata: metadataArb,
  })
  .map((m) => ({ kind: 'message' as const, ...m }));

/** Drops keys whose value is undefined, as a JSON round trip does. */
function json<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('parts and messages', () => {
  fcTest.prop([partArb])('every valid part parses and round-trips through JSON', (part) => {
    const wire = json(part);
    expect(PartSchema.parse(wire)).toEqual(wire);
  });

  fcTest.prop([fc.array(partArb, { minLength: 1, maxLength: 5 }), fc.option(idArb, { nil: undefined }), metadataArb])(
    'every valid message as sent parses and round-trips',
    (parts, messageId, metadata) => {
      const wire = json({ messageId, parts, metadata });
      expect(MessageSendSchema.parse(wire)).toEqual(wire);
    },
  );

  fcTest.prop([stampedMessageArb])('every stamped message parses and round-trips', (message) => {
    const wire = json(message);
    expect(MessageSchema.parse(wire)).toEqual(wire);
  });

  it('counts characters as Unicode code points', () => {
    expect(codePointLength('a😀b')).toBe(3);
    expect(codePointLength('\ud800')).toBe(1); // a lone surrogate is one code point
    const astral = '😀'.repeat(A2A_MAX_TEXT_CHARS);
    expect(astral.length).toBe(2 * A2A_MAX_TEXT_CHARS);
    expect(PartSchema.parse({ kind: 'text', text: astral })).toBeTruthy();
  });

  fcTest.prop([fc.integer({ min: 1, max: 500 }), fc.constantFrom('a', 'é', '😀', '中')])(
    'a text part past 16,000 code points is A2A_PAYLOAD_TOO_LARGE, at the bound it passes',
    (over, ch) => {
      const ok = { token: 't', to: 'w', message: { parts: [{ kind: 'text', text: ch.repeat(A2A_MAX_TEXT_CHARS) }] } };
      expect(() => parseParams(SendParamsSchema, ok)).not.toThrow();
      const bad = {
        token: 't',
        to: 'w',
        message: { parts: [{ kind: 'text', text: ch.repeat(A2A_MAX_TEXT_CHARS + over) }] },
      };
      const error = errorOf(() => parseParams(SendParamsSchema, bad));
      expect(error.code).toBe('A2A_PAYLOAD_TOO_LARGE');
      expect(toJsonRpcError(error).code).toBe(A2A_ERROR);
      expect(toJsonRpcError(error).data).toEqual({
        errorCode: 'A2A_PAYLOAD_TOO_LARGE',
        limit: 'A2A_MAX_TEXT_CHARS',
        max: A2A_MAX_TEXT_CHARS,
      });
    },
  );

  it('a file part over 20 MiB decoded is A2A_PAYLOAD_TOO_LARGE; exactly 20 MiB passes', () => {
    const exact = Buffer.alloc(A2A_MAX_FILE_BYTES, 7).toString('base64');
    expect(base64DecodedLength(exact)).toBe(A2A_MAX_FILE_BYTES);
    expect(() => parseParams(PartSchema, { kind: 'file', file: { bytes: exact } })).not.toThrow();
    for (const extra of [1, 2, 3, 1000]) {
      const over = Buffer.alloc(A2A_MAX_FILE_BYTES + extra, 7).toString('base64');
      const error = errorOf(() => parseParams(PartSchema, { kind: 'file', file: { bytes: over } }));
      expect(error.code).toBe('A2A_PAYLOAD_TOO_LARGE');
      expect(error.details).toEqual({ limit: 'A2A_MAX_FILE_BYTES', max: A2A_MAX_FILE_BYTES });
    }
  });

  fcTest.prop([fc.uint8Array({ maxLength: 64 })])('decoded length is computed without decoding', (bytes) => {
    const b64 = Buffer.from(bytes).toString('base64');
    expect(base64DecodedLength(b64)).toBe(bytes.length);
  });

  it.each([
    ['not base64', 'abc'],
    ['bad alphabet', 'ab$d'],
    ['padding inside', 'a=bc'],
    ['url-safe alphabet', 'ab-_'],
    ['whitespace', 'YW Jj'],
  ])('invalid base64 (%s) is invalid params', (_label, bytes) => {
    const error = errorOf(() => parseParams(PartSchema, { kind: 'file', file: { bytes } }));
    expect(error.code).toBe('INVALID_PARAMS');
    expect(((error.details?.issues as unknown[] | undefined) ?? []).length).toBeGreaterThan(0);
  });

  it('a file carries exactly one of uri and bytes', () => {
    for (const file of [{}, { uri: 'file:///a', bytes: 'YWJj' }, { name: 'x' }]) {
      expect(errorOf(() => parseParams(PartSchema, { kind: 'file', file })).code).toBe('INVALID_PARAMS');
    }
  });

  it('a data part holds an object, not an array or a scalar', () => {
    for (const data of [[1], 'x', 3, null]) {
      expect(errorOf(() => parseParams(PartSchema, { kind: 'data', data })).code).toBe('INVALID_PARAMS');
    }
  });

  it('a message needs at least one part; unknown part kinds are refused', () => {
    expect(errorOf(() => parseParams(MessageSendSchema, { parts: [] })).code).toBe('INVALID_PARAMS');
    expect(errorOf(() => parseParams(MessageSendSchema, { parts: [{ kind: 'audio' }] })).code).toBe('INVALID_PARAMS');
  });

  it('a malformed request that also crosses a bound is invalid params, listing both problems', () => {
    const error = errorOf(() =>
      parseParams(SendParamsSchema, {
        to: 'w',
        message: { parts: [{ kind: 'text', text: 'a'.repeat(A2A_MAX_TEXT_CHARS + 1) }] },
      }),
    );
    expect(error.code).toBe('INVALID_PARAMS');
    expect(((error.details?.issues ?? []) as { path: unknown[] }[]).map((i) => i.path[0])).toEqual(
      expect.arrayContaining(['token', 'message']),
    );
  });
});

describe('params', () => {
  it('message.send takes either to or taskId, never both and never neither', () => {
    const message = { parts: [{ kind: 'text', text: 'hi' }] };
    expect(() => parseParams(SendParamsSchema, { token: 't', to: 'w', message })).not.toThrow();
    expect(() => parseParams(SendParamsSchema, { token: 't', taskId: 'x', message })).not.toThrow();
    expect(errorOf(() => parseParams(SendParamsSchema, { token: 't', to: 'w', taskId: 'x', message })).code).toBe(
      'INVALID_PARAMS',
    );
    expect(errorOf(() => parseParams(SendParamsSchema, { token: 't', message })).code).toBe('INVALID_PARAMS');
  });

  it('a missing token is invalid params for every method that takes one', () => {
    for (const name of METHOD_NAMES) {
      // The operator's prune takes no token: whoever reaches the broker's socket (its owner only) may prune.
      if (name === 'app.handshake' || name === 'a2a.agents.register' || name === 'broker.tasks.prune') continue;
      const error = errorOf(() => parseParams(METHODS[name].params, {}));
      expect(error.code, name).toBe('INVALID_PARAMS');
      const paths = ((error.details?.issues ?? []) as { path: unknown[] }[]).map((i) => i.path.join('.'));
      expect(paths, name).toContain('token');
    }
  });

  it('unknown keys are ignored', () => {
    const parsed = parseParams(METHODS['a2a.tasks.get'].params, { token: 't', id: 'x', extra: 1 });
    expect(parsed).toEqual({ token: 't', id: 'x' });
  });

  it('the method table has exactly the methods of docs/protocol.md', () => {
    expect([...METHOD_NAMES].sort()).toEqual(
      [
        'app.handshake',
        'a2a.agents.register',
        'a2a.agents.deregister',
        'a2a.agents.list',
        'a2a.message.send',
        'a2a.tasks.get',
        'a2a.tasks.list',
        'a2a.tasks.status',
        'a2a.tasks.artifact',
        'a2a.tasks.cancel',
        'a2a.tasks.resubscribe',
        'a2a.tasks.pushNotificationConfig.set',
        'a2a.tasks.pushNotificationConfig.get',
        'a2a.events.since',
        'broker.tasks.prune',
      ].sort(),
    );
  });

  it('every params and result schema exports as JSON Schema', () => {
    for (const name of METHOD_NAMES) {
      expect(z.toJSONSchema(METHODS[name].params, { io: 'input', unrepresentable: 'any' }), name).toHaveProperty(
        'type',
        'object',
      );
      expect(z.toJSONSchema(METHODS[name].result, { io: 'output', unrepresentable: 'any' }), name).toHaveProperty(
        'type',
        'object',
      );
    }
  });
});

describe('tasks, cards, events', () => {
  fcTest.prop([
    fc.record({
      id: idArb,
      contextId: idArb,
      agentName: fc.string({ minLength: 1, maxLength: 20 }),
      agentContextId: idArb,
      requesterName: fc.string({ minLength: 1, maxLength: 20 }),
      state: fc.constantFrom(
        'submitted',
        'working',
        'input-required',
        'auth-required',
        'completed',
        'canceled',
        'failed',
        'rejected',
      ),
      history: fc.array(stampedMessageArb, { maxLength: 3 }),
      createdAt: isoArb,
    }),
  ])('a task round-trips', (t) => {
    const task = json({
      kind: 'task',
      id: t.id,
      contextId: t.contextId,
      agentName: t.agentName,
      agentContextId: t.agentContextId,
      requesterName: t.requesterName,
      status: { state: t.state, timestamp: t.createdAt },
      history: t.history,
      artifacts: [{ artifactId: 'a1', parts: [{ kind: 'text', text: 'x' }] }],
      createdAt: t.createdAt,
      updatedAt: t.createdAt,
    });
    expect(TaskSchema.parse(task)).toEqual(task);
    const event = {
      seq: 1,
      method: 'a2a.task.event',
      params: {
        recipient: 'a',
        recipientName: 'n',
        contextId: task.contextId,
        seq: 1,
        event: { kind: 'status-update', taskId: task.id, contextId: task.contextId, status: task.status, final: false },
      },
    };
    expect(DurableEventSchema.parse(event)).toEqual(event);
  });

  it('an agent card has a kind of subagent or parent', () => {
    const card = { agentId: 'a', name: 'n', contextId: 'c', kind: 'parent', description: '', skills: [] };
    expect(AgentCardSchema.parse(card)).toEqual(card);
    expect(AgentCardSchema.safeParse({ ...card, kind: 'robot' }).success).toBe(false);
  });
});

describe('errors', () => {
  it('an A2A error is code 1400 with data.errorCode, and survives the wire', () => {
    const error = a2aError('A2A_INVALID_TRANSITION', 'no', { from: 'working', to: 'rejected' });
    const wire = toJsonRpcError(error);
    expect(wire).toEqual({
      code: 1400,
      message: 'no',
      data: { from: 'working', to: 'rejected', errorCode: 'A2A_INVALID_TRANSITION' },
    });
    const back = fromJsonRpcError(json(wire));
    expect(back).toBeInstanceOf(BrokerError);
    expect(back.code).toBe('A2A_INVALID_TRANSITION');
    expect(back.details).toEqual({ from: 'working', to: 'rejected' });
    expect(toJsonRpcError(back)).toEqual(wire);
  });

  it('INVALID_PARAMS is -32602 with data.issues, and survives the wire', () => {
    const error = errorOf(() => parseParams(MessageSendSchema, { parts: [] }));
    const wire = toJsonRpcError(error);
    expect(wire).toMatchObject({ code: JSONRPC_INVALID_PARAMS, data: { issues: expect.any(Array) } });
    const back = fromJsonRpcError(json(wire));
    expect(back).toMatchObject({ code: 'INVALID_PARAMS', details: error.details });
  });

  it('anything that is not a BrokerError becomes -32603 without its message', () => {
    expect(toJsonRpcError(new Error('secret path /etc/x'))).toEqual({ code: -32603, message: 'Internal error' });
    expect(toJsonRpcError('boom')).toEqual({ code: -32603, message: 'Internal error' });
  });
});
