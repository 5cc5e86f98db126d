import type { AuditEntryInput, AuditHead } from '../../protocol/audit.js';
import { SchemaVersionError } from '../kernel/migrations.js';
import { type PgPool, type PgQuery, PostgresError, inPgTransaction } from '../kernel/postgres.js';
import { migratePg, pgSchemaVersion } from '../kernel/postgres-migrations.js';
import type { CoordinatorStore, CoordinatorTables, StoredItem } from './coordinator-store.js';
import {
  DEFINITION_BODIES_SQL,
  HOP_ROLES_SQL,
  ITEM_TOTALS_SQL,
  type ItemPageFilter,
  type ItemTotals,
  POSTGRES_PLACEHOLDER,
  WORKFLOW_IDS_SQL,
  itemPageRead,
  itemTotalsOf,
  rolesOf,
} from './item-reads.js';
import type { PgFence } from './postgres-client.js';
import {
  type AuditChainRow,
  COMMIT_STATEMENT,
  HOP_COLUMNS,
  HOP_INSERT,
  ITEM_COLUMNS,
  ITEM_INSERT,
  RUN_COLUMNS,
  USAGE_INSERT,
  columnNames,
  hopInsertValues,
  itemInsertValues,
  runValues,
  COMMIT_STATEMENT_NAME,
  FENCED_COMMIT_STATEMENT,
  FENCED_COMMIT_STATEMENT_NAME,
  LEASE_CHECK_STATEMENT,
  NOT_LEADING_SQLSTATE,
  fencedWrite,
  commitParameters,
  committedOutboxIds,
  fitsOneStatement,
  isStaleAuditHead,
  sqlStateOf,
} from './postgres-commit.js';
import {
  ROLLUP_UPSERT_TAIL,
  hopUpdateValues,
  itemUpdateValues,
  rollupValues,
  treeUsageFrom,
  usageValues,
} from './row-values.js';
import { COORDINATOR_PG_SCHEMA } from './postgres-schema.js';
import {
  type PendingMarks,
  type Row,
  hopFrom,
  insertRows,
  itemFrom,
  noMarks,
  num,
  numOrNull,
  readUsageGroups,
  readUsageRowsOf,
  updateRows,
  writeMarks,
} from './postgres-rows.js';
import type {
  CommitBatch,
  Committed,
  HopRecord,
  ItemChanges,
  ItemRecord,
  ItemState,
  OutboxKind,
  OutboxRow,
  TreeUsage,
  UsageGroup,
  UsageGrouping,
  UsageRow,
} from '../../workflow/records.js';

/**
 * The Coordinator's tables in PostgreSQL: the `CoordinatorStore` for a
 * Coordinator that outgrew one machine. Same rows as the SQLite store
 * (component `coordinator`, the same schema version), in one database with
 * the audit chain (`PostgresAuditLog`, appended in the same transaction
 * through `audit`).
 *
 * Group commit: a commit starts at once when none is in flight; batches
 * that arrive while one is in flight wait and are then committed together
 * in ONE transaction, each in a savepoint of its own (a batch that fails
 * rolls back alone and rejects alone). A transaction that cannot commit (a
 * lost connection, a refusing fence) rejects every batch in it: nothing of
 * it is published, since the Coordinator publishes only what committed.
 *
 * `fence` (the leader lease's `assertEpoch`) runs first inside every
 * transaction that writes; when it throws, the transaction rolls back.
 */

/** Where the store appends a commit's audit entries, inside its transaction. */
export interface PgAuditSink {
  append(tx: PgQuery, entries: readonly AuditEntryInput[]): Promise<unknown>;
  /** Signs the head (in the transaction of a batch in which an item ended), when a key is configured. */
  checkpoint?(tx: PgQuery): Promise<unknown>;
  /**
   * With `head`: a commit goes in one statement (`COMMIT_STATEMENT`) with its
   * audit rows, `chain` hashing them after the head the store last read
   * (`head`), with the epoch the statement writes in each row (null: none),
   * which the hash covers; without them, every commit appends through `append`.
   */
  chain?(head: AuditHead, entries: readonly AuditEntryInput[], epoch: number | null): readonly AuditChainRow[];
  /** The audit head as it stands (read when the store does not know it: on open, after another append, after a failure). */
  head?(q: PgQuery): Promise<AuditHead>;
}

