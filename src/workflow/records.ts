import type { ItemOutput } from '../protocol/item-output.js';
import type { AuditEntryInput } from '../protocol/audit.js';
import type { Part } from '../protocol/parts.js';
import type { WorkError, WorkMessage } from '../protocol/work-envelope.js';
import { type RunUsage, type WorkflowRunState, ZERO_RUN_USAGE } from '../protocol/workflow.js';

/**
 * The Coordinator's records of work items, hops, cost accruals and outbox
 * entries, as every store keeps them: plain data, no I/O.
 */

/** A work item's state: its run's state (`WORKFLOW_RUN_STATES`). */
export type ItemState = WorkflowRunState;

/** Why a work item failed: a code, a reason, and the stage and hop it failed at. */
export interface ItemFailure {
  code: string;
  reason: string;
  stage: string | null;
  hop: number;
}

/** The approval a work item waits for: the stage and hop, gate or governance, who may approve, and why. */
export interface ItemApproval {
  stage: string;
  hop: number;
  source: 'gate' | 'governance';
  approvers: string[] | null;
  reason: string;
}

/** What a work item may spend: tokens (input plus output), dollars, or both. */
export interface ItemBudget {
  /** The most tokens the item may use, all hops together. */
  maxTokens?: number;
  /** The most the item may cost, in US dollars. */
  maxCostUsd?: number;
  /** The most hops the item may take, its children's (and theirs) counted in. */
  maxHops?: number;
}

/** A work item as stored. `usage` is the rollup of every hop's accruals. */
export interface ItemRecord {
  id: string;
  /** The work item's A2A task in the broker (requester: the human edge; worker: the Coordinator). */
  taskId: string | null;
  workflow: { id: string; version: number };
  state: ItemState;
  stage: string | null;
  /** The run's current hop number. */
  hop: number;
  /** Hop rows (stage hops and queries) so far. */
  hops: number;
  input: Part[];
  budget: ItemBudget | null;
  attributes: Record<string, string | number | boolean> | null;
  usage: RunUsage;
  failure: ItemFailure | null;
  /** Set while the item waits for an approval. */
  approval: ItemApproval | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
  /**
   * What the item ended with (null while it runs): the last stage's parts
   * and artifacts, the failure, or the cancellation. Kept with the item,
   * whatever the Context Engine's retention forgets.
   */
  output: ItemOutput | null;
  /** Whether the broker mirror caught up with the item's final state. */
  mirrored: boolean;
}

/** What a hop is: a stage's hop, or a query a suspended hop asked. */
export type HopKind = 'stage' | 'query';
/** Where a hop stands: dispatched, suspended (waiting on a reply), completed or failed. */
export type HopState = 'dispatched' | 'suspended' | 'completed' | 'failed';

/** One hop (a stage's hop attempt, or a query a suspended hop asked), with what it cost. */
export interface HopRecord {
  id: string;
  itemId: string;
  /** Order within the item (queries included), from 1. */
  seq: number;
  /** The run's hop number (a query carries the number of the hop that asked). */
  hop: number;
  attempt: number;
  kind: HopKind;
  stage: string;
  role: string;
  idempotencyKey: string;
  /** For a query: the continuation token of the suspended hop it answers. */
  continuation: string | null;
  /** For a query: the id of the hop that asked. */
  askedBy: string | null;
  state: HopState;
  /** The hop's child A2A task in the broker (parent: the work item's task). */
  taskId: string | null;
  model: string | null;
  usage: RunUsage;
  /** A failed hop's error: its type, message and, when the handler threw, the error's stack (bounded). */
  error: WorkError | null;
  /**
   * For an answered query: the answer's result envelope (what resumes the hop
   * that asked). For a stage hop its children resumed: their outcomes, the
   * reply that resumed it last.
   */
  reply: unknown;
  /** For a query: the question as it was published (re-published as is when it times out). */
  question: WorkMessage | null;
  dispatchedAt: number;
  /** When the hop last started running (null while it is suspended or done). */
  activeSince: number | null;
  finishedAt: number | null;
  /** How many times the hop ran past its stage's timeout (each time it was re-published). */
  timeouts: number;
}

