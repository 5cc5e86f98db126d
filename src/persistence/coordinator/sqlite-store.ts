import type { SqliteDatabase, SqliteStatement as Statement } from '../kernel/database.js';
import { SchemaVersionError, migrate, schemaVersion } from '../kernel/migrations.js';
import {
  ROLLUP_UPSERT_TAIL,
  hopUpdateValues,
  itemUpdateValues,
  rollupValues,
  treeUsageFrom,
  usageValues,
} from './row-values.js';
import { branchRowsOf, branchText, splitRunSnapshot } from './run-snapshot-text.js';
import { WorkflowError } from '../../protocol/workflow-error.js';
import { COORDINATOR_SCHEMA } from './sqlite-schema.js';
import { type HopRow, type ItemRow, hopFrom, itemFrom } from './sqlite-rows.js';
import type { AuditEntryInput } from '../../protocol/audit.js';
import type { Part } from '../../protocol/parts.js';
import { type TraceFields, TraceFieldsSchema } from '../../protocol/work-envelope.js';
import type { AuditSink, CoordinatorStore, CoordinatorTables, StoredItem } from './coordinator-store.js';
import {
  DEFINITION_BODIES_SQL,
  HOP_ROLES_SQL,
  ITEM_TOTALS_SQL,
  type ItemPageFilter,
  type ItemTotals,
  SQLITE_PLACEHOLDER,
  WORKFLOW_IDS_SQL,
  itemPageRead,
  itemTotalsOf,
  rolesOf,
} from './item-reads.js';
import type {
  CommitBatch,
  Committed,
  ItemBudget,
  HopRecord,
  ItemRecord,
  ItemState,
  OutboxKind,
  OutboxRow,
  RunRecord,
  TreeUsage,
  UsageGroup,
  UsageGrouping,
  UsageRow,
} from '../../workflow/records.js';

export { COORDINATOR_SCHEMA } from './sqlite-schema.js';

const USAGE_COLUMNS: Record<UsageGrouping, string> = { agent: 'agent', model: 'model', task: 'item_id' };

/**
 * The Coordinator's tables on one open database (migrated on construction):
 * the embedded `CoordinatorStore`. Its commit is one better-sqlite3
 * transaction (synchronous inside; the Promise resolves once it committed).
 * Give it the audit log's sink (`audit`) when it commits audit entries.
 */
