import { initialRun } from '../../machines/workflow-run-machine.js';
import { type RunDeadline, runDeadline } from '../../machines/workflow-run-transitions.js';
import type { ItemRecord } from '../../workflow/records.js';
import { drive } from './drive.js';
import type { CoordinatorInput, Decision, DecisionEnv } from './types.js';
import { Work, json } from './work.js';

/** A work item is created: its row, its run (started), its first hop. */
export function create(input: Extract<CoordinatorInput, { kind: 'create' }>, env: DecisionEnv): Decision {
  const { itemId, definition } = input;
  const now = env.now;
  const workflow = { id: definition.id, version: definition.version };
  const item: ItemRecord = {
    id: itemId,
    taskId: input.taskId,
    workflow,
    state: 'pending',
    stage: null,
    hop: 0,
    hops: 0,
    input: input.input,
    budget: input.budget,
    attributes: input.attributes,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    failure: null,
    approval: null,
    createdAt: now,
    updatedAt: now,
    finishedAt: null,
    output: null,
    mirrored: false,
  };
  const work = new Work(
    {
      item,
      hops: new Map(),
      run: initialRun({
        runId: itemId,
        definition,
        budget: input.budget,
        deadline: earliest(runDeadline(definition, now), input.deadline ?? null),
      }),
      ...(input.ancestors === undefined ? {} : { ancestors: input.ancestors }),
    },
    env,
  );
  work.audit.push({
    kind: 'item-created',
    itemId,
    actor: 'edge',
    // The item's broker task is made after this commit: its id is the item row's, not the audit's.
    data: json({
      workflow,
      budget: input.budget,
      inputParts: input.input.length,
      ...(input.startStage === undefined ? {} : { startStage: input.startStage }),
    }),
  });
  work.event('created', null, `work item created on ${definition.id}@${definition.version}`);
  work.send(input.startStage === undefined ? { type: 'START' } : { type: 'START', stage: input.startStage });
  drive(work);
  return work.finish('applied', true, input.keepDefinition ? { definition: { ref: workflow, body: definition } } : {});
}

/** The earlier of two deadlines (a child's own, and the one it inherits from its parent). */
function earliest(a: RunDeadline | null, b: RunDeadline | null): RunDeadline | null {
  if (a === null) return b;
  if (b === null) return a;
  return a.at <= b.at ? a : b;
}
