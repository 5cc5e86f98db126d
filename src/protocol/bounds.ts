/**
 * The broker's bounds (docs/protocol.md, "Bounds"). Each is named: the
 * name travels in `data.limit` of an error, the value in `data.max`.
 */
export const A2A_MAX_TEXT_CHARS = 16_000;
/** 20 MiB of decoded bytes per file part. */
export const A2A_MAX_FILE_BYTES = 20 * 1024 * 1024;
/** Bytes of one data part's `data` as JSON text. */
export const A2A_MAX_DATA_BYTES = 1024 * 1024;
/** Bytes of one `metadata` object as JSON text (on a part, message, artifact or push config). */
export const A2A_MAX_METADATA_BYTES = 64 * 1024;
/** Messages one task's history may hold; one more is refused with `A2A_SEND_CAP`. */
export const A2A_MAX_TASK_HISTORY = 256;
/** Tasks one context may hold, in any state (kept until a prune removes ended ones); one more is refused with `A2A_SEND_CAP`. */
export const A2A_MAX_TASKS_PER_CONTEXT = 128;
/** New messages the broker accepts from one registration; one more is refused with `A2A_SEND_CAP`. */
export const A2A_MAX_SENDS_PER_RUN = 200;
/** Ceiling, in seconds, of the client's `wait` for a task to move; a longer wait is refused. */
export const A2A_MAX_STREAM_WAIT_SECONDS = 120;
/** Seconds the client's `wait` waits when the caller names no timeout. */
export const A2A_DEFAULT_STREAM_WAIT_SECONDS = 30;
/** The framing bound: bytes of one NDJSON line before its `\n`. */
export const MAX_LINE_BYTES = 32 * 1024 * 1024;
/** Requests in one JSON-RPC batch; a longer batch is refused whole with -32600. */
export const MAX_BATCH_REQUESTS = 1000;
/** Nesting levels of a call's params (an object or array is one level); deeper is -32602. */
export const MAX_JSON_DEPTH = 64;
/** Default page size of `a2a.events.since`. */
export const DEFAULT_EVENTS_LIMIT = 100;
/** Ceiling of one `a2a.events.since` page (a decision of this project). */
export const MAX_EVENTS_LIMIT = 1000;
/** Default page size of `a2a.agents.list` (a call without `limit`, as older clients send it). */
export const DEFAULT_AGENTS_LIMIT = 100;
/** Ceiling of `limit` in one `a2a.agents.list` call. */
export const MAX_AGENTS_LIMIT = 1000;
/** Bytes of cards (as JSON) one `a2a.agents.list` page holds; the page ends before the card that would pass it (one card at least). */
export const AGENTS_PAGE_MAX_BYTES = 4 * 1024 * 1024;
/**
 * Bytes of batch answers one connection may hold computed and not yet
 * written (64 MiB, two lines): an answer that would pass it, or pass its
 * batch's line bound, is not sent and the rest of its batch is not run.
 */
export const CONNECTION_ANSWER_BUDGET_BYTES = 2 * MAX_LINE_BYTES;
/**
 * Nesting levels of one input line (arrays and objects, outside strings),
 * checked by a linear scan before the line is parsed; a deeper line is
 * refused whole with -32600 without being parsed. Four times `MAX_JSON_DEPTH`,
 * so that params a level too deep still get their own -32602.
 */
export const MAX_LINE_NESTING = 4 * MAX_JSON_DEPTH;
/** Bounds on identifiers and names (decisions of this project, documented in docs/protocol.md). */
export const MAX_NAME_CHARS = 128;
/** Longest identifier (task, context, agent, message, artifact id), in characters. */
export const MAX_ID_CHARS = 256;
/** Longest stack trace a hop's failure keeps (the thrown error's `stack`, cut to this many characters). */
export const MAX_STACK_CHARS = 4096;

/** The broker's bounds keyed by name: a bound error's `data.limit` is a key here, `data.max` its value. */
export const BOUNDS = {
  A2A_MAX_TEXT_CHARS,
  A2A_MAX_FILE_BYTES,
  A2A_MAX_DATA_BYTES,
  A2A_MAX_METADATA_BYTES,
  A2A_MAX_TASK_HISTORY,
  A2A_MAX_TASKS_PER_CONTEXT,
  A2A_MAX_SENDS_PER_RUN,
  A2A_MAX_STREAM_WAIT_SECONDS,
  A2A_DEFAULT_STREAM_WAIT_SECONDS,
} as const;

/** The name of one broker bound, as a bound error carries it in `data.limit`. */
export type BoundName = keyof typeof BOUNDS;

/** Version of the wire protocol this build speaks; the client refuses a host whose handshake answers a lower one. */
export const PROTOCOL_VERSION = 10;
/** The protocol version of the wire that speaks A2A v1.0's shapes and method names (docs/interop.md). */
export const A2A_V1_PROTOCOL_VERSION = 11;
/** Version of the broker's SQLite schema, reported by the handshake as `schemaVersion`. */
export const SCHEMA_VERSION = 16;
