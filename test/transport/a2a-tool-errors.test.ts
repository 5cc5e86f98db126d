import { fc, test } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect } from 'vitest';
import { type Broker, createBroker } from '../../src/actors/broker/broker.js';
import { A2A_TOOL_ACTIONS, A2A_TOOL_OUTCOMES } from '../../src/protocol/a2a-tool.js';
import { type A2ATool, createA2ATool } from '../../src/transport/a2a-tool.js';
import type { SwitchboardClient } from '../../src/transport/client.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { tempDir } from './helpers.js';

// Whatever a model sends, the tool answers with a result: a failure is one
// sentence saying what to do next, and no result ever carries a token.
let broker: Broker;
let client: SwitchboardClient;
let tool: A2ATool;
let tokens: string[] = [];
const taskIds: string[] = [];
const tmp = tempDir();

beforeAll(async () => {
  broker = createBroker({ path: tmp.db });
  ({ client } = await connectInProcess(broker));
  const lead = await client.register({ name: 'lead', contextId: 'home' });
  const worker = await client.register({ name: 'worker', contextId: 'home' });
  const dupA = await client.register({ name: 'dup', contextId: 'a' });
  const dupB = await client.register({ name: 'dup', contextId: 'b' });
  tokens = [lead.token, worker.token, dupA.token, dupB.token];
  for (const text of ['one', 'two']) {
    const { task } = await client.send({
      token: worker.token,
      to: 'lead',
      message: { parts: [{ kind: 'text', text }] },
    });
    taskIds.push(task.id);
  }
  const { task } = await client.send({
    token: lead.token,
    to: 'worker',
    message: { parts: [{ kind: 'text', text: 'x' }] },
  });
  taskIds.push(task.id);
  // maxWaitSeconds 0: a wait takes what is buffered and never blocks the run.
  tool = createA2ATool({ client, token: lead.token, maxWaitSeconds: 0 });
});

afterAll(async () => {
  // The inputs reached the broker, not only the schema.
  expect([...codes]).toEqual(expect.arrayContaining(['ok', 'INVALID_INPUT', 'A2A_UNKNOWN_AGENT']));
  await client?.close();
  await broker?.close();
  tmp.cleanup();
});

const field = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined, freq: 2 });
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.oneof(arb, fc.constant(null));

const input = fc.record(
  {
    action: fc.oneof(fc.constantFrom(...A2A_TOOL_ACTIONS), fc.string()),
    to: field(nullable(fc.oneof(fc.constantFrom('worker', 'dup', 'nobody', 'lead', ''), fc.string()))),
    taskId: field(
      nullable(
        fc.oneof(
          fc.integer({ min: 0, max: 2 }).map((i) => taskIds[i] as string),
          fc.string(),
        ),
      ),
    ),
    text: field(nullable(fc.string())),
    data: field(nullable(fc.oneof(fc.dictionary(fc.string(), fc.jsonValue()), fc.string(), fc.integer()))),
    outcome: field(nullable(fc.oneof(fc.constantFrom(...A2A_TOOL_OUTCOMES), fc.string()))),
    artifact: field(
      nullable(
        fc.record({ name: field(nullable(fc.string())), text: field(fc.string()), data: field(fc.jsonValue()) }),
      ),
    ),
    timeoutSeconds: field(nullable(fc.oneof(fc.constant(0), fc.double(), fc.string()))),
    historyLength: field(nullable(fc.oneof(fc.integer({ min: -2, max: 300 }), fc.double()))),
  },
  { requiredKeys: ['action'] },
);

const codes = new Set<string>();

/** Inputs a model plausibly sends: a known action, a real or unknown target, a real task, some text. */
const plausible = fc.record(
  {
    action: fc.constantFrom(...A2A_TOOL_ACTIONS),
    to: fc.constantFrom('worker', 'dup', 'nobody'),
    taskId: fc.integer({ min: 0, max: 2 }).map((i) => taskIds[i] as string),
    text: fc.string({ maxLength: 40 }),
    outcome: nullable(fc.constantFrom(...A2A_TOOL_OUTCOMES)),
    artifact: fc.record({ name: fc.constantFrom('a', 'b'), text: fc.string({ maxLength: 40 }) }),
  },
  { requiredKeys: ['action', 'text'] },
);

const newTask = fc.record({
  action: fc.constant('send'),
  to: fc.constantFrom('worker', 'dup', 'nobody', 'lead'),
  text: fc.string({ maxLength: 40 }),
});

describe('every result of the A2A tool', () => {
  test.prop([fc.oneof({ arbitrary: plausible, weight: 3 }, newTask, input, fc.anything())], { numRuns: 200 })(
    'is a success or a one-sentence failure saying what to do, and never carries a token',
    async (raw) => {
      const result = await tool.execute(raw);
      codes.add(result.ok ? 'ok' : result.errorCode);
      const json = JSON.stringify(result);
      for (const token of tokens) expect(json).not.toContain(token);
      if (result.ok) return;
      expect(result.errorCode).toMatch(/^[A-Z][A-Z0-9_]+$/);
      expect(result.message).toMatch(/^[A-Z].*[.]$/s);
      // One sentence: no sentence end before the last character.
      expect(result.message.slice(0, -1)).not.toMatch(/[.!?]\s+[A-Z]/);
    },
  );
});
