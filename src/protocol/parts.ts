import { z } from 'zod';
import { utf8LengthExceeds } from './utf8-length.js';
import { named } from './wire-schema.js';
import {
  A2A_MAX_DATA_BYTES,
  A2A_MAX_FILE_BYTES,
  A2A_MAX_METADATA_BYTES,
  A2A_MAX_TEXT_CHARS,
  MAX_NAME_CHARS,
} from './bounds.js';

/**
 * An issue raised by a bound carries these params; `parseParams` turns it into
 * an `A2A_PAYLOAD_TOO_LARGE` error instead of a generic -32602.
 */
export interface BoundIssueParams {
  errorCode: 'A2A_PAYLOAD_TOO_LARGE';
  limit: 'A2A_MAX_TEXT_CHARS' | 'A2A_MAX_FILE_BYTES' | 'A2A_MAX_DATA_BYTES' | 'A2A_MAX_METADATA_BYTES';
  max: number;
}

/** Counts Unicode code points (a surrogate pair is one character). */
export function codePointLength(text: string): number {
  // Fast path: UTF-16 length is an upper bound of the code point count.
  let count = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        count--;
        i++;
      }
    }
  }
  return count;
}

export function textWithinBound(text: string): boolean {
  return text.length <= A2A_MAX_TEXT_CHARS || codePointLength(text) <= A2A_MAX_TEXT_CHARS;
}

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Size in bytes that a strict, padded base64 string decodes to, or -1 when the
 * string is not valid base64. Never decodes the string.
 */
export function base64DecodedLength(value: string): number {
  if (value.length % 4 !== 0 || !BASE64_RE.test(value)) return -1;
  let pad = 0;
  if (value.endsWith('==')) pad = 2;
  else if (value.endsWith('=')) pad = 1;
  return (value.length / 4) * 3 - pad;
}

const TextSchema = z.string().superRefine((text, ctx) => {
  if (!textWithinBound(text)) {
    ctx.addIssue({
      code: 'custom',
      message: `text part exceeds ${A2A_MAX_TEXT_CHARS} characters`,
      params: { errorCode: 'A2A_PAYLOAD_TOO_LARGE', limit: 'A2A_MAX_TEXT_CHARS', max: A2A_MAX_TEXT_CHARS },
    });
  }
});

const Base64Schema = z.string().superRefine((bytes, ctx) => {
  // The bound is checked on the length first so that a huge string is refused
  // as too large without scanning it.
  const upperBound = (bytes.length / 4) * 3;
  if (upperBound - 2 > A2A_MAX_FILE_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `file part exceeds ${A2A_MAX_FILE_BYTES} decoded bytes`,
      params: { errorCode: 'A2A_PAYLOAD_TOO_LARGE', limit: 'A2A_MAX_FILE_BYTES', max: A2A_MAX_FILE_BYTES },
    });
    return;
  }
  const size = base64DecodedLength(bytes);
  if (size < 0) {
    ctx.addIssue({ code: 'custom', message: 'bytes must be valid padded base64' });
  } else if (size > A2A_MAX_FILE_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `file part exceeds ${A2A_MAX_FILE_BYTES} decoded bytes`,
      params: { errorCode: 'A2A_PAYLOAD_TOO_LARGE', limit: 'A2A_MAX_FILE_BYTES', max: A2A_MAX_FILE_BYTES },
    });
  }
});

/** A JSON object bounded by the bytes of its JSON text (`limit` names the bound in the error). */
function boundedObject(limit: 'A2A_MAX_DATA_BYTES' | 'A2A_MAX_METADATA_BYTES', max: number, what: string) {
  return z.record(z.string(), z.unknown()).superRefine((value, ctx) => {
    let json: string | undefined;
    try {
      json = JSON.stringify(value);
    } catch {
      ctx.addIssue({ code: 'custom', message: `${what} must be JSON` });
      return;
    }
    if (json !== undefined && utf8LengthExceeds(json, max)) {
      ctx.addIssue({
        code: 'custom',
        message: `${what} exceeds ${max} bytes of JSON (${limit}): carry large content in a file part`,
        params: { errorCode: 'A2A_PAYLOAD_TOO_LARGE', limit, max },
      });
    }
  });
}

/** Metadata: a JSON object for extensions, at most `A2A_MAX_METADATA_BYTES` of JSON. */
export const MetadataSchema = boundedObject('A2A_MAX_METADATA_BYTES', A2A_MAX_METADATA_BYTES, 'metadata');
/** Metadata as on the wire (inferred from `MetadataSchema`). */
export type Metadata = z.infer<typeof MetadataSchema>;

/** A text part on the wire: at most `A2A_MAX_TEXT_CHARS` code points of text. */
export const TextPartSchema = z.object({
  kind: z.literal('text'),
  text: TextSchema,
  metadata: MetadataSchema.optional(),
});
/** A text part as on the wire (inferred from `TextPartSchema`). */
export interface TextPart extends z.infer<typeof TextPartSchema> {}

/** A file part's content on the wire: exactly one of `uri` and base64 `bytes`, with optional name and MIME type. */
export const FileContentSchema = z
  .object({
    name: z
      .string()
      .max(MAX_NAME_CHARS * 8)
      .optional(),
    mimeType: z
      .string()
      .max(MAX_NAME_CHARS * 2)
      .optional(),
    uri: z.string().min(1).max(8192).optional(),
    bytes: Base64Schema.optional(),
  })
  .superRefine((file, ctx) => {
    const hasUri = file.uri !== undefined;
    const hasBytes = file.bytes !== undefined;
    if (hasUri === hasBytes) {
      ctx.addIssue({ code: 'custom', message: 'a file carries exactly one of uri or bytes' });
    }
  });
/** A file part's content as on the wire (inferred from `FileContentSchema`). */
export interface FileContent extends z.infer<typeof FileContentSchema> {}

/** A file part on the wire: one file, by URI or inline bytes. */
export const FilePartSchema = z.object({
  kind: z.literal('file'),
  file: named<FileContent>(FileContentSchema),
  metadata: MetadataSchema.optional(),
});
/** A file part as on the wire (inferred from `FilePartSchema`). */
export interface FilePart extends z.infer<typeof FilePartSchema> {}

/** A data part on the wire: one JSON object. */
export const DataPartSchema = z.object({
  kind: z.literal('data'),
  data: boundedObject('A2A_MAX_DATA_BYTES', A2A_MAX_DATA_BYTES, 'data part'),
  metadata: MetadataSchema.optional(),
});
/** A data part as on the wire (inferred from `DataPartSchema`). */
export interface DataPart extends z.infer<typeof DataPartSchema> {}

/** A part of a message or artifact on the wire: text, file or data, told apart by `kind`. */
export const PartSchema = z.discriminatedUnion('kind', [TextPartSchema, FilePartSchema, DataPartSchema]);
/** A part as on the wire (inferred from `PartSchema`). */
export type Part = z.infer<typeof PartSchema>;
