import type { Logger } from '../log/logger.js';
import type { V1TaskPushNotificationConfig } from '../protocol/a2a-v1/schemas.js';

/**
 * Sends a task's updates to its webhooks: each update is POSTed as the
 * A2A v1.0 stream response it is (`{statusUpdate}` or `{artifactUpdate}`),
 * with the config's token in `X-A2A-Notification-Token` and its
 * authentication (when given) as `Authorization: SCHEME CREDENTIALS`. The
 * updates of one task go out one after the other, in order; a webhook that
 * fails is tried again a few times with a growing pause, then given up and
 * logged. Nothing here blocks the gateway's requests or throws.
 */

export const PUSH_TIMEOUT_MS = 5000;
export const PUSH_ATTEMPTS = 3;
const BACKOFF_MS = 500;
/** Updates waiting per task beyond which new ones are dropped (and logged). */
const MAX_QUEUED_PER_TASK = 1000;

export class PushSender {
  private readonly logger: Logger;
  private readonly chains = new Map<string, { tail: Promise<void>; queued: number }>();
  private closed = false;

  constructor(logger: Logger) {
    this.logger = logger;
  }

  /** Queues one update of a task for each of its configs (read now: a config made later gets later updates). */
  send(taskId: string, configs: readonly V1TaskPushNotificationConfig[], response: unknown): void {
    if (configs.length === 0 || this.closed) return;
    const body = JSON.stringify(response);
    const chain = this.chains.get(taskId) ?? { tail: Promise.resolve(), queued: 0 };
    if (chain.queued >= MAX_QUEUED_PER_TASK) {
      this.logger.warn({ taskId }, 'gateway: too many push notifications wait for this task; one is dropped');
      return;
    }
    chain.queued++;
    chain.tail = chain.tail
      .then(() => Promise.all(configs.map((config) => this.deliver(taskId, config, body))))
      .then(() => {
        chain.queued--;
        if (chain.queued === 0 && this.chains.get(taskId) === chain) this.chains.delete(taskId);
      });
    this.chains.set(taskId, chain);
  }

  /** Stops sending (updates queued are given up). */
  close(): void {
    this.closed = true;
  }

  private async deliver(taskId: string, config: V1TaskPushNotificationConfig, body: string): Promise<void> {
    const headers: Record<string, string> = { 'Content-Type': 'application/a2a+json' };
    if (config.token !== undefined && config.token !== '') headers['X-A2A-Notification-Token'] = config.token;
    const auth = config.authentication;
    if (auth !== undefined && auth.scheme !== '') {
      headers.Authorization = auth.credentials ? `${auth.scheme} ${auth.credentials}` : auth.scheme;
    }
    let last = '';
    for (let attempt = 1; attempt <= PUSH_ATTEMPTS && !this.closed; attempt++) {
      try {
        const response = await fetch(config.url as string, {
          method: 'POST',
          headers,
          body,
          redirect: 'manual',
          signal: AbortSignal.timeout(PUSH_TIMEOUT_MS),
        });
        await response.body?.cancel().catch(() => {});
        if (response.ok) return;
        last = `HTTP ${response.status}`;
        // A client error other than a rate limit will not change on a retry.
        if (response.status < 500 && response.status !== 429 && response.status !== 408) break;
      } catch (error) {
        last = (error as Error).message;
      }
      if (attempt < PUSH_ATTEMPTS) await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS * 2 ** (attempt - 1)));
    }
    this.logger.warn(
      { taskId, configId: config.id, url: config.url, reason: last },
      'gateway: a push notification could not be delivered; given up (the task goes on)',
    );
  }
}
