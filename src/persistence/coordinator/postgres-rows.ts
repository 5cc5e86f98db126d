import type { ItemOutput } from '../../protocol/item-output.js';
import type { Part } from '../../protocol/parts.js';
import type { WorkError, WorkMessage } from '../../protocol/work-envelope.js';
import type { PgQuery } from '../kernel/postgres.js';
import type { Column } from './postgres-commit.js';
import type {
  HopKind,
  HopRecord,
  HopState,
  ItemApproval,
  ItemBudget,
  ItemFailure,
  ItemRecord,
  ItemState,
  UsageGroup,
  UsageGrouping,
  UsageRow,
} from '../../workflow/records.js';

/** The Coordinator's rows as PostgreSQL returns them, the records they map to, and the statements that write many. */

export type Row = Record<string, unknown>;

export const num = (v: unknown): number => (typeof v === 'number' ? v : Number(v));
export const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : num(v));

export function parseJson<T>(text: unknown): T | null {
  return text === null || text === undefined ? null : (JSON.parse(text as string) as T);
}

export function itemFrom(r: Row): ItemRecord {
  return {
    id: r.id as string,
    taskId: (r.task_id as string | null) ?? null,
    workflow: { id: r.workflow_id as string, version: num(r.workflow_version) },
    state: r.state as ItemState,
    stage: (r.stage as string | null) ?? null,
    hop: num(r.hop),
    hops: num(r.hops),
    input: JSON.parse(r.input as string) as Part[],
    budget: parseJson<ItemBudget>(r.budget),
    attributes: parseJson<Record<string, string | number | boolean>>(r.attributes),
    usage: {
      inputTokens: num(r.input_tokens),
      outputTokens: num(r.output_tokens),
      costUsd: num(r.cost_usd),
      elapsedMs: num(r.elapsed_ms),
    },
    failure: parseJson<ItemFailure>(r.failure),
    approval: parseJson<ItemApproval>(r.approval),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
    finishedAt: numOrNull(r.finished_at),
    output: parseJson<ItemOutput>(r.output),
    mirrored: r.mirrored === true,
  };
}

export function hopFrom(r: Row): HopRecord {
  return {
    id: r.id as string,
    itemId: r.item_id as string,
    seq: num(r.seq),
    hop: num(r.hop),
    attempt: num(r.attempt),
    kind: r.kind as HopKind,
    stage: r.stage as string,
    role: r.role as string,
    idempotencyKey: r.idempotency_key as string,
    continuation: (r.continuation as string | null) ?? null,
    askedBy: (r.asked_by as string | null) ?? null,
    state: r.state as HopState,
    taskId: (r.task_id as string | null) ?? null,
    model: (r.model as string | null) ?? null,
    usage: {
      inputTokens: num(r.input_tokens),
      outputTokens: num(r.output_tokens),
      costUsd: num(r.cost_usd),
      elapsedMs: num(r.elapsed_ms),
    },
    error: parseJson<WorkError>(r.error),
    reply: parseJson<unknown>(r.reply),
    dispatchedAt: num(r.dispatched_at),
    activeSince: numOrNull(r.active_since),
    finishedAt: numOrNull(r.finished_at),
    timeouts: num(r.timeouts),
    question: parseJson<WorkMessage>(r.question),
  };
}

/** Parameters per statement at most (PostgreSQL takes 65,535): larger writes take several statements. */
export const MAX_PARAMETERS = 16_384;

/** `($1, $2, ...), (...)` for `rows` rows of `width` parameters, with a cast per column when `types` are given. */
/** Built `VALUES` lists by shape (rows, width, types): a commit's statements repeat a few shapes. */
const VALUES_LISTS = new Map<string, string>();
const MAX_VALUES_LISTS = 512;

export function valuesList(rows: number, width: number, types?: readonly string[]): string {
  const key = `${rows}:${width}:${types === undefined ? '' : types.join(',')}`;
  const known = VALUES_LISTS.get(key);
  if (known !== undefined) return known;
  const built = buildValuesList(rows, width, types);
  if (VALUES_LISTS.size >= MAX_VALUES_LISTS) VALUES_LISTS.clear();
  VALUES_LISTS.set(key, built);
  return built;
}

function buildValuesList(rows: number, width: number, types?: readonly string[]): string {
  const out: string[] = [];
  for (let r = 0; r < rows; r++) {
    const cells: string[] = [];
    for (let c = 1; c <= width; c++) cells.push(`$${r * width + c}${types === undefined ? '' : `::${types[c - 1]}`}`);
    out.push(`(${cells.join(', ')})`);
  }
  return out.join(', ');
}

