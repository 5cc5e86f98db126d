/**
 * What the inspector may see. Every inspection event is copied through
 * `sanitizeForInspection` before it leaves the process: a capability token
 * never does, and payload bodies are replaced by their sizes.
 *
 * - any key named `token` or ending in `Token` (`pushToken`; not `inputTokens`): `[redacted]`;
 * - `text` and `bytes` strings (text and file parts): `{ redacted, chars }`;
 * - `data` values (data parts): `{ redacted, chars }` (length of their JSON);
 * - Maps become objects (or arrays of entries when keys are not strings),
 *   Sets arrays, Buffers and typed arrays their length, actor references
 *   `{ actor: sessionId, id }`, other class instances their class name,
 *   functions their name; cycles and depth beyond `MAX_DEPTH` are cut.
 */

export const REDACTED = '[redacted]';
export const MAX_DEPTH = 12;

const PAYLOAD_KEYS = new Set(['text', 'bytes', 'data']);

export function isTokenKey(key: string): boolean {
  return /token$/i.test(key);
}

export function sanitizeForInspection(value: unknown): unknown {
  return copy(value, 0, new WeakSet<object>());
}

function copy(value: unknown, depth: number, seen: WeakSet<object>): unknown {
  if (value === null || value === undefined) return value;
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return value;
    case 'bigint':
      return value.toString();
    case 'symbol':
      return value.toString();
    case 'function':
      return `[function ${(value as { name?: string }).name || 'anonymous'}]`;
    default:
      break;
  }
  const object = value as object;
  if (seen.has(object)) return '[circular]';
  if (depth >= MAX_DEPTH) return '[depth]';
  if (Buffer.isBuffer(object) || ArrayBuffer.isView(object)) return `[${(object as Uint8Array).byteLength} bytes]`;
  if (object instanceof Date) return object.toISOString();
  if (isActorRef(object)) return { actor: object.sessionId, id: typeof object.id === 'string' ? object.id : undefined };
  const toJSON = (object as { toJSON?: unknown }).toJSON;
  if (typeof toJSON === 'function') {
    seen.add(object);
    const out = copy((toJSON as () => unknown).call(object), depth, seen);
    seen.delete(object);
    return out;
  }
  seen.add(object);
  try {
    if (Array.isArray(object)) return object.map((item) => copy(item, depth + 1, seen));
    if (object instanceof Map) {
      const entries = [...object.entries()];
      if (entries.every(([key]) => typeof key === 'string')) {
        return copyEntries(entries as [string, unknown][], depth, seen);
      }
      return entries.map(([key, item]) => [copy(key, depth + 1, seen), copy(item, depth + 1, seen)]);
    }
    if (object instanceof Set) return [...object].map((item) => copy(item, depth + 1, seen));
    const prototype = Object.getPrototypeOf(object);
    if (prototype !== Object.prototype && prototype !== null) {
      return `[${(object.constructor as { name?: string } | undefined)?.name ?? 'object'}]`;
    }
    return copyEntries(Object.entries(object), depth, seen);
  } finally {
    seen.delete(object);
  }
}

function copyEntries(entries: [string, unknown][], depth: number, seen: WeakSet<object>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, item] of entries) {
    if (isTokenKey(key)) out[key] = REDACTED;
    else if (PAYLOAD_KEYS.has(key) && item !== undefined && item !== null) out[key] = sizeOf(item);
    else out[key] = copy(item, depth + 1, seen);
  }
  return out;
}

function sizeOf(value: unknown): { redacted: true; chars: number } {
  if (isRedaction(value)) return { redacted: true, chars: value.chars };
  if (typeof value === 'string') return { redacted: true, chars: value.length };
  let chars = 0;
  try {
    chars = JSON.stringify(value)?.length ?? 0;
  } catch {
    chars = -1;
  }
  return { redacted: true, chars };
}

/** Already a size (sanitizing twice changes nothing). */
function isRedaction(value: unknown): value is { redacted: true; chars: number } {
  if (value === null || typeof value !== 'object') return false;
  const keys = Object.keys(value);
  const candidate = value as { redacted?: unknown; chars?: unknown };
  return keys.length === 2 && candidate.redacted === true && typeof candidate.chars === 'number';
}

function isActorRef(object: object): object is { sessionId: string; id?: unknown } {
  const candidate = object as { sessionId?: unknown; send?: unknown; getSnapshot?: unknown };
  return (
    typeof candidate.sessionId === 'string' &&
    typeof candidate.send === 'function' &&
    typeof candidate.getSnapshot === 'function'
  );
}