export interface PostgresCoordinatorStoreOptions {
  audit?: PgAuditSink;
  fence?: PgFence;
  /** A reader beside a running Coordinator: nothing migrated or written; another schema version is refused. */
  readOnly?: boolean;
  /** Batches per group transaction at most (default 64). */
  maxGroup?: number;
}

export { COORDINATOR_PG_SCHEMA } from './postgres-schema.js';

interface Pending {
  batch: CommitBatch;
  resolve: (committed: Committed) => void;
  reject: (error: unknown) => void;
}

export class PostgresCoordinatorStore implements CoordinatorStore, CoordinatorTables {
  readonly #pool: PgPool;
  readonly #audit: PgAuditSink | undefined;
  readonly #fence: PgFence | undefined;
  readonly #readOnly: boolean;
  readonly #maxGroup: number;
  readonly #queue: Pending[] = [];
  #draining = false;
  #marks: PendingMarks = noMarks();
  #marking = false;
  /** The audit head as this store's last commit left it (read again after any other append or a failure). */
  #head: AuditHead | undefined;
  /** Group transactions committed, and batches in them (for tests and benchmarks). */
  readonly groups = { transactions: 0, batches: 0 };

  private constructor(pool: PgPool, options: PostgresCoordinatorStoreOptions) {
    this.#pool = pool;
    this.#audit = options.audit;
    this.#fence = options.fence;
    this.#readOnly = options.readOnly === true;
    this.#maxGroup = options.maxGroup ?? 64;
  }

  /**
   * Opens the store on a pool: migrates its tables (in one transaction;
   * a database of a newer schema is refused with `SCHEMA_TOO_NEW`), or with
   * `readOnly` only checks the version (`SCHEMA_TOO_OLD` / `SCHEMA_TOO_NEW`).
   */
  static async open(pool: PgPool, options: PostgresCoordinatorStoreOptions = {}): Promise<PostgresCoordinatorStore> {
    if (options.readOnly === true) {
      const found = await pgSchemaVersion(pool, COORDINATOR_PG_SCHEMA.component);
      if (found !== COORDINATOR_PG_SCHEMA.current) {
        throw new SchemaVersionError(COORDINATOR_PG_SCHEMA.component, found, COORDINATOR_PG_SCHEMA.current);
      }
    } else await migratePg(pool, COORDINATOR_PG_SCHEMA);
    return new PostgresCoordinatorStore(pool, options);
  }

  // ------------------------------------------------------- CoordinatorStore

