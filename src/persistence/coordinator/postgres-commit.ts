import type { AuditHead } from '../../protocol/audit.js';
import type { CommitBatch, HopRecord, ItemChanges, ItemRecord, RunRecord } from '../../workflow/records.js';
import { ROLLUP_UPSERT_TAIL, hopUpdateValues, itemUpdateValues, rollupValues, usageValues } from './row-values.js';
import { runSnapshotText } from './run-snapshot-text.js';

/**
 * A Coordinator commit as ONE PostgreSQL statement: every row of a batch
 * (items and hops created and updated, usage, outbox rows in and out) and
 * its audit rows with the audit head's move, as data-modifying CTEs over
 * the rows of one JSON parameter (each table's rows an array of arrays, a
 * column by its place; `JSON.stringify` writes it in one call, where array
 * parameters are escaped element by element). The text is the same for
 * every batch (an empty list where a batch writes none), so one round trip
 * commits a batch, in a transaction of its own or after a fence.
 *
 * The sub-statements of one statement do not see each other's rows: a row
 * several changes of the batch write is written once, as the last of them
 * leaves it (an item or hop created in the batch is inserted with its final
 * values), which is what applying the changes one by one leaves.
 *
 * The audit rows are hashed from the head the store last knew; the head
 * moves only if it still is that one (`seq` and `hash`), and the statement
 * fails otherwise (a division by zero, SQLSTATE 22012; or a duplicate row
 * number, 23505, when another appender took it): nothing of it is written,
 * and the store reads the head again and retries (`isStaleAuditHead`).
 */

/** A column a statement writes: its name and its PostgreSQL type. */
export type Column = readonly [name: string, type: string];

/**
 * An audit row placed in the chain, as the audit sink hashes it (the audit's
 * `ChainedRow`): its row number, its hash and the previous row's, and the
 * entry's columns (`dataText` the canonical JSON of its data).
 */
export interface AuditChainRow {
  seq: number;
  prevHash: string;
  hash: string;
  entry: { at: string; kind: string; itemId: string; hop: number | null; actor: string; dataText: string };
}

