import { z } from 'zod';
import { MAX_ID_CHARS } from './bounds.js';
import type { WorkEnvelope, WorkHeaders } from './work-envelope.js';

/**
 * A chunk of an artifact a hop writes while it runs (a model agent's answer
 * as the model writes it), on its way from the worker to the Coordinator. It
 * travels on the results role beside the hop's results, as a work envelope
 * whose message is this one data part, and becomes an A2A artifact update of
 * the work item's task (`append: true` after the first chunk, `lastChunk`
 * on the last) and an `artifact-chunk` event of the item.
 *
 * `offset` is where the chunk's text starts in the artifact's text: a
 * receiver drops what it already has (a chunk sent again after a
 * redelivered hop re-runs the step that wrote it) and never leaves a gap.
 * Chunks are previews, not durable work: see docs/agents.md (Streaming).
 */

/** The `type` of a chunk's data part. */
export const ARTIFACT_CHUNK_TYPE = 'switchboard.artifact-chunk';
/** The most characters of text one chunk carries (a longer write is split). */
export const MAX_CHUNK_CHARS = 2048;
/** The most characters an artifact streamed by chunks grows to; text past it is not streamed (the hop's output still has it). */
export const MAX_STREAMED_ARTIFACT_CHARS = 262_144;

/**
 * A piece of an answer a hop streams while it runs (`hop.stream`): sent on
 * the results role, its text placed at `offset` of the artifact `artifactId`
 * of the hop's work item; `lastChunk` ends the artifact.
 */
export const ArtifactChunkSchema = z.strictObject({
  type: z.literal(ARTIFACT_CHUNK_TYPE),
  /** The work item (the hop's `runId`). */
  itemId: z.string().min(1).max(MAX_ID_CHARS),
  /** The hop's number in the item. */
  hop: z.number().int().min(0),
  /** The role that runs the hop. */
  role: z.string().min(1).max(128),
  /** The artifact the chunk belongs to: one per answer (a model agent: one per model call of the hop). */
  artifactId: z.string().min(1).max(MAX_ID_CHARS),
  /** The artifact's name, on its first chunk. */
  name: z.string().max(256).optional(),
  /** Where the text starts in the artifact's text (characters). */
  offset: z.number().int().min(0).max(MAX_STREAMED_ARTIFACT_CHARS),
  text: z.string().max(MAX_CHUNK_CHARS),
  /** The artifact's last chunk: its text ends here. */
  lastChunk: z.boolean(),
});
/** A chunk of an artifact as on the bus (inferred from `ArtifactChunkSchema`). */
export interface ArtifactChunk extends z.infer<typeof ArtifactChunkSchema> {}

/** The key a chunk is published under: the bus keeps one message per key, so a chunk sent again is one message. */
export function chunkKey(
  hopKey: string,
  chunk: Pick<ArtifactChunk, 'artifactId' | 'offset' | 'text' | 'lastChunk'>,
): string {
  const end = chunk.offset + chunk.text.length;
  return `${hopKey}:chunk:${chunk.artifactId}:${chunk.offset}-${end}${chunk.lastChunk ? ':last' : ''}`;
}

/** A chunk as the bus carries it: a work envelope of the hop's headers whose message is the chunk. */
export function chunkEnvelope(headers: WorkHeaders, chunk: ArtifactChunk): WorkEnvelope {
  return {
    kind: 'work',
    headers: {
      taskId: headers.taskId,
      runId: headers.runId,
      hop: headers.hop,
      attempt: headers.attempt,
      idempotencyKey: headers.idempotencyKey,
    },
    message: { role: 'agent', parts: [{ kind: 'data', data: { ...chunk } }] },
  };
}

/** The chunk an envelope carries, or undefined when it carries none. */
export function chunkOf(envelope: WorkEnvelope): ArtifactChunk | undefined {
  const part = envelope.message.parts[0];
  if (envelope.message.parts.length !== 1 || part?.kind !== 'data') return undefined;
  const parsed = ArtifactChunkSchema.safeParse(part.data);
  return parsed.success ? parsed.data : undefined;
}
