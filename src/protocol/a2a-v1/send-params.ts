import { z } from 'zod';
import { MAX_ID_CHARS } from '../bounds.js';
import { fieldsOf, historyLength, plainItems, plainRecord, text } from '../plain-params.js';
import { V1MessageSchema, V1MetadataSchema, type V1Message, type V1Part, type V1Role } from './schemas.js';

/** The caller's capability token on version 11 (v1.0 requests own `token`: a push config's). */
export const V1CapabilitySchema = z.string().min(1).max(256);
/** How many of the newest history messages an answer carries (all when absent). */
export const V1HistoryLengthSchema = z.number().int().min(0).optional();

/** Params of version 11's `SendMessage` and `SendStreamingMessage`: v1.0's request plus the caller's `capability`. */
export const V1SendParamsSchema = z.object({
  capability: V1CapabilitySchema,
  to: z.string().min(1).max(256).optional(),
  message: V1MessageSchema,
  configuration: z.object({ historyLength: V1HistoryLengthSchema }).loose().optional(),
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

const TEXT_PART_KEYS = ['text', 'raw', 'url', 'data', 'filename', 'mediaType', 'metadata'] as const;

/** A v1.0 text part (`text`, with optional `filename`, `mediaType`, `metadata`) as the schema returns it. */
function textPart(value: unknown): V1Part | undefined {
  const fields = fieldsOf(value, TEXT_PART_KEYS);
  // Another content member beside `text` (or instead of it) is the schema's to take or refuse.
  if (fields === undefined || 'raw' in fields || 'url' in fields || 'data' in fields) return undefined;
  if (typeof fields.text !== 'string') return undefined;
  const out: V1Part = { text: fields.text };
  if ('filename' in fields) {
    if (typeof fields.filename !== 'string') return undefined;
    out.filename = fields.filename;
  }
  if ('mediaType' in fields) {
    if (typeof fields.mediaType !== 'string') return undefined;
    out.mediaType = fields.mediaType;
  }
  if ('metadata' in fields) {
    const metadata = plainRecord(fields.metadata, PART_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}

const MESSAGE_KEYS = [
  'messageId',
  'contextId',
  'taskId',
  'role',
  'parts',
  'metadata',
  'extensions',
  'referenceTaskIds',
] as const;

/** A v1.0 message of text parts, without extensions or referenced tasks, as the schema returns it. */
function message(value: unknown): V1Message | undefined {
  const fields = fieldsOf(value, MESSAGE_KEYS);
  if (fields === undefined || 'extensions' in fields || 'referenceTaskIds' in fields) return undefined;
  const { messageId, role } = fields;
  if (!text(messageId, MAX_ID_CHARS) || (role !== 'ROLE_USER' && role !== 'ROLE_AGENT')) return undefined;
  const items = plainItems(fields.parts);
  if (items === undefined || items.length === 0) return undefined;
  const parts: V1Part[] = [];
  for (const item of items) {
    const part = textPart(item);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  const out = { messageId } as V1Message;
  if ('contextId' in fields) {
    if (typeof fields.contextId !== 'string') return undefined;
    out.contextId = fields.contextId;
  }
  if ('taskId' in fields) {
    if (typeof fields.taskId !== 'string') return undefined;
    out.taskId = fields.taskId;
  }
  out.role = role as V1Role;
  out.parts = parts;
  if ('metadata' in fields) {
    const metadata = plainRecord(fields.metadata, MESSAGE_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}

const SEND_KEYS = ['capability', 'to', 'message', 'configuration', 'metadata'] as const;
const CONFIGURATION_KEYS = ['historyLength'] as const;

/**
 * `SendMessage`'s params in their common shape (a message of text parts; a
 * configuration with at most `historyLength`), accepted without running
 * `V1SendParamsSchema`: a value accepted here is exactly what `parseParams`
 * makes of it with the schema (a property test holds the two together);
 * anything else (as `plainParams` says) is `undefined`, for the schema to
 * parse, answer or refuse. Each field is read once.
 */
export function plainV1Send(value: unknown): V1SendParams | undefined {
  try {
    return plainSend(value);
  } catch {
    // A value whose reading throws (a getter, a proxy): the schema says what it makes of it.
    return undefined;
  }
}

function plainSend(value: unknown): V1SendParams | undefined {
  const fields = fieldsOf(value, SEND_KEYS);
  if (fields === undefined || !text(fields.capability, 256)) return undefined;
  const out = { capability: fields.capability } as V1SendParams;
  if ('to' in fields) {
    if (!text(fields.to, 256)) return undefined;
    out.to = fields.to;
  }
  const sent = message(fields.message);
  if (sent === undefined) return undefined;
  out.message = sent;
  if ('configuration' in fields) {
    const configuration = fieldsOf(fields.configuration, CONFIGURATION_KEYS);
    if (configuration === undefined) return undefined;
    if (!('historyLength' in configuration)) out.configuration = {};
    else if (historyLength(configuration.historyLength)) {
      out.configuration = { historyLength: configuration.historyLength };
    } else return undefined;
  }
  if ('metadata' in fields) {
    const metadata = plainRecord(fields.metadata, REQUEST_METADATA_DEPTH);
    if (metadata === undefined) return undefined;
    out.metadata = metadata;
  }
  return out;
}
