import type { PruneCounts } from '../../protocol/retention.js';
import type { SqliteDatabase } from '../kernel/database.js';
import type { Party } from './store.js';

/**
 * The rows of a prune: which ended tasks may go, and removing them whole.
 *
 * A task may go once it has ended (`completed`, `canceled`, `failed`,
 * `rejected`) before the cut-off. It stays while a live task's history names
 * it (`metadata.switchboard.parentTaskId` of a message: the Coordinator's hop
 * tasks name their work item's task), and while it belongs to a Coordinator
 * work item of this file that has not ended or whose broker tasks are not yet
 * in step with it (`coord_items`: the item's tasks all live in the context
 * named by the item's id). A Coordinator keeping its rows elsewhere
 * (PostgreSQL) leaves only the first link in this file.
 *
 * Each batch removes a task with all of its rows (messages, artifacts, push
 * config, actor snapshot, events) in the caller's transaction: never half of
 * one. A party's event log is cut at the newest event of a removed task: its
 * events up to that seq go (those of kept tasks too: they are below the cut,
 * where no cursor reaches), the cut is recorded in `a2a_event_floors`, and
 * what the log keeps stays gap-free.
 */

/** The states a task never leaves, as SQL. */
const ENDED = "('completed', 'canceled', 'failed', 'rejected')";
const LIVE = "('submitted', 'working', 'input-required', 'auth-required')";

/** Where a prune has got to: the last ended task it looked at (`updated_at`, rowid). */
export interface PruneCursor {
  updatedAt: string;
  rowid: number;
}

/** One batch's figures. */
export interface PruneBatch {
  removed: PruneCounts;
  kept: { referenced: number; workItems: number };
  /** Where the next batch starts; undefined when no ended task before the cut-off is left. */
  next: PruneCursor | undefined;
}

/** Ended tasks looked at per batch. */
export const PRUNE_BATCH_TASKS = 64;

export function emptyCounts(): PruneCounts {
  return { tasks: 0, messages: 0, artifacts: 0, pushConfigs: 0, events: 0 };
}

export class TaskRetentionStore {
  private readonly s;
  private workItemCheck: { get(id: string): unknown } | null | undefined;

  constructor(
    private readonly db: SqliteDatabase,
    /** Told, inside the transaction, whenever task rows were deleted (what remembers rows forgets them). */
    private readonly onDelete: () => void = () => {},
  ) {
    this.s = {
      candidates: db.prepare(
        `SELECT task AS rowid, task_id, context_id, updated_at FROM a2a_tasks INDEXED BY a2a_tasks_ended
         WHERE state IN ${ENDED} AND updated_at < @before
           AND (updated_at > @afterUpdatedAt OR (updated_at = @afterUpdatedAt AND task > @afterRowid))
         ORDER BY updated_at, task LIMIT @limit`,
      ),
      referencedByLive: db.prepare(
        `SELECT 1 FROM a2a_messages m JOIN a2a_tasks l ON l.task = m.task
         WHERE m.parent_task_id = ? AND l.state IN ${LIVE} LIMIT 1`,
      ),
      partiesOfTask: db.prepare(
        `SELECT party_context_id AS contextId, party_name AS name, MAX(seq) AS seq
         FROM a2a_events WHERE task = ? GROUP BY party_context_id, party_name`,
      ),
      countMessages: db.prepare('SELECT COUNT(*) AS n FROM a2a_messages WHERE task = ?'),
      countArtifacts: db.prepare('SELECT COUNT(*) AS n FROM a2a_artifacts WHERE task_id = ?'),
      countPushConfigs: db.prepare('SELECT COUNT(*) AS n FROM a2a_push_configs WHERE task_id = ?'),
      countEventsThrough: db.prepare(
        'SELECT COUNT(*) AS n FROM a2a_events WHERE party_context_id = ? AND party_name = ? AND seq <= ?',
      ),
      deleteMessages: db.prepare('DELETE FROM a2a_messages WHERE task = ?'),
      deleteArtifacts: db.prepare('DELETE FROM a2a_artifacts WHERE task_id = ?'),
      deletePushConfig: db.prepare('DELETE FROM a2a_push_configs WHERE task_id = ?'),
      deleteActor: db.prepare('DELETE FROM a2a_task_actors WHERE task_id = ?'),
      deleteTask: db.prepare('DELETE FROM a2a_tasks WHERE task = ?'),
      deleteEventsThrough: db.prepare(
        'DELETE FROM a2a_events WHERE party_context_id = ? AND party_name = ? AND seq <= ?',
      ),
      floor: db.prepare('SELECT floor FROM a2a_event_floors WHERE party_context_id = ? AND party_name = ?'),
      raiseFloor: db.prepare(
        `INSERT INTO a2a_event_floors (party_context_id, party_name, floor) VALUES (?, ?, ?)
         ON CONFLICT (party_context_id, party_name) DO UPDATE SET floor = MAX(floor, excluded.floor)`,
      ),
    };
  }

