import type { Logger } from './logger.js';

/** What a Context Engine's pruning pass reports (`SqliteContextStoreOptions.onPrune`). */
export type PruneOutcome =
  | { pruned: { completions: number; effects: number; checkpoints: number }; ms: number }
  | { error: unknown };

/** Logs a pruning pass that deleted something (debug) or failed (warn: the next pass tries again). */
export function logContextPrunes(log: Logger): (outcome: PruneOutcome) => void {
  return (outcome) => {
    if ('error' in outcome) {
      const message = outcome.error instanceof Error ? outcome.error.message : String(outcome.error);
      log.warn({ err: { message } }, 'pruning the Context Engine failed');
    } else if (outcome.pruned.completions + outcome.pruned.effects + outcome.pruned.checkpoints > 0) {
      log.debug({ ...outcome.pruned, ms: Math.round(outcome.ms) }, 'pruned the Context Engine');
    }
  };
}
