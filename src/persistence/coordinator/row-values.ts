import type { HopRecord, ItemChanges, ItemRecord, TreeUsage, UsageRow } from '../../workflow/records.js';

/**
 * The hop's columns a commit updates, in this order (both stores): state,
 * model, input_tokens, output_tokens, cost_usd, elapsed_ms, error, reply,
 * active_since, finished_at, timeouts.
 */
export function hopUpdateValues(hop: HopRecord): (string | number | null)[] {
  return [
    hop.state,
    hop.model,
    hop.usage.inputTokens,
    hop.usage.outputTokens,
    hop.usage.costUsd,
    hop.usage.elapsedMs,
    hop.error === null ? null : JSON.stringify(hop.error),
    hop.reply === null || hop.reply === undefined ? null : JSON.stringify(hop.reply),
    hop.activeSince,
    hop.finishedAt,
    hop.timeouts,
  ];
}

/** A usage row's columns, in this order (both stores): hop_id, item_id, agent, model, input_tokens, output_tokens, cost_usd, elapsed_ms, at. */
export function usageValues(u: UsageRow): (string | number)[] {
  return [u.hopId, u.itemId, u.agent, u.model, u.inputTokens, u.outputTokens, u.costUsd, u.elapsedMs, u.at];
}

/**
 * The values a commit writes to an item's row, in the order both stores'
 * statements take them: state, stage, hop, hops, the usage (input and
 * output tokens, cost, elapsed), failure, approval (JSON), updated and
 * finished at, output (JSON).
 */
export function itemUpdateValues(item: ItemRecord): (string | number | null)[] {
  return [
    item.state,
    item.stage,
    item.hop,
    item.hops,
    item.usage.inputTokens,
    item.usage.outputTokens,
    item.usage.costUsd,
    item.usage.elapsedMs,
    item.failure === null ? null : JSON.stringify(item.failure),
    item.approval === null ? null : JSON.stringify(item.approval),
    item.updatedAt,
    item.finishedAt,
    item.output === null ? null : JSON.stringify(item.output),
  ];
}

/**
 * What a batch adds to the live subtree usage of each item (`ItemChanges.rollup`),
 * one row per item (both stores), in this order: item_id, input_tokens,
 * output_tokens, cost_usd, elapsed_ms, hops. Summed per item so that one
 * statement adds each item's share once.
 */
export function rollupValues(changes: readonly ItemChanges[]): (string | number)[][] {
  const byItem = new Map<string, (string | number)[]>();
  for (const c of changes) {
    const r = c.rollup;
    if (r === undefined) continue;
    for (const id of r.itemIds) {
      const row = byItem.get(id) ?? [id, 0, 0, 0, 0, 0];
      row[1] = (row[1] as number) + r.usage.inputTokens;
      row[2] = (row[2] as number) + r.usage.outputTokens;
      row[3] = (row[3] as number) + r.usage.costUsd;
      row[4] = (row[4] as number) + r.usage.elapsedMs;
      row[5] = (row[5] as number) + r.hops;
      byItem.set(id, row);
    }
  }
  return [...byItem.values()];
}

/** The SQL both stores add a `rollupValues` row with (the table's row for the item made when it has none). */
export const ROLLUP_UPSERT_TAIL = `ON CONFLICT (item_id) DO UPDATE SET
  input_tokens = coord_rollups.input_tokens + excluded.input_tokens,
  output_tokens = coord_rollups.output_tokens + excluded.output_tokens,
  cost_usd = coord_rollups.cost_usd + excluded.cost_usd,
  elapsed_ms = coord_rollups.elapsed_ms + excluded.elapsed_ms,
  hops = coord_rollups.hops + excluded.hops`;

/** A `coord_rollups` row as a subtree's usage (costs rounded as the usage reads round them). */
export function treeUsageFrom(row: Record<string, unknown>): TreeUsage {
  return {
    usage: {
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      costUsd: Math.round(Number(row.cost_usd) * 1e9) / 1e9,
      elapsedMs: Number(row.elapsed_ms),
    },
    hops: Number(row.hops),
  };
}
