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
 * anything else (another shape, a value the schema refuses, an unknown key)
 * is `undefined`, and the caller parses it with the schema, which makes the
 * answer or the error. The schema stays the one definition: this only spares
 * the generic parse (several times this check's cost) on the hot path.
 */
export function plainParams(method: string, value: unknown): SendParams | SetStatusParams | undefined {
  if (method === 'a2a.message.send') return plainSend(value);
  if (method === 'a2a.tasks.status') return plainStatus(value);
  return undefined;
}

const STATES: ReadonlySet<string> = new Set(TASK_STATES);

/** Depth of a part's metadata below the params (`message.parts[i].metadata`). */
const PART_METADATA_DEPTH = 4;
/** Depth of a message's metadata below the params (`message.metadata`). */
const MESSAGE_METADATA_DEPTH = 2;

/** An object as JSON makes it: no array, no class, no symbol key. */
export function plainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && Object.getOwnPropertySymbols(value).length === 0;
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
 * z.unknown())` returns it (a copy, its values shared), when it passes
 * `parseParams`'s shape check there and, with `maxBytes`, is at most that
 * many bytes of JSON; else `undefined`.
 */
export function plainRecord(value: unknown, depth: number, maxBytes?: number): Record<string, unknown> | undefined {
  if (!plainObject(value)) return undefined;
  if (jsonShapeIssue(value, MAX_JSON_DEPTH - depth) !== undefined) return undefined;
  if (maxBytes !== undefined) {
    let json: string;
    try {
      json = JSON.stringify(value);
    } catch {
      return undefined;
    }
    if (utf8LengthExceeds(json, maxBytes)) return undefined;
  }
  const copy: Record<string, unknown> = {};
  for (const key of Object.keys(value)) copy[key] = value[key];
  return copy;
}

/** Metadata as `MetadataSchema` returns it, or `undefined` when it is not that simple. */
function metadata(value: unknown, depth: number): Record<string, unknown> | undefined {
  return plainRecord(value, depth, A2A_MAX_METADATA_BYTES);
}

function textPart(value: unknown): TextPart | undefined {
  if (!plainObject(value)) return undefined;
  let keys = 0;
  for (const key in value) {
    if (key !== 'kind' && key !== 'text' && key !== 'metadata') return undefined;
    keys++;
  }
  if (value.kind !== 'text' || typeof value.text !== 'string' || !textWithinBound(value.text)) return undefined;
  if (keys === 2) return { kind: 'text', text: value.text };
  if (keys !== 3) return undefined;
  const meta = metadata(value.metadata, PART_METADATA_DEPTH);
  return meta === undefined ? undefined : { kind: 'text', text: value.text, metadata: meta };
}

function message(value: unknown): MessageSend | undefined {
  if (!plainObject(value)) return undefined;
  let keys = 0;
  for (const key in value) {
    if (key !== 'messageId' && key !== 'parts' && key !== 'metadata') return undefined;
    keys++;
  }
  const { messageId, parts: rawParts } = value;
  if (!Array.isArray(rawParts) || rawParts.length === 0) return undefined;
  const parts: TextPart[] = [];
  for (const raw of rawParts) {
    const part = textPart(raw);
    if (part === undefined) return undefined;
    parts.push(part);
  }
  const out: MessageSend = {} as MessageSend;
  if ('messageId' in value) {
    if (!text(messageId, MAX_ID_CHARS)) return undefined;
    out.messageId = messageId;
    keys--;
  }
  out.parts = parts;
  keys--;
  if (keys === 0) return out;
  const meta = metadata(value.metadata, MESSAGE_METADATA_DEPTH);
  if (meta === undefined) return undefined;
  out.metadata = meta;
  return out;
}

function plainSend(value: unknown): SendParams | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) {
    if (
      key !== 'token' &&
      key !== 'message' &&
      key !== 'to' &&
      key !== 'taskId' &&
      key !== 'historyLength' &&
      key !== 'blocking'
    ) {
      return undefined;
    }
  }
  const { token, to, taskId } = value;
  if (!text(token, 256)) return undefined;
  // Exactly one of `to` (a new task) and `taskId` (an existing one).
  if ('to' in value === 'taskId' in value) return undefined;
  const sent = message(value.message);
  if (sent === undefined) return undefined;
  const out = { token, message: sent } as SendParams;
  if ('to' in value) {
    if (!text(to, 256)) return undefined;
    out.to = to;
  } else {
    if (!text(taskId, MAX_ID_CHARS)) return undefined;
    out.taskId = taskId;
  }
  if ('historyLength' in value) {
    if (!historyLength(value.historyLength)) return undefined;
    out.historyLength = value.historyLength;
  }
  if ('blocking' in value) {
    if (typeof value.blocking !== 'boolean') return undefined;
    out.blocking = value.blocking;
  }
  return out;
}

function plainStatus(value: unknown): SetStatusParams | undefined {
  if (!plainObject(value)) return undefined;
  for (const key in value) {
    if (key !== 'token' && key !== 'id' && key !== 'state' && key !== 'message' && key !== 'historyLength') {
      return undefined;
    }
  }
  const { token, id, state } = value;
  if (!text(token, 256) || !text(id, MAX_ID_CHARS) || typeof state !== 'string' || !STATES.has(state)) {
    return undefined;
  }
  const out = { token, id, state: state as TaskState } as SetStatusParams;
  if ('message' in value) {
    const sent = message(value.message);
    if (sent === undefined) return undefined;
    out.message = sent;
  }
  if ('historyLength' in value) {
    if (!historyLength(value.historyLength)) return undefined;
    out.historyLength = value.historyLength;
  }
  return out;
}
