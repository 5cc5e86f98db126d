/**
 * The fields a log line carries where they apply: `taskId`, `itemId` (the
 * work item: a hop's `runId`), `hop` and `role`; sizes of payloads, never
 * their bodies. Pure functions over structural shapes, so any layer that may
 * log can use them.
 */

export interface HopLogFields {
  delivery: string;
  taskId?: string;
  itemId?: string;
  hop?: number;
  attempt?: number;
}

interface HopLike {
  id: string;
  envelope: { headers?: { taskId?: unknown; runId?: unknown; hop?: unknown; attempt?: unknown } };
}

/** A bus delivery's identifying fields (its headers), for `logger.child(...)`. */
export function hopLogFields(delivery: HopLike): HopLogFields {
  const h = delivery.envelope.headers ?? {};
  const out: HopLogFields = { delivery: delivery.id };
  if (typeof h.taskId === 'string') out.taskId = h.taskId;
  if (typeof h.runId === 'string') out.itemId = h.runId;
  if (typeof h.hop === 'number') out.hop = h.hop;
  if (typeof h.attempt === 'number') out.attempt = h.attempt;
  return out;
}

export interface CallLogFields {
  method: string;
  taskId?: string;
  agentId?: string;
  contextId?: string;
  state?: string;
  /** Parts in the message or artifact sent (not `parts`: the logger redacts that key). */
  partCount?: number;
  /** Size in characters of the message or artifact sent (its JSON), never its content. */
  payloadChars?: number;
}

type Dict = Record<string, unknown>;

function dict(value: unknown): Dict | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Dict) : undefined;
}

/**
 * A broker call's fields for its log line: the task it touched (from the
 * params or the answer), the agent registered, the state it left the task
 * in, and the size of what was sent. Tokens and payload bodies are never
 * copied.
 */
export function callLogFields(method: string, params: unknown, result?: unknown): CallLogFields {
  const out: CallLogFields = { method };
  const p = dict(params);
  const r = dict(result);
  const task = dict(r?.task);
  const taskId = task?.id ?? p?.taskId ?? p?.id;
  if (typeof taskId === 'string') out.taskId = taskId;
  const contextId = task?.contextId ?? p?.contextId;
  if (typeof contextId === 'string') out.contextId = contextId;
  const state = dict(task?.status)?.state ?? p?.state;
  if (typeof state === 'string') out.state = state;
  if (typeof r?.agentId === 'string') out.agentId = r.agentId;
  const sent = dict(p?.message) ?? dict(p?.artifact);
  if (sent !== undefined) {
    if (Array.isArray(sent.parts)) out.partCount = sent.parts.length;
    try {
      out.payloadChars = JSON.stringify(sent).length;
    } catch {
      out.payloadChars = -1;
    }
  }
  return out;
}

export interface ItemLogFields {
  itemId: string;
  event: string;
  taskId?: string;
  state?: string;
  stage?: string;
  hop?: number;
  role?: string;
  costUsd?: number;
  inputTokens?: number;
  outputTokens?: number;
}

interface ItemStatusLike {
  id: string;
  taskId: string | null;
  state: string;
  stage: string | null;
  usage: { costUsd: number; inputTokens: number; outputTokens: number };
  event: { kind: string; hop: number | null; stage: string | null; role: string | null };
}

/** Item events about one hop (logged at debug); the others are the item's lifecycle (info). */
export const HOP_EVENT_KINDS: ReadonlySet<string> = new Set([
  'dispatched',
  'denied',
  'suspended',
  'answered',
  'resumed',
  'hop-completed',
  'hop-failed',
  'late-result',
]);

/**
 * A Coordinator item status's fields for its log line: the work item, its
 * task, state, the hop, stage and role the event is about, and the cost so
 * far. Not the event's `detail` text (it may quote a worker's error).
 */
export function itemLogFields(status: ItemStatusLike): ItemLogFields {
  const out: ItemLogFields = { itemId: status.id, event: status.event.kind, state: status.state };
  if (status.taskId !== null) out.taskId = status.taskId;
  const stage = status.event.stage ?? status.stage;
  if (stage !== null) out.stage = stage;
  if (status.event.hop !== null) out.hop = status.event.hop;
  if (status.event.role !== null) out.role = status.event.role;
  out.costUsd = status.usage.costUsd;
  out.inputTokens = status.usage.inputTokens;
  out.outputTokens = status.usage.outputTokens;
  return out;
}
