import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import { ItemOutputSchema } from '../../src/protocol/item-output.js';
import { ArtifactSchema } from '../../src/protocol/task.js';
import { type EndingResult, type RunEnding, itemOutput, outputArtifacts } from '../../src/workflow/item-output.js';

/** An item's output from how its run ended and the hop result that ended it; its task's artifacts. */

const ended = (extra: Partial<RunEnding> = {}): RunEnding => ({
  stage: 'review',
  hop: 3,
  failure: null,
  cancellation: null,
  ...extra,
});

const completedResult: EndingResult = {
  role: 'reviewer',
  outcome: 'completed',
  parts: [
    { kind: 'text', text: 'approved' },
    { kind: 'data', data: { score: 9 } },
  ],
  artifacts: [{ artifactId: 'notes', name: 'notes', parts: [{ kind: 'text', text: 'two nits' }] }],
};

const failedResult: EndingResult = {
  role: 'reviewer',
  outcome: 'failed',
  parts: [],
  artifacts: [],
  error: { type: 'Rejected', message: 'contradicts itself' },
};

describe('itemOutput', () => {
  it('a completed run keeps the parts and artifacts of the hop that completed it', () => {
    const output = itemOutput('completed', ended(), completedResult);
    expect(output).toEqual({
      state: 'completed',
      stage: 'review',
      hop: 3,
      role: 'reviewer',
      parts: completedResult.parts,
      artifacts: completedResult.artifacts,
    });
    expect(ItemOutputSchema.parse(output)).toEqual(output);
    // Copies: the output does not alias the result's arrays.
    expect(output.state === 'completed' && output.parts).not.toBe(completedResult.parts);
  });

  it('a completed run with no result (or an empty one) has empty parts and artifacts', () => {
    expect(itemOutput('completed', ended(), undefined)).toEqual({
      state: 'completed',
      stage: 'review',
      hop: 3,
      role: null,
      parts: [],
      artifacts: [],
    });
  });

  it("a failed run keeps the failure: code, message, the stage and hop it failed at, and the hop's error", () => {
    const failure = { code: 'NON_RETRYABLE', reason: 'hop 2 (review) failed with Rejected', stage: 'review', hop: 2 };
    const output = itemOutput('failed', ended({ failure }), failedResult);
    expect(output).toEqual({
      state: 'failed',
      stage: 'review',
      hop: 2,
      code: 'NON_RETRYABLE',
      message: failure.reason,
      error: { type: 'Rejected', message: 'contradicts itself' },
    });
    expect(ItemOutputSchema.parse(output)).toEqual(output);
    const exhausted = itemOutput('failed', ended({ failure: { ...failure, code: 'RETRIES_EXHAUSTED' } }), failedResult);
    expect(exhausted).toMatchObject({ code: 'RETRIES_EXHAUSTED', error: { type: 'Rejected' } });
  });

  it('a denied run (governance, an approver, the budget) keeps the denial, not the last hop’s error', () => {
    for (const code of ['GOVERNANCE_DENIED', 'APPROVAL_DENIED', 'BUDGET_EXCEEDED']) {
      const failure = { code, reason: `${code}: deploys are frozen`, stage: 'devops', hop: 5 };
      const output = itemOutput('failed', ended({ stage: 'devops', hop: 5, failure }), failedResult);
      expect(output, code).toEqual({
        state: 'failed',
        stage: 'devops',
        hop: 5,
        code,
        message: failure.reason,
        error: null,
      });
    }
    // Denied before any hop ran: no result at all.
    const denied = itemOutput(
      'failed',
      ended({ stage: 'draft', hop: 1, failure: { code: 'GOVERNANCE_DENIED', reason: 'no', stage: 'draft', hop: 1 } }),
      undefined,
    );
    expect(denied).toMatchObject({ state: 'failed', stage: 'draft', hop: 1, error: null });
  });

  it('a canceled run keeps who canceled it and why', () => {
    const output = itemOutput('canceled', ended({ cancellation: { by: 'editor', reason: 'dropped' } }), undefined);
    expect(output).toEqual({ state: 'canceled', stage: 'review', hop: 3, by: 'editor', reason: 'dropped' });
    expect(itemOutput('canceled', ended({ cancellation: { by: null, reason: null } }), completedResult)).toEqual({
      state: 'canceled',
      stage: 'review',
      hop: 3,
      by: null,
      reason: null,
    });
  });
});

