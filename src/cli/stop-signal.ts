import type { Logger } from '../log/logger.js';

/**
 * Resolves on the first SIGINT or SIGTERM (a long-running command then stops
 * gracefully, logging `message`); a second signal exits at once with 130.
 * `dispose` removes the handlers.
 */
export function stopSignal(
  logger: Logger,
  message = 'stopping',
): { stopped: Promise<NodeJS.Signals>; dispose: () => void } {
  let resolve!: (signal: NodeJS.Signals) => void;
  const stopped = new Promise<NodeJS.Signals>((r) => {
    resolve = r;
  });
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(130);
    }
    logger.info({ signal }, message);
    resolve(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    stopped,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}