/** The item's columns a commit writes, in the order of `itemUpdateValues`. */
export const ITEM_COLUMNS: readonly Column[] = [
  ['state', 'text'],
  ['stage', 'text'],
  ['hop', 'integer'],
  ['hops', 'integer'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cost_usd', 'double precision'],
  ['elapsed_ms', 'double precision'],
  ['failure', 'text'],
  ['approval', 'text'],
  ['updated_at', 'bigint'],
  ['finished_at', 'bigint'],
  ['output', 'text'],
];
/** The run's columns of an item row, in the order of `runValues`. */
export const RUN_COLUMNS: readonly Column[] = [
  ['run_version', 'integer'],
  ['run_snapshot', 'text'],
];
/** An item row's columns as created, in the order of `itemInsertValues`. */
export const ITEM_INSERT: readonly Column[] = [
  ['id', 'text'],
  ['task_id', 'text'],
  ['workflow_id', 'text'],
  ['workflow_version', 'integer'],
  ['input', 'text'],
  ['budget', 'text'],
  ['attributes', 'text'],
  ['created_at', 'bigint'],
  ...ITEM_COLUMNS,
  ...RUN_COLUMNS,
];
const ITEM_UPDATE: readonly Column[] = [...ITEM_COLUMNS, ...RUN_COLUMNS, ['id', 'text']];
/** The hop's columns a commit writes, in the order of `hopUpdateValues`. */
export const HOP_COLUMNS: readonly Column[] = [
  ['state', 'text'],
  ['model', 'text'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cost_usd', 'double precision'],
  ['elapsed_ms', 'double precision'],
  ['error', 'text'],
  ['reply', 'text'],
  ['active_since', 'bigint'],
  ['finished_at', 'bigint'],
  ['timeouts', 'integer'],
];
/** A hop row's columns as created, in the order of `hopInsertValues`. */
export const HOP_INSERT: readonly Column[] = [
  ['id', 'text'],
  ['item_id', 'text'],
  ['seq', 'integer'],
  ['hop', 'integer'],
  ['attempt', 'integer'],
  ['kind', 'text'],
  ['stage', 'text'],
  ['role', 'text'],
  ['idempotency_key', 'text'],
  ['continuation', 'text'],
  ['asked_by', 'text'],
  ['dispatched_at', 'bigint'],
  ...HOP_COLUMNS,
  ['question', 'text'],
];
const HOP_UPDATE: readonly Column[] = [...HOP_COLUMNS, ['id', 'text']];
/** A usage row's columns, in the order of `usageValues`. */
export const USAGE_INSERT: readonly Column[] = [
  ['hop_id', 'text'],
  ['item_id', 'text'],
  ['agent', 'text'],
  ['model', 'text'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cost_usd', 'double precision'],
  ['elapsed_ms', 'double precision'],
  ['at', 'bigint'],
];
/** A subtree usage row's columns, in the order of `rollupValues`. */
export const ROLLUP_INSERT: readonly Column[] = [
  ['item_id', 'text'],
  ['input_tokens', 'bigint'],
  ['output_tokens', 'bigint'],
  ['cost_usd', 'double precision'],
  ['elapsed_ms', 'double precision'],
  ['hops', 'integer'],
];
const OUTBOX_INSERT: readonly Column[] = [
  ['item_id', 'text'],
  ['kind', 'text'],
  ['body', 'text'],
];
const AUDIT_INSERT: readonly Column[] = [
  ['seq', 'bigint'],
  ['at', 'text'],
  ['kind', 'text'],
  ['item_id', 'text'],
  ['hop', 'integer'],
  ['actor', 'text'],
  ['data', 'text'],
  ['prev_hash', 'text'],
  ['hash', 'text'],
];

/** A column list as SQL: `a, b, c`. */
export function columnNames(columns: readonly Column[]): string {
  return columns.map(([name]) => name).join(', ');
}

/** The names each connection prepares the commit statements under (parsed and planned once per connection). */
export const COMMIT_STATEMENT_NAME = 'switchboard_coordinator_commit_v4';
export const FENCED_COMMIT_STATEMENT_NAME = 'switchboard_coordinator_fenced_commit_v4';

/** The SQLSTATE `coord_not_leading()` raises: the lease row was not the one a fenced statement expected. */
export const NOT_LEADING_SQLSTATE = 'SBL01';

/** The lease row a fenced statement expects, at the places of its epoch and holder parameters. */
const leaseRow = (epoch: string, holder: string) =>
  `SELECT 1 FROM coordinator_lease WHERE id = 1 AND epoch = ${epoch}::bigint AND holder = ${holder}::text`;

/** The select item of a statement with a `lease` CTE: 1, or the statement refused whole when the CTE found no row. */
const LEADING = 'CASE WHEN (SELECT count(*) FROM lease) = 1 THEN 1 ELSE coord_not_leading() END AS leading';

/** Whether the leader lease is `$1` (epoch) and `$2` (holder) now: refused with `NOT_LEADING_SQLSTATE` when not. */
export const LEASE_CHECK_STATEMENT = `SELECT CASE WHEN EXISTS (${leaseRow('$1', '$2')}) THEN 1 ELSE coord_not_leading() END AS leading`;

/**
 * A write of one data-modifying statement (`text`, taking `params` parameters)
 * fenced like a commit in one statement: written only while the lease row
 * (locked for share until it commits) holds the epoch and holder of
 * parameters `params + 1` and `params + 2`.
 */
export function fencedWrite(text: string, params: number): string {
  return `WITH lease AS (${leaseRow(`$${params + 1}`, `$${params + 2}`)} FOR SHARE), written AS (${text})
    SELECT ${LEADING}`;
}

/**
 * A commit statement's text: `$1` the batch's rows (JSON), `$2`..`$5` the
 * audit head after and before; `fenced`, `$6` and `$7` the epoch and holder
 * the leader lease's row must hold (locked for share until the statement
 * commits, so a takeover waits for it; another row refuses the statement
 * whole with `NOT_LEADING_SQLSTATE`), and the audit rows record `$6`. The
 * rows are `jsonb`, parsed once (a `json` value is parsed again by every
 * `->`), and each table's rows come from `coord_batch_rows`, whose row
 * estimate is a batch's: with the 100 rows the planner assumes of
 * `jsonb_array_elements`, an update of a few thousand rows' table joined it
 * by hash over a scan of the whole table, a commit that grew slower with
 * every hop kept.
 */
function commitStatement(fenced: boolean): string {
  const names = columnNames;
  // A row's cells by place: `r->>i` is the text of cell i (JSON null: SQL NULL), cast to its column's type.
  const cells = (columns: readonly Column[]) =>
    columns.map(([, type], i) => (type === 'text' ? `r->>${i}` : `(r->>${i})::${type}`)).join(', ');
  const rows = (key: string) => `coord_batch_rows((SELECT j FROM batch)->'${key}') AS r`;
  // `also`: one more column, the same value on every row.
  const insert = (table: string, key: string, columns: readonly Column[], returning = '', also?: [string, string]) =>
    `INSERT INTO ${table} (${names(columns)}${also === undefined ? '' : `, ${also[0]}`})
       SELECT ${cells(columns)}${also === undefined ? '' : `, ${also[1]}`} FROM ${rows(key)} ${returning}`;
  const update = (table: string, key: string, columns: readonly Column[], sets: string) =>
    `UPDATE ${table} AS t SET ${sets} FROM (SELECT ${cells(columns)} FROM ${rows(key)}) AS v(${names(columns)})
       WHERE t.id = v.id`;
  const assign = (columns: readonly Column[]) => columns.map(([name]) => `${name} = v.${name}`).join(', ');
  const parts = [
    'batch AS (SELECT $1::jsonb AS j)',
    ...(fenced ? [`lease AS (${leaseRow('$6', '$7')} FOR SHARE)`] : []),
    `deleted AS (DELETE FROM coord_outbox WHERE id IN (SELECT (r #>> '{}')::bigint FROM ${rows('deleted')}))`,
    `items_in AS (${insert('coord_items', 'itemsIn', ITEM_INSERT)})`,
    `hops_in AS (${insert('coord_hops', 'hopsIn', HOP_INSERT)})`,
    `hops_up AS (${update('coord_hops', 'hopsUp', HOP_UPDATE, assign(HOP_COLUMNS))})`,
    // A change without a run snapshot (null here) keeps the row's.
    `items_up AS (${update(
      'coord_items',
      'itemsUp',
      ITEM_UPDATE,
      `${assign(ITEM_COLUMNS)}, ${RUN_COLUMNS.map(([name]) => `${name} = COALESCE(v.${name}, t.${name})`).join(', ')}`,
    )})`,
    `usage_in AS (${insert('coord_usage', 'usage', USAGE_INSERT)})`,
    // One row per item (summed by `rollupValues`): an upsert may not touch a row twice.
    `rollup_up AS (${insert('coord_rollups', 'rollup', ROLLUP_INSERT, ROLLUP_UPSERT_TAIL)})`,
    `outbox_in AS (${insert('coord_outbox', 'outbox', OUTBOX_INSERT, 'RETURNING id')})`,
    `head AS (UPDATE audit_head SET seq = $2::bigint, hash = $3::text
       WHERE id = 1 AND seq = $4::bigint AND hash = $5::text RETURNING 1)`,
    `audit_in AS (${insert('audit_log', 'audit', AUDIT_INSERT, '', fenced ? ['epoch', '$6::bigint'] : undefined)})`,
  ];
  // The lease is checked before the head: a replaced leader is told so, not sent to build its batch again.
  const leading = fenced ? `${LEADING}, ` : '';
  return `WITH ${parts.join(',\n')}
    SELECT ${leading}(SELECT array_agg(id ORDER BY id) FROM outbox_in) AS outbox,
      1 / (SELECT count(*)::int FROM head) AS head_moved`;
}

/** The commit statement of a store without a fence (see `commitStatement`). */
export const COMMIT_STATEMENT: string = commitStatement(false);
/** The commit statement of a store fenced by the leader lease (see `commitStatement`). */
export const FENCED_COMMIT_STATEMENT: string = commitStatement(true);

const json = (v: unknown): string | null => (v === null || v === undefined ? null : JSON.stringify(v));

/** A run's values of `RUN_COLUMNS` (nulls without one: the row's are kept). */
export function runValues(run: RunRecord | undefined): unknown[] {
  return run === undefined ? [null, null] : [run.machineVersion, runSnapshotText(run.snapshot)];
}

/** An item's values of `ITEM_INSERT`. */
export function itemInsertValues(item: ItemRecord, run: RunRecord | undefined): unknown[] {
  return [
    item.id,
    item.taskId,
    item.workflow.id,
    item.workflow.version,
    JSON.stringify(item.input),
    json(item.budget),
    json(item.attributes),
    item.createdAt,
    ...itemUpdateValues(item),
    ...runValues(run),
  ];
}

/** A hop's values of `HOP_INSERT`. */
export function hopInsertValues(hop: HopRecord): unknown[] {
  const { id, itemId, seq, hop: n, attempt, kind, stage, role, idempotencyKey, continuation, askedBy } = hop;
  const placed: unknown[] = [id, itemId, seq, n, attempt, kind, stage, role, idempotencyKey, continuation, askedBy];
  return [...placed, hop.dispatchedAt, ...hopUpdateValues(hop), json(hop.question)];
}

/** Whether a batch can be committed by `COMMIT_STATEMENT` (a definition to keep takes a statement of its own). */
export function fitsOneStatement(batch: CommitBatch): boolean {
  return batch.changes.every((c) => c.definition === undefined);
}

/**
 * The parameters of `COMMIT_STATEMENT` for `batch`, its audit rows `audit`
 * (hashed after `head`), in the statement's order; `head` is where the
 * chain stands before, `next` after.
 */
export function commitParameters(
  batch: CommitBatch,
  audit: readonly AuditChainRow[],
  head: AuditHead,
): { params: unknown[]; next: AuditHead } {
  // Each row once, as the batch's last change leaves it (created rows inserted with their final values).
  const created = new Map<string, { item: ItemRecord; run: RunRecord | undefined }>();
  const updated = new Map<string, { item: ItemRecord; run: RunRecord | undefined }>();
  const hopsCreated = new Map<string, HopRecord>();
  const hopsUpdated = new Map<string, HopRecord>();
  for (const c of batch.changes) {
    const into = c.created ? created : created.has(c.itemId) ? created : updated;
    into.set(c.itemId, { item: c.item, run: c.run ?? into.get(c.itemId)?.run });
    for (const { hop, created: isNew } of c.hops) {
      if (isNew || hopsCreated.has(hop.id)) hopsCreated.set(hop.id, hop);
      else hopsUpdated.set(hop.id, hop);
    }
  }
  const itemRows = [...created.values()].map(({ item, run }) => itemInsertValues(item, run));
  const hopRows = [...hopsCreated.values()].map(hopInsertValues);
  const hopUpdates = [...hopsUpdated.values()].map((hop) => [...hopUpdateValues(hop), hop.id]);
  const itemUpdates = [...updated.values()].map(({ item, run }) => [
    ...itemUpdateValues(item),
    ...runValues(run),
    item.id,
  ]);
  const usage = batch.changes.flatMap((c: ItemChanges) => c.usage.map(usageValues));
  const outbox = batch.changes.flatMap((c) => c.outbox.map((o) => [c.itemId, o.kind, JSON.stringify(o.body)]));
  const auditRows = audit.map(({ entry, seq, prevHash, hash }) => [
    seq,
    entry.at,
    entry.kind,
    entry.itemId,
    entry.hop,
    entry.actor,
    entry.dataText,
    prevHash,
    hash,
  ]);
  const last = audit[audit.length - 1];
  const next = last === undefined ? head : { seq: last.seq, hash: last.hash };
  const rows = {
    deleted: batch.deleteOutbox,
    itemsIn: itemRows,
    hopsIn: hopRows,
    hopsUp: hopUpdates,
    itemsUp: itemUpdates,
    usage,
    rollup: rollupValues(batch.changes),
    outbox,
    audit: auditRows,
  };
  const params: unknown[] = [batchJson(rows), next.seq, next.hash, head.seq, head.hash];
  return { params, next };
}

const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A string's lone surrogates as U+FFFD (what a text parameter's UTF-8 made of them). */
const wellFormed = (_key: string, value: unknown): unknown =>
  typeof value === 'string' ? value.replace(LONE_SURROGATES, '\uFFFD') : value;

/**
 * The batch's rows as JSON. `JSON.stringify` writes a lone surrogate as an
 * escape (such as `\ud800`) that PostgreSQL's JSON refuses to read back as text:
 * when one may be there, each string is made well-formed first, as a text
 * parameter's UTF-8 encoding made it (U+FFFD) before rows went as JSON.
 */
function batchJson(rows: unknown): string {
  const text = JSON.stringify(rows);
  return /\\ud[89a-f]/i.test(text) ? JSON.stringify(rows, wellFormed) : text;
}

/** The outbox ids `COMMIT_STATEMENT` returned, ascending (the order of the batch's outbox rows). */
export function committedOutboxIds(row: { outbox: unknown } | undefined): number[] {
  const ids = row?.outbox;
  return Array.isArray(ids) ? ids.map((id) => Number(id)) : [];
}

/**
 * Whether a failed commit statement found the audit head moved (another
 * appender since the store read it): the statement wrote nothing, and it
 * can be built again on the head as it now is.
 */
export function isStaleAuditHead(error: unknown): boolean {
  const state = sqlStateOf(error);
  return state === '22012' || state === '23505';
}

/** The SQLSTATE of a failed statement's `PostgresError`, if it has one. */
export function sqlStateOf(error: unknown): unknown {
  return (error as { details?: { sqlState?: unknown } } | null)?.details?.sqlState;
}
