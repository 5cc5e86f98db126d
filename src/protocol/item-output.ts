import { z } from 'zod';
import { MAX_NAME_CHARS } from './bounds.js';
import { type DataPart, type FilePart, PartSchema, type TextPart } from './parts.js';
import { type Artifact, ArtifactSchema } from './task.js';
import { RoleSchema, type WorkError, WorkErrorSchema } from './work-envelope.js';
import { named } from './wire-schema.js';

/**
 * What a work item ended with, kept with the item for good (not subject to
 * the Context Engine's retention): the last stage's answer when it
 * completed, the failure when it failed, who canceled it and why when it
 * was canceled. `ItemStatus.output` and `Coordinator.settled()` carry it,
 * `switchboard items show` prints it, and the item's A2A task carries it as
 * artifacts.
 */

/** A stage name as an output names it (null when the run ended at no stage). */
const OutputStageSchema = z.string().min(1).max(MAX_NAME_CHARS).nullable();
/** The run's hop number when it ended. */
const OutputHopSchema = z.number().int().nonnegative();

/** A completed item's output: the parts and artifacts of the hop that completed it. */
export const CompletedItemOutputSchema = z.object({
  state: z.literal('completed'),
  /** The stage whose hop completed the run. */
  stage: OutputStageSchema,
  hop: OutputHopSchema,
  /** The role that ran that hop (null when no hop result ended the run). */
  role: RoleSchema.nullable(),
  parts: z.array(named<TextPart | FilePart | DataPart>(PartSchema)),
  artifacts: z.array(named<Artifact>(ArtifactSchema)),
});
/** A completed item's output (inferred from `CompletedItemOutputSchema`). */
export interface CompletedItemOutput extends z.infer<typeof CompletedItemOutputSchema> {}

/** A failed item's output: why it failed, and the stage and hop it failed at. */
export const FailedItemOutputSchema = z.object({
  state: z.literal('failed'),
  /** The stage it failed at. */
  stage: OutputStageSchema,
  hop: OutputHopSchema,
  /** The run's failure code (`NON_RETRYABLE`, `RETRIES_EXHAUSTED`, `GOVERNANCE_DENIED`, `BUDGET_EXCEEDED`, ...). */
  code: z.string().min(1).max(MAX_NAME_CHARS),
  message: z.string().max(16_000),
  /** The failing hop's own error, when a hop's failure ended the run. */
  error: named<WorkError>(WorkErrorSchema).nullable(),
});
/** A failed item's output (inferred from `FailedItemOutputSchema`). */
export interface FailedItemOutput extends z.infer<typeof FailedItemOutputSchema> {}

/** A canceled item's output: who canceled it, why, and where the run stood. */
export const CanceledItemOutputSchema = z.object({
  state: z.literal('canceled'),
  stage: OutputStageSchema,
  hop: OutputHopSchema,
  by: z.string().max(256).nullable(),
  reason: z.string().max(2000).nullable(),
});
/** A canceled item's output (inferred from `CanceledItemOutputSchema`). */
export interface CanceledItemOutput extends z.infer<typeof CanceledItemOutputSchema> {}

/** What a work item ended with, told apart by `state` (the item's final state). */
export const ItemOutputSchema = z.discriminatedUnion('state', [
  CompletedItemOutputSchema,
  FailedItemOutputSchema,
  CanceledItemOutputSchema,
]);
/** What a work item ended with (inferred from `ItemOutputSchema`). */
export type ItemOutput = z.infer<typeof ItemOutputSchema>;
