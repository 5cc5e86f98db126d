import { A2A_MAX_METADATA_BYTES, MAX_ID_CHARS, MAX_JSON_DEPTH } from './bounds.js';
import { jsonShapeIssue } from './json-shape.js';
import type { SendParams, SetStatusParams } from './methods.js';
import { type TextPart, textWithinBound } from './parts.js';
import { utf8LengthExceeds } from './utf8-length.js';
import { type MessageSend, TASK_STATES, type TaskState } from './task.js';

/**
 * The params of the two calls every task makes (`a2a.message.send` and
 * `a2a.tasks.status`) in their common shape, accepted without running the
 * schema: a message of text parts, optional metadata on the message and its
 * parts, plain objects without keys the schema would drop. A value accepted
 * here is exactly what `parseParams` makes of it with the method's schema
 * (the same values and key order; a property test holds the two together);
 * anything else (another shape, a value the schema refuses, an unknown key,
 * a property that is inherited, not enumerable or not an own one, a proxy
 * that throws) is `undefined`, and the caller parses it with the schema,
 * which makes the answer or the error. Each field is read once. The schema
 * stays the one definition: this only spares the generic parse (several
 * times this check's cost) on the hot path.
 */
export function plainParams(method: string, value: unknown): SendParams | SetStatusParams | undefined {
  try {
    if (method === 'a2a.message.send') return plainSend(value);
    if (method === 'a2a.tasks.status') return plainStatus(value);
  } catch {
    // A value whose reading throws (a getter, a proxy): the schema says what it makes of it.
  }
  return undefined;
}

const STATES: ReadonlySet<string> = new Set(TASK_STATES);

/** Depth of a part's metadata below the params (`message.parts[i].metadata`). */
const PART_METADATA_DEPTH = 4;
/** Depth of a message's metadata below the params (`message.metadata`). */
const MESSAGE_METADATA_DEPTH = 2;

const isEnumerable = Object.prototype.propertyIsEnumerable;

/** An object as JSON makes it: no array, no class, no symbol key. */
export function plainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(value).length === 0;
}

/**
 * The fields of a plain object (`plainObject`) whose every enumerable key is
 * one of `keys`, each read once, with those of `keys` it holds (as `in`
 * finds them, which is how the schema looks) as own enumerable properties;
 * else `undefined`.
 */
export function fieldsOf(value: unknown, keys: readonly string[]): Record<string, unknown> | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) if (!keys.includes(key)) return undefined;
  const fields: Record<string, unknown> = {};
  for (const key of keys) {
    if (!(key in value)) continue;
    if (!isEnumerable.call(value, key)) return undefined;
    fields[key] = value[key];
  }
  return fields;
}

/** The items of an array as JSON makes it, each read once; else `undefined`. */
export function plainItems(value: unknown): unknown[] | undefined {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return undefined;
  const length = value.length;
  const items: unknown[] = [];
  for (let i = 0; i < length; i++) {
    if (!(i in value)) return undefined;
    items.push(value[i]);
  }
  return items;
}

/** A string of 1 to `max` UTF-16 units (`z.string().min(1).max(max)`). */
export function text(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= max;
}

/** `HistoryLengthSchema`'s number: a safe integer from 0. */
export function historyLength(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A JSON object at `depth` below the params as `z.record(z.string(),
 * z.unknown())` returns it (a copy, its values shared, each read once), when
 * it passes `parseParams`'s shape check there and, with `maxBytes`, is at
 * most that many bytes of JSON; else `undefined`.
 */
export function plainRecord(value: unknown, depth: number, maxBytes?: number): Record<string, unknown> | undefined {
  if (!plainObject(value)) return undefined;
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    // `__proto__` is the shape check's to refuse; a function `constructor` the schema's.
    if (key === '__proto__') return undefined;
    const item = value[key];
    if (key === 'constructor' && typeof item === 'function') return undefined;
    copy[key] = item;
  }
  if (jsonShapeIssue(copy, MAX_JSON_DEPTH - depth) !== undefined) return undefined;
  if (maxBytes !== undefined) {
    const json = JSON.stringify(copy) as string | undefined;
    if (json !== undefined && utf8LengthExceeds(json, maxBytes)) return undefined;
  }
  return copy;
}