describe('outputArtifacts', () => {
  it("a completed item's task carries its answer then the last hop's artifacts, as they came", () => {
    const artifacts = outputArtifacts(itemOutput('completed', ended(), completedResult));
    expect(artifacts.map((a) => a.artifactId)).toEqual(['item-output', 'notes']);
    expect(artifacts[0]).toMatchObject({ name: 'output', parts: completedResult.parts });
    expect(artifacts[0]?.description).toContain('stage review (hop 3, reviewer)');
    expect(artifacts[1]).toEqual(completedResult.artifacts[0]);
    // No parts: no answer artifact (an artifact has at least one part).
    const bare = outputArtifacts(itemOutput('completed', ended(), { ...completedResult, parts: [] }));
    expect(bare.map((a) => a.artifactId)).toEqual(['notes']);
  });

  it('a failure and a cancellation are one artifact each, a line of text and the facts as data', () => {
    const failure = { code: 'NON_RETRYABLE', reason: 'x'.repeat(5000), stage: 'review', hop: 2 };
    const [failed] = outputArtifacts(itemOutput('failed', ended({ failure }), failedResult));
    expect(failed?.artifactId).toBe('item-failure');
    expect(failed?.parts[0]).toEqual({ kind: 'text', text: `NON_RETRYABLE: ${'x'.repeat(2000)}`.slice(0, 2000) });
    expect(failed?.parts[1]).toEqual({
      kind: 'data',
      data: { code: 'NON_RETRYABLE', message: failure.reason, stage: 'review', hop: 2, error: failedResult.error },
    });
    const [canceled] = outputArtifacts(
      itemOutput('canceled', ended({ cancellation: { by: 'ops', reason: null } }), undefined),
    );
    expect(canceled).toMatchObject({
      artifactId: 'item-cancellation',
      parts: [{ kind: 'data', data: { by: 'ops', reason: null, stage: 'review', hop: 3 } }],
    });
  });

  const part = fc.oneof(
    fc.record({ kind: fc.constant('text' as const), text: fc.string({ maxLength: 40 }) }),
    fc.record({ kind: fc.constant('data' as const), data: fc.dictionary(fc.string({ maxLength: 8 }), fc.integer()) }),
  );
  const artifact = fc.record({
    artifactId: fc.string({ minLength: 1, maxLength: 12 }),
    parts: fc.array(part, { minLength: 1, maxLength: 3 }),
  });

  test.prop([
    fc.constantFrom('completed' as const, 'failed' as const, 'canceled' as const),
    fc.array(part, { maxLength: 4 }),
    fc.array(artifact, { maxLength: 3 }),
    fc.constantFrom('NON_RETRYABLE', 'GOVERNANCE_DENIED', 'BUDGET_EXCEEDED'),
  ])('every output matches its schema and its artifacts are valid A2A artifacts', (state, parts, artifacts, code) => {
    const output = itemOutput(
      state,
      ended({
        failure: state === 'failed' ? { code, reason: 'why', stage: 'review', hop: 3 } : null,
        cancellation: state === 'canceled' ? { by: 'ops', reason: 'why' } : null,
      }),
      { ...completedResult, parts, artifacts },
    );
    expect(output.state).toBe(state);
    expect(ItemOutputSchema.safeParse(output).success).toBe(true);
    for (const a of outputArtifacts(output)) expect(ArtifactSchema.safeParse(a).success).toBe(true);
  });
});
