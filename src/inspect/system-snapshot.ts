import type { QueueStats } from '../bus/work-queue.js';
import type { SqliteDatabase } from '../persistence/kernel/database.js';
import { TASK_STATES, type TaskState } from '../protocol/task.js';
import { ITEM_TOTALS_SQL } from '../persistence/coordinator/item-reads.js';
import { positionOf, treeOrderBy } from '../workflow/item-tree.js';
import type { ItemRecord } from '../workflow/records.js';

/**
 * What `switchboard top` shows, read from a switchboard database opened
 * read-only (WAL: it reads while the broker, the bus and the Coordinator
 * write). Each part is null when its tables are not in the file (yet).
 * Payloads are never read: names, states, counts, times and costs only.
 */
export interface SystemSnapshot {
  /** When it was read (ms since the epoch). */
  at: number;
  tasks: TaskView | null;
  queues: QueueView[] | null;
  items: ItemView | null;
}

export interface TaskView {
  total: number;
  byState: Record<TaskState, number>;
  /** Non-terminal tasks, longest without a move first (what may be stuck). */
  live: LiveTask[];
}

export interface LiveTask {
  taskId: string;
  state: TaskState;
  worker: string;
  requester: string;
  /** ms since its last move. */
  idleMs: number;
}

/** One role's queue, as the bus's `stats()` counts it. */
export interface QueueView {
  role: string;
  /** Ready now (including messages whose lease expired). */
  depth: number;
  /** Ready later (retry backoff or a publish delay). */
  delayed: number;
  /** Leased and not expired. */
  inFlight: number;
  deadLetters: number;
  /** Acked and kept for idempotency (the SQLite bus); null where the bus does not keep them (Redis). */
  done: number | null;
  /** Age in ms of the oldest message ready now (0 when none). */
  lagMs: number;
}

export interface ItemView {
  byState: Record<string, number>;
  /** Cost accrued by every item (USD). */
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  /**
   * Unfinished items first (oldest first), then the latest finished ones;
   * each listed child right after its parent (or its parent's earlier
   * children), deeper by one.
   */
  rows: ItemRow[];
}

export interface ItemRow {
  id: string;
  workflow: string;
  state: string;
  stage: string | null;
  hop: number;
  hops: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  /** ms since its last change. */
  idleMs: number;
  finished: boolean;
  /** The parent's id for a child item, else null. */
  parent: string | null;
  /** Where a child sits in its parent (`<hop>:<branch>`), else null. */
  branch: string | null;
  /** Where a child sits among its hop's children (its `switchboard.position`), else null. */
  position: number | null;
  /** How deep it is shown: 0 for a root (or a child whose parent is not listed). */
  depth: number;
  createdAt: number;
}

export interface SnapshotOptions {
  now?: number;
  /** Most rows listed per section (default 20). */
  limit?: number;
}

const TERMINAL_TASK_STATES: readonly TaskState[] = ['completed', 'canceled', 'failed', 'rejected'];

