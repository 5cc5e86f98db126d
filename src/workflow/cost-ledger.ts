import type { Usage } from '../protocol/work-envelope.js';
import { type RunUsage, ZERO_RUN_USAGE, addRunUsage } from '../protocol/workflow.js';
import type { HopRecord, ItemRecord, UsageRow } from './records.js';

/**
 * Cost accounting: what one hop result adds (the worker's reported tokens,
 * dollars and model, plus the elapsed time the Coordinator measured since it
 * dispatched or resumed the hop), accrued onto the hop and rolled up to its
 * work item. Pure: the caller writes the rows it returns.
 */

/** The model recorded when a worker reports no usage. */
export const UNREPORTED_MODEL = 'unreported';

export interface Accrual {
  /** What this result added. */
  added: RunUsage;
  model: string;
  hop: HopRecord;
  item: ItemRecord;
  row: UsageRow;
}

/** Elapsed milliseconds of a hop's running segment that ends at `end` (0 when it was not running). */
export function segmentMs(hop: HopRecord, end: number): number {
  return hop.activeSince === null ? 0 : Math.max(0, end - hop.activeSince);
}

/** The run-usage form of a worker's report plus the measured time. */
export function toRunUsage(usage: Usage | undefined, elapsedMs: number): RunUsage {
  if (usage === undefined) return { ...ZERO_RUN_USAGE, elapsedMs };
  return {
    inputTokens: usage.inputTokens,
    outputTokens: usage.outputTokens,
    costUsd: usage.costUsd,
    elapsedMs,
  };
}

/**
 * Accrues a result's usage onto its hop and the hop's work item. The hop's
 * running segment ends at `segmentEnd` (default now: when its result was
 * published, for a result) and `activeSince` is cleared; the caller sets
 * the hop's new state.
 */
export function accrue(
  hop: HopRecord,
  item: ItemRecord,
  usage: Usage | undefined,
  now: number,
  segmentEnd: number = now,
): Accrual {
  const added = toRunUsage(usage, segmentMs(hop, segmentEnd));
  const model = usage?.model ?? hop.model ?? UNREPORTED_MODEL;
  const nextHop: HopRecord = { ...hop, usage: addRunUsage(hop.usage, added), model, activeSince: null };
  const nextItem: ItemRecord = { ...item, usage: addRunUsage(item.usage, added), updatedAt: now };
  return {
    added,
    model,
    hop: nextHop,
    item: nextItem,
    row: {
      hopId: hop.id,
      itemId: hop.itemId,
      agent: hop.role,
      model,
      inputTokens: added.inputTokens,
      outputTokens: added.outputTokens,
      costUsd: added.costUsd,
      elapsedMs: added.elapsedMs,
      at: now,
    },
  };
}

/** Total tokens (input plus output) of a usage. */
export function totalTokens(usage: RunUsage): number {
  return usage.inputTokens + usage.outputTokens;
}