/** What a hop is given when dispatched; the rest is what nothing run has: no task, model, cost, error or reply yet. */
export type DispatchedHop = Pick<
  HopRecord,
  | 'id'
  | 'itemId'
  | 'seq'
  | 'hop'
  | 'attempt'
  | 'kind'
  | 'stage'
  | 'role'
  | 'idempotencyKey'
  | 'continuation'
  | 'askedBy'
  | 'dispatchedAt'
  | 'activeSince'
> &
  Partial<Pick<HopRecord, 'question'>>;

/** A hop (stage hop or query) as it is dispatched: the one place a `HopRecord` is made whole. */
export function dispatchedHop(hop: DispatchedHop): HopRecord {
  return {
    id: hop.id,
    itemId: hop.itemId,
    seq: hop.seq,
    hop: hop.hop,
    attempt: hop.attempt,
    kind: hop.kind,
    stage: hop.stage,
    role: hop.role,
    idempotencyKey: hop.idempotencyKey,
    continuation: hop.continuation,
    askedBy: hop.askedBy,
    state: 'dispatched',
    taskId: null,
    model: null,
    usage: { ...ZERO_RUN_USAGE },
    error: null,
    reply: null,
    question: hop.question ?? null,
    dispatchedAt: hop.dispatchedAt,
    activeSince: hop.activeSince,
    finishedAt: null,
    timeouts: 0,
  };
}

/** One accrual of cost onto a hop (a suspended hop accrues twice: before it asked and after it resumed). */
export interface UsageRow {
  hopId: string;
  itemId: string;
  agent: string;
  model: string;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  elapsedMs: number;
  at: number;
}

export type UsageGrouping = 'agent' | 'model' | 'task';

export interface UsageGroup {
  /** The agent (role), model or work item id. */
  key: string;
  hops: number;
  inputTokens: number;
  outputTokens: number;
  costUsd: number;
  elapsedMs: number;
}

/**
 * What an outbox row asks for after its commit: a hop published (`start`), a
 * reply to a waiting worker (`signal`), and the Coordinator's own work on
 * child items: create one (`spawn`), tell a parent a child ended (`settle`),
 * cancel a child its parent no longer waits for (`cancel-child`); and the
 * dead letter of a failure the run handled, purged (`purge-dead-letter`).
 */
export type OutboxKind = 'start' | 'signal' | 'spawn' | 'settle' | 'cancel-child' | 'purge-dead-letter';
export interface OutboxRow {
  id: number;
  itemId: string;
  kind: OutboxKind;
  body: unknown;
}

/** What just happened to a work item (the event of an `ItemStatus`). */
export const ITEM_EVENT_KINDS = [
  'created',
  'dispatched',
  'denied',
  'suspended',
  'answered',
  'resumed',
  'hop-completed',
  'hop-failed',
  'approval-requested',
  'approved',
  'approval-denied',
  'budget-exceeded',
  /** A parallel, map or workflow stage started child work items. */
  'spawned',
  /** A child work item ended, and its parent took its outcome. */
  'child-settled',
  /** Time ran out: a hop past its stage's timeout (re-published or failed), or the item past its deadline. */
  'timed-out',
  'completed',
  'failed',
  'canceled',
  /** A result that arrived after the item ended: its cost is accrued, nothing else changes. */
  'late-result',
  /** The item as it stands when `watch` starts (the first status it emits). */
  'current',
  /**
   * A hop sent a chunk of an artifact while it runs (`event.artifact`): a
   * preview streamed to watchers and the item's task, never stored.
   */
  'artifact-chunk',
] as const;
/** What happened to a work item, as an `ItemEvent` names it (one of `ITEM_EVENT_KINDS`). */
export type ItemEventKind = (typeof ITEM_EVENT_KINDS)[number];

