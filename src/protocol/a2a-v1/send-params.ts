import { z } from 'zod';
import { MAX_ID_CHARS } from '../bounds.js';
import { historyLength, plainObject, plainRecord, text } from '../plain-params.js';
import { V1MessageSchema, V1MetadataSchema, type V1Message, type V1Part, type V1Role } from './schemas.js';

/** Params of version 11's `SendMessage` and `SendStreamingMessage`: v1.0's request plus the caller's `capability`. */
export const V1SendParamsSchema = z.object({
  capability: z.string().min(1).max(256),
  to: z.string().min(1).max(256).optional(),
  message: V1MessageSchema,
  configuration: z
    .object({ historyLength: z.number().int().min(0).optional() })
    .loose()
    .optional(),
  metadata: V1MetadataSchema.optional(),
});
/** Params of version 11's `SendMessage` (inferred from `V1SendParamsSchema`). */
export type V1SendParams = z.infer<typeof V1SendParamsSchema>;

/** Depth of a part's metadata below the params (`message.parts[i].metadata`). */
const PART_METADATA_DEPTH = 4;
/** Depth of a message's metadata below the params (`message.metadata`). */
const MESSAGE_METADATA_DEPTH = 2;
/** Depth of the request's metadata below the params. */
const REQUEST_METADATA_DEPTH = 1;

/** A v1.0 text part (`text`, with optional `filename`, `mediaType`, `metadata`) as the schema returns it. */
function textPart(value: unknown): V1Part | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) {
    if (key !== 'text' && key !== 'filename' && key !== 'mediaType' && key !== 'metadata') return undefined;
  }
  if (typeof value.text !== 'string') return undefined;
  const out: V1Part = { text: value.text };
  if ('filename' in value) {
    if (typeof value.filename !== 'string') return undefined;
    out.filename = value.filename;
  }
  if ('mediaType' in value) {
    if (typeof value.mediaType !== 'string') return undefined;
    out.mediaType = value.mediaType;
  }
  if ('metadata' in value) {
    const metadata = plainRecord(value.metadata, PART_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}

/** A v1.0 message of text parts, without extensions or referenced tasks, as the schema returns it. */
function message(value: unknown): V1Message | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) {
    if (
      key !== 'messageId' &&
      key !== 'contextId' &&
      key !== 'taskId' &&
      key !== 'role' &&
      key !== 'parts' &&
      key !== 'metadata'
    ) {
      return undefined;
    }
  }
  const { messageId, role, parts: rawParts } = value;
  if (!text(messageId, MAX_ID_CHARS) || (role !== 'ROLE_USER' && role !== 'ROLE_AGENT')) return undefined;
  if (!Array.isArray(rawParts) || rawParts.length === 0) return undefined;
  const parts: V1Part[] = [];
  for (const raw of rawParts) {
    const part = textPart(raw);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  const out = { messageId } as V1Message;
  if ('contextId' in value) {
    if (typeof value.contextId !== 'string') return undefined;
    out.contextId = value.contextId;
  }
  if ('taskId' in value) {
    if (typeof value.taskId !== 'string') return undefined;
    out.taskId = value.taskId;
  }
  out.role = role as V1Role;
  out.parts = parts;
  if ('metadata' in value) {
    const metadata = plainRecord(value.metadata, MESSAGE_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}

/**
 * `SendMessage`'s params in their common shape (a message of text parts; a
 * configuration with at most `historyLength`), accepted without running
 * `V1SendParamsSchema`: a value accepted here is exactly what `parseParams`
 * makes of it with the schema (a property test holds the two together);
 * anything else is `undefined`, for the schema to parse, answer or refuse.
 */
export function plainV1Send(value: unknown): V1SendParams | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) {
    if (key !== 'capability' && key !== 'to' && key !== 'message' && key !== 'configuration' && key !== 'metadata') {
      return undefined;
    }
  }
  if (!text(value.capability, 256)) return undefined;
  const sent = message(value.message);
  if (sent === undefined) return undefined;
  const out = { capability: value.capability } as V1SendParams;
  if ('to' in value) {
    if (!text(value.to, 256)) return undefined;
    out.to = value.to;
  }
  out.message = sent;
  if ('configuration' in value) {
    const configuration = value.configuration;
    if (!plainObject(configuration)) return undefined;
    let keys = 0;
    for (const key in configuration) {
      if (key !== 'historyLength') return undefined;
      keys++;
    }
    if (keys === 0) out.configuration = {};
    else if (historyLength(configuration.historyLength)) {
      out.configuration = { historyLength: configuration.historyLength };
    } else return undefined;
  }
  if ('metadata' in value) {
    const metadata = plainRecord(value.metadata, REQUEST_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}
