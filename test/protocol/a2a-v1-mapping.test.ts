import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { AgentCardSchema } from '../../src/protocol/agent.js';
import {
  FIELD_TABLE,
  TASK_STATE_V03,
  TASK_STATE_V1,
  V1AgentCardSchema,
  V1ArtifactSchema,
  V1MessageSchema,
  V1PartSchema,
  V1StreamResponseSchema,
  V1TaskSchema,
  V1_LOCAL_METHODS,
  V1_METHODS,
  V1_REFUSED_METHODS,
  V1_TASK_STATES,
  agentCardToV03,
  agentCardToV1,
  artifactToV03,
  artifactToV1,
  listTasksPage,
  messageSendFromV1,
  messageToV03,
  messageToV1,
  partToV03,
  partToV1,
  taskEventToV03,
  taskEventToV1,
  taskToV03,
  taskToV1,
  v1Call,
} from '../../src/protocol/a2a-v1/index.js';
import {
  TaskAgentUpdateEventSchema,
  TaskArtifactUpdateEventSchema,
  TaskStatusUpdateEventSchema,
} from '../../src/protocol/events.js';
import { METHOD_NAMES } from '../../src/protocol/methods.js';
import { DataPartSchema, FilePartSchema, PartSchema, TextPartSchema } from '../../src/protocol/parts.js';
import {
  ArtifactSchema,
  MessageSchema,
  MessageSendSchema,
  TASK_STATES,
  type Task,
  TaskSchema,
  TaskStatusSchema,
} from '../../src/protocol/task.js';
import { PushConfigSchema } from '../../src/protocol/events.js';
import {
  agentCardArb,
  artifactArb,
  messageArb,
  partArb,
  taskArb,
  taskEventArb,
  v1PartArb,
} from './a2a-v1-arbitraries.js';

/** Drops undefined members, as a JSON line does. */
function json<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

describe('v0.3 -> v1.0 -> v0.3 gives back every valid v0.3 value', () => {
  fcTest.prop([partArb], { numRuns: 300 })('parts', (part) => {
    const valid = PartSchema.parse(json(part));
    const v1 = partToV1(valid);
    expect(V1PartSchema.parse(json(v1))).toEqual(json(v1));
    expect(json(partToV03(V1PartSchema.parse(json(v1))))).toEqual(json(valid));
  });

  fcTest.prop([messageArb])('stored messages', (message) => {
    const valid = MessageSchema.parse(json(message));
    const v1 = V1MessageSchema.parse(json(messageToV1(valid)));
    expect(json(messageToV03(v1))).toEqual(json(valid));
  });

  fcTest.prop([artifactArb])('artifacts', (artifact) => {
    const valid = ArtifactSchema.parse(json(artifact));
    const v1 = V1ArtifactSchema.parse(json(artifactToV1(valid)));
    expect(json(artifactToV03(v1))).toEqual(json(valid));
  });

  fcTest.prop([taskArb], { numRuns: 150 })('tasks (with their statuses, histories and artifacts)', (task) => {
    const valid = TaskSchema.parse(json(task));
    const v1 = V1TaskSchema.parse(json(taskToV1(valid)));
    expect(json(taskToV03(v1))).toEqual(json(valid));
  });

  fcTest.prop([taskEventArb])('task events, as stream responses', (event) => {
    const schema =
      event.kind === 'status-update'
        ? TaskStatusUpdateEventSchema
        : event.kind === 'artifact-update'
          ? TaskArtifactUpdateEventSchema
          : TaskAgentUpdateEventSchema;
    const valid = (schema as z.ZodType).parse(json(event)) as Parameters<typeof taskEventToV1>[0];
    const v1 = V1StreamResponseSchema.parse(json(taskEventToV1(valid)));
    expect(json(taskEventToV03(v1))).toEqual(json(valid));
  });

  fcTest.prop([agentCardArb])('agent cards', (card) => {
    const valid = AgentCardSchema.parse(json(card));
    const v1 = V1AgentCardSchema.parse(json(agentCardToV1(valid, '1.2.3')));
    expect(json(agentCardToV03(v1))).toEqual(json(valid));
  });
});

