import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type AnyStateMachine, createActor } from 'xstate';

/**
 * What every machine module holds to when it is loaded: the machine builds
 * (XState throws at creation for a compound machine without a known initial
 * state), a fresh actor starts in the lifecycle's first state, and the
 * machine's id is the name the Stately inspection labels its root actors by
 * (`agent <id>`, `task <id>`, `pool <role>`; src/inspect/stately-inspection.ts), and
 * the work item's run is `workflow-run`.
 *
 * The modules are imported inside the property, not at the top of the file:
 * a module that throws while it loads must fail a test here, not only the
 * loading of a file.
 */
const MACHINES = {
  agent: {
    load: async (): Promise<AnyStateMachine> => (await import('../../src/machines/agent-machine.js')).agentMachine,
    input: { agentId: 'agent-1' },
    first: 'live',
  },
  task: {
    load: async (): Promise<AnyStateMachine> => (await import('../../src/machines/task-machine.js')).taskMachine,
    input: { taskId: 'task-1' },
    first: 'submitted',
  },
  pool: {
    load: async (): Promise<AnyStateMachine> => {
      const { createPoolMachine } = await import('../../src/machines/pool-machine.js');
      const { fromCallback } = await import('xstate');
      return createPoolMachine(fromCallback(() => undefined));
    },
    input: {
      role: 'coding',
      deployment: { minReplicas: 0, maxReplicas: 1, idleTimeoutMs: 0, concurrency: 1 },
    },
    first: 'running',
  },
  'workflow-run': {
    load: async (): Promise<AnyStateMachine> =>
      (await import('../../src/machines/workflow-run-machine.js')).workflowRunMachine,
    input: {
      runId: 'item-1',
      definition: { id: 'w', version: 1, start: 'only', stages: { only: { role: 'coding' } } },
    },
    first: 'pending',
  },
} as const;

describe('machine modules: what loading one gives', () => {
  test.prop([fc.constantFrom(...(Object.keys(MACHINES) as (keyof typeof MACHINES)[]))])(
    'the machine builds, is named after its lifecycle, and starts in its first state',
    async (name) => {
      const entry = MACHINES[name];
      const machine = await entry.load();
      expect(machine.config.id).toBe(name);
      const actor = createActor(machine, { input: entry.input }).start();
      expect(actor.getSnapshot().value).toBe(entry.first);
      expect(actor.getSnapshot().status).toBe('active');
      actor.stop();
    },
  );
});
