import fc from 'fast-check';
import {
  AgentCard as SdkAgentCard,
  Message as SdkMessage,
  Role,
  StreamResponse as SdkStreamResponse,
  Task as SdkTask,
  TaskState,
} from '@a2a-js/sdk';
import { test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  V1AgentCardSchema,
  V1MessageSchema,
  V1StreamResponseSchema,
  V1TaskSchema,
  agentCardToV1,
  messageSendFromV1,
  partToV1,
  taskEventToV1,
  taskToV1,
} from '../../src/protocol/a2a-v1/index.js';
import { AgentCardSchema } from '../../src/protocol/agent.js';
import { TaskStatusUpdateEventSchema, TaskArtifactUpdateEventSchema } from '../../src/protocol/events.js';
import { MessageSendSchema, TaskSchema } from '../../src/protocol/task.js';
import { agentCardArb, taskArb, taskEventArb } from './a2a-v1-arbitraries.js';

/** Members of a oneof: ProtoJSON writes them even at their default. */
const ONEOF_MEMBERS = new Set(['text', 'raw', 'url', 'data']);

/** The ProtoJSON form: members at their default (empty string or list) left out, as the SDK writes them. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined || (v === '' && !ONEOF_MEMBERS.has(k)) || (Array.isArray(v) && v.length === 0)) continue;
    out[k] = k === 'metadata' || k === 'data' || k === 'params' ? v : canonical(v);
  }
  return out;
}

function json<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('the v1.0 shapes of this broker are the SDK’s', () => {
  fcTest.prop([taskArb], { numRuns: 100 })('a task, read and written by the SDK, is the same task', (task) => {
    const ours = json(taskToV1(TaskSchema.parse(json(task))));
    // A data part whose value is JSON null or an empty list (a v0.3 `{value: null}` or `{value: []}`, wrapped): the SDK reads the
    // null Value as no member at all, so it cannot carry it (docs/interop.md says so); every other task must
    // come back the same.
    fc.pre(!/"data":(null|\[\])/.test(JSON.stringify(ours)));
    const sdk = SdkTask.toJSON(SdkTask.fromJSON(ours));
    expect(sdk).toEqual(canonical(ours));
    expect(V1TaskSchema.parse(sdk)).toBeDefined();
  });

  fcTest.prop([taskEventArb])('a task event is an SDK stream response', (event) => {
    if (event.kind === 'status-update') TaskStatusUpdateEventSchema.parse(json(event));
    if (event.kind === 'artifact-update') TaskArtifactUpdateEventSchema.parse(json(event));
    const ours = json(taskEventToV1(event));
    if ('agentUpdate' in ours) return; // this broker's own member: the SDK has none
    // A null or empty-list data Value: the SDK reads it as a part with no member (see the task property above).
    fc.pre(!/"data":(null|\[\])/.test(JSON.stringify(ours)));
    const sdk = SdkStreamResponse.toJSON(SdkStreamResponse.fromJSON(ours));
    expect(sdk).toEqual(canonical(ours));
    expect(V1StreamResponseSchema.parse(sdk)).toBeDefined();
  });

  fcTest.prop([agentCardArb])('an agent card, read and written by the SDK, is the same card', (card) => {
    const ours = json(agentCardToV1(AgentCardSchema.parse(json(card)), '1.0.0'));
    const sdk = SdkAgentCard.toJSON(SdkAgentCard.fromJSON(ours));
    expect(sdk).toEqual(canonical(ours));
  });
});

describe('values typed by the SDK parse with our schemas and map to v0.3', () => {
  it('a message with every kind of part', () => {
    const message: SdkMessage = {
      messageId: 'm-1',
      contextId: '',
      taskId: 't-1',
      role: Role.ROLE_USER,
      parts: [
        { content: { $case: 'text', value: 'hello' }, metadata: undefined, filename: '', mediaType: 'text/plain' },
        { content: { $case: 'raw', value: Buffer.from('hi') }, metadata: { k: 1 }, filename: 'a.txt', mediaType: '' },
        {
          content: { $case: 'url', value: 'https://example.test/f' },
          metadata: undefined,
          filename: '',
          mediaType: 'image/png',
        },
        { content: { $case: 'data', value: { a: [1, 2] } }, metadata: undefined, filename: '', mediaType: '' },
        { content: { $case: 'data', value: 'just a string' }, metadata: undefined, filename: '', mediaType: '' },
      ],
      metadata: undefined,
      extensions: ['urn:example:ext'],
      referenceTaskIds: [],
    };
    const wire = SdkMessage.toJSON(message);
    const v1 = V1MessageSchema.parse(wire);
    const send = MessageSendSchema.parse(messageSendFromV1(v1));
    expect(send.parts.map((p) => p.kind)).toEqual(['text', 'file', 'file', 'data', 'data']);
    expect(send.parts[1]).toEqual({ kind: 'file', file: { name: 'a.txt', bytes: 'aGk=' }, metadata: { k: 1 } });
    expect(send.metadata).toEqual({ 'a2a.v1': { extensions: ['urn:example:ext'], absent: true } });
    // Each part comes back as the SDK wrote it.
    expect(send.parts.map(partToV1)).toEqual(v1.parts);
  });

  it('a task in every state the SDK names (but UNSPECIFIED)', () => {
    for (const state of Object.values(TaskState).filter((s): s is TaskState => typeof s === 'number' && s > 0)) {
      const task: SdkTask = {
        id: 't',
        contextId: 'c',
        status: { state, message: undefined, timestamp: '2026-01-01T00:00:00.000Z' },
        artifacts: [],
        history: [],
        metadata: undefined,
      };
      expect(V1TaskSchema.parse(SdkTask.toJSON(task)).status.state).toMatch(/^TASK_STATE_/);
    }
  });

  it('an agent card as the SDK’s own server would publish it', () => {
    const card: SdkAgentCard = {
      name: 'Recipe Agent',
      description: 'helps with recipes',
      supportedInterfaces: [
        { url: 'http://127.0.0.1:4000/a2a', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
      ],
      provider: undefined,
      version: '1.0.0',
      capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
      securitySchemes: {},
      securityRequirements: [],
      defaultInputModes: ['text/plain'],
      defaultOutputModes: ['text/plain'],
      skills: [
        {
          id: 's',
          name: 'cook',
          description: 'cooks',
          tags: ['food'],
          examples: [],
          inputModes: [],
          outputModes: [],
          securityRequirements: [],
        },
      ],
      signatures: [],
    };
    expect(V1AgentCardSchema.parse(SdkAgentCard.toJSON(card)).skills[0]?.tags).toEqual(['food']);
  });
});