  commit(batch: CommitBatch): Promise<Committed> {
    if (this.#readOnly) {
      return Promise.reject(
        new PostgresError('PG_QUERY_FAILED', 'this PostgreSQL store was opened read-only: it commits nothing'),
      );
    }
    return new Promise<Committed>((resolve, reject) => {
      this.#queue.push({ batch, resolve, reject });
      if (!this.#draining) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#draining = true;
    try {
      while (this.#queue.length > 0) {
        const group = this.#queue.splice(0, this.#maxGroup);
        await this.#commitGroup(group);
      }
    } finally {
      this.#draining = false;
    }
  }

  /** One transaction for the group: each batch in its own savepoint when there are several. */
  async #commitGroup(group: Pending[]): Promise<void> {
    if (group.length === 1 && this.#fitsOneStatement(group[0]!.batch)) {
      const pending = group[0]!;
      let committed: Committed;
      try {
        committed = await this.#commitOneStatement(pending.batch);
      } catch (error) {
        pending.reject(error);
        return;
      }
      this.groups.transactions += 1;
      this.groups.batches += 1;
      pending.resolve(committed);
      return;
    }
    // Appended through the sink (the head read under its lock): the head this store knew is no longer known.
    this.#head = undefined;
    const outcomes: ({ ok: true; value: Committed } | { ok: false; error: unknown })[] = [];
    try {
      await inPgTransaction(this.#pool, async (tx) => {
        if (this.#fence !== undefined) await this.#fence(tx);
        if (group.length === 1) {
          outcomes.push({ ok: true, value: await this.#apply(tx, group[0]!.batch) });
          return;
        }
        for (const [i, pending] of group.entries()) {
          await tx.query(`SAVEPOINT batch_${i}`);
          try {
            const value = await this.#apply(tx, pending.batch);
            await tx.query(`RELEASE SAVEPOINT batch_${i}`);
            outcomes.push({ ok: true, value });
          } catch (error) {
            // A lost connection fails the whole group below (the rollback to the savepoint throws too).
            await tx.query(`ROLLBACK TO SAVEPOINT batch_${i}`);
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // Nothing of the group committed (or its outcome is unknown: the connection was lost): all of it rejects.
      for (const pending of group) pending.reject(error);
      return;
    }
    this.groups.transactions += 1;
    this.groups.batches += group.length;
    for (const [i, pending] of group.entries()) {
      const outcome = outcomes[i]!;
      if (outcome.ok) pending.resolve(outcome.value);
      else pending.reject(outcome.error);
    }
  }

  /** Whether `batch` commits in one statement: the sink hashes for it, it keeps no definition, signs no end. */
  #fitsOneStatement(batch: CommitBatch): boolean {
    const audit = this.#audit;
    if (audit?.chain === undefined || audit.head === undefined || !fitsOneStatement(batch)) return false;
    // A fence with no one-statement form sets the epoch in a transaction this store cannot hash ahead of.
    if (this.#fence !== undefined && this.#fence.statement === undefined) return false;
    return audit.checkpoint === undefined || !batch.changes.some((c) => c.ended);
  }

  /**
   * A batch in one statement (`COMMIT_STATEMENT`): a transaction of its own,
   * or after the fence in one with it. A head moved by another appender
   * fails the statement whole: the head is read again and it runs once more.
   */
  async #commitOneStatement(batch: CommitBatch): Promise<Committed> {
    const audit = this.#audit as Required<PgAuditSink>;
    const entries = batch.changes.flatMap((c) => c.audit);
    for (let attempt = 1; ; attempt++) {
      this.#head ??= await audit.head(this.#pool);
      const head = this.#head;
      const fence = this.#fence;
      const lease = fence?.statement?.expected();
      // The rows record the lease's epoch (the fenced statement writes it), hashed with them.
      const { params, next } = commitParameters(batch, audit.chain(head, entries, lease?.epoch ?? null), head);
      this.#head = undefined;
      let row: { outbox: unknown } | undefined;
      try {
        row = (
          fence === undefined
            ? await this.#pool.query(COMMIT_STATEMENT, params, COMMIT_STATEMENT_NAME)
            : lease !== undefined
              ? await this.#pool.query(
                  FENCED_COMMIT_STATEMENT,
                  [...params, lease.epoch, lease.holder],
                  FENCED_COMMIT_STATEMENT_NAME,
                )
              : await inPgTransaction(this.#pool, async (tx) => {
                  await fence(tx);
                  return tx.query(COMMIT_STATEMENT, params, COMMIT_STATEMENT_NAME);
                })
        ).rows[0];
      } catch (error) {
        const refused = lease === undefined ? undefined : this.#notLeading(error, lease.epoch);
        if (refused !== undefined) throw refused;
        if (attempt === 1 && isStaleAuditHead(error)) continue;
        throw error;
      }
      this.#head = next;
      const ids = committedOutboxIds(row);
      let at = 0;
      return {
        outbox: batch.changes.map((c) =>
          c.outbox.map((o) => ({ id: ids[at++]!, itemId: c.itemId, kind: o.kind, body: o.body })),
        ),
      };
    }
  }

  async #apply(tx: PgQuery, batch: CommitBatch): Promise<Committed> {
    if (batch.deleteOutbox.length > 0) {
      await tx.query('DELETE FROM coord_outbox WHERE id = ANY($1::bigint[])', [batch.deleteOutbox]);
    }
    const outbox = await this.#writeRows(tx, batch.changes);
    const audit: AuditEntryInput[] = [];
    const signs = this.#audit?.checkpoint !== undefined;
    for (const c of batch.changes) {
      audit.push(...c.audit);
      // With a key every item's end is signed: the head just after its entries (one append per end, one
      // for the rest). Without one, the batch's entries go in one append (the same rows, one head lock).
      if (c.ended && signs) await this.#appendAudit(tx, audit.splice(0), true);
    }
    await this.#appendAudit(tx, audit, false);
    return { outbox };
  }

  /**
   * The rows of all the batch's changes, a statement per table and kind of
   * write (not one per change): definitions, items created, hops created,
   * hops updated, items updated, usage rows, outbox rows. A row written by
   * several changes of the batch is written as the last of them leaves it,
   * as applying them one by one would; the outbox rows come back per change.
   */
  async #writeRows(tx: PgQuery, changes: readonly ItemChanges[]): Promise<OutboxRow[][]> {
    for (const c of changes) {
      if (c.definition === undefined) continue;
      await tx.query('INSERT INTO coord_definitions (id, version, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [
        c.definition.ref.id,
        c.definition.ref.version,
        JSON.stringify(c.definition.body),
      ]);
    }
    await insertRows(
      tx,
      `INSERT INTO coord_items (${columnNames(ITEM_INSERT)})`,
      changes.filter((c) => c.created).map((c) => itemInsertValues(c.item, c.run)),
    );
    await insertRows(
      tx,
      `INSERT INTO coord_hops (${columnNames(HOP_INSERT)})`,
      changes.flatMap((c) => c.hops.filter((h) => h.created).map(({ hop }) => hopInsertValues(hop))),
    );
    // Hops and items updated: the last write of each wins (a Map keeps one entry per id).
    const hopUpdates = new Map<string, HopRecord>();
    for (const c of changes) for (const { hop, created } of c.hops) if (!created) hopUpdates.set(hop.id, hop);
    await updateRows(
      tx,
      'coord_hops',
      HOP_COLUMNS,
      [...hopUpdates.values()].map((hop) => [...hopUpdateValues(hop), hop.id]),
    );
    const itemUpdates = new Map<string, { item: ItemRecord; run: ItemChanges['run'] }>();
    for (const c of changes) {
      if (c.created) continue;
      // A change without a run snapshot leaves the one an earlier change of the batch wrote.
      itemUpdates.set(c.itemId, { item: c.item, run: c.run ?? itemUpdates.get(c.itemId)?.run });
    }
    const updates = [...itemUpdates.values()];
    await updateRows(
      tx,
      'coord_items',
      [...ITEM_COLUMNS, ...RUN_COLUMNS],
      updates
        .filter((u) => u.run !== undefined)
        .map((u) => [...itemUpdateValues(u.item), ...runValues(u.run), u.item.id]),
    );
    await updateRows(
      tx,
      'coord_items',
      ITEM_COLUMNS,
      updates.filter((u) => u.run === undefined).map((u) => [...itemUpdateValues(u.item), u.item.id]),
    );
    await insertRows(
      tx,
      `INSERT INTO coord_usage (${columnNames(USAGE_INSERT)})`,
      changes.flatMap((c) => c.usage.map(usageValues)),
    );
    await insertRows(
      tx,
      'INSERT INTO coord_rollups (item_id, input_tokens, output_tokens, cost_usd, elapsed_ms, hops)',
      rollupValues(changes),
      ROLLUP_UPSERT_TAIL,
    );
    const outboxRows = changes.flatMap((c) => c.outbox.map((o) => [c.itemId, o.kind, JSON.stringify(o.body)]));
    // Ids come back in the order of the VALUES rows (one sequence, the statements in order: ascending).
    const ids = (await insertRows(tx, 'INSERT INTO coord_outbox (item_id, kind, body)', outboxRows, 'RETURNING id'))
      .map((r) => num(r.id))
      .sort((a, b) => a - b);
    let next = 0;
    return changes.map((c) =>
      c.outbox.map((o) => ({ id: ids[next++]!, itemId: c.itemId, kind: o.kind, body: o.body })),
    );
  }

  async #appendAudit(tx: PgQuery, entries: AuditEntryInput[], sign: boolean): Promise<void> {
    if (entries.length > 0) {
      if (this.#audit === undefined) {
        throw new Error('this store was opened without an audit sink: it cannot commit audit entries');
      }
      await this.#audit.append(tx, entries);
    }
    if (sign) await this.#audit?.checkpoint?.(tx);
  }

  async loadLive(): Promise<StoredItem[]> {
    return this.#stored(
      (await this.#pool.query('SELECT * FROM coord_items WHERE finished_at IS NULL ORDER BY created_at, id')).rows,
    );
  }

  async loadItem(itemId: string): Promise<StoredItem | undefined> {
    const rows = (await this.#pool.query('SELECT * FROM coord_items WHERE id = $1', [itemId])).rows;
    return (await this.#stored(rows))[0];
  }

  async loadOutbox(): Promise<OutboxRow[]> {
    const rows = await this.#pool.query('SELECT id, item_id, kind, body FROM coord_outbox ORDER BY id');
    return rows.rows.map((r) => ({
      id: num(r.id),
      itemId: r.item_id as string,
      kind: r.kind as OutboxKind,
      body: JSON.parse(r.body as string) as unknown,
    }));
  }

  async keepDefinitions(
    definitions: readonly { ref: { id: string; version: number }; body: unknown }[],
  ): Promise<void> {
    for (const d of definitions) {
      await this.#pool.query(
        'INSERT INTO coord_definitions (id, version, body) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
        [d.ref.id, d.ref.version, JSON.stringify(d.body)],
      );
    }
  }

  async loadDefinition(ref: { id: string; version: number }): Promise<unknown> {
    const rows = await this.#pool.query('SELECT body FROM coord_definitions WHERE id = $1 AND version = $2', [
      ref.id,
      ref.version,
    ]);
    return rows.rows.length === 0 ? undefined : (JSON.parse(rows.rows[0].body as string) as unknown);
  }

