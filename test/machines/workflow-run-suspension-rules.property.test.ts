import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type RunState, initialRun, stepRun } from '../../src/machines/workflow-run-machine.js';
import type { WorkflowRunEvent } from '../../src/protocol/workflow.js';
import { parseWorkflowDefinition } from '../../src/workflow/definition.js';

/**
 * What a suspended hop takes, as rules over any event that names a hop, an
 * attempt and a continuation near the current ones:
 * - a resume is taken only when it names the current hop and the
 *   continuation the hop stood down under; any other is refused, a stale
 *   hop as `stale-hop`, another continuation as `wrong-continuation`;
 * - a timeout of the query is taken only when it names the current hop,
 *   attempt and continuation: published again while the stage's retry policy
 *   has attempts left and the question was kept, else the hop resumes with
 *   the failure;
 * - once the answer resumed the hop, a late timeout of that query changes
 *   nothing;
 * - a hop that stood down on children of its own takes each child's end once,
 *   for its hop only, and resumes when the last of them has ended;
 * - a refused event changes nothing but the refusal.
 */

const definition = (maximumAttempts: number) =>
  parseWorkflowDefinition({
    id: 'ask',
    version: 1,
    start: 'work',
    stages: {
      work: { role: 'worker', retry: { maximumAttempts }, next: [{ on: 'succeeded', goto: 'after' }] },
      after: { role: 'worker' },
    },
  });

/** A run whose first hop (attempt `attempts`) stood down under continuation `k1`. */
function suspended(maximumAttempts: number, attempts: number): RunState {
  let run = stepRun(initialRun({ runId: 'item', definition: definition(maximumAttempts) }), { type: 'START' });
  for (let a = 1; a < attempts; a++) run = stepRun(run, { type: 'HOP_FAILED', hop: 1, attempt: a, errorType: 'Boom' });
  expect(run.context.attempt).toBe(attempts);
  run = stepRun(run, { type: 'HOP_SUSPENDED', hop: 1, attempt: attempts, continuation: 'k1', askedRole: 'expert' });
  expect(run.value).toBe('suspended');
  return run;
}

const near = {
  hop: fc.constantFrom(1, 1, 1, 2),
  attemptDelta: fc.constantFrom(0, 0, 0, -1, 1),
  continuation: fc.constantFrom('k1', 'k1', 'k2'),
};

function unchanged(after: RunState, before: RunState): void {
  expect(after.value).toBe(before.value);
  expect({ ...after.context, refusal: null }).toEqual({ ...before.context, refusal: null });
}