/** `rows` (each of as many values as `head` names columns) in as few `head VALUES ...` statements as fit. */
export async function insertRows(
  tx: PgQuery,
  head: string,
  rows: readonly unknown[][],
  returning = '',
): Promise<Row[]> {
  const out: Row[] = [];
  if (rows.length === 0) return out;
  const width = rows[0]!.length;
  const per = Math.floor(MAX_PARAMETERS / width);
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    const result = await tx.query(`${head} VALUES ${valuesList(chunk.length, width)} ${returning}`, chunk.flat());
    out.push(...(result.rows as Row[]));
  }
  return out;
}

/** The mirror's pending marks, a statement per kind. */
export async function writeMarks(tx: PgQuery, marks: PendingMarks): Promise<void> {
  if (marks.itemTasks.size > 0) {
    await tx.query(
      `UPDATE coord_items AS t SET task_id = v.task_id
         FROM unnest($1::text[], $2::text[]) AS v(id, task_id) WHERE t.id = v.id`,
      [[...marks.itemTasks.keys()], [...marks.itemTasks.values()]],
    );
  }
  if (marks.hopTasks.size > 0) {
    await tx.query(
      `UPDATE coord_hops AS t SET task_id = v.task_id
         FROM unnest($1::text[], $2::text[]) AS v(id, task_id) WHERE t.id = v.id`,
      [[...marks.hopTasks.keys()], [...marks.hopTasks.values()]],
    );
  }
  if (marks.mirrored.size > 0) {
    await tx.query('UPDATE coord_items SET mirrored = true WHERE id = ANY($1::text[])', [[...marks.mirrored]]);
  }
}

/** Updates rows of `table` by id: each of `rows` holds the `columns`' new values, then the id. */
export async function updateRows(tx: PgQuery, table: string, columns: readonly Column[], rows: readonly unknown[][]) {
  if (rows.length === 0) return;
  const all = [...columns, ['id', 'text'] as const];
  const sets = columns.map(([name]) => `${name} = v.${name}`).join(', ');
  const types = all.map(([, type]) => type);
  const per = Math.floor(MAX_PARAMETERS / all.length);
  for (let i = 0; i < rows.length; i += per) {
    const chunk = rows.slice(i, i + per);
    await tx.query(
      `UPDATE ${table} AS t SET ${sets} FROM (VALUES ${valuesList(chunk.length, all.length, types)})
         AS v(${all.map(([name]) => name).join(', ')}) WHERE t.id = v.id`,
      chunk.flat(),
    );
  }
}

/**
 * The mirror's marks (task ids, items mirrored) not yet written: they go
 * together, in the next marks transaction, the last mark of an id winning
 * as written one by one.
 */
export interface PendingMarks {
  itemTasks: Map<string, string>;
  hopTasks: Map<string, string>;
  mirrored: Set<string>;
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
}

export function noMarks(): PendingMarks {
  return { itemTasks: new Map(), hopTasks: new Map(), mirrored: new Set(), waiters: [] };
}

const USAGE_COLUMNS: Record<UsageGrouping, string> = { agent: 'agent', model: 'model', task: 'item_id' };

/** Cost and effort grouped by agent, model or task (of one item, or all), largest cost first. */
export async function readUsageGroups(
  q: PgQuery,
  grouping: UsageGrouping,
  itemId: string | undefined,
): Promise<UsageGroup[]> {
  const column = USAGE_COLUMNS[grouping];
  const where = itemId === undefined ? '' : 'WHERE item_id = $1';
  const rows = await q.query(
    `SELECT ${column} AS key, COUNT(DISTINCT hop_id) AS hops, SUM(input_tokens) AS "inputTokens",
       SUM(output_tokens) AS "outputTokens", SUM(cost_usd) AS "costUsd", SUM(elapsed_ms) AS "elapsedMs"
     FROM coord_usage ${where} GROUP BY ${column} ORDER BY "costUsd" DESC, key`,
    itemId === undefined ? [] : [itemId],
  );
  return rows.rows.map((r) => ({
    key: r.key as string,
    hops: num(r.hops),
    inputTokens: num(r.inputTokens),
    outputTokens: num(r.outputTokens),
    costUsd: Math.round(num(r.costUsd) * 1e9) / 1e9,
    elapsedMs: num(r.elapsedMs),
  }));
}

/** Every accrual row of one item (or all), in order. */
export async function readUsageRowsOf(q: PgQuery, itemId: string | undefined): Promise<UsageRow[]> {
  const where = itemId === undefined ? '' : 'WHERE item_id = $1';
  const rows = await q.query(
    `SELECT hop_id, item_id, agent, model, input_tokens, output_tokens, cost_usd, elapsed_ms, at
     FROM coord_usage ${where} ORDER BY seq`,
    itemId === undefined ? [] : [itemId],
  );
  return rows.rows.map((r) => ({
    hopId: r.hop_id as string,
    itemId: r.item_id as string,
    agent: r.agent as string,
    model: r.model as string,
    inputTokens: num(r.input_tokens),
    outputTokens: num(r.output_tokens),
    costUsd: num(r.cost_usd),
    elapsedMs: num(r.elapsed_ms),
    at: num(r.at),
  }));
}
