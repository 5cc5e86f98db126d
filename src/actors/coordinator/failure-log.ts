import type { Logger } from '../../log/logger.js';
import type { RunFailureCode } from '../../machines/workflow-run-context.js';
import type { Step } from './engine.js';

/** The run failures a hop's error caused with nothing to handle it: a handler's bug, most likely. */
const UNHANDLED: ReadonlySet<string> = new Set<RunFailureCode>(['NON_RETRYABLE', 'RETRIES_EXHAUSTED', 'LOOP_BOUND']);

/**
 * Logs the hop failures a committed step wrote: at `warn` the one that
 * failed its work item because nothing handles it (with the handler's error
 * and its stack: what an operator needs to find the bug), at `info` one the
 * workflow handled (routed, retried). Each is logged once, by the commit
 * that recorded it.
 */
export function logHopFailures(log: Logger, step: Step): void {
  if (!log.isLevelEnabled('warn')) return;
  for (const { item, hops } of step.rows) {
    for (const hop of hops) {
      if (hop.state !== 'failed' || hop.error === null || hop.finishedAt === null) continue;
      const failure = item.failure;
      const fatal =
        item.state === 'failed' && failure !== null && failure.hop === hop.hop && UNHANDLED.has(failure.code);
      const fields = {
        itemId: item.id,
        hop: hop.hop,
        attempt: hop.attempt,
        stage: hop.stage,
        role: hop.role,
        // The error as the hop recorded it (its type, message and stack), not an Error: not pino's `err`.
        error: hop.error,
      };
      if (fatal) log.warn({ ...fields, failure: failure.code }, `work item failed: ${failure.reason}`);
      else if (log.isLevelEnabled('info')) log.info(fields, 'hop failed: its workflow handles it');
    }
  }
}
