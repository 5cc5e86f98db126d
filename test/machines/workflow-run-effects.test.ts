import { describe, expect, it } from 'vitest';
import { applyEffect } from '../../src/machines/workflow-run-effects.js';
import { initialRun, stepRun } from '../../src/machines/workflow-run-machine.js';
import { ITEM_BUDGET_EXCEEDED } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/** What an accepted move writes in the run's context, where the model tests leave it unread. */
describe('the effects of a run move', () => {
  const routed = parseWorkflowDefinition({
    id: 'keep',
    version: 1,
    start: 'plan',
    stages: {
      plan: { role: 'lead', next: [{ on: 'succeeded', goto: 'work' }] },
      work: {
        role: 'worker',
        retry: { maximumAttempts: 1 },
        next: [
          { on: 'failed', errorType: 'Again', goto: 'review', maxTraversals: 1 },
          { on: 'failed', end: 'completed' },
        ],
      },
      review: { role: 'lead', approval: { approvers: ['chief'] } },
    },
  });

  function atWork() {
    let run = stepRun(initialRun({ runId: 'item', definition: routed }), { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { plan: [1, 2] } });
    expect(run.context.output).toEqual({ plan: [1, 2] });
    return run;
  }

  it('a failure that routes on keeps the last output: to the next stage, and as the output of a run it completes', () => {
    const onward = stepRun(atWork(), { type: 'HOP_FAILED', hop: 2, attempt: 1, errorType: 'Again' });
    expect(onward.value).toBe('awaiting-approval');
    expect(onward.context.output).toEqual({ plan: [1, 2] });
    const done = stepRun(atWork(), { type: 'HOP_FAILED', hop: 2, attempt: 1, errorType: 'Other' });
    expect(done.value).toBe('completed');
    expect(done.context.output).toEqual({ plan: [1, 2] });
  });

  it('a gate without a reason says which stage has it', () => {
    const gated = stepRun(atWork(), { type: 'HOP_FAILED', hop: 2, attempt: 1, errorType: 'Again' });
    expect(gated.context.directive).toEqual({
      kind: 'await-approval',
      stage: 'review',
      hop: 3,
      source: 'gate',
      approvers: ['chief'],
      reason: 'stage review has an approval gate',
    });
  });

  it('a hop that stopped on a spent budget fails a run that holds no budget of its own', () => {
    const run = stepRun(atWork(), {
      type: 'HOP_FAILED',
      hop: 2,
      attempt: 1,
      errorType: ITEM_BUDGET_EXCEEDED,
      message: 'the tree is spent',
    });
    expect(run.value).toBe('failed');
    expect(run.context.failure).toEqual({
      code: 'BUDGET_EXCEEDED',
      reason: 'budget spent (hop 2 stopped: the tree is spent)',
      stage: 'work',
      hop: 2,
    });
  });

  it('a hop that stopped on a budget its run has just spent (not passed) gives what was spent', () => {
    let run = initialRun({ runId: 'item', definition: routed, budget: { maxCostUsd: 1 } });
    run = stepRun(run, { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 });
    run = stepRun(run, {
      type: 'HOP_FAILED',
      hop: 2,
      attempt: 1,
      errorType: ITEM_BUDGET_EXCEEDED,
      message: 'no more',
      usage: { inputTokens: 0, outputTokens: 0, costUsd: 1, elapsedMs: 0 },
    });
    expect(run.value).toBe('failed');
    expect(run.context.failure?.reason).toBe('budget spent: 1 of 1 USD (hop 2 stopped: no more)');
  });

  it('an event whose usage is present but undefined costs nothing', () => {
    const before = atWork();
    const after = stepRun(before, { type: 'HOP_FAILED', hop: 2, attempt: 1, errorType: 'Other', usage: undefined });
    expect(after.context.refusal).toBeNull();
    expect(after.context.usage).toEqual(before.context.usage);
  });

  it("a fan-out stage carves what is left after the earlier children's hops, not before", () => {
    const def = parseWorkflowDefinition({
      id: 'two-fans',
      version: 1,
      start: 'first',
      stages: {
        first: { role: 'lead', next: [{ on: 'succeeded', goto: 'fan1' }] },
        fan1: {
          parallel: { branches: { a: { role: 'w' }, b: { role: 'w' } } },
          next: [{ on: 'succeeded', goto: 'fan2' }],
        },
        fan2: { parallel: { branches: { c: { role: 'w' }, d: { role: 'w' } } } },
      },
    });
    let run = initialRun({ runId: 'item', definition: def, budget: { maxHops: 40 } });
    run = stepRun(run, { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 });
    run = stepRun(run, { type: 'CHILDREN_SPAWNED', hop: 2 });
    run = stepRun(run, { type: 'CHILD_SETTLED', hop: 2, branch: 'a', outcome: 'completed', output: 1, hops: 5 });
    run = stepRun(run, { type: 'CHILD_SETTLED', hop: 2, branch: 'b', outcome: 'completed', output: 2, hops: 7 });
    expect(run.context.stage).toBe('fan2');
    expect(run.context.childHops).toBe(12);
    // 40 hops, 3 of the run's own and 12 of its children's used: 25 left, an equal share of it each.
    const carves = run.context.join!.branches.map((b) => b.budget?.maxHops);
    expect(carves).toEqual([12, 12]);
  });

  it('a denial says who denied it, and why when it says', () => {
    const gated = stepRun(atWork(), { type: 'HOP_FAILED', hop: 2, attempt: 1, errorType: 'Again' });
    expect(stepRun(gated, { type: 'DENIED', by: 'chief' }).context.failure?.reason).toBe('approval denied by chief');
    expect(stepRun(gated, { type: 'DENIED', by: 'chief', reason: 'not now' }).context.failure?.reason).toBe(
      'approval denied by chief: not now',
    );
  });

  it("a run completed by a stage's success holds that success's output, not the one before", () => {
    const def = parseWorkflowDefinition({
      id: 'last-word',
      version: 1,
      start: 'a',
      stages: { a: { role: 'lead', next: [{ on: 'succeeded', goto: 'b' }] }, b: { role: 'lead' } },
    });
    let run = stepRun(initialRun({ runId: 'item', definition: def }), { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { first: true } });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 2, attempt: 1, output: { last: true } });
    expect(run.value).toBe('completed');
    expect(run.context.output).toEqual({ last: true });
  });

  it("a hop's own children are carved what the run has left, its children's hops counted in", () => {
    const def = parseWorkflowDefinition({
      id: 'fan-then-ask',
      version: 1,
      start: 'first',
      stages: {
        first: { role: 'lead', next: [{ on: 'succeeded', goto: 'fan' }] },
        fan: { parallel: { branches: { a: { role: 'w' } } }, next: [{ on: 'succeeded', goto: 'ask' }] },
        ask: { role: 'lead' },
      },
    });
    let run = initialRun({ runId: 'item', definition: def, budget: { maxHops: 40, maxTokens: 1_000 } });
    run = stepRun(run, { type: 'START' });
    run = stepRun(run, {
      type: 'HOP_SUCCEEDED',
      hop: 1,
      attempt: 1,
      usage: { inputTokens: 100, outputTokens: 0, costUsd: 0, elapsedMs: 1 },
    });
    run = stepRun(run, { type: 'CHILDREN_SPAWNED', hop: 2 });
    run = stepRun(run, { type: 'CHILD_SETTLED', hop: 2, branch: 'a', outcome: 'completed', output: 1, hops: 7 });
    expect(run.context.stage).toBe('ask');
    run = stepRun(run, {
      type: 'HOP_SUSPENDED',
      hop: 3,
      attempt: 1,
      continuation: 'k1',
      children: [{ key: 's0' }, { key: 's1' }],
    });
    // 40 hops, 3 of the run's own and 7 of its children's used: 30 left; 900 tokens left.
    expect(run.context.join!.branches.map((b) => b.budget)).toEqual([
      expect.objectContaining({ maxHops: 15, maxTokens: 450 }),
      expect.objectContaining({ maxHops: 15, maxTokens: 450 }),
    ]);
  });

  it('a settle carries the spawn still to write of its own join only, and the branches it starts after it', () => {
    const mapped = parseWorkflowDefinition({
      id: 'mapped',
      version: 1,
      start: 'plan',
      stages: {
        plan: { role: 'lead', next: [{ on: 'succeeded', goto: 'each' }] },
        each: { role: 'w', forEach: '/xs', maxConcurrency: 1 },
      },
    });
    let run = stepRun(initialRun({ runId: 'item', definition: mapped }), { type: 'START' });
    run = stepRun(run, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1, output: { xs: ['a', 'b', 'c'] } });
    run = stepRun(run, { type: 'CHILDREN_SPAWNED', hop: 2 });
    const [first] = run.context.join!.branches;
    const end = {
      type: 'CHILD_SETTLED' as const,
      hop: 2,
      branch: first!.key,
      outcome: 'completed' as const,
      output: 1,
    };
    const spawn = (hop: number) => ({ kind: 'spawn' as const, stage: 'each', hop, branches: ['w'], immediate: null });
    const keys = (ctx: typeof run.context) => (ctx.directive.kind === 'spawn' ? ctx.directive.branches : null);
    // Settled in the usual way: the next element is asked for.
    const next = keys(applyEffect(run.context, end, 'settle-branch')) ?? [];
    expect(next).toEqual([run.context.join!.branches[1]!.key]);
    // A spawn of this join not yet written is still asked for, the new branch after it.
    expect(keys(applyEffect({ ...run.context, directive: spawn(2) }, end, 'settle-branch'))).toEqual(['w', ...next]);
    // One of another hop is not this join's: it is not carried.
    expect(keys(applyEffect({ ...run.context, directive: spawn(1) }, end, 'settle-branch'))).toEqual(next);
  });
});
