import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { Decision } from '../../src/decisions/coordinator-decisions.js';
import type { ResultEnvelope, Usage } from '../../src/protocol/work-envelope.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';
import { noteOverrun, sendUsage } from '../../src/decisions/coordinator/usage.js';
import { Work } from '../../src/decisions/coordinator/work.js';
import { ChildTree, roleChain } from './child-tree.js';

/**
 * The rules of what a hop's usage writes down, whatever the result that
 * brought it (a stage hop's success or failure, a suspension, a query's
 * answer): one `cost` audit entry of the hop, by the Coordinator, with the
 * role, the model and what was spent (its tokens, its cost, the time the
 * hop ran); a result after the item ended is `late`, its cost written and
 * one `late-result` event saying so, nothing else of the item changing; a
 * usage that takes the run over its budget ends it `BUDGET_EXCEEDED` with
 * one `budget-exceeded` event at the item's hop saying why (no other end
 * writes one).
 */

interface Step {
  kind: 'complete' | 'fail' | 'ask';
  usage: Usage;
  /** Time the hop runs before its result (ms). */
  runs: number;
  /** Whether the item is canceled while the hop is out (its result comes late). */
  cancelFirst: boolean;
}

const usageArb: fc.Arbitrary<Usage> = fc.record({
  inputTokens: fc.nat({ max: 40 }),
  outputTokens: fc.nat({ max: 40 }),
  costUsd: fc.nat({ max: 300 }).map((c) => c / 100),
  model: fc.constantFrom('m1', 'm2', 'big-model'),
});

const stepArb: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom('complete' as const, 'complete' as const, 'fail' as const, 'ask' as const),
  usage: usageArb,
  runs: fc.integer({ min: 0, max: 500 }),
  cancelFirst: fc.constantFrom(false, false, false, false, true),
});

const caseArb = fc.record({
  stages: fc.integer({ min: 1, max: 4 }),
  steps: fc.array(stepArb, { minLength: 1, maxLength: 8 }),
  maxTokens: fc.option(fc.integer({ min: 1, max: 150 }), { nil: null }),
});

/** The one `cost` audit entry a decision wrote, as the rules have it. */
function expectCost(d: Decision, hop: { id: string; hop: number; role: string }, usage: Usage, elapsedMs: number) {
  const costs = d.changes!.audit.filter((a) => a.kind === 'cost');
  expect(costs).toStrictEqual([
    {
      kind: 'cost',
      itemId: 'item',
      hop: hop.hop,
      actor: 'coordinator',
      data: {
        hopId: hop.id,
        agent: hop.role,
        model: usage.model,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        costUsd: usage.costUsd,
        elapsedMs,
      },
    },
  ]);
}

