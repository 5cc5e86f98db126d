import type { ItemOutput } from '../protocol/item-output.js';
import type { Part } from '../protocol/parts.js';
import type { Artifact } from '../protocol/task.js';
import type { ResultEnvelope } from '../protocol/work-envelope.js';

/**
 * A work item's output, computed from how its run ended and from the hop
 * result that ended it; and the artifacts its A2A task carries for it.
 * Pure: the Coordinator stores what this returns with the item.
 */

/** How a run ended, as the run's context says (a `WorkflowRunContext` fits). */
export interface RunEnding {
  stage: string | null;
  hop: number;
  failure: { code: string; reason: string; stage: string | null; hop: number } | null;
  cancellation: { by: string | null; reason: string | null } | null;
}

/** The fields of the hop result that ended the run that its output keeps. */
export type EndingResult = Pick<ResultEnvelope, 'role' | 'outcome' | 'parts' | 'artifacts' | 'error'>;

/** Failure codes that a hop's own failure causes: the output keeps that hop's error. */
const HOP_FAILURE_CODES: ReadonlySet<string> = new Set([
  'NON_RETRYABLE',
  'RETRIES_EXHAUSTED',
  'RULE_ENDED',
  'LOOP_BOUND',
]);

/**
 * The output of an item whose run ended in `state`: a completed run keeps
 * the parts and artifacts of `last` (the hop result that completed it); a
 * failed one its failure (code, message, stage, hop, and the hop's error
 * when a hop's failure ended it); a canceled one who canceled it and why.
 */
export function itemOutput(
  state: 'completed' | 'failed' | 'canceled',
  run: RunEnding,
  last: EndingResult | undefined,
): ItemOutput {
  if (state === 'completed') {
    return {
      state,
      stage: run.stage,
      hop: run.hop,
      role: last?.role ?? null,
      parts: last === undefined ? [] : [...last.parts],
      artifacts: last === undefined ? [] : [...last.artifacts],
    };
  }
  if (state === 'failed') {
    const failure = run.failure;
    const code = failure?.code ?? 'FAILED';
    const error =
      last?.outcome === 'failed' && last.error !== undefined && HOP_FAILURE_CODES.has(code)
        ? { type: last.error.type, message: last.error.message }
        : null;
    return {
      state,
      stage: failure?.stage ?? run.stage,
      hop: failure?.hop ?? run.hop,
      code,
      message: (failure?.reason ?? 'the work item failed').slice(0, 16_000),
      error,
    };
  }
  return {
    state,
    stage: run.stage,
    hop: run.hop,
    by: run.cancellation?.by ?? null,
    reason: run.cancellation?.reason ?? null,
  };
}

/** The artifact ids the Coordinator gives an output's own artifacts on the item's task. */
export const OUTPUT_ARTIFACT_IDS = {
  parts: 'item-output',
  failure: 'item-failure',
  cancellation: 'item-cancellation',
} as const;

/**
 * The artifacts of the item's A2A task that carry its output: a completed
 * item's answer parts (`item-output`) then the artifacts of its last hop as
 * they came; a failure (`item-failure`) or a cancellation
 * (`item-cancellation`) as a line of text and a data part.
 */
export function outputArtifacts(output: ItemOutput): Artifact[] {
  if (output.state === 'completed') {
    const answer: Artifact[] =
      output.parts.length === 0
        ? []
        : [
            {
              artifactId: OUTPUT_ARTIFACT_IDS.parts,
              name: 'output',
              description: `the answer of stage ${output.stage ?? '-'} (hop ${output.hop}${output.role === null ? '' : `, ${output.role}`})`,
              parts: output.parts,
            },
          ];
    return [...answer, ...output.artifacts];
  }
  if (output.state === 'failed') {
    return [
      {
        artifactId: OUTPUT_ARTIFACT_IDS.failure,
        name: 'failure',
        description: `why the work item failed at stage ${output.stage ?? '-'} (hop ${output.hop})`,
        parts: [
          { kind: 'text', text: `${output.code}: ${output.message}`.slice(0, 2000) },
          {
            kind: 'data',
            data: {
              code: output.code,
              message: output.message,
              stage: output.stage,
              hop: output.hop,
              error: output.error,
            },
          },
        ],
      },
    ];
  }
  return [
    {
      artifactId: OUTPUT_ARTIFACT_IDS.cancellation,
      name: 'cancellation',
      description: `who canceled the work item at stage ${output.stage ?? '-'} (hop ${output.hop})`,
      parts: [{ kind: 'data', data: { by: output.by, reason: output.reason, stage: output.stage, hop: output.hop } }],
    },
  ];
}

function partText(part: Part): string {
  switch (part.kind) {
    case 'text':
      return part.text;
    case 'data':
      return JSON.stringify(part.data);
    case 'file':
      return `[file ${part.file.name ?? part.file.uri ?? ''}]`;
  }
}

/**
 * An output in one line of text (whitespace folded): a completed item's
 * parts (and how many artifacts), a failure's code and message, who
 * canceled and why; `-` for none (the item runs).
 */
export function outputSummary(output: ItemOutput | null): string {
  if (output === null) return '-';
  let line: string;
  if (output.state === 'failed') line = `${output.code}: ${output.message}`;
  else if (output.state === 'canceled') {
    line = `canceled${output.by === null ? '' : ` by ${output.by}`}${output.reason === null ? '' : `: ${output.reason}`}`;
  } else {
    const text = output.parts.map(partText).join(' ');
    const n = output.artifacts.length;
    line = `${text === '' ? '(no parts)' : text}${n === 0 ? '' : ` (+${n} artifact${n === 1 ? '' : 's'})`}`;
  }
  return line.replace(/\s+/g, ' ').trim();
}
