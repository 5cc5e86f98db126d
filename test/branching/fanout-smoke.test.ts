import { afterEach, describe, expect, it } from 'vitest';
import { complete, NonRetryableError, type WorkHandler } from '../../src/actors/worker/worker.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { type Fixture, deployments, openFixture } from '../coordinator/helpers.js';

const usage = { model: 'm', inputTokens: 10, outputTokens: 5, costUsd: 0.01 };
const handlers: Record<string, WorkHandler> = {
  architect: () => complete({ parts: [{ kind: 'data', data: { tasks: ['a', 'b', 'c'] } }], usage }),
  coding: ({ message }) => {
    const data = message.parts.find((p) => p.kind === 'data');
    return complete({ parts: [{ kind: 'data', data: { done: (data as any)?.data?.value ?? null } }], usage });
  },
  security: () => complete({ parts: [{ kind: 'data', data: { verdict: 'ok' } }], usage }),
  qa: () => complete({ parts: [{ kind: 'data', data: { verdict: 'approved' } }], usage }),
};

const def = parseWorkflowDefinition({
  id: 'fan',
  version: 1,
  start: 'architect',
  stages: {
    architect: { role: 'architect', next: [{ on: 'succeeded', goto: 'coding' }] },
    coding: { role: 'coding', forEach: '/tasks', maxConcurrency: 2, next: [{ on: 'succeeded', goto: 'review' }] },
    review: {
      parallel: { branches: { security: { role: 'security' }, qa: { role: 'qa' } } },
      next: [
        { on: 'succeeded', when: { pointer: '/qa/verdict', equals: 'approved' }, end: 'completed' },
        { on: 'succeeded', end: 'failed', reason: 'not approved' },
      ],
    },
  },
});

describe('fan-out smoke', () => {
  let f: Fixture | undefined;
  afterEach(async () => {
    await f?.close();
  });
  it('maps, joins, routes', async () => {
    f = await openFixture({ definitions: [def], deployments: deployments(handlers), budget: undefined } as never);
    const id = await f.coordinator.createWorkItem({
      workflow: 'fan',
      input: 'build it',
      budget: { maxTokens: 10_000 },
    });
    const done = await f.coordinator.settled(id);
    const item = await f.coordinator.getItem(id);
    console.log(JSON.stringify(item, null, 1));
    const all = await f.coordinator.listItems();
    console.log(
      all
        .map((i) => `${i.id} ${i.state} ${i.workflow.id} ${JSON.stringify(i.budget)} ${i.usage.inputTokens}`)
        .join('\n'),
    );
    expect(done.state).toBe('completed');
  }, 30_000);
});
