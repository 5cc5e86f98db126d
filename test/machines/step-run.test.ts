import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { createActor } from 'xstate';
import {
  initialRun,
  persistRun,
  restoreRun,
  stepRun,
  workflowRunMachine,
} from '../../src/machines/workflow-run-machine.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { ALL_FIXTURES } from '../workflow/fixtures.js';

/**
 * `stepRun` (the run machine's transition as a pure function, which the
 * Coordinator's decisions use) moves exactly as the XState actor does, for
 * random event sequences on every fixture workflow, refusals included; and a
 * persisted `RunState` restores to itself.
 */
const usage = { inputTokens: 1, outputTokens: 1, costUsd: 0.01, elapsedMs: 5 };
const BUDGET = { maxTokens: 7 };
const DEADLINE = { at: 1_000, ms: 500 };
const event = (hop: number, attempt: number): fc.Arbitrary<WorkflowRunEvent> =>
  fc.oneof(
    fc.constant({ type: 'START' } as const),
    fc.record({
      type: fc.constant('HOP_SUCCEEDED' as const),
      hop: fc.constant(hop),
      attempt: fc.constant(attempt),
      usage: fc.constant(usage),
    }),
    fc
      .record({
        type: fc.constant('HOP_FAILED' as const),
        hop: fc.constantFrom(hop, hop + 1),
        attempt: fc.constant(attempt),
        errorType: fc.constantFrom('TestsFailed', 'Boom', 'Rejected'),
        final: fc.constantFrom(undefined, 'non-retryable' as const, 'exhausted' as const),
      })
      .map((e) =>
        e.final === undefined ? { type: e.type, hop: e.hop, attempt: e.attempt, errorType: e.errorType } : e,
      ),
    fc.record({
      type: fc.constant('HOP_SUSPENDED' as const),
      hop: fc.constant(hop),
      attempt: fc.constant(attempt),
      continuation: fc.constantFrom('k1', 'k2'),
    }),
    fc.record({
      type: fc.constant('HOP_RESUMED' as const),
      hop: fc.constant(hop),
      continuation: fc.constantFrom('k1', 'k2'),
    }),
    fc.record({
      type: fc.constant('APPROVAL_REQUIRED' as const),
      hop: fc.constant(hop),
      reason: fc.constant('policy'),
    }),
    fc.record({ type: fc.constant('APPROVED' as const), by: fc.constantFrom('release-manager', 'editor', 'mallory') }),
    fc.record({ type: fc.constant('DENIED' as const), by: fc.constantFrom('release-manager', 'mallory') }),
    // Usage that takes the run over its budget (BUDGET: 7 tokens).
    fc
      .record({
        type: fc.constantFrom('HOP_SUCCEEDED' as const, 'HOP_SUSPENDED' as const),
        hop: fc.constant(hop),
        attempt: fc.constant(attempt),
        usage: fc.constant({ ...usage, inputTokens: 6 }),
      })
      .map((e) => (e.type === 'HOP_SUSPENDED' ? { ...e, type: e.type, continuation: 'k1' } : { ...e, type: e.type })),
    fc.record({
      type: fc.constant('HOP_RESUMED' as const),
      hop: fc.constant(hop),
      continuation: fc.constantFrom('k1', 'k2'),
      usage: fc.constant({ ...usage, inputTokens: 6 }),
    }),
    // Time: a tick before or after the deadline (DEADLINE: at 1000), a hop or its query timed out.
    fc.record({ type: fc.constant('TICK' as const), now: fc.constantFrom(999, 1_000, 5_000) }),
    fc
      .record({
        type: fc.constant('HOP_TIMED_OUT' as const),
        hop: fc.constant(hop),
        attempt: fc.constant(attempt),
        timeouts: fc.integer({ min: 1, max: 6 }),
        continuation: fc.constantFrom(undefined, 'k1', 'k2'),
        questionKept: fc.constantFrom(undefined, false),
        usage: fc.constant({ ...usage, inputTokens: 3 }),
      })
      .map(({ continuation, questionKept, ...e }) => ({
        ...e,
        ...(continuation === undefined ? {} : { continuation }),
        ...(questionKept === undefined ? {} : { questionKept }),
      })),
    fc.constant({ type: 'CANCEL' } as const),
    fc.constant({ type: 'NOT_AN_EVENT' } as unknown as WorkflowRunEvent),
  );

describe('stepRun', () => {
  test.prop(
    [
      fc.constantFrom(...ALL_FIXTURES),
      fc.array(fc.tuple(fc.nat(3), fc.nat(2)), { maxLength: 30 }),
      fc.infiniteStream(fc.nat()),
    ],
    {
      numRuns: 150,
    },
  )('moves as the actor does, event by event', (definition, picks, seeds) => {
    const actor = createActor(workflowRunMachine, {
      input: { runId: 'r', definition, budget: BUDGET, deadline: DEADLINE },
    });
    actor.start();
    let run = initialRun({ runId: 'r', definition, budget: BUDGET, deadline: DEADLINE });
    const it = seeds[Symbol.iterator]();
    for (const [dh, da] of picks) {
      const ctx = run.context;
      const [e] = fc.sample(event(ctx.hop + (dh === 3 ? -1 : 0), Math.max(1, ctx.attempt + (da === 2 ? 1 : 0))), {
        numRuns: 1,
        seed: it.next().value as number,
      });
      // A final run's actor is stopped and takes nothing more (XState warns on such a send); stepRun ignores it too.
      if (actor.getSnapshot().status === 'active') actor.send(e!);
      run = stepRun(run, e!);
      const snap = actor.getSnapshot();
      expect(run.value).toBe(snap.value);
      expect(run.context).toEqual(snap.context);
    }
    expect(restoreRun(persistRun(run))).toEqual(run);
    actor.stop();
  });
});
