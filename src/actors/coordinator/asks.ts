import { deliveries } from '../../bus/deliveries.js';
import type { Delivery, WorkQueue } from '../../bus/work-queue.js';
import type { Logger } from '../../log/logger.js';
import type { CoordinatorStore } from '../../persistence/coordinator/store.js';
import type { Suspension, WorkHandler } from '../worker/worker.js';

/**
 * Questions go through the Coordinator. A worker that suspends asks a role a
 * question; the worker harness publishes that question itself. For the pools
 * the Coordinator runs, `routeAsks` addresses the question to the
 * Coordinator's own queue for that role (`$ask:<role>`) instead, so that it
 * reaches the role only once the Coordinator has recorded the suspension and
 * governed the question: the `AskForwarder` moves an allowed question to the
 * role's queue (same idempotency key) and drops a denied one.
 */

export const ASK_ROLE_PREFIX = '$ask:';

/** The role a question is for, and whether it came through the Coordinator's queue. */
export function askTarget(role: string): { role: string; routed: boolean } {
  return role.startsWith(ASK_ROLE_PREFIX)
    ? { role: role.slice(ASK_ROLE_PREFIX.length), routed: true }
    : { role, routed: false };
}

/** Wraps a handler so that its questions go to the Coordinator's queue for the asked role. */
export function routeAsks(handler: WorkHandler): WorkHandler {
  return async (hop) => {
    const result = await handler(hop);
    if (result === null || typeof result !== 'object' || (result as { kind?: unknown }).kind !== 'suspend') {
      return result;
    }
    const suspension = result as Suspension;
    if (suspension.ask.role.startsWith(ASK_ROLE_PREFIX)) return suspension;
    return { ...suspension, ask: { ...suspension.ask, role: `${ASK_ROLE_PREFIX}${suspension.ask.role}` } };
  };
}

/** How long a question waits for its suspension to be recorded before it is put back for later. */
const EARLY_WAIT_MS = 2_000;

export class AskForwarder {
  readonly #bus: WorkQueue;
  readonly #store: CoordinatorStore;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #loops: Promise<void>[] = [];

  constructor(options: { bus: WorkQueue; store: CoordinatorStore; logger: Logger }) {
    this.#bus = options.bus;
    this.#store = options.store;
    this.#log = options.logger;
  }

  /** Starts one forwarding loop per role that may be asked. */
  start(roles: Iterable<string>, consumer: string): void {
    for (const role of roles) this.#loops.push(this.#loop(role, consumer));
  }

  async #loop(role: string, consumer: string): Promise<void> {
    const queue = `${ASK_ROLE_PREFIX}${role}`;
    while (!this.#stop.signal.aborted) {
      try {
        for await (const delivery of deliveries(this.#bus, queue, {
          consumer,
          visibilityTimeoutMs: 30_000,
          max: 16,
          waitMs: 500,
          signal: this.#stop.signal,
        })) {
          await this.#forward(role, delivery);
        }
        return;
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        this.#log.error({ err: error, role }, 'forwarding questions failed: restarting');
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
    }
  }

  async #forward(role: string, delivery: Delivery): Promise<void> {
    const envelope = delivery.envelope;
    const token = envelope.kind === 'work' ? envelope.headers.askedBy?.continuationToken : undefined;
    if (envelope.kind !== 'work' || token === undefined) {
      await this.#bus.nack(delivery, {
        error: { type: 'InvalidQuestion', message: 'not a question from a suspended hop' },
        retryable: false,
      });
      return;
    }
    let query = this.#store.hopByContinuation(token);
    const deadline = Date.now() + EARLY_WAIT_MS;
    while (query === undefined && Date.now() < deadline && !this.#stop.signal.aborted) {
      // The suspension is recorded by the results loop; it is usually a few milliseconds behind.
      await new Promise((resolve) => setTimeout(resolve, 20));
      query = this.#store.hopByContinuation(token);
    }
    if (query === undefined) {
      await this.#bus.release(delivery);
      return;
    }
    if (query.kind === 'query' && query.state === 'dispatched') {
      await this.#bus.publish(role, envelope, { idempotencyKey: envelope.headers.idempotencyKey });
    } else {
      this.#log.info(
        { role, query: query.id, state: query.state },
        'a question the Coordinator did not allow: dropped',
      );
    }
    await this.#bus.ack(delivery);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await Promise.all(this.#loops);
  }
}
