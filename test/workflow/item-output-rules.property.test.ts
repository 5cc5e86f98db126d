import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import type { ItemOutput } from '../../src/protocol/item-output.js';
import type { Part } from '../../src/protocol/parts.js';
import {
  type EndingResult,
  OUTPUT_ARTIFACT_IDS,
  type RunEnding,
  itemOutput,
  outputArtifacts,
  outputSummary,
} from '../../src/workflow/item-output.js';

/**
 * What a work item ended with (docs/coordinator.md, "A work item's
 * output"), as `items list` and the console summarize it and as its A2A
 * task carries it: the rules over any ending, not one example of each.
 */

const stageArb = fc.option(fc.constantFrom('plan', 'review'), { nil: null });
const textArb = fc.string({ maxLength: 20 });
const partArb: fc.Arbitrary<Part> = fc.oneof(
  textArb.map((text): Part => ({ kind: 'text', text })),
  fc.dictionary(fc.constantFrom('a', 'b'), fc.integer()).map((data): Part => ({ kind: 'data', data })),
  fc
    .record({
      name: fc.option(fc.constantFrom('a.txt'), { nil: undefined }),
      uri: fc.option(fc.constantFrom('s3://b/k'), { nil: undefined }),
    })
    .map(
      ({ name, uri }): Part => ({
        kind: 'file',
        file: { ...(name === undefined ? {} : { name }), ...(uri === undefined ? { bytes: 'AA==' } : { uri }) },
      }),
    ),
);
const failureArb = fc.option(
  fc.record({
    code: fc.constantFrom(
      'NON_RETRYABLE',
      'RETRIES_EXHAUSTED',
      'RULE_ENDED',
      'LOOP_BOUND',
      'GOVERNANCE_DENIED',
      'BUDGET_EXCEEDED',
    ),
    reason: textArb,
    stage: stageArb,
    hop: fc.nat(9),
  }),
  { nil: null },
);
const resultArb: fc.Arbitrary<EndingResult | undefined> = fc.option(
  fc.record({
    role: fc.constantFrom('coder', 'reviewer'),
    outcome: fc.constantFrom('completed' as const, 'failed' as const),
    parts: fc.array(partArb, { maxLength: 3 }),
    artifacts: fc.array(
      fc.record({ artifactId: fc.constantFrom('x', 'y'), parts: fc.array(partArb, { minLength: 1, maxLength: 2 }) }),
      {
        maxLength: 2,
      },
    ),
    error: fc.option(fc.record({ type: fc.constantFrom('Rejected', 'Crash'), message: textArb }), { nil: undefined }),
  }),
  { nil: undefined },
);
const runArb: fc.Arbitrary<RunEnding> = fc.record({
  stage: stageArb,
  hop: fc.nat(9),
  failure: failureArb,
  cancellation: fc.option(
    fc.record({ by: fc.option(fc.constantFrom('ops'), { nil: null }), reason: fc.option(textArb, { nil: null }) }),
    { nil: null },
  ),
});

/** The codes of a run that a hop's own failure ended: the output keeps that hop's error. */
const HOP_ENDED = ['NON_RETRYABLE', 'RETRIES_EXHAUSTED', 'RULE_ENDED', 'LOOP_BOUND'];

describe('itemOutput: the rules', () => {
  test.prop([runArb, resultArb])(
    'a failed run keeps its failure, and the hop error only when a hop ended it',
    (run, last) => {
      const output = itemOutput('failed', run, last);
      const code = run.failure?.code ?? 'FAILED';
      const hopError =
        last !== undefined && last.outcome === 'failed' && last.error !== undefined && HOP_ENDED.includes(code)
          ? { type: last.error.type, message: last.error.message }
          : null;
      expect(output).toEqual({
        state: 'failed',
        stage: run.failure?.stage ?? run.stage,
        hop: run.failure?.hop ?? run.hop,
        code,
        message: run.failure?.reason ?? 'the work item failed',
        error: hopError,
      });
    },
  );

  test.prop([runArb, resultArb])('a completed run keeps the last result; a canceled one who and why', (run, last) => {
    expect(itemOutput('completed', run, last)).toEqual({
      state: 'completed',
      stage: run.stage,
      hop: run.hop,
      role: last?.role ?? null,
      parts: last?.parts ?? [],
      artifacts: last?.artifacts ?? [],
    });
    expect(itemOutput('canceled', run, last)).toEqual({
      state: 'canceled',
      stage: run.stage,
      hop: run.hop,
      by: run.cancellation?.by ?? null,
      reason: run.cancellation?.reason ?? null,
    });
  });

  it('a failure with no record says so, and a long reason is cut to what the output keeps', () => {
    expect(itemOutput('failed', { stage: 'plan', hop: 2, failure: null, cancellation: null }, undefined)).toEqual({
      state: 'failed',
      stage: 'plan',
      hop: 2,
      code: 'FAILED',
      message: 'the work item failed',
      error: null,
    });
    const long = 'y'.repeat(20_000);
    const output = itemOutput(
      'failed',
      { stage: 'plan', hop: 2, failure: { code: 'RULE_ENDED', reason: long, stage: null, hop: 1 }, cancellation: null },
      undefined,
    );
    // A failure at no stage keeps the stage the run was at.
    expect(output).toMatchObject({ message: 'y'.repeat(16_000), stage: 'plan', hop: 1 });
  });

  it('a hop that failed without an error, or a result that completed, gives no hop error', () => {
    const failure = { code: 'NON_RETRYABLE', reason: 'r', stage: 'plan', hop: 1 };
    const run = { stage: 'plan', hop: 1, failure, cancellation: null };
    const base = { role: 'coder', parts: [], artifacts: [] };
    expect(itemOutput('failed', run, { ...base, outcome: 'failed' })).toMatchObject({ error: null });
    expect(
      itemOutput('failed', run, { ...base, outcome: 'completed', error: { type: 'Odd', message: 'm' } }),
    ).toMatchObject({ error: null });
    for (const code of HOP_ENDED) {
      expect(
        itemOutput(
          'failed',
          { ...run, failure: { ...failure, code } },
          { ...base, outcome: 'failed', error: { type: 'T', message: 'm' } },
        ),
      ).toMatchObject({ error: { type: 'T', message: 'm' } });
    }
  });
});