  /** Items with their hops (one query for all the hops) and runs. */
  async #stored(rows: Row[]): Promise<StoredItem[]> {
    if (rows.length === 0) return [];
    const byItem = await this.readHopsOfItems(rows.map((r) => r.id as string));
    return rows.map((r) => ({
      item: itemFrom(r),
      hops: byItem.get(r.id as string) ?? [],
      run:
        r.run_version === null || r.run_snapshot === null || r.run_version === undefined
          ? undefined
          : { machineVersion: num(r.run_version), snapshot: JSON.parse(r.run_snapshot as string) as unknown },
    }));
  }

  // ------------------------------------------------------ CoordinatorTables

  async readItem(id: string): Promise<ItemRecord | undefined> {
    const rows = (await this.#pool.query('SELECT * FROM coord_items WHERE id = $1', [id])).rows;
    return rows.length === 0 ? undefined : itemFrom(rows[0]!);
  }

  async readItems(options: { state?: ItemState; limit?: number } = {}): Promise<ItemRecord[]> {
    const limit = Math.max(0, Math.min(options.limit ?? 10_000, 100_000));
    const rows =
      options.state === undefined
        ? await this.#pool.query('SELECT * FROM coord_items ORDER BY created_at, id LIMIT $1', [limit])
        : await this.#pool.query('SELECT * FROM coord_items WHERE state = $1 ORDER BY created_at, id LIMIT $2', [
            options.state,
            limit,
          ]);
    return rows.rows.map(itemFrom);
  }

  async countItems(options: { state?: ItemState } = {}): Promise<number> {
    const rows =
      options.state === undefined
        ? await this.#pool.query('SELECT count(*) AS n FROM coord_items')
        : await this.#pool.query('SELECT count(*) AS n FROM coord_items WHERE state = $1', [options.state]);
    return num(rows.rows[0].n);
  }

  async readItemPage(filter: ItemPageFilter): Promise<ItemRecord[]> {
    const read = itemPageRead(filter, POSTGRES_PLACEHOLDER);
    return (await this.#pool.query(read.text, read.params)).rows.map(itemFrom);
  }

  async readWorkflowIds(): Promise<string[]> {
    return (await this.#pool.query(WORKFLOW_IDS_SQL)).rows.map((r) => r.workflow_id as string);
  }

  async readRoles(): Promise<string[]> {
    const [definitions, hops] = await Promise.all([
      this.#pool.query(DEFINITION_BODIES_SQL),
      this.#pool.query(HOP_ROLES_SQL),
    ]);
    return rolesOf(definitions.rows, hops.rows);
  }

  async readItemTotals(): Promise<ItemTotals> {
    return itemTotalsOf((await this.#pool.query(ITEM_TOTALS_SQL)).rows);
  }

  async readLiveItems(): Promise<ItemRecord[]> {
    const rows = await this.#pool.query('SELECT * FROM coord_items WHERE finished_at IS NULL ORDER BY created_at, id');
    return rows.rows.map(itemFrom);
  }

  async readHops(itemId: string): Promise<HopRecord[]> {
    const rows = await this.#pool.query('SELECT * FROM coord_hops WHERE item_id = $1 ORDER BY seq', [itemId]);
    return rows.rows.map(hopFrom);
  }

  /** The hops of many work items in one query: each item's hops in order (an item without hops is absent). */
  async readHopsOfItems(itemIds: readonly string[]): Promise<Map<string, HopRecord[]>> {
    const byItem = new Map<string, HopRecord[]>();
    if (itemIds.length === 0) return byItem;
    const rows = await this.#pool.query(
      'SELECT * FROM coord_hops WHERE item_id = ANY($1::text[]) ORDER BY item_id, seq',
      [[...itemIds]],
    );
    for (const h of rows.rows) {
      const hop = hopFrom(h);
      const list = byItem.get(hop.itemId);
      if (list === undefined) byItem.set(hop.itemId, [hop]);
      else list.push(hop);
    }
    return byItem;
  }

  /** Hops per state. */
  async countHopsByState(): Promise<Partial<Record<HopRecord['state'], number>>> {
    const rows = await this.#pool.query('SELECT state, COUNT(*) AS n FROM coord_hops GROUP BY state');
    return Object.fromEntries(rows.rows.map((r) => [r.state as string, num(r.n)]));
  }

  /** The `limit` work items that finished last, latest first. */
  async readLatestFinished(limit: number): Promise<ItemRecord[]> {
    const rows = await this.#pool.query(
      'SELECT * FROM coord_items WHERE finished_at IS NOT NULL ORDER BY finished_at DESC, id LIMIT $1',
      [Math.max(0, Math.min(limit, 100_000))],
    );
    return rows.rows.map(itemFrom);
  }

  readUsageBy(grouping: UsageGrouping, options: { itemId?: string } = {}): Promise<UsageGroup[]> {
    return readUsageGroups(this.#pool, grouping, options.itemId);
  }

  readUsageRows(options: { itemId?: string } = {}): Promise<UsageRow[]> {
    return readUsageRowsOf(this.#pool, options.itemId);
  }

  async loadTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>> {
    const out = new Map<string, TreeUsage>();
    if (itemIds.length === 0) return out;
    const rows = await this.#pool.query('SELECT * FROM coord_rollups WHERE item_id = ANY($1::text[])', [
      [...new Set(itemIds)],
    ]);
    for (const row of rows.rows as Record<string, unknown>[]) out.set(row.item_id as string, treeUsageFrom(row));
    return out;
  }

  readTreeUsage(itemIds: readonly string[]): Promise<Map<string, TreeUsage>> {
    return this.loadTreeUsage(itemIds);
  }

  async readContextForgottenAt(itemId: string): Promise<number | null> {
    const rows = await this.#pool.query('SELECT context_forgotten_at FROM coord_items WHERE id = $1', [itemId]);
    return rows.rows.length === 0 ? null : numOrNull(rows.rows[0].context_forgotten_at);
  }

  async readUnmirroredItems(): Promise<ItemRecord[]> {
    const rows = await this.#pool.query('SELECT * FROM coord_items WHERE NOT mirrored ORDER BY created_at, id');
    return rows.rows.map(itemFrom);
  }

  async readEndedUnforgotten(endedBy: number, limit: number): Promise<string[]> {
    const rows = await this.#pool.query(
      `SELECT id FROM coord_items WHERE finished_at IS NOT NULL AND context_forgotten_at IS NULL
         AND finished_at <= $1 AND state IN ('completed', 'failed', 'canceled')
       ORDER BY finished_at LIMIT $2`,
      [endedBy, limit],
    );
    return rows.rows.map((r) => r.id as string);
  }

  /**
   * The fence alone (nothing written): whether this store may still commit.
   * One statement with the fence's statement form, else a transaction of its own.
   */
  async checkFence(): Promise<void> {
    const fence = this.#fence;
    if (fence === undefined) return;
    const lease = fence.statement?.expected();
    if (lease === undefined) {
      await inPgTransaction(this.#pool, (tx) => fence(tx));
      return;
    }
    await this.#pool.query(LEASE_CHECK_STATEMENT, [lease.epoch, lease.holder]).catch((error: unknown) => {
      throw this.#notLeading(error, lease.epoch) ?? error;
    });
  }

  /**
   * The fence's error for a statement refused by `coord_not_leading()` (the
   * lease row was not the one it expected), with the lease's epoch it named.
   */
  #notLeading(error: unknown, epoch: number): Error | undefined {
    const statement = this.#fence?.statement;
    if (statement === undefined || sqlStateOf(error) !== NOT_LEADING_SQLSTATE) return undefined;
    const found = /epoch (\d+)/.exec((error as Error).message)?.[1];
    return statement.refused(epoch, found === undefined ? undefined : Number(found));
  }

  /**
   * One statement outside a commit (the forgetter's marks), fenced like a
   * commit: in one statement with the fence's statement form, else in a
   * transaction after the fence.
   */
  async #write(text: string, params: unknown[]): Promise<void> {
    if (this.#readOnly) {
      throw new PostgresError('PG_QUERY_FAILED', 'this PostgreSQL store was opened read-only: it writes nothing');
    }
    const fence = this.#fence;
    if (fence === undefined) {
      await this.#pool.query(text, params);
      return;
    }
    const lease = fence.statement?.expected();
    if (lease === undefined) {
      await inPgTransaction(this.#pool, async (tx) => {
        await fence(tx);
        await tx.query(text, params);
      });
      return;
    }
    await this.#pool
      .query(fencedWrite(text, params.length), [...params, lease.epoch, lease.holder])
      .catch((error: unknown) => {
        throw this.#notLeading(error, lease.epoch) ?? error;
      });
  }

  /** A mark of the mirror: written with the others pending, in a transaction of theirs (fenced like a commit). */
  #mark(add: (marks: PendingMarks) => void): Promise<void> {
    if (this.#readOnly) {
      return Promise.reject(
        new PostgresError('PG_QUERY_FAILED', 'this PostgreSQL store was opened read-only: it writes nothing'),
      );
    }
    return new Promise<void>((resolve, reject) => {
      add(this.#marks);
      this.#marks.waiters.push({ resolve, reject });
      if (!this.#marking) void this.#drainMarks();
    });
  }

  /**
   * The pending marks, a fenced transaction for all of them, beside the
   * commits (not behind them: a mark waits for no commit group); marks made
   * while one is written go together in the next.
   */
  async #drainMarks(): Promise<void> {
    this.#marking = true;
    try {
      while (this.#marks.waiters.length > 0) {
        const marks = this.#marks;
        this.#marks = noMarks();
        try {
          await inPgTransaction(this.#pool, async (tx) => {
            if (this.#fence !== undefined) await this.#fence(tx);
            await writeMarks(tx, marks);
          });
        } catch (error) {
          for (const waiter of marks.waiters) waiter.reject(error);
          continue;
        }
        for (const waiter of marks.waiters) waiter.resolve();
      }
    } finally {
      this.#marking = false;
    }
  }

  recordItemTask(itemId: string, taskId: string): Promise<void> {
    return this.#mark((marks) => marks.itemTasks.set(itemId, taskId));
  }

  recordHopTask(hopId: string, taskId: string): Promise<void> {
    return this.#mark((marks) => marks.hopTasks.set(hopId, taskId));
  }

  recordMirrored(itemId: string): Promise<void> {
    return this.#mark((marks) => marks.mirrored.add(itemId));
  }

  recordForgetAgain(itemId: string): Promise<void> {
    return this.#write(
      'UPDATE coord_items SET context_forgotten_at = NULL WHERE id = $1 AND context_forgotten_at IS NOT NULL',
      [itemId],
    );
  }

  async recordContextForgotten(itemIds: readonly string[], at: number): Promise<void> {
    if (itemIds.length === 0) return;
    await this.#write(
      `UPDATE coord_items SET context_forgotten_at = $1 WHERE finished_at IS NOT NULL
         AND context_forgotten_at IS NULL AND id = ANY($2::text[])`,
      [at, itemIds],
    );
  }
}
