import type { HopRecord, ItemRecord, UsageRow } from '../../workflow/records.js';

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