/** One thing that happened to a work item: which hop, stage and role, a readable line, and what it cost. */
export interface ItemEvent {
  /** What happened (one of `ITEM_EVENT_KINDS`). */
  kind: ItemEventKind;
  /** The work item it happened to. */
  itemId: string;
  /** The run's hop number, for hop events. */
  hop: number | null;
  /** The stage it happened at, or null for an event of the item as a whole. */
  stage: string | null;
  /** The role of that stage's hop, or null where no hop is concerned. */
  role: string | null;
  /** One readable line: what happened and why. */
  detail: string;
  /** What this event accrued (results only). */
  usage?: RunUsage;
  /** The model the hop's agent reported using (results only, when it said). */
  model?: string;
  /** When it happened, in milliseconds since the epoch (the Coordinator's clock). */
  at: number;
  /**
   * On `artifact-chunk`: the chunk, as A2A's artifact update has it (`append`
   * after the first chunk, `lastChunk` on the last); `offset` is where `text`
   * starts in the artifact's text.
   */
  artifact?: { artifactId: string; name?: string; text: string; offset: number; append: boolean; lastChunk: boolean };
}

/** A run's persisted snapshot, with the version of the machine that wrote it. */
export interface RunRecord {
  machineVersion: number;
  snapshot: unknown;
}

/**
 * What one decision of the Coordinator changes, as data: the item's row (and
 * its run's snapshot), the hop rows, cost accruals, publishes to make after the
 * commit (the outbox) and audit entries. A `CoordinatorStore` applies a batch
 * of these atomically, in order; nothing is published or answered before.
 */
export interface ItemChanges {
  itemId: string;
  /** A workflow definition to keep (once per id and version): run snapshots refer to it. */
  definition?: { ref: { id: string; version: number }; body: unknown };
  /** The item after the decision; `created` on the decision that creates it. */
  item: ItemRecord;
  created: boolean;
  /** Its run's snapshot after the decision (absent: unchanged). */
  run?: RunRecord;
  /** Hop rows in the order they were written: `created` when the row is new. */
  hops: { hop: HopRecord; created: boolean }[];
  usage: UsageRow[];
  outbox: { kind: OutboxKind; body: unknown }[];
  audit: AuditEntryInput[];
  /** The item ended in this decision (the audit head is signed in its transaction). */
  ended: boolean;
  /**
   * What this decision charged (its `usage` rows summed, and the run hops it
   * took), added to the live subtree usage of the item and every ancestor in
   * the same transaction (absent: nothing charged).
   */
  rollup?: TreeRollup;
}

/**
 * What a work item's whole subtree has spent so far (its own hops and every
 * descendant's, charged as their results arrive, not when they end): its
 * usage and hops (run hop numbers reached). Kept per item by the store,
 * added to by each decision's `rollup`, never written whole.
 */
export interface TreeUsage {
  /** Tokens and cost charged in the subtree. */
  usage: RunUsage;
  /** Run hops taken in the subtree. */
  hops: number;
}

/** What one decision adds to the live subtree usage of the item and each of its ancestors (`itemIds`: the item first, the root last). */
export interface TreeRollup extends TreeUsage {
  /** The item the decision was about, then each ancestor up to the root. */
  itemIds: string[];
}

/** An ancestor of a work item as its decisions see it: its budget and its subtree's live usage (`TreeUsage`). */
export interface AncestorRollup {
  /** The ancestor's work item id. */
  id: string;
  /** Its budget (`null`: none). */
  budget: ItemBudget | null;
  /** What its subtree has spent so far. */
  tree: TreeUsage;
}

/** A batch of decided changes to commit in one transaction, and published outbox rows to delete with it. */
export interface CommitBatch {
  changes: readonly ItemChanges[];
  deleteOutbox: readonly number[];
}

/** What a commit assigned: the outbox rows of each `changes` entry, with their ids. */
export interface Committed {
  outbox: OutboxRow[][];
}
