import type { ItemRecord } from '../../src/workflow/records.js';

/** A work item's row as the stores keep it: item `item-1` of `flow@1`, running at `plan`, with `over` on top. */
export function itemRecord(over: Partial<ItemRecord> = {}): ItemRecord {
  return {
    id: 'item-1',
    taskId: null,
    workflow: { id: 'flow', version: 1 },
    state: 'running',
    stage: 'plan',
    hop: 1,
    hops: 2,
    input: [],
    budget: null,
    attributes: null,
    usage: { inputTokens: 0, outputTokens: 0, costUsd: 0, elapsedMs: 0 },
    failure: null,
    approval: null,
    createdAt: 1_000,
    updatedAt: 1_000,
    finishedAt: null,
    output: null,
    mirrored: false,
    ...over,
  } as ItemRecord;
}