describe('v1.0 -> v0.3 -> v1.0 gives back every v1.0 value', () => {
  fcTest.prop([taskArb], { numRuns: 100 })('in the image of the mapping (tasks hold every other shape)', (task) => {
    const v1 = json(taskToV1(TaskSchema.parse(json(task))));
    expect(json(taskToV1(taskToV03(V1TaskSchema.parse(v1))))).toEqual(v1);
  });

  fcTest.prop([v1PartArb], { numRuns: 300 })(
    'parts from any client (media types on text, data that is no object)',
    (part) => {
      const v1 = V1PartSchema.parse(json(part));
      const v03 = PartSchema.parse(json(partToV03(v1)));
      expect(json(partToV1(v03))).toEqual(json(v1));
    },
  );

  fcTest.prop([
    messageArb,
    fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
    fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
  ])('messages with extensions and referenced tasks', (message, extensions, referenceTaskIds) => {
    const v1 = json({
      ...messageToV1(MessageSchema.parse(json(message))),
      ...(extensions.length > 0 ? { extensions } : {}),
      ...(referenceTaskIds.length > 0 ? { referenceTaskIds } : {}),
    });
    const v03 = MessageSchema.parse(json(messageToV03(V1MessageSchema.parse(v1))));
    expect(json(messageToV1(v03))).toEqual(v1);
  });

  fcTest.prop([artifactArb, fc.array(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: 2 })])(
    'artifacts with extensions',
    (artifact, extensions) => {
      const v1 = json({ ...artifactToV1(ArtifactSchema.parse(json(artifact))), extensions });
      const v03 = ArtifactSchema.parse(json(artifactToV03(V1ArtifactSchema.parse(v1))));
      expect(json(artifactToV1(v03))).toEqual(v1);
    },
  );
});

describe('one table', () => {
  it('names every state once each way, SCREAMING_SNAKE_CASE in v1.0', () => {
    expect(Object.keys(TASK_STATE_V1).sort()).toEqual([...TASK_STATES].sort());
    expect(Object.values(TASK_STATE_V1).sort()).toEqual([...V1_TASK_STATES].sort());
    for (const state of TASK_STATES) expect(TASK_STATE_V03[TASK_STATE_V1[state]]).toBe(state);
  });

  it('lists every field of every v0.3 shape it maps', () => {
    const shapes: Record<string, z.ZodObject> = {
      TextPart: TextPartSchema,
      FilePart: FilePartSchema,
      DataPart: DataPartSchema,
      Message: MessageSchema,
      MessageSend: MessageSendSchema,
      TaskStatus: TaskStatusSchema,
      Artifact: ArtifactSchema,
      Task: TaskSchema,
      TaskStatusUpdateEvent: TaskStatusUpdateEventSchema,
      TaskArtifactUpdateEvent: TaskArtifactUpdateEventSchema,
      TaskAgentUpdateEvent: TaskAgentUpdateEventSchema,
      AgentCard: AgentCardSchema,
      PushConfig: PushConfigSchema,
    };
    for (const [shape, schema] of Object.entries(shapes)) {
      const listed = FIELD_TABLE.filter((row) => row.shape === shape && row.v03 !== '-').map(
        (row) => row.v03.split(/[.:]/)[0],
      );
      expect([...new Set(listed)].sort(), shape).toEqual(Object.keys(schema.shape).sort());
    }
    expect(new Set(FIELD_TABLE.map((row) => row.shape))).toEqual(new Set(Object.keys(shapes)));
  });

  it('serves every method of version 10 on version 11 (by its v1.0 name where v1.0 has one)', () => {
    const served = new Set([...Object.values(V1_METHODS), ...Object.values(V1_LOCAL_METHODS)].map((row) => row.serves));
    expect([...served].sort()).toEqual(METHOD_NAMES.filter((m) => m !== 'app.handshake').sort());
  });
});

