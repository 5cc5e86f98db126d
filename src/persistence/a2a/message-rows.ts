import type { Message } from '../../protocol/task.js';

/** A message row as the store reads it back: the columns a message is rebuilt from (its task's id is the caller's). */
export interface MessageRow {
  message_id: string | Buffer;
  role: Message['role'];
  from_name: string;
  body: string;
}

/** A compact body is stored only below this many bytes, so that its size is read without reading a large row. */
export const COMPACT_BODY_MAX_BYTES = 1000;
/**
 * What a compact body (`[ms, text]`) weighs less than the object it stands
 * for, `{"timestamp":"<24 characters>","parts":[{"kind":"text","text":…}]}`
 * (the milliseconds as 13 digits).
 */
export const COMPACT_BODY_SAVED_BYTES = 57;
/** A message id stored as the 16 bytes of a UUID weighs its 36 characters on the wire. */
const UUID_TEXT_BYTES = 36;
/** The JSON around a message's columns on the wire, counted once per message. */
const MESSAGE_FRAME_BYTES = 80;

/**
 * A message's size on the wire, from its row without reading it: the body,
 * the columns it does not repeat, and the JSON around them (octet_length
 * reads a value's size from its record header). `messageRowBytes` is the
 * same sum over a row in hand.
 */
export const MESSAGE_BYTES = `octet_length(body) + CASE WHEN typeof(message_id) = 'blob' THEN ${UUID_TEXT_BYTES} ELSE octet_length(message_id) END
  + octet_length(from_name) + ${MESSAGE_FRAME_BYTES}
  + CASE WHEN octet_length(body) < ${COMPACT_BODY_MAX_BYTES} AND substr(body, 1, 1) = '[' THEN ${COMPACT_BODY_SAVED_BYTES} ELSE 0 END`;

/** `MESSAGE_BYTES` of a row in hand, as SQLite counts it over the stored row (UTF-8 bytes). */
export function messageRowBytes(row: MessageRow): number {
  const body = Buffer.byteLength(row.body);
  const id = typeof row.message_id === 'string' ? Buffer.byteLength(row.message_id) : UUID_TEXT_BYTES;
  const compact = body < COMPACT_BODY_MAX_BYTES && row.body.startsWith('[') ? COMPACT_BODY_SAVED_BYTES : 0;
  return body + id + Buffer.byteLength(row.from_name) + MESSAGE_FRAME_BYTES + compact;
}