describe("a hop's usage", () => {
  test.prop([caseArb])(
    'every result writes its cost; a late one is late; an overrun of the budget ends the item with one event',
    ({ stages, steps, maxTokens }) => {
      const tree = new ChildTree();
      const id = 'item';
      const defStages: Record<string, object> = {};
      for (let i = 0; i < stages; i++) {
        defStages[`s${i}`] = {
          role: i % 2 === 0 ? 'w' : 'x',
          ...(i + 1 < stages ? { next: [{ on: 'succeeded', goto: `s${i + 1}` }] } : {}),
        };
      }
      tree.create(id, parseWorkflowDefinition({ id: 'costs', version: 1, start: 's0', stages: defStages }), {
        budget: maxTokens === null ? null : { maxTokens },
      });
      let n = 0;
      for (const step of steps) {
        const before = tree.views.get(id)!;
        const out = [...before.hops.values()].find((h) => h.state === 'dispatched');
        if (out === undefined) break;
        if (step.cancelFirst && before.item.finishedAt === null)
          tree.decide(id, { kind: 'cancel', by: null, reason: null });
        const kept = tree.views.get(id)!;
        const live = kept.item.finishedAt === null;
        tree.now += step.runs;
        n++;
        const headers =
          out.kind === 'query'
            ? {
                taskId: out.askedBy!,
                runId: id,
                hop: out.hop,
                attempt: 1,
                idempotencyKey: out.idempotencyKey,
                askedBy: {
                  role: kept.hops.get(out.askedBy!)!.role,
                  continuationToken: out.continuation!,
                  taskId: out.askedBy!,
                  hop: out.hop,
                },
              }
            : { taskId: out.id, runId: id, hop: out.hop, attempt: out.attempt, idempotencyKey: out.idempotencyKey };
        const base = { kind: 'result' as const, headers, role: out.role, artifacts: [] };
        const asks = step.kind === 'ask' && out.kind === 'stage';
        const result: ResultEnvelope =
          step.kind === 'fail'
            ? {
                ...base,
                outcome: 'failed',
                parts: [],
                error: { type: 'Broken', message: 'it broke', usage: step.usage },
                deliveries: 1,
              }
            : asks
              ? {
                  ...base,
                  outcome: 'suspended',
                  parts: [],
                  usage: step.usage,
                  ask: {
                    role: 'y',
                    continuationToken: `cont-${n}`,
                    message: { role: 'user', parts: [{ kind: 'text', text: `question ${n}` }] },
                  },
                }
              : { ...base, outcome: 'completed', parts: [{ kind: 'text', text: `done ${n}` }], usage: step.usage };
        const d = tree.decide(id, { kind: 'result', result });
        expect(d.refusal).toBeUndefined();
        // Its cost: what the result says it spent, over the time the hop ran.
        expectCost(d, out, step.usage, tree.now - out.activeSince!);
        const after = d.view!;
        const overruns = d.events.filter((e) => e.kind === 'budget-exceeded');
        const lates = d.events.filter((e) => e.kind === 'late-result');
        if (!live) {
          // Late: its cost is written, the item stays as it ended.
          expect(d.handling).toBe('late');
          expect(lates).toStrictEqual([
            {
              kind: 'late-result',
              itemId: id,
              hop: out.hop,
              stage: out.stage,
              role: out.role,
              detail: `a result after the item ended (${kept.item.state}): cost accrued`,
              at: tree.now,
            },
          ]);
          expect(after.item.state).toBe(kept.item.state);
          expect(after.item.finishedAt).toBe(kept.item.finishedAt);
          expect(d.changes!.created).toBe(false);
          expect(d.changes!.ended).toBe(false);
          expect(d.changes!.audit.filter((a) => a.kind.startsWith('item-'))).toEqual([]);
          expect(overruns).toEqual([]);
          continue;
        }
        expect(d.handling).toBe('applied');
        expect(lates).toEqual([]);
        const spent = after.item.usage.inputTokens + after.item.usage.outputTokens;
        const failure = after.item.failure;
        if (failure?.code === 'BUDGET_EXCEEDED') {
          // Over its budget: the run ends, and one event says why, at the item's hop.
          expect(maxTokens).not.toBeNull();
          expect(spent).toBeGreaterThan(maxTokens!);
          expect(after.item.state).toBe('failed');
          expect(overruns).toStrictEqual([
            expect.objectContaining({
              kind: 'budget-exceeded',
              itemId: id,
              hop: kept.item.hop,
              detail: failure.reason,
            }),
          ]);
        } else {
          expect(overruns).toEqual([]);
          if (maxTokens !== null && step.kind !== 'fail') expect(spent).toBeLessThanOrEqual(maxTokens);
        }
      }
    },
  );
});

describe('an overrun written down once, by the event that made it', () => {
  /** The working copy of a live item's decision, its run as `value` with `failure`. */
  function workWith(value: string, failure: { code: string; reason: string } | null): Work {
    const t = new ChildTree();
    t.create('item', roleChain('flow', 2));
    const work = new Work(t.views.get('item')!, t.env());
    work.run = { value: value as never, context: { ...work.run!.context, failure: failure as never } };
    return work;
  }
  const over = { code: 'BUDGET_EXCEEDED', reason: 'tokens 12 of 10' };

  it('a run the event failed over its budget: one budget-exceeded event at the item hop, with the reason', () => {
    const work = workWith('failed', over);
    noteOverrun(work, 'running');
    expect(work.events.map((e) => [e.kind, e.hop, e.detail])).toEqual([
      ['budget-exceeded', work.item.hop, over.reason],
    ]);
  });

  it('a run already failed over its budget before the event, one failed otherwise, one still running: none', () => {
    for (const [work, before] of [
      [workWith('failed', over), 'failed'],
      [workWith('failed', { code: 'GOVERNANCE_DENIED', reason: 'no' }), 'running'],
      [workWith('running', null), 'running'],
      [workWith('running', null), 'pending'],
    ] as const) {
      noteOverrun(work, before);
      expect(work.events).toEqual([]);
    }
  });

  it('work without a run (a decision that dropped it): nothing written, nothing thrown', () => {
    const work = workWith('running', null);
    work.run = null;
    noteOverrun(work, 'running');
    noteOverrun(work, undefined);
    sendUsage(work, { type: 'HOP_SUCCEEDED', hop: 1, attempt: 1 } as never);
    expect(work.events).toEqual([]);
    expect(work.refused).toEqual([]);
  });
});
