import { z } from 'zod';

/**
 * Retention of ended tasks: the durations an operator writes
 * (`--task-retention 30d`, `tasks prune --ended-before 12h`) and the
 * `broker.tasks.prune` method, by which a broker removes the tasks that
 * ended before a time.
 */

/** The units of a duration, in milliseconds. */
const DURATION_UNITS: Readonly<Record<string, number>> = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
  w: 604_800_000,
};

/** The longest duration taken: 100 years (a longer one is a typo, not a policy). */
export const MAX_DURATION_MS = 100 * 365 * 86_400_000;

/** How a duration is written, for the messages that refuse one. */
export const DURATION_SYNTAX = 'a whole number and a unit: ms, s, m, h, d or w (such as 90s, 12h, 30d)';

/**
 * A duration such as `30d`, `12h`, `90m`, `45s`, `500ms` or `2w`, in
 * milliseconds; undefined when `text` is not one (or is 0, or above
 * `MAX_DURATION_MS`).
 */
export function parseDuration(text: string): number | undefined {
  const match = /^([0-9]{1,15})(ms|s|m|h|d|w)$/.exec(text.trim());
  if (match === null) return undefined;
  const ms = Number(match[1]) * (DURATION_UNITS[match[2] as string] as number);
  return ms <= 0 || ms > MAX_DURATION_MS ? undefined : ms;
}

/** A duration in milliseconds written the way `parseDuration` reads it (the largest exact unit). */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm', 's'] as const) {
    const size = DURATION_UNITS[unit] as number;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** An instant as the broker stamps it: `YYYY-MM-DDTHH:MM:SS.sssZ` (what `Date.toISOString` writes). */
export const InstantSchema = z
  .string()
  .regex(/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$/, {
    message: 'expected an instant as YYYY-MM-DDTHH:MM:SS.sssZ (UTC, milliseconds)',
  })
  .refine((text) => !Number.isNaN(Date.parse(text)) && new Date(text).toISOString() === text, {
    message: 'not a valid instant',
  });

/**
 * Params of `broker.tasks.prune`: remove the tasks that ended before
 * `endedBefore` (an instant), or with `dryRun` only count them.
 */
export const PruneParamsSchema = z.object({
  endedBefore: InstantSchema,
  dryRun: z.boolean().optional(),
});
/** Params of `broker.tasks.prune` as on the wire (inferred from `PruneParamsSchema`). */
export interface PruneParams extends z.infer<typeof PruneParamsSchema> {}

/** Rows a prune removed (or, in a dry run, would remove), by table. */
export const PruneCountsSchema = z.object({
  tasks: z.number().int().min(0),
  messages: z.number().int().min(0),
  artifacts: z.number().int().min(0),
  pushConfigs: z.number().int().min(0),
  events: z.number().int().min(0),
});
/** Rows a prune removed, by table (inferred from `PruneCountsSchema`). */
export interface PruneCounts extends z.infer<typeof PruneCountsSchema> {}

/**
 * Result of `broker.tasks.prune`: what was removed (`removed`), the ended
 * tasks kept although they ended before the time (`kept`: named by a live
 * task's history, or of a Coordinator work item that has not ended), the
 * transactions it took (`batches`) and the file pages given back
 * (`freedPages`, 0 in a dry run).
 */
export const PruneResultSchema = z.object({
  endedBefore: z.string(),
  dryRun: z.boolean(),
  removed: PruneCountsSchema,
  kept: z.object({ referenced: z.number().int().min(0), workItems: z.number().int().min(0) }),
  batches: z.number().int().min(0),
  freedPages: z.number().int().min(0),
});
/** Result of `broker.tasks.prune` as on the wire (inferred from `PruneResultSchema`). */
export interface PruneResult extends z.infer<typeof PruneResultSchema> {}