describe('what a suspended hop takes', () => {
  test.prop([near.hop, near.continuation, fc.constantFrom(0, 3), fc.integer({ min: 1, max: 2 })])(
    'a resume is taken only for the current hop and its continuation',
    (hop, continuation, maximumAttempts, attempts) => {
      const before = suspended(maximumAttempts, attempts);
      const event: WorkflowRunEvent = { type: 'HOP_RESUMED', hop, continuation };
      const after = stepRun(before, event);
      if (hop === 1 && continuation === 'k1') {
        expect(after.value).toBe('running');
        expect(after.context.refusal).toBeNull();
        expect(after.context.directive).toMatchObject({ kind: 'dispatch', hop: 1, resume: 'k1' });
      } else {
        unchanged(after, before);
        expect(after.context.refusal).toEqual({
          event: 'HOP_RESUMED',
          state: 'suspended',
          reason: hop === 1 ? 'wrong-continuation' : 'stale-hop',
        });
      }
    },
  );

  test.prop([
    near.hop,
    near.attemptDelta,
    fc.option(near.continuation, { nil: undefined }),
    fc.constantFrom(undefined, false as const),
    fc.constantFrom(0, 2, 3),
    fc.integer({ min: 1, max: 2 }),
    fc.integer({ min: 1, max: 4 }),
  ])(
    'a timeout of the query is taken only for the current hop, attempt and continuation, published again while the policy allows',
    (hop, attemptDelta, continuation, questionKept, maximumAttempts, attempts, timeouts) => {
      const before = suspended(maximumAttempts, attempts);
      const attempt = Math.max(1, attempts + attemptDelta);
      const event: WorkflowRunEvent = {
        type: 'HOP_TIMED_OUT',
        hop,
        attempt,
        timeouts,
        ...(continuation === undefined ? {} : { continuation }),
        ...(questionKept === undefined ? {} : { questionKept }),
      };
      const after = stepRun(before, event);
      const current = hop === 1 && attempt === attempts && continuation === 'k1';
      if (!current) {
        unchanged(after, before);
        expect(after.context.refusal?.reason).toBe(
          hop !== 1 || attempt !== attempts ? 'stale-hop' : 'wrong-continuation',
        );
        return;
      }
      expect(after.context.refusal).toBeNull();
      const republish = questionKept !== false && (maximumAttempts === 0 || timeouts < maximumAttempts);
      if (republish) {
        expect(after.value).toBe('suspended');
        expect(after.context.directive).toEqual(before.context.directive);
        expect(after.context.republish).toMatchObject({ hop: 1, continuation: 'k1' });
      } else {
        expect(after.value).toBe('running');
        expect(after.context.directive).toMatchObject({ kind: 'dispatch', hop: 1, resume: 'k1' });
      }
    },
  );

  test.prop([fc.integer({ min: 1, max: 2 }), fc.constantFrom(0, 3), fc.integer({ min: 1, max: 3 })])(
    'once the answer resumed the hop, a late timeout of its query changes nothing',
    (attempts, maximumAttempts, timeouts) => {
      const before = stepRun(suspended(maximumAttempts, attempts), { type: 'HOP_RESUMED', hop: 1, continuation: 'k1' });
      expect(before.value).toBe('running');
      const after = stepRun(before, { type: 'HOP_TIMED_OUT', hop: 1, attempt: attempts, timeouts, continuation: 'k1' });
      unchanged(after, before);
      expect(after.context.refusal).toEqual({ event: 'HOP_TIMED_OUT', state: 'running', reason: 'wrong-continuation' });
      // The hop's own timeout (no continuation) is still taken.
      const own = stepRun(before, { type: 'HOP_TIMED_OUT', hop: 1, attempt: attempts, timeouts });
      expect(own.context.refusal).toBeNull();
    },
  );

  const settleArb = fc.record({
    hop: near.hop,
    branch: fc.constantFrom('c0', 'c1', 'c2', 'zz'),
    outcome: fc.constantFrom('completed' as const, 'failed' as const, 'canceled' as const),
  });

  test.prop([fc.array(settleArb, { maxLength: 12 })])(
    "a hop that stood down on its own children takes each child's end once, for its hop, and resumes after the last",
    (settles) => {
      let run = stepRun(initialRun({ runId: 'item', definition: definition(3) }), { type: 'START' });
      run = stepRun(run, {
        type: 'HOP_SUSPENDED',
        hop: 1,
        attempt: 1,
        continuation: 'k1',
        children: [{ key: 'c0' }, { key: 'c1' }, { key: 'c2' }],
      });
      expect(run.value).toBe('suspended');
      const ended = new Set<string>();
      for (const settle of settles) {
        const before = run;
        run = stepRun(before, {
          type: 'CHILD_SETTLED',
          hop: settle.hop,
          branch: settle.branch,
          outcome: settle.outcome,
          ...(settle.outcome === 'completed' ? { output: { from: settle.branch } } : {}),
          ...(settle.outcome === 'failed' ? { error: { type: 'X', message: 'x' } } : {}),
        });
        const takes =
          before.value === 'suspended' && settle.hop === 1 && settle.branch !== 'zz' && !ended.has(settle.branch);
        if (!takes) {
          unchanged(run, before);
          if (before.value === 'suspended') expect(run.context.refusal?.reason).toBe('stale-hop');
          continue;
        }
        ended.add(settle.branch);
        expect(run.context.refusal).toBeNull();
        if (ended.size < 3) {
          expect(run.value).toBe('suspended');
          expect(run.context.directive).toEqual(before.context.directive);
        } else {
          expect(run.value).toBe('running');
          expect(run.context.join ?? null).toBeNull();
          expect(run.context.directive).toMatchObject({ kind: 'dispatch', hop: 1, resume: 'k1' });
        }
      }
    },
  );
});
