import type { ItemState } from '../../workflow/records.js';

/**
 * The reads of the Coordinator's tables that both stores answer with the
 * same SQL (the operations console's lists and totals): each is a statement
 * text built with the store's placeholder (`?` in SQLite, `$n` in
 * PostgreSQL) and its parameters in order, and the folding of the rows into
 * what the reader gets (PostgreSQL answers a BIGINT count as a string).
 */

/** How a store writes the n-th parameter (1-based) of a statement. */
export type Placeholder = (n: number) => string;

export const SQLITE_PLACEHOLDER: Placeholder = () => '?';
export const POSTGRES_PLACEHOLDER: Placeholder = (n) => `$${n}`;

/** A statement and its parameters. */
export interface ItemRead {
  text: string;
  params: (string | number)[];
}

/** What a page of items is filtered by, and where it starts (newest first). */
export interface ItemPageFilter {
  state?: ItemState;
  workflow?: string;
  /** Text an item's id, workflow id or state contains (any case). */
  search?: string;
  /** At most this many (default 200, at most 1000). */
  limit?: number;
  /** Skip this many of the newest (default 0). */
  offset?: number;
}

/** Largest page of items one read returns. */
export const MAX_ITEM_PAGE = 1000;

/** The ids of one page of items, newest first (created_at descending, then id), filtered by state, workflow and search text. */
export function itemPageRead(filter: ItemPageFilter, placeholder: Placeholder): ItemRead {
  const where: string[] = [];
  const params: (string | number)[] = [];
  const next = (value: string | number): string => {
    params.push(value);
    return placeholder(params.length);
  };
  if (filter.state !== undefined) where.push(`state = ${next(filter.state)}`);
  if (filter.workflow !== undefined) where.push(`workflow_id = ${next(filter.workflow)}`);
  if (filter.search !== undefined && filter.search !== '') {
    const pattern = `%${filter.search.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
    const like = (column: string) => `lower(${column}) LIKE ${next(pattern)} ESCAPE '\\'`;
    where.push(`(${like('id')} OR ${like('workflow_id')} OR ${like('state')})`);
  }
  const limit = Math.max(0, Math.min(filter.limit ?? 200, MAX_ITEM_PAGE));
  const offset = Math.max(0, Math.floor(filter.offset ?? 0));
  return {
    text: `SELECT * FROM coord_items ${where.length === 0 ? '' : `WHERE ${where.join(' AND ')} `}ORDER BY created_at DESC, id LIMIT ${next(limit)} OFFSET ${next(offset)}`,
    params,
  };
}

/** The workflow ids items run on, sorted. */
export const WORKFLOW_IDS_SQL = 'SELECT DISTINCT workflow_id FROM coord_items ORDER BY workflow_id';

/** The kept workflow definitions' bodies (for the roles their stages name). */
export const DEFINITION_BODIES_SQL = 'SELECT body FROM coord_definitions';

/** The roles hops went to. */
export const HOP_ROLES_SQL = 'SELECT DISTINCT role FROM coord_hops';

/**
 * A root item (one that names no parent), in SQL both stores read: a
 * parent's usage is the rollup of its whole tree, so what all items cost is
 * the sum over the roots (a child's usage is already in its root's). The
 * attributes are JSON written without spaces, so the key reads as
 * `"switchboard.parent":` and a value holding that text escapes its quotes.
 */
export const ROOT_ITEM_SQL = `(attributes IS NULL OR attributes NOT LIKE '%"switchboard.parent":%')`;

/** Item counts per state, and the cost and tokens of the roots in each state (their trees' rollups). */
export const ITEM_TOTALS_SQL = `SELECT state, COUNT(*) AS n,
  SUM(CASE WHEN ${ROOT_ITEM_SQL} THEN cost_usd ELSE 0 END) AS cost_usd,
  SUM(CASE WHEN ${ROOT_ITEM_SQL} THEN input_tokens ELSE 0 END) AS input_tokens,
  SUM(CASE WHEN ${ROOT_ITEM_SQL} THEN output_tokens ELSE 0 END) AS output_tokens
  FROM coord_items GROUP BY state`;

/** The items of a store in numbers: how many in each state, and what all of them cost (each tree once). */
export interface ItemTotals {
  byState: Record<string, number>;
  total: number;
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
}

const num = (v: unknown): number => (v === null || v === undefined ? 0 : Number(v));

/** The rows of `ITEM_TOTALS_SQL` folded into totals. */
export function itemTotalsOf(rows: readonly Record<string, unknown>[]): ItemTotals {
  const totals: ItemTotals = { byState: {}, total: 0, costUsd: 0, inputTokens: 0, outputTokens: 0 };
  for (const row of rows) {
    const n = num(row.n);
    totals.byState[row.state as string] = n;
    totals.total += n;
    totals.costUsd += num(row.cost_usd);
    totals.inputTokens += num(row.input_tokens);
    totals.outputTokens += num(row.output_tokens);
  }
  totals.costUsd = Math.round(totals.costUsd * 1e9) / 1e9;
  return totals;
}

/** The roles the definitions' stages name and the roles hops went to, sorted, each once. */
export function rolesOf(
  definitionBodies: readonly { body: unknown }[],
  hopRoles: readonly { role: unknown }[],
): string[] {
  const roles = new Set<string>();
  for (const { body } of definitionBodies) {
    let definition: { stages?: Record<string, { role?: unknown }> };
    try {
      definition = JSON.parse(String(body)) as typeof definition;
    } catch {
      continue;
    }
    for (const stage of Object.values(definition.stages ?? {})) {
      if (typeof stage?.role === 'string') roles.add(stage.role);
    }
  }
  for (const { role } of hopRoles) if (typeof role === 'string') roles.add(role);
  return [...roles].sort();
}
