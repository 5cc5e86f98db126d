import type { PruneOutcome } from './retention.js';
import type { Logger } from '../../log/logger.js';

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