describe('outputArtifacts: what the item task carries', () => {
  it('has fixed ids, so that a sync after a crash puts the same artifacts back', () => {
    expect(OUTPUT_ARTIFACT_IDS).toEqual({
      parts: 'item-output',
      failure: 'item-failure',
      cancellation: 'item-cancellation',
    });
  });

  test.prop([runArb, resultArb])('describes where the item ended, in words a reader of the task sees', (run, last) => {
    const where = `stage ${run.stage ?? '-'}`;
    const completed = outputArtifacts(itemOutput('completed', run, last));
    if (last !== undefined && last.parts.length > 0) {
      expect(completed[0]).toEqual({
        artifactId: 'item-output',
        name: 'output',
        description: `the answer of ${where} (hop ${run.hop}, ${last.role})`,
        parts: last.parts,
      });
    }
    expect(completed.filter((a) => a.artifactId !== 'item-output')).toEqual(last?.artifacts ?? []);
    const canceled = outputArtifacts(itemOutput('canceled', run, last));
    expect(canceled).toEqual([
      {
        artifactId: 'item-cancellation',
        name: 'cancellation',
        description: `who canceled the work item at ${where} (hop ${run.hop})`,
        parts: [
          {
            kind: 'data',
            data: {
              by: run.cancellation?.by ?? null,
              reason: run.cancellation?.reason ?? null,
              stage: run.stage,
              hop: run.hop,
            },
          },
        ],
      },
    ]);
    const failed = itemOutput('failed', run, last);
    const [failure] = outputArtifacts(failed);
    expect(failure).toMatchObject({
      artifactId: 'item-failure',
      name: 'failure',
      description: `why the work item failed at stage ${failed.stage ?? '-'} (hop ${failed.hop})`,
    });
  });

  it('an answer with no role (no hop result ended the run) says only the hop', () => {
    const output: ItemOutput = {
      state: 'completed',
      stage: null,
      hop: 0,
      role: null,
      parts: [{ kind: 'text', text: 'done' }],
      artifacts: [],
    };
    expect(outputArtifacts(output)[0]?.description).toBe('the answer of stage - (hop 0)');
  });
});

describe('outputSummary: one line of an output', () => {
  test.prop([runArb, resultArb])('one line, whitespace folded and trimmed', (run, last) => {
    for (const state of ['completed', 'failed', 'canceled'] as const) {
      const line = outputSummary(itemOutput(state, run, last));
      expect(line).not.toMatch(/\s\s|\n|\t|^\s|\s$/);
      if (state !== 'completed') expect(line.length).toBeGreaterThan(0);
    }
  });

  it('- while the item runs; a failure by code and message; who canceled and why', () => {
    expect(outputSummary(null)).toBe('-');
    const failed: ItemOutput = {
      state: 'failed',
      stage: 'x',
      hop: 1,
      code: 'NON_RETRYABLE',
      message: ' tests\n  failed ',
      error: null,
    };
    expect(outputSummary(failed)).toBe('NON_RETRYABLE: tests failed');
    const canceled = (by: string | null, reason: string | null): ItemOutput => ({
      state: 'canceled',
      stage: null,
      hop: 0,
      by,
      reason,
    });
    expect(outputSummary(canceled('ops', 'dropped'))).toBe('canceled by ops: dropped');
    expect(outputSummary(canceled(null, 'dropped'))).toBe('canceled: dropped');
    expect(outputSummary(canceled('ops', null))).toBe('canceled by ops');
    expect(outputSummary(canceled(null, null))).toBe('canceled');
  });

  it("a completed item's parts, text as it is, data as JSON, a file by name or address, then how many artifacts", () => {
    const completed = (parts: Part[], n: number): ItemOutput => ({
      state: 'completed',
      stage: 'x',
      hop: 1,
      role: 'r',
      parts,
      artifacts: Array.from({ length: n }, (_, i) => ({
        artifactId: `a${i}`,
        parts: [{ kind: 'text' as const, text: 't' }],
      })),
    });
    expect(
      outputSummary(
        completed(
          [
            { kind: 'text', text: 'Shipped\n it.' },
            { kind: 'data', data: { ok: true } },
            { kind: 'file', file: { name: 'report.pdf', uri: 'https://x/r' } },
            { kind: 'file', file: { uri: 'https://x/log' } },
            { kind: 'file', file: { bytes: 'AA==' } },
          ],
          0,
        ),
      ),
    ).toBe('Shipped it. {"ok":true} [file report.pdf] [file https://x/log] [file ]');
    expect(outputSummary(completed([], 0))).toBe('(no parts)');
    expect(outputSummary(completed([], 1))).toBe('(no parts) (+1 artifact)');
    expect(outputSummary(completed([{ kind: 'text', text: 'ok' }], 2))).toBe('ok (+2 artifacts)');
  });
});
