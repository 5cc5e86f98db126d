import type { ItemOutput } from '../../protocol/item-output.js';
import type { Part } from '../../protocol/parts.js';
import type { WorkError, WorkMessage } from '../../protocol/work-envelope.js';
import type {
  HopKind,
  HopRecord,
  HopState,
  ItemApproval,
  ItemBudget,
  ItemFailure,
  ItemRecord,
  ItemState,
} from '../../workflow/records.js';

/** The Coordinator's rows as better-sqlite3 returns them, and the records they map to. */

export interface ItemRow {
  id: string;
  task_id: string | null;
  workflow_id: string;
  workflow_version: number;
  state: string;
  stage: string | null;
  hop: number;
  hops: number;
  input: string;
  budget: string | null;
  attributes: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  elapsed_ms: number;
  failure: string | null;
  approval: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  mirrored: number;
  output: string | null;
}

export interface HopRow {
  id: string;
  item_id: string;
  seq: number;
  hop: number;
  attempt: number;
  kind: string;
  stage: string;
  role: string;
  idempotency_key: string;
  continuation: string | null;
  asked_by: string | null;
  state: string;
  task_id: string | null;
  model: string | null;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
  elapsed_ms: number;
  error: string | null;
  reply: string | null;
  question: string | null;
  dispatched_at: number;
  active_since: number | null;
  finished_at: number | null;
  timeouts: number;
}

export function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

export function itemFrom(r: ItemRow): ItemRecord {
  return {
    id: r.id,
    taskId: r.task_id,
    workflow: { id: r.workflow_id, version: r.workflow_version },
    state: r.state as ItemState,
    stage: r.stage,
    hop: r.hop,
    hops: r.hops,
    input: JSON.parse(r.input) as Part[],
    budget: parseJson<ItemBudget>(r.budget),
    attributes: parseJson<Record<string, string | number | boolean>>(r.attributes),
    usage: {
      inputTokens: r.input_tokens,
      outputTokens: r.output_tokens,
      costUsd: r.cost_usd,
      elapsedMs: r.elapsed_ms,
    },
    failure: parseJson<ItemFailure>(r.failure),
    approval: parseJson<ItemApproval>(r.approval),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
    output: parseJson<ItemOutput>(r.output),
    mirrored: r.mirrored === 1,
  };
}

export function hopFrom(r: HopRow): HopRecord {
  return {
    id: r.id,
    itemId: r.item_id,
    seq: r.seq,
    hop: r.hop,
    attempt: r.attempt,
    kind: r.kind as HopKind,
    stage: r.stage,
    role: r.role,
    idempotencyKey: r.idempotency_key,
    continuation: r.continuation,
    askedBy: r.asked_by,
    state: r.state as HopState,
    taskId: r.task_id,
    model: r.model,
    usage: {
      inputTokens: r.input_tokens,
      outputTokens: r.output_tokens,
      costUsd: r.cost_usd,
      elapsedMs: r.elapsed_ms,
    },
    error: parseJson<WorkError>(r.error),
    reply: parseJson<unknown>(r.reply),
    question: parseJson<WorkMessage>(r.question),
    dispatchedAt: r.dispatched_at,
    activeSince: r.active_since,
    finishedAt: r.finished_at,
    timeouts: r.timeouts,
  };
}