  /** The seq through which the party's log was cut (0: never cut). */
  eventFloor(party: Party): number {
    const row = this.s.floor.get(party.contextId, party.name) as { floor: number } | undefined;
    return row?.floor ?? 0;
  }

  /**
   * One batch: looks at up to `limit` ended tasks after `cursor` that ended
   * before `before`, and removes (or with `dryRun` only counts) those that
   * may go. Runs in the caller's transaction. A dry run counts the events a
   * cut would take as of now, batch by batch (`cuts` carries the cuts of the
   * batches before).
   */
  pruneBatch(
    before: string,
    cursor: PruneCursor | undefined,
    options: {
      limit?: number;
      dryRun: boolean;
      cuts?: Map<string, { party: Party; seq: number }>;
      /** Stop after the task that takes the batch past this many milliseconds (at least one task is looked at). */
      budgetMs?: number;
    },
  ): PruneBatch {
    const started = performance.now();
    const limit = options.limit ?? PRUNE_BATCH_TASKS;
    const rows = this.s.candidates.all({
      before,
      afterUpdatedAt: cursor?.updatedAt ?? '',
      afterRowid: cursor?.rowid ?? 0,
      limit,
    }) as { rowid: number; task_id: string; context_id: string; updated_at: string }[];
    const removed = emptyCounts();
    const kept = { referenced: 0, workItems: 0 };
    const workItem = this.workItemStatement();
    const cuts = new Map<string, { party: Party; seq: number }>();
    let looked = 0;
    for (const row of rows) {
      if (looked > 0 && options.budgetMs !== undefined && performance.now() - started > options.budgetMs) break;
      looked++;
      if (workItem !== null && workItem.get(row.context_id) !== undefined) {
        kept.workItems++;
        continue;
      }
      if (this.s.referencedByLive.get(row.task_id) !== undefined) {
        kept.referenced++;
        continue;
      }
      for (const p of this.s.partiesOfTask.all(row.rowid) as { contextId: string; name: string; seq: number }[]) {
        const key = `${p.contextId.length}:${p.contextId}${p.name}`;
        const cut = cuts.get(key);
        if (cut === undefined || cut.seq < p.seq)
          cuts.set(key, { party: { contextId: p.contextId, name: p.name }, seq: p.seq });
      }
      removed.tasks++;
      if (options.dryRun) {
        removed.messages += (this.s.countMessages.get(row.rowid) as { n: number }).n;
        removed.artifacts += (this.s.countArtifacts.get(row.task_id) as { n: number }).n;
        removed.pushConfigs += (this.s.countPushConfigs.get(row.task_id) as { n: number }).n;
        continue;
      }
      removed.messages += this.s.deleteMessages.run(row.rowid).changes;
      removed.artifacts += this.s.deleteArtifacts.run(row.task_id).changes;
      removed.pushConfigs += this.s.deletePushConfig.run(row.task_id).changes;
      this.s.deleteActor.run(row.task_id);
      this.s.deleteTask.run(row.rowid);
      this.onDelete();
    }
    for (const [key, { party, seq }] of cuts) {
      if (options.dryRun) {
        // Counted once per party: what the cuts so far take, less what earlier batches counted.
        const earlier = options.cuts?.get(key);
        const floor = Math.max(this.eventFloor(party), earlier?.seq ?? 0);
        if (seq <= floor) continue;
        const through = (this.s.countEventsThrough.get(party.contextId, party.name, seq) as { n: number }).n;
        const already =
          floor === 0 ? 0 : (this.s.countEventsThrough.get(party.contextId, party.name, floor) as { n: number }).n;
        removed.events += through - already;
        options.cuts?.set(key, { party, seq });
        continue;
      }
      removed.events += this.s.deleteEventsThrough.run(party.contextId, party.name, seq).changes;
      this.s.raiseFloor.run(party.contextId, party.name, seq);
    }
    const last = rows[looked - 1];
    const done = looked === rows.length && rows.length < limit;
    return {
      removed,
      kept,
      next: done || last === undefined ? undefined : { updatedAt: last.updated_at, rowid: last.rowid },
    };
  }

  /**
   * The Coordinator's check of a context, when its tables are in this file:
   * a row when the context is a work item that has not ended or whose broker
   * tasks are not yet in step (`mirrored = 0`). Looked up once per prune run
   * (the Coordinator may create its tables after the broker opened the file).
   */
  private workItemStatement(): { get(id: string): unknown } | null {
    if (this.workItemCheck !== undefined) return this.workItemCheck;
    const columns = this.db.prepare("SELECT name FROM pragma_table_info('coord_items')").all() as { name: string }[];
    const names = new Set(columns.map((c) => c.name));
    this.workItemCheck =
      names.has('id') && names.has('finished_at') && names.has('mirrored')
        ? this.db.prepare('SELECT 1 FROM coord_items WHERE id = ? AND (finished_at IS NULL OR mirrored = 0)')
        : null;
    return this.workItemCheck;
  }

  /** Forgets the Coordinator check, so that the next batch looks for its table again (a new prune run). */
  startRun(): void {
    this.workItemCheck = undefined;
  }
}