describe('version 11 calls', () => {
  const message = { messageId: 'm1', role: 'ROLE_USER', parts: [{ text: 'hi', mediaType: 'text/markdown' }] };

  it('SendMessage becomes a2a.message.send: token, recipient, task, history length and the message mapped', () => {
    const call = v1Call(
      'SendMessage',
      { capability: 'tok', message: { ...message, taskId: 't1' }, configuration: { historyLength: 2 } },
      '1.0.0',
    );
    expect(call.method).toBe('a2a.message.send');
    expect(json(call.params)).toEqual({
      token: 'tok',
      taskId: 't1',
      historyLength: 2,
      message: {
        messageId: 'm1',
        parts: [{ kind: 'text', text: 'hi', metadata: { 'a2a.v1': { mediaType: 'text/markdown', absent: true } } }],
      },
    });
    expect(MessageSendSchema.parse((call.params as { message: unknown }).message)).toBeDefined();
  });

  it('refuses, calling nothing: version 10 names, Delete and the extended card, unknown methods, bad params', () => {
    const refusal = (method: string, params: unknown = { capability: 'tok', id: 't' }) => {
      try {
        v1Call(method, params, '1');
      } catch (error) {
        return error as { code: string; message: string };
      }
      throw new Error(`${method} was not refused`);
    };
    expect(refusal('a2a.message.send').code).toBe('METHOD_NOT_FOUND');
    expect(refusal('a2a.message.send').message).toContain('call SendMessage');
    expect(refusal('a2a.tasks.get').message).toContain('GetTask');
    for (const method of Object.keys(V1_REFUSED_METHODS)) expect(refusal(method).code).toBe('METHOD_NOT_FOUND');
    expect(refusal('Nope').code).toBe('METHOD_NOT_FOUND');
    expect(refusal('GetTask', { id: 't' }).code).toBe('INVALID_PARAMS');
    expect(
      refusal('SendMessage', { capability: 'x', message: { ...message, parts: [{ text: 'a', url: 'b' }] } }).code,
    ).toBe('INVALID_PARAMS');
    expect(
      refusal('SendMessage', {
        capability: 'x',
        message,
        configuration: { taskPushNotificationConfig: { taskId: '', token: 'p' } },
      }).message,
    ).toContain('CreateTaskPushNotificationConfig');
    expect(
      refusal('CreateTaskPushNotificationConfig', { capability: 'x', taskId: 't', url: 'https://example.test/hook' })
        .message,
    ).toContain('leave out url');
  });

  it('a message to send keeps what v0.3 has no member for', () => {
    const v03 = messageSendFromV1(
      V1MessageSchema.parse({ ...message, extensions: ['urn:x'], referenceTaskIds: ['t0'], parts: [{ data: [1, 2] }] }),
    );
    expect(v03).toEqual({
      messageId: 'm1',
      parts: [{ kind: 'data', data: { value: [1, 2] }, metadata: { 'a2a.v1': { wrapped: true, absent: true } } }],
      metadata: { 'a2a.v1': { extensions: ['urn:x'], referenceTaskIds: ['t0'], absent: true } },
    });
  });
});

describe('ListTasks pages', () => {
  const task = (i: number, state: Task['status']['state'], contextId = 'c'): Task => ({
    kind: 'task',
    id: `t${String(i).padStart(3, '0')}`,
    contextId,
    agentName: 'w',
    agentContextId: 'c',
    requesterName: 'r',
    status: { state, timestamp: new Date(1_000_000 + i * 1000).toISOString() },
    history: [],
    artifacts: [{ artifactId: 'a', parts: [{ kind: 'text', text: 'x' }] }],
    createdAt: new Date(1_000_000 + (i % 7) * 1000).toISOString(),
    updatedAt: new Date(1_000_000).toISOString(),
  });

  fcTest.prop([fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 12 })])(
    'walking the pages gives every matching task once, and only those',
    (count, pageSize) => {
      const tasks = Array.from({ length: count }, (_, i) =>
        task(i, i % 3 === 0 ? 'completed' : 'working', i % 2 ? 'c' : 'd'),
      );
      const seen: string[] = [];
      let pageToken: string | undefined;
      let pages = 0;
      do {
        const page = listTasksPage(tasks, { contextId: 'c', status: 'TASK_STATE_WORKING', pageSize, pageToken });
        expect(page.tasks.length).toBeLessThanOrEqual(pageSize);
        for (const t of page.tasks) {
          expect(t.artifacts).toBeUndefined();
          seen.push(t.id);
        }
        pageToken = page.nextPageToken === '' ? undefined : page.nextPageToken;
        pages++;
      } while (pageToken !== undefined && pages < 100);
      const expected = tasks.filter((t) => t.contextId === 'c' && t.status.state === 'working').map((t) => t.id);
      expect(seen.sort()).toEqual(expected.sort());
    },
  );

  it('refuses a page token it did not make', () => {
    expect(() => listTasksPage([], { pageToken: 'not a token' })).toThrow(/nextPageToken/);
  });
});