/** Metadata as `MetadataSchema` returns it, or `undefined` when it is not that simple. */
function metadata(value: unknown, depth: number): Record<string, unknown> | undefined {
  return plainRecord(value, depth, A2A_MAX_METADATA_BYTES);
}

const TEXT_PART_KEYS = ['kind', 'text', 'metadata'] as const;

function textPart(value: unknown): TextPart | undefined {
  const part = fieldsOf(value, TEXT_PART_KEYS);
  if (part === undefined) return undefined;
  const { text: body } = part;
  if (part.kind !== 'text' || typeof body !== 'string' || !textWithinBound(body)) return undefined;
  if (!('metadata' in part)) return { kind: 'text', text: body };
  const meta = metadata(part.metadata, PART_METADATA_DEPTH);
  return meta === undefined ? undefined : { kind: 'text', text: body, metadata: meta };
}

const MESSAGE_KEYS = ['messageId', 'parts', 'metadata'] as const;

function message(value: unknown): MessageSend | undefined {
  const fields = fieldsOf(value, MESSAGE_KEYS);
  if (fields === undefined) return undefined;
  const items = plainItems(fields.parts);
  if (items === undefined || items.length === 0) return undefined;
  const parts: TextPart[] = [];
  for (const item of items) {
    const part = textPart(item);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  const out: MessageSend = {} as MessageSend;
  if ('messageId' in fields) {
    const { messageId } = fields;
    if (!text(messageId, MAX_ID_CHARS)) return undefined;
    out.messageId = messageId;
  }
  out.parts = parts;
  if ('metadata' in fields) {
    const meta = metadata(fields.metadata, MESSAGE_METADATA_DEPTH);
    if (meta === undefined) return undefined;
    out.metadata = meta;
  }
  return out;
}

const SEND_KEYS = ['token', 'message', 'to', 'taskId', 'historyLength', 'blocking'] as const;

function plainSend(value: unknown): SendParams | undefined {
  const fields = fieldsOf(value, SEND_KEYS);
  if (fields === undefined) return undefined;
  const { token, to, taskId } = fields;
  if (!text(token, 256)) return undefined;
  // Exactly one of `to` (a new task) and `taskId` (an existing one).
  if ('to' in fields === 'taskId' in fields) return undefined;
  if ('to' in fields ? !text(to, 256) : !text(taskId, MAX_ID_CHARS)) return undefined;
  const sent = message(fields.message);
  if (sent === undefined) return undefined;
  const out = { token, message: sent } as SendParams;
  if ('to' in fields) out.to = to as string;
  else out.taskId = taskId as string;
  if ('historyLength' in fields) {
    if (!historyLength(fields.historyLength)) return undefined;
    out.historyLength = fields.historyLength;
  }
  if ('blocking' in fields) {
    if (typeof fields.blocking !== 'boolean') return undefined;
    out.blocking = fields.blocking;
  }
  return out;
}

const STATUS_KEYS = ['token', 'id', 'state', 'message', 'historyLength'] as const;

function plainStatus(value: unknown): SetStatusParams | undefined {
  const fields = fieldsOf(value, STATUS_KEYS);
  if (fields === undefined) return undefined;
  const { token, id, state } = fields;
  if (!text(token, 256) || !text(id, MAX_ID_CHARS) || typeof state !== 'string' || !STATES.has(state)) {
    return undefined;
  }
  const out = { token, id, state: state as TaskState } as SetStatusParams;
  if ('message' in fields) {
    const sent = message(fields.message);
    if (sent === undefined) return undefined;
    out.message = sent;
  }
  if ('historyLength' in fields) {
    if (!historyLength(fields.historyLength)) return undefined;
    out.historyLength = fields.historyLength;
  }
  return out;
}