/** Reads one consistent snapshot (one read transaction). */
export function readSystemSnapshot(db: SqliteDatabase, options: SnapshotOptions = {}): SystemSnapshot {
  const now = options.now ?? Date.now();
  const limit = options.limit ?? 20;
  const read = db.transaction(() => {
    const tables = new Set(
      (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map(
        (r) => r.name,
      ),
    );
    return {
      at: now,
      tasks: tables.has('a2a_tasks') ? readTasks(db, now, limit) : null,
      queues: tables.has('bus_jobs') ? readQueues(db, now) : null,
      items: tables.has('coord_items') ? readItems(db, now, limit) : null,
    };
  });
  return read.deferred();
}

function readTasks(db: SqliteDatabase, now: number, limit: number): TaskView {
  const byState = Object.fromEntries(TASK_STATES.map((s) => [s, 0])) as Record<TaskState, number>;
  let total = 0;
  for (const row of db.prepare('SELECT state, COUNT(*) AS n FROM a2a_tasks GROUP BY state').all() as {
    state: TaskState;
    n: number;
  }[]) {
    byState[row.state] = row.n;
    total += row.n;
  }
  const terminal = TERMINAL_TASK_STATES.map(() => '?').join(', ');
  const rows = db
    .prepare(
      `SELECT task_id, state, agent_name, requester_name, updated_at FROM a2a_tasks
       WHERE state NOT IN (${terminal}) ORDER BY updated_at ASC LIMIT ?`,
    )
    .all(...TERMINAL_TASK_STATES, limit) as {
    task_id: string;
    state: TaskState;
    agent_name: string;
    requester_name: string;
    updated_at: string;
  }[];
  return {
    total,
    byState,
    live: rows.map((r) => ({
      taskId: r.task_id,
      state: r.state,
      worker: r.agent_name,
      requester: r.requester_name,
      idleMs: Math.max(0, now - Date.parse(r.updated_at)),
    })),
  };
}

function readQueues(db: SqliteDatabase, now: number): QueueView[] {
  const rows = db
    .prepare(
      `SELECT role,
         SUM(CASE WHEN (state = 'ready' AND available_at <= @now) OR (state = 'leased' AND leased_until <= @now) THEN 1 ELSE 0 END) AS depth,
         SUM(CASE WHEN state = 'ready' AND available_at > @now THEN 1 ELSE 0 END) AS delayed,
         SUM(CASE WHEN state = 'leased' AND leased_until > @now THEN 1 ELSE 0 END) AS in_flight,
         SUM(CASE WHEN state = 'dead' THEN 1 ELSE 0 END) AS dead,
         SUM(CASE WHEN state = 'done' THEN 1 ELSE 0 END) AS done,
         MIN(CASE WHEN state = 'ready' AND available_at <= @now THEN available_at
                  WHEN state = 'leased' AND leased_until <= @now THEN leased_until END) AS oldest
       FROM bus_jobs GROUP BY role ORDER BY role`,
    )
    .all({ now }) as {
    role: string;
    depth: number;
    delayed: number;
    in_flight: number;
    dead: number;
    done: number;
    oldest: number | null;
  }[];
  return rows.map((r) => ({
    role: r.role,
    depth: r.depth,
    delayed: r.delayed,
    inFlight: r.in_flight,
    deadLetters: r.dead,
    done: r.done,
    lagMs: r.oldest === null ? 0 : Math.max(0, now - r.oldest),
  }));
}

/** A queue as a bus's `stats(role)` reports it (the Redis bus: acked messages are not kept, so no DONE). */
export function queueViewOf(stats: QueueStats): QueueView {
  return {
    role: stats.role,
    depth: stats.depth,
    delayed: stats.delayed,
    inFlight: stats.inFlight,
    deadLetters: stats.deadLetters,
    done: null,
    lagMs: stats.lag,
  };
}

function readItems(db: SqliteDatabase, now: number, limit: number): ItemView {
  const byState: Record<string, number> = {};
  let costUsd = 0;
  let inputTokens = 0;
  let outputTokens = 0;
  for (const row of db
    .prepare(
      // A tree's cost is its root's rollup: a child's usage is counted once, in its root's.
      ITEM_TOTALS_SQL,
    )
    .all() as Record<string, unknown>[]) {
    byState[row.state as string] = Number(row.n);
    costUsd += Number(row.cost_usd ?? 0);
    inputTokens += Number(row.input_tokens ?? 0);
    outputTokens += Number(row.output_tokens ?? 0);
  }
  const columns = `id, workflow_id, workflow_version, state, stage, hop, hops, cost_usd, input_tokens, output_tokens,
    updated_at, finished_at, created_at, json_extract(attributes, '$."switchboard.parent"') AS parent,
    json_extract(attributes, '$."switchboard.branch"') AS branch,
    json_extract(attributes, '$."switchboard.position"') AS position`;
  type Row = {
    id: string;
    workflow_id: string;
    workflow_version: number;
    state: string;
    stage: string | null;
    hop: number;
    hops: number;
    cost_usd: number;
    input_tokens: number;
    output_tokens: number;
    updated_at: number;
    finished_at: number | null;
    created_at: number;
    parent: unknown;
    branch: unknown;
    position: unknown;
  };
  const live = db
    .prepare(`SELECT ${columns} FROM coord_items WHERE finished_at IS NULL ORDER BY created_at ASC LIMIT ?`)
    .all(limit) as Row[];
  const finished =
    live.length < limit
      ? (db
          .prepare(`SELECT ${columns} FROM coord_items WHERE finished_at IS NOT NULL ORDER BY finished_at DESC LIMIT ?`)
          .all(limit - live.length) as Row[])
      : [];
  return {
    byState,
    costUsd,
    inputTokens,
    outputTokens,
    rows: inTree(
      [...live, ...finished].map((r) => ({
        id: r.id,
        workflow: `${r.workflow_id}@${r.workflow_version}`,
        state: r.state,
        stage: r.stage,
        hop: r.hop,
        hops: r.hops,
        costUsd: r.cost_usd,
        inputTokens: r.input_tokens,
        outputTokens: r.output_tokens,
        idleMs: Math.max(0, now - r.updated_at),
        finished: r.finished_at !== null,
        parent: typeof r.parent === 'string' ? r.parent : null,
        branch: typeof r.branch === 'string' ? r.branch : null,
        position: typeof r.position === 'number' && Number.isInteger(r.position) ? r.position : null,
        depth: 0,
        createdAt: r.created_at,
      })),
    ),
  };
}

/** The rows in tree order, each with its depth. */
export function inTree(rows: readonly ItemRow[]): ItemRow[] {
  return treeOrderBy(rows, (row) => row).map(({ item, depth }) => ({ ...item, depth }));
}

/** An item as the snapshot lists it (its row on either store). */
export function itemRowOf(item: ItemRecord, now: number): ItemRow {
  return {
    id: item.id,
    workflow: `${item.workflow.id}@${item.workflow.version}`,
    state: item.state,
    stage: item.stage,
    hop: item.hop,
    hops: item.hops,
    costUsd: item.usage.costUsd,
    inputTokens: item.usage.inputTokens,
    outputTokens: item.usage.outputTokens,
    idleMs: Math.max(0, now - item.updatedAt),
    finished: item.finishedAt !== null,
    parent: typeof item.attributes?.['switchboard.parent'] === 'string' ? item.attributes['switchboard.parent'] : null,
    branch: typeof item.attributes?.['switchboard.branch'] === 'string' ? item.attributes['switchboard.branch'] : null,
    position: positionOf(item),
    depth: 0,
    createdAt: item.createdAt,
  };
}