export class SqliteCoordinatorStore implements CoordinatorStore, CoordinatorTables {
  readonly db: SqliteDatabase;
  readonly #audit: AuditSink | undefined;
  readonly #commit: (batch: CommitBatch) => Committed;
  readonly #readOnly: boolean;
  /**
   * The branch objects whose rows the file holds, by item (items whose open
   * join is kept in rows): what was written or read here. Branches are
   * values (a changed branch is a new object), so a position whose object is
   * the one written needs no write. Moved only once a transaction committed.
   */
  readonly #branchRows = new Map<string, readonly object[]>();
  readonly #s: {
    item: Statement<[string], ItemRow>;
    items: Statement<[number], ItemRow>;
    itemsIn: Statement<[string, number], ItemRow>;
    liveItems: Statement<[], ItemRow>;
    unmirrored: Statement<[], ItemRow>;
    insertItem: Statement<unknown[]>;
    updateItem: Statement<unknown[]>;
    setItemTask: Statement<[string, string]>;
    setMirrored: Statement<[string]>;
    setTrace: Statement<[string, string]>;
    trace: Statement<[string], { trace: string | null }>;
    hop: Statement<[string], HopRow>;
    hopByKey: Statement<[string], HopRow>;
    hopByContinuation: Statement<[string], HopRow>;
    hopsOf: Statement<[string], HopRow>;
    insertHop: Statement<unknown[]>;
    updateHop: Statement<unknown[]>;
    setHopTask: Statement<[string, string]>;
    run: Statement<[string], { run_version: number | null; run_snapshot: string | null }>;
    updateItemAndRun: Statement<unknown[]>;
    insertItemAndRun: Statement<unknown[]>;
    putBranch: Statement<[string, number, string]>;
    dropBranchesFrom: Statement<[string, number]>;
    branchesOf: Statement<[string], { position: number; body: string }>;
    insertUsage: Statement<unknown[]>;
    addRollup: Statement<unknown[]>;
    rollup: Statement<[string], Record<string, unknown>>;
    addOutbox: Statement<[string, string, string]>;
    outbox: Statement<[], { id: number; item_id: string; kind: string; body: string }>;
    definition: Statement<[string, number], { body: string }>;
    saveDefinition: Statement<[string, number, string]>;
    endedUnforgotten: Statement<[number, number], { id: string }>;
    contextForgottenAt: Statement<[string], { context_forgotten_at: number | null }>;
    forgetAgain: Statement<[string]>;
    markForgotten: Statement<[number, string]>;
  };

  /**
   * `readOnly`: for a reader beside a running Coordinator (the CLI): nothing
   * is migrated or written; a schema other than this code's is refused
   * (`SchemaVersionError`: `SCHEMA_TOO_NEW`, or `SCHEMA_TOO_OLD` saying to
   * open the file with a Coordinator of this version first).
   */
  constructor(db: SqliteDatabase, options: { audit?: AuditSink; readOnly?: boolean } = {}) {
    this.db = db;
    this.#audit = options.audit;
    if (options.readOnly === true) {
      const found = schemaVersion(db, COORDINATOR_SCHEMA.component);
      if (found !== COORDINATOR_SCHEMA.current) {
        throw new SchemaVersionError(COORDINATOR_SCHEMA.component, found, COORDINATOR_SCHEMA.current);
      }
    } else migrate(db, COORDINATOR_SCHEMA);
    this.#readOnly = options.readOnly === true;
    const tx = db.transaction((batch: CommitBatch, kept: KeptBranches) => this.#apply(batch, kept));
    this.#commit = (batch) => {
      const kept: KeptBranches = new Map();
      const committed = tx.immediate(batch, kept);
      this.#keep(kept);
      return committed;
    };
    this.#s = {
      item: db.prepare('SELECT * FROM coord_items WHERE id = ?'),
      items: db.prepare('SELECT * FROM coord_items ORDER BY created_at, id LIMIT ?'),
      itemsIn: db.prepare('SELECT * FROM coord_items WHERE state = ? ORDER BY created_at, id LIMIT ?'),
      liveItems: db.prepare('SELECT * FROM coord_items WHERE finished_at IS NULL ORDER BY created_at, id'),
      unmirrored: db.prepare('SELECT * FROM coord_items WHERE mirrored = 0 ORDER BY created_at, id'),
      insertItem: db.prepare(
        `INSERT INTO coord_items (id, task_id, workflow_id, workflow_version, state, input, budget, attributes,
           created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      updateItem: db.prepare(
        `UPDATE coord_items SET state = ?, stage = ?, hop = ?, hops = ?, input_tokens = ?, output_tokens = ?,
           cost_usd = ?, elapsed_ms = ?, failure = ?, approval = ?, updated_at = ?, finished_at = ?, output = ?
         WHERE id = ?`,
      ),
      setItemTask: db.prepare('UPDATE coord_items SET task_id = ? WHERE id = ?'),
      setMirrored: db.prepare('UPDATE coord_items SET mirrored = 1 WHERE id = ?'),
      setTrace: db.prepare('UPDATE coord_items SET trace = ? WHERE id = ?'),
      trace: db.prepare('SELECT trace FROM coord_items WHERE id = ?'),
      hop: db.prepare('SELECT * FROM coord_hops WHERE id = ?'),
      hopByKey: db.prepare('SELECT * FROM coord_hops WHERE idempotency_key = ?'),
      hopByContinuation: db.prepare('SELECT * FROM coord_hops WHERE continuation = ? AND continuation IS NOT NULL'),
      hopsOf: db.prepare('SELECT * FROM coord_hops WHERE item_id = ? ORDER BY seq'),
      insertHop: db.prepare(
        `INSERT INTO coord_hops (id, item_id, seq, hop, attempt, kind, stage, role, idempotency_key, continuation,
           asked_by, state, dispatched_at, active_since, question) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      updateHop: db.prepare(
        `UPDATE coord_hops SET state = ?, model = ?, input_tokens = ?, output_tokens = ?, cost_usd = ?,
           elapsed_ms = ?, error = ?, reply = ?, active_since = ?, finished_at = ?, timeouts = ? WHERE id = ?`,
      ),
      setHopTask: db.prepare('UPDATE coord_hops SET task_id = ? WHERE id = ?'),
      run: db.prepare('SELECT run_version, run_snapshot FROM coord_items WHERE id = ?'),
      updateItemAndRun: db.prepare(
        `UPDATE coord_items SET state = ?, stage = ?, hop = ?, hops = ?, input_tokens = ?, output_tokens = ?,
           cost_usd = ?, elapsed_ms = ?, failure = ?, approval = ?, updated_at = ?, finished_at = ?, output = ?,
           run_version = ?, run_snapshot = ? WHERE id = ?`,
      ),
      // A new item's row as its first batch leaves it: one statement where an insert and an update were two.
      insertItemAndRun: db.prepare(
        `INSERT INTO coord_items (id, task_id, workflow_id, workflow_version, input, budget, attributes, created_at,
           state, stage, hop, hops, input_tokens, output_tokens, cost_usd, elapsed_ms, failure, approval, updated_at,
           finished_at, output, run_version, run_snapshot)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      putBranch: db.prepare(
        `INSERT INTO coord_join_branches (item_id, position, body) VALUES (?, ?, ?)
         ON CONFLICT (item_id, position) DO UPDATE SET body = excluded.body`,
      ),
      dropBranchesFrom: db.prepare('DELETE FROM coord_join_branches WHERE item_id = ? AND position >= ?'),
      branchesOf: db.prepare('SELECT position, body FROM coord_join_branches WHERE item_id = ? ORDER BY position'),
      insertUsage: db.prepare(
        `INSERT INTO coord_usage (hop_id, item_id, agent, model, input_tokens, output_tokens, cost_usd, elapsed_ms, at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      addRollup: db.prepare(
        `INSERT INTO coord_rollups (item_id, input_tokens, output_tokens, cost_usd, elapsed_ms, hops)
         VALUES (?, ?, ?, ?, ?, ?) ${ROLLUP_UPSERT_TAIL}`,
      ),
      rollup: db.prepare('SELECT * FROM coord_rollups WHERE item_id = ?'),
      addOutbox: db.prepare('INSERT INTO coord_outbox (item_id, kind, body) VALUES (?, ?, ?)'),
      outbox: db.prepare('SELECT id, item_id, kind, body FROM coord_outbox ORDER BY id'),
      definition: db.prepare('SELECT body FROM coord_definitions WHERE id = ? AND version = ?'),
      saveDefinition: db.prepare('INSERT OR IGNORE INTO coord_definitions (id, version, body) VALUES (?, ?, ?)'),
      // On the partial index: only ended items whose context is not yet forgotten, oldest end first.
      endedUnforgotten: db.prepare(
        `SELECT id FROM coord_items WHERE finished_at IS NOT NULL AND context_forgotten_at IS NULL
           AND finished_at <= ? AND state IN ('completed', 'failed', 'canceled')
         ORDER BY finished_at LIMIT ?`,
      ),
      contextForgottenAt: db.prepare('SELECT context_forgotten_at FROM coord_items WHERE id = ?'),
      forgetAgain: db.prepare(
        'UPDATE coord_items SET context_forgotten_at = NULL WHERE id = ? AND context_forgotten_at IS NOT NULL',
      ),
      // The ids as one JSON array: one statement, prepared once, whatever the batch size.
      markForgotten: db.prepare(
        `UPDATE coord_items SET context_forgotten_at = ? WHERE finished_at IS NOT NULL
           AND context_forgotten_at IS NULL AND id IN (SELECT value FROM json_each(?))`,
      ),
    };
  }

  // ------------------------------------------------------------ public reads

  /** One work item, or undefined. */
  getItem(id: string): ItemRecord | undefined {
    const row = this.#s.item.get(id);
    return row === undefined ? undefined : itemFrom(row);
  }

  /** Work items, oldest first (optionally only those in one state). */
  listItems(options: { state?: ItemState; limit?: number } = {}): ItemRecord[] {
    const limit = Math.max(0, Math.min(options.limit ?? 10_000, 100_000));
    const rows = options.state === undefined ? this.#s.items.all(limit) : this.#s.itemsIn.all(options.state, limit);
    return rows.map(itemFrom);
  }

  /** How many work items there are (optionally only those in one state). */
  countItems(options: { state?: ItemState } = {}): number {
    const row =
      options.state === undefined
        ? this.db.prepare('SELECT count(*) AS n FROM coord_items').get()
        : this.db.prepare('SELECT count(*) AS n FROM coord_items WHERE state = ?').get(options.state);
    return (row as { n: number }).n;
  }

  /** Work items not yet completed, failed or canceled. */
  liveItems(): ItemRecord[] {
    return this.#s.liveItems.all().map(itemFrom);
  }

  /** A work item's hops (stage hops and queries) in order. */
  listHops(itemId: string): HopRecord[] {
    return this.#s.hopsOf.all(itemId).map(hopFrom);
  }

  getHop(id: string): HopRecord | undefined {
    const row = this.#s.hop.get(id);
    return row === undefined ? undefined : hopFrom(row);
  }

  hopByKey(idempotencyKey: string): HopRecord | undefined {
    const row = this.#s.hopByKey.get(idempotencyKey);
    return row === undefined ? undefined : hopFrom(row);
  }

  hopByContinuation(token: string): HopRecord | undefined {
    const row = this.#s.hopByContinuation.get(token);
    return row === undefined ? undefined : hopFrom(row);
  }

  /**
   * Cost and effort grouped by agent (the role that ran the hop), model, or
   * task (work item), largest cost first; `itemId` restricts it to one item.
   */
  usageBy(grouping: UsageGrouping, options: { itemId?: string } = {}): UsageGroup[] {
    const column = USAGE_COLUMNS[grouping];
    const where = options.itemId === undefined ? '' : 'WHERE item_id = ?';
    const rows = this.db
      .prepare(
        `SELECT ${column} AS key, COUNT(DISTINCT hop_id) AS hops, SUM(input_tokens) AS inputTokens,
           SUM(output_tokens) AS outputTokens, SUM(cost_usd) AS costUsd, SUM(elapsed_ms) AS elapsedMs
         FROM coord_usage ${where} GROUP BY ${column} ORDER BY costUsd DESC, key`,
      )
      .all(...(options.itemId === undefined ? [] : [options.itemId])) as UsageGroup[];
    return rows.map((r) => ({ ...r, costUsd: Math.round(r.costUsd * 1e9) / 1e9 }));
  }

  /** Every accrual row of one item (or all), in order. */
  usageRows(options: { itemId?: string } = {}): UsageRow[] {
    const where = options.itemId === undefined ? '' : 'WHERE item_id = ?';
    return this.db
      .prepare(
        `SELECT hop_id AS hopId, item_id AS itemId, agent, model, input_tokens AS inputTokens,
           output_tokens AS outputTokens, cost_usd AS costUsd, elapsed_ms AS elapsedMs, at
         FROM coord_usage ${where} ORDER BY seq`,
      )
      .all(...(options.itemId === undefined ? [] : [options.itemId])) as UsageRow[];
  }

  /**
   * When the Context Engine's data of an ended item (its run's outputs,
   * memory, checkpoints) was forgotten; null while it is kept (or unknown item).
   */
  contextForgottenAt(itemId: string): number | null {
    return this.#s.contextForgottenAt.get(itemId)?.context_forgotten_at ?? null;
  }

  // ------------------------------------------------------ Coordinator writes

  /** Up to `limit` items that ended at or before `endedBy` and whose run's context is not yet forgotten, oldest first. */
  endedUnforgotten(endedBy: number, limit: number): string[] {
    return this.#s.endedUnforgotten.all(endedBy, limit).map((r) => r.id);
  }

  /**
   * Makes an ended item due to be forgotten again (a hop of it ran again after
   * its run was forgotten, and may have written to the Context Engine anew).
   */
  forgetContextAgain(itemId: string): void {
    this.#s.forgetAgain.run(itemId);
  }

  /** Records that the Context Engine forgot these ended items' runs (only ended items are marked). */
  markContextForgotten(itemIds: readonly string[], at: number): void {
    if (itemIds.length > 0) this.#s.markForgotten.run(at, JSON.stringify(itemIds));
  }

  insertItem(item: {
    id: string;
    taskId: string | null;
    workflow: { id: string; version: number };
    state: ItemState;
    input: Part[];
    budget: ItemBudget | null;
    attributes: Record<string, string | number | boolean> | null;
    now: number;
  }): void {
    this.#s.insertItem.run(
      item.id,
      item.taskId,
      item.workflow.id,
      item.workflow.version,
      item.state,
      ...keptColumns(item),
      item.now,
      item.now,
    );
  }

  /**
   * Writes an item's row; with `run`, its run's persisted snapshot too (same
   * row, same statement), in a transaction of its own; an open join of 16
   * branches or more is kept in rows of its own (`coord_join_branches`),
   * each written only when its branch changed.
   */
  updateItem(item: ItemRecord, run?: { machineVersion: number; snapshot: unknown }): void {
    if (run === undefined) {
      this.#s.updateItem.run(...itemUpdateValues(item), item.id);
      return;
    }
    const kept: KeptBranches = new Map();
    this.db.transaction(() => this.#writeItem(item, run, kept))();
    this.#keep(kept);
  }

  /** Writes an item's row (inserts it whole with `created`: a new item with its run), and its join's branch rows. */
  #writeItem(
    item: ItemRecord,
    run: { machineVersion: number; snapshot: unknown } | undefined,
    kept: KeptBranches,
    created = false,
  ) {
    const fields = itemUpdateValues(item);
    if (run === undefined) {
      this.#s.updateItem.run(...fields, item.id);
      return;
    }
    const { text, branches } = splitRunSnapshot(run.snapshot);
    if (created) {
      this.#s.insertItemAndRun.run(
        item.id,
        item.taskId,
        item.workflow.id,
        item.workflow.version,
        ...keptColumns(item),
        item.createdAt,
        ...fields,
        run.machineVersion,
        text,
      );
    } else {
      this.#s.updateItemAndRun.run(...fields, run.machineVersion, text, item.id);
    }
    const before = kept.has(item.id) ? kept.get(item.id) : this.#branchRows.get(item.id);
    if (branches === null) {
      // Rows this store wrote or read go; rows it never knew of (none, unless the file was written by
      // another store) are never read: a snapshot whose text holds its branches reads no rows.
      if (before !== undefined && before !== null) {
        this.#s.dropBranchesFrom.run(item.id, 0);
        kept.set(item.id, null);
      }
      return;
    }
    for (let i = 0; i < branches.length; i++) {
      const branch = branches[i]!;
      if (before?.[i] !== branch) this.#s.putBranch.run(item.id, i, branchText(branch));
    }
    if (before === undefined || before === null || before.length > branches.length) {
      this.#s.dropBranchesFrom.run(item.id, branches.length);
    }
    kept.set(item.id, branches);
  }

  /** What a committed transaction left in the branch rows, kept as known. */
  #keep(kept: KeptBranches): void {
    for (const [itemId, branches] of kept) {
      if (branches === null) this.#branchRows.delete(itemId);
      else this.#branchRows.set(itemId, branches);
    }
  }

  setItemTask(itemId: string, taskId: string): void {
    this.#s.setItemTask.run(taskId, itemId);
  }

  /** Keeps the trace fields of an item's root span (so its spans continue one trace across restarts). */
  setItemTrace(itemId: string, fields: TraceFields): void {
    this.#s.setTrace.run(JSON.stringify(fields), itemId);
  }

  /** The trace fields kept with an item, if any (`undefined` for an unknown item or one kept without). */
  itemTrace(itemId: string): TraceFields | undefined {
    const text = this.#s.trace.get(itemId)?.trace ?? null;
    if (text === null) return undefined;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return undefined;
    }
    const parsed = TraceFieldsSchema.safeParse(value);
    return parsed.success ? parsed.data : undefined;
  }

  /** Items whose broker mirror has not caught up with their final state. */
  unmirroredItems(): ItemRecord[] {
    return this.#s.unmirrored.all().map(itemFrom);
  }

  markMirrored(itemId: string): void {
    this.#s.setMirrored.run(itemId);
  }

  insertHop(hop: HopRecord): void {
    this.#s.insertHop.run(
      hop.id,
      hop.itemId,
      hop.seq,
      hop.hop,
      hop.attempt,
      hop.kind,
      hop.stage,
      hop.role,
      hop.idempotencyKey,
      hop.continuation,
      hop.askedBy,
      hop.state,
      hop.dispatchedAt,
      hop.activeSince,
      hop.question === null || hop.question === undefined ? null : JSON.stringify(hop.question),
    );
  }

  updateHop(hop: HopRecord): void {
    this.#s.updateHop.run(...hopUpdateValues(hop), hop.id);
  }

  setHopTask(hopId: string, taskId: string): void {
    this.#s.setHopTask.run(taskId, hopId);
  }

  /** A run's persisted snapshot (kept in its item's row), or undefined before its first step. */
  loadRun(itemId: string): { machineVersion: number; snapshot: unknown } | undefined {
    const row = this.#s.run.get(itemId);
    if (row === undefined || row.run_version === null || row.run_snapshot === null) return undefined;
    const snapshot: unknown = JSON.parse(row.run_snapshot);
    const rows = branchRowsOf(snapshot);
    if (rows !== null) {
      const found = this.#s.branchesOf.all(itemId);
      if (found.length !== rows || found.some((r, i) => r.position !== i)) {
        throw new WorkflowError(
          'WORKFLOW_RUN_SNAPSHOT_INVALID',
          `cannot restore the run of work item ${itemId}: its snapshot stands for ${rows} join branches and the file holds ${found.length}; the file was changed outside switchboard: restore it from a backup`,
          { details: { itemId, rows, found: found.length } },
        );
      }
      const branches = found.map((r) => JSON.parse(r.body) as object);
      (snapshot as { context: { join: { branches: unknown } } }).context.join.branches = branches;
      if (!this.#readOnly) this.#branchRows.set(itemId, branches);
    }
    return { machineVersion: row.run_version, snapshot };
  }

  addUsage(row: UsageRow): void {
    this.#s.insertUsage.run(...usageValues(row));
  }

  /** A workflow definition a run follows, as it was when the first run started on it. */
  definition(ref: { id: string; version: number }): unknown {
    const row = this.#s.definition.get(ref.id, ref.version);
    return row === undefined ? undefined : (JSON.parse(row.body) as unknown);
  }

  /** Keeps a definition (once per id and version): run snapshots refer to it instead of carrying it. */
  saveDefinition(ref: { id: string; version: number }, definition: unknown): void {
    this.#s.saveDefinition.run(ref.id, ref.version, JSON.stringify(definition));
  }

  /** Adds a publish to make after the commit; returns its row. */
  addOutbox(itemId: string, kind: OutboxKind, body: unknown): OutboxRow {
    const info = this.#s.addOutbox.run(itemId, kind, JSON.stringify(body));
    return { id: Number(info.lastInsertRowid), itemId, kind, body };
  }

  outbox(): OutboxRow[] {
    return this.#s.outbox.all().map((r) => ({
      id: r.id,
      itemId: r.item_id,
      kind: r.kind as OutboxKind,
      body: JSON.parse(r.body) as unknown,
    }));
  }

  deleteOutbox(ids: readonly number[]): void {
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      this.db.prepare(`DELETE FROM coord_outbox WHERE id IN (${chunk.map(() => '?').join(',')})`).run(...chunk);
    }
  }

  // ------------------------------------------------------- CoordinatorStore

  commit(batch: CommitBatch): Promise<Committed> {
    try {
      return Promise.resolve(this.#commit(batch));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  #apply(batch: CommitBatch, kept: KeptBranches): Committed {
    if (batch.deleteOutbox.length > 0) this.deleteOutbox(batch.deleteOutbox);
    const outbox: OutboxRow[][] = [];
    const audit: AuditEntryInput[] = [];
    // An item's row is written once, as the batch's last change of it leaves it (several decisions of one
    // batch may change one item: a parent whose children settled together): its run snapshot, the largest
    // value of the row, is written once, not once per decision. A change without a snapshot keeps the one
    // an earlier change of the batch wrote.
    const signing = this.#audit?.checkpoint !== undefined;
    const last = new Map<string, number>();
    const runs = new Map<string, RunRecord>();
    batch.changes.forEach((c, i) => {
      last.set(c.itemId, i);
      if (c.run !== undefined) runs.set(c.itemId, c.run);
    });

    for (const [i, c] of batch.changes.entries()) {
      if (c.definition !== undefined) this.saveDefinition(c.definition.ref, c.definition.body);
      const item = c.item;
      // A new item whose row this change leaves as the batch does, run and all: inserted whole, once.
      const whole = c.created && last.get(c.itemId) === i && runs.has(c.itemId);
      if (whole) this.#writeItem(item, runs.get(c.itemId), kept, true);
      else if (c.created) {
        this.insertItem({
          id: item.id,
          taskId: item.taskId,
          workflow: item.workflow,
          state: item.state,
          input: item.input,
          budget: item.budget,
          attributes: item.attributes,
          now: item.createdAt,
        });
      }
      for (const { hop, created } of c.hops) {
        if (created) this.insertHop(hop);
        // A new hop's row is inserted as dispatched: what it became since is written by an update.
        if (!created || hop.state !== 'dispatched' || hop.usage.elapsedMs > 0 || hop.finishedAt !== null) {
          this.updateHop(hop);
        }
      }
      if (last.get(c.itemId) === i && !whole) this.#writeItem(item, runs.get(c.itemId), kept);
      for (const row of c.usage) this.addUsage(row);
      outbox.push(c.outbox.map((o) => this.addOutbox(c.itemId, o.kind, o.body)));
      audit.push(...c.audit);
      // With a key, every item's end is signed: the head just after its entries (one append per end, one for
      // the rest). Without one, the batch's entries go in by one append (the same rows, in the same order).
      if (c.ended && signing) this.#appendAudit(audit.splice(0), true);
    }
    this.#appendAudit(audit, false);
    // The batch's charges, summed per item: one row written per item charged (the root of a fan-out once,
    // not once per child), as PostgreSQL's one-statement commit writes them.
    for (const row of rollupValues(batch.changes)) this.#s.addRollup.run(...row);
    return { outbox };
  }

  #appendAudit(entries: AuditEntryInput[], sign: boolean): void {
    if (entries.length > 0) {
      if (this.#audit === undefined) {
        throw new Error('this store was opened without an audit sink: it cannot commit audit entries');
      }
      this.#audit.append(entries);
    }
    if (sign) this.#audit?.checkpoint?.();
  }

  loadLive(): Promise<StoredItem[]> {
    return Promise.resolve(this.liveItems().map((item) => this.#stored(item)));
  }

  loadItem(itemId: string): Promise<StoredItem | undefined> {
    const item = this.getItem(itemId);
    return Promise.resolve(item === undefined ? undefined : this.#stored(item));
  }

  loadOutbox(): Promise<OutboxRow[]> {
    return Promise.resolve(this.outbox());
  }

  loadDefinition(ref: { id: string; version: number }): Promise<unknown> {
    return Promise.resolve(this.definition(ref));
  }

  keepDefinitions(definitions: readonly { ref: { id: string; version: number }; body: unknown }[]): Promise<void> {
    for (const d of definitions) this.saveDefinition(d.ref, d.body);
    return Promise.resolve();
  }

  // ------------------------------------------------------ CoordinatorTables

  readItem(id: string): Promise<ItemRecord | undefined> {
    return attempt(() => this.getItem(id));
  }

  readItems(options: { state?: ItemState; limit?: number } = {}): Promise<ItemRecord[]> {
    return attempt(() => this.listItems(options));
  }

  readItemPage(filter: ItemPageFilter): Promise<ItemRecord[]> {
    return attempt(() => {
      const read = itemPageRead(filter, SQLITE_PLACEHOLDER);
      return (this.db.prepare(read.text).all(...read.params) as ItemRow[]).map(itemFrom);
    });
  }

  readWorkflowIds(): Promise<string[]> {
    return attempt(() =>
      (this.db.prepare(WORKFLOW_IDS_SQL).all() as { workflow_id: string }[]).map((r) => r.workflow_id),
    );
  }

  readRoles(): Promise<string[]> {
    return attempt(() =>
      rolesOf(
        this.db.prepare(DEFINITION_BODIES_SQL).all() as { body: unknown }[],
        this.db.prepare(HOP_ROLES_SQL).all() as { role: unknown }[],
      ),
    );
  }

  readItemTotals(): Promise<ItemTotals> {
    return attempt(() => itemTotalsOf(this.db.prepare(ITEM_TOTALS_SQL).all() as Record<string, unknown>[]));
  }

  readLiveItems(): Promise<ItemRecord[]> {
    return attempt(() => this.liveItems());
  }

  readHops(itemId: string): Promise<HopRecord[]> {
    return attempt(() => this.listHops(itemId));
  }

  readHopsOfItems(itemIds: readonly string[]): Promise<Map<string, HopRecord[]>> {
    // One snapshot for all of them; each item's read is a local index lookup, no round trip to save.
    return attempt(() =>
      this.db.transaction(() => {
        const byItem = new Map<string, HopRecord[]>();
        for (const id of new Set(itemIds)) {
          const hops = this.listHops(id);
          if (hops.length > 0) byItem.set(id, hops);
        }
        return byItem;
      })(),
    );
  }

  readUsageBy(grouping: UsageGrouping, options: { itemId?: string } = {}): Promise<UsageGroup[]> {
    return attempt(() => this.usageBy(grouping, options));
  }

  /** The live subtree usage of each item (its own hops' and every descendant's); an item charged nothing is absent. */
  treeUsage(itemIds: readonly string[]): Map<string, TreeUsage> {
    const out = new Map<string, TreeUsage>();
    for (const id of new Set(itemIds)) {
      const row = this.#s.rollup.get(id);
      if (row !== undefined) out.set(id, treeUsageFrom(row));
    }
    return out;
  }

  loadTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>> {
    return attempt(() => this.treeUsage(itemIds));
  }

  readTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>> {
    return attempt(() => this.treeUsage(itemIds));
  }

  readUsageRows(options: { itemId?: string } = {}): Promise<UsageRow[]> {
    return attempt(() => this.usageRows(options));
  }

  readContextForgottenAt(itemId: string): Promise<number | null> {
    return attempt(() => this.contextForgottenAt(itemId));
  }

  readUnmirroredItems(): Promise<ItemRecord[]> {
    return attempt(() => this.unmirroredItems());
  }

  readEndedUnforgotten(endedBy: number, limit: number): Promise<string[]> {
    return attempt(() => this.endedUnforgotten(endedBy, limit));
  }

  recordItemTask(itemId: string, taskId: string): Promise<void> {
    return attempt(() => this.setItemTask(itemId, taskId));
  }

  recordHopTask(hopId: string, taskId: string): Promise<void> {
    return attempt(() => this.setHopTask(hopId, taskId));
  }

  recordMirrored(itemId: string): Promise<void> {
    return attempt(() => this.markMirrored(itemId));
  }

  recordForgetAgain(itemId: string): Promise<void> {
    return attempt(() => this.forgetContextAgain(itemId));
  }

  recordContextForgotten(itemIds: readonly string[], at: number): Promise<void> {
    return attempt(() => this.markContextForgotten(itemIds, at));
  }

  #stored(item: ItemRecord): StoredItem {
    return { item, hops: this.listHops(item.id), run: this.loadRun(item.id) };
  }
}

/** The branch rows a transaction wrote, by item (null: it dropped them), kept as known once it committed. */
type KeptBranches = Map<string, readonly object[] | null>;

/** A synchronous read or write as a settled Promise (a throw becomes a rejection). */
function attempt<T>(run: () => T): Promise<T> {
  try {
    return Promise.resolve(run());
  } catch (error) {
    return Promise.reject(error);
  }
}

/** What a new item's row keeps as it was made, in the insert statements' order: its input, budget and attributes (JSON). */
function keptColumns(item: {
  input: Part[];
  budget: ItemBudget | null;
  attributes: Record<string, string | number | boolean> | null;
}): (string | null)[] {
  return [
    JSON.stringify(item.input),
    item.budget === null ? null : JSON.stringify(item.budget),
    item.attributes === null ? null : JSON.stringify(item.attributes),
  ];
}
