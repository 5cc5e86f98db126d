import { z } from 'zod';
import type { FileContent, Part } from '../parts.js';
import type { Artifact, Message, MessageSend } from '../task.js';
import { V03_CARRY_KEY, V1_CARRY_KEY, mappingError, putCarried, takeCarried, takeExtras, withExtras } from './carry.js';
import { ROLE_V03, ROLE_V1 } from './field-table.js';
import type { V1Artifact, V1Message, V1Part } from './schemas.js';

/** The v1.0-only fields of a part, as carried on the v0.3 side (`wrapped`: a data value that is not an object). */
const PART_EXTRAS = {
  mediaType: z.string().optional(),
  filename: z.string().optional(),
  wrapped: z.literal(true).optional(),
};
/** The v1.0-only fields of a message, as carried on the v0.3 side. */
const MESSAGE_EXTRAS = {
  extensions: z.array(z.string()).min(1).optional(),
  referenceTaskIds: z.array(z.string()).min(1).optional(),
};
/** The v1.0-only fields of an artifact, as carried on the v0.3 side. */
export const ARTIFACT_EXTRAS = { extensions: z.array(z.string()).min(1).optional() };
/** The v0.3-only fields of a stored message, as carried on the v1.0 side. */
const MessageCarrySchema = z.object({ from: z.string(), timestamp: z.string() });

function nonEmpty<T>(list: readonly T[] | undefined): T[] | undefined {
  return list === undefined || list.length === 0 ? undefined : [...list];
}

function defined<T extends object>(value: T): T {
  for (const key of Object.keys(value) as (keyof T)[]) if (value[key] === undefined) delete value[key];
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether a data object is what `partToV03` makes of a value that is not an object: `{value}` alone. */
function isWrapping(data: Record<string, unknown>): boolean {
  const keys = Object.keys(data);
  return keys.length === 1 && keys[0] === 'value' && !isPlainObject(data.value);
}

/** Which extras a text part's carrier may hold (`wrapped` is for data parts only). */
const textAccepts = (extras: Record<string, unknown>) => extras.wrapped === undefined;
/** Which extras a data part's carrier may hold: `wrapped` only around what `partToV03` wraps. */
const dataAccepts = (data: Record<string, unknown>) => (extras: Record<string, unknown>) =>
  extras.wrapped === undefined || isWrapping(data);

/** A v0.3 part in v1.0 shape: its content by member. */
export function partToV1(part: Part): V1Part {
  if (part.kind === 'file') {
    const { bytes, uri, name, mimeType } = part.file;
    return defined({ raw: bytes, url: uri, filename: name, mediaType: mimeType, metadata: part.metadata });
  }
  if (part.kind === 'text') {
    const { extras, metadata } = takeExtras(part.metadata, V1_CARRY_KEY, PART_EXTRAS, textAccepts);
    return defined({
      text: part.text,
      filename: extras.filename as string | undefined,
      mediaType: extras.mediaType as string | undefined,
      metadata,
    });
  }
  const { extras, metadata } = takeExtras(part.metadata, V1_CARRY_KEY, PART_EXTRAS, dataAccepts(part.data));
  return defined({
    data: extras.wrapped === true ? part.data.value : part.data,
    filename: extras.filename as string | undefined,
    mediaType: extras.mediaType as string | undefined,
    metadata,
  });
}

/** A v1.0 part in v0.3 shape; fields v0.3 has no member for go under `metadata["a2a.v1"]`. */
export function partToV03(part: V1Part): Part {
  if (part.raw !== undefined || part.url !== undefined) {
    const file: FileContent = defined({
      name: part.filename,
      mimeType: part.mediaType,
      uri: part.url,
      bytes: part.raw,
    });
    return defined({ kind: 'file' as const, file, metadata: part.metadata });
  }
  const extras = { mediaType: part.mediaType, filename: part.filename };
  if (part.text !== undefined) {
    const metadata = withExtras(part.metadata, V1_CARRY_KEY, extras, PART_EXTRAS, textAccepts);
    return defined({ kind: 'text' as const, text: part.text, metadata });
  }
  const object = isPlainObject(part.data);
  const data = object ? (part.data as Record<string, unknown>) : { value: part.data ?? null };
  const metadata = withExtras(
    part.metadata,
    V1_CARRY_KEY,
    { ...extras, wrapped: object ? undefined : true },
    PART_EXTRAS,
    dataAccepts(data),
  );
  return defined({ kind: 'data' as const, data, metadata });
}

/** A stored v0.3 message in v1.0 shape (`from` and `timestamp` carried in its metadata). */
export function messageToV1(message: Message): V1Message {
  const { extras, metadata } = takeExtras(message.metadata, V1_CARRY_KEY, MESSAGE_EXTRAS);
  return defined({
    messageId: message.messageId,
    contextId: message.contextId,
    taskId: message.taskId,
    role: ROLE_V1[message.role],
    parts: message.parts.map(partToV1),
    metadata: putCarried(metadata, V03_CARRY_KEY, { from: message.from, timestamp: message.timestamp }),
    extensions: extras.extensions as string[] | undefined,
    referenceTaskIds: extras.referenceTaskIds as string[] | undefined,
  });
}

/** The v0.3 metadata of a v1.0 message: its own, plus the v1.0-only fields. */
function messageMetadataToV03(message: V1Message, metadata: Record<string, unknown> | undefined) {
  return withExtras(
    metadata,
    V1_CARRY_KEY,
    { extensions: nonEmpty(message.extensions), referenceTaskIds: nonEmpty(message.referenceTaskIds) },
    MESSAGE_EXTRAS,
  );
}

/** A v1.0 message this broker produced, back in stored v0.3 shape. */
export function messageToV03(message: V1Message): Message {
  const { fields, metadata } = takeCarried(message.metadata, V03_CARRY_KEY, MessageCarrySchema, 'message');
  if (message.taskId === undefined || message.contextId === undefined) {
    throw mappingError('a stored message names its taskId and contextId');
  }
  return defined({
    kind: 'message' as const,
    messageId: message.messageId,
    role: ROLE_V03[message.role],
    from: fields.from,
    taskId: message.taskId,
    contextId: message.contextId,
    timestamp: fields.timestamp,
    parts: message.parts.map(partToV03),
    metadata: messageMetadataToV03(message, metadata),
  });
}

/** A v1.0 message a client sends, as the v0.3 message the broker takes (the broker stamps the rest). */
export function messageSendFromV1(message: V1Message): MessageSend {
  return defined({
    messageId: message.messageId,
    parts: message.parts.map(partToV03),
    metadata: messageMetadataToV03(message, message.metadata),
  });
}

/** A v0.3 artifact in v1.0 shape. */
export function artifactToV1(artifact: Artifact): V1Artifact {
  const { extras, metadata } = takeExtras(artifact.metadata, V1_CARRY_KEY, ARTIFACT_EXTRAS);
  return defined({
    artifactId: artifact.artifactId,
    name: artifact.name,
    description: artifact.description,
    parts: artifact.parts.map(partToV1),
    metadata,
    extensions: extras.extensions as string[] | undefined,
  });
}

/** A v1.0 artifact in v0.3 shape (its `extensions` under `metadata["a2a.v1"]`). */
export function artifactToV03(artifact: V1Artifact): Artifact {
  return defined({
    artifactId: artifact.artifactId,
    name: artifact.name,
    description: artifact.description,
    parts: artifact.parts.map(partToV03),
    metadata: withExtras(
      artifact.metadata,
      V1_CARRY_KEY,
      { extensions: nonEmpty(artifact.extensions) },
      ARTIFACT_EXTRAS,
    ),
  });
}
