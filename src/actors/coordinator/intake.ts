import { z } from 'zod';
import { BusError, type Delivery, type WorkQueue } from '../../bus/work-queue.js';
import type { Logger } from '../../log/logger.js';
import type { WorkEnvelope } from '../../protocol/work-envelope.js';
import type { Coordinator } from './coordinator.js';
import { CONTROLS_ROLE } from '../../protocol/item-control.js';
import { handleControl } from './item-controls.js';
import { CoordinatorError } from './types.js';

/**
 * The Coordinator's control plane on the bus: how work item requests and
 * approval decisions reach a Coordinator running in its own process.
 *
 * - `$items`: a request to create a work item, published by `switchboard
 *   submit` with the request id as its idempotency key. The Coordinator
 *   creates the item with the attribute `switchboard.request` = the request id;
 *   the attribute is written in the transaction that creates the item, so the
 *   request id → item id mapping commits with the item. A redelivered request
 *   (the Coordinator crashed before its ack) finds the mapping and creates
 *   nothing.
 * - `$approvals`: an approval decision for an item waiting at a gate,
 *   published by `switchboard approve`. A decision for an item not yet at its
 *   gate is retried (after a second) until it is or the bus's attempts run
 *   out (then it is dead-lettered on `$approvals`); one for an unknown item or
 *   refused by the workflow (not an approver) is dead-lettered at once; one
 *   for an item already decided or finished is acked and changes nothing.
 * - `$controls`: a cancel or a retry of an item (`switchboard items cancel`,
 *   `switchboard items retry`), applied by `item-controls.ts`.
 */

export const ITEMS_ROLE = '$items';
export const APPROVALS_ROLE = '$approvals';
/** The work item attribute holding the request id it was created for. */
export const REQUEST_ATTRIBUTE = 'switchboard.request';

const RequestIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:@/-]{1,200}$/, 'a request id is 1-200 letters, digits or . _ : @ / -');

export const ItemRequestSchema = z.object({
  type: z.literal('switchboard.create-item'),
  requestId: RequestIdSchema,
  workflow: z.string().min(1).max(128),
  input: z.string().min(1).max(16_000),
});
export type ItemRequest = z.infer<typeof ItemRequestSchema>;

export const ApprovalRequestSchema = z.object({
  type: z.literal('switchboard.approval'),
  itemId: z.string().min(1).max(200),
  approver: z.string().min(1).max(128),
  decision: z.enum(['approve', 'deny']),
  reason: z.string().max(2000).optional(),
});
export type ApprovalRequest = z.infer<typeof ApprovalRequestSchema>;

export function checkRequestId(id: string): string {
  const parsed = RequestIdSchema.safeParse(id);
  if (!parsed.success)
    throw new CoordinatorError('COORD_INVALID_ARGUMENT', parsed.error.issues[0]?.message ?? 'bad id');
  return parsed.data;
}

/** A control message as a bus envelope (the bus carries work envelopes; the body is one data part). */
function envelope(key: string, data: Record<string, unknown>): WorkEnvelope {
  return {
    kind: 'work',
    headers: { taskId: key, runId: key, hop: 0, attempt: 1, idempotencyKey: key },
    message: { role: 'user', parts: [{ kind: 'data', data }] },
  };
}

/** Publishes work item requests; a request id already used is a no-op (`duplicate: true`). */
export async function submitItems(
  bus: WorkQueue,
  requests: readonly Omit<ItemRequest, 'type'>[],
): Promise<{ requestId: string; duplicate: boolean }[]> {
  const checked = requests.map((r) => ItemRequestSchema.parse({ type: 'switchboard.create-item', ...r }));
  const results = await bus.publishMany(
    checked.map((r) => ({
      role: ITEMS_ROLE,
      envelope: envelope(`item:${r.requestId}`, r),
      idempotencyKey: `item:${r.requestId}`,
    })),
  );
  return checked.map((r, i) => ({ requestId: r.requestId, duplicate: results[i]?.duplicate ?? false }));
}

/** Publishes an approval decision (the same decision twice is one message while the bus retains its key). */
export async function submitApproval(
  bus: WorkQueue,
  request: Omit<ApprovalRequest, 'type'>,
): Promise<{ duplicate: boolean }> {
  const r = ApprovalRequestSchema.parse({ type: 'switchboard.approval', ...request });
  const key = `approval:${r.itemId}:${r.decision}:${r.approver}`;
  const result = await bus.publish(APPROVALS_ROLE, envelope(key, r), { idempotencyKey: key });
  return { duplicate: result.duplicate };
}

function dataOf(delivery: Delivery): unknown {
  const env = delivery.envelope;
  if (env.kind !== 'work') return undefined;
  const part = env.message.parts[0];
  return part?.kind === 'data' ? part.data : undefined;
}

export interface IntakeOptions {
  coordinator: Coordinator;
  bus: WorkQueue;
  logger: Logger;
  consumer: string;
  /** Approves every item reaching a gate as this approver (unattended runs and tests). */
  autoApprove?: string;
  /** Lease on each control message (default 30 s). */
  visibilityTimeoutMs?: number;
}

/** Runs the control plane for one Coordinator: `$items`, `$approvals` and the optional auto-approval. */
export class CoordinatorIntake {
  readonly #o: IntakeOptions;
  readonly #log: Logger;
  readonly #stop = new AbortController();
  readonly #loops: Promise<void>[] = [];
  /** Request id → item id, rebuilt from the items' attributes on start. */
  readonly #requests = new Map<string, string>();
  #unsubscribe: (() => void) | undefined;
  readonly #pending = new Set<Promise<unknown>>();

  constructor(options: IntakeOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: 'intake' });
  }

  /** Items created so far by request id. */
  itemFor(requestId: string): string | undefined {
    return this.#requests.get(requestId);
  }

  /** Reads the items' request ids and awaiting approvals, then starts taking requests (resolves once started). */
  async start(): Promise<void> {
    const items = await this.#o.coordinator.listItems();
    for (const item of items) {
      const request = item.attributes?.[REQUEST_ATTRIBUTE];
      if (typeof request === 'string') this.#requests.set(request, item.id);
    }
    const approver = this.#o.autoApprove;
    if (approver !== undefined) {
      const sub = this.#o.coordinator.statuses$.subscribe((status) => {
        if (status.event.kind === 'approval-requested') this.#approve(status.id, approver);
      });
      this.#unsubscribe = () => sub.unsubscribe();
      for (const item of await this.#o.coordinator.listItems()) {
        if (item.state === 'awaiting-approval') this.#approve(item.id, approver);
      }
    }
    const handlers: [string, (d: Delivery) => Promise<void>][] = [
      [ITEMS_ROLE, (d) => this.#createItem(d)],
      [APPROVALS_ROLE, (d) => this.#decide(d)],
      [
        CONTROLS_ROLE,
        (d) =>
          handleControl(d, {
            coordinator: this.#o.coordinator,
            bus: this.#o.bus,
            logger: this.#log,
            itemFor: (requestId) => this.#requests.get(requestId),
            remember: (requestId, itemId) => this.#requests.set(requestId, itemId),
            refuse: (delivery, type, message) => this.#refuse(delivery, type, message),
          }),
      ],
    ];
    // What an earlier intake held (a leader that died) is handed out again now, on every role it takes.
    for (const [role] of handlers) {
      const taken = await this.#o.bus.expireLeases(role);
      if (taken > 0) this.#log.info({ role, requests: taken }, 'took back the requests an earlier Coordinator held');
    }
    for (const [role, handle] of handlers) this.#loops.push(this.#loop(role, handle));
  }

  #approve(itemId: string, approver: string): void {
    const p = this.#o.coordinator.approve(itemId, approver).then(
      () => this.#log.info({ itemId, approver }, 'auto-approved'),
      (error: unknown) => this.#log.error({ err: error, itemId }, 'auto-approval refused'),
    );
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async #loop(role: string, handle: (d: Delivery) => Promise<void>): Promise<void> {
    const signal = this.#stop.signal;
    let failures = 0;
    while (!signal.aborted) {
      let batch: Delivery[];
      try {
        batch = await this.#o.bus.consume(role, {
          consumer: this.#o.consumer,
          visibilityTimeoutMs: this.#o.visibilityTimeoutMs ?? 30_000,
          max: 32,
          waitMs: 500,
          signal,
        });
        failures = 0;
      } catch (error) {
        if (signal.aborted || (error instanceof BusError && error.code === 'BUS_CLOSED')) return;
        failures++;
        this.#log.error({ err: error, role }, 'consuming control messages failed: retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(5_000, 100 * 2 ** Math.min(failures, 6))));
        continue;
      }
      // One at a time: a request is looked up and created before the next is read.
      for (const delivery of batch) {
        try {
          await handle(delivery);
        } catch (error) {
          this.#log.error({ err: error, role, delivery: delivery.id }, 'a control message failed: it will be retried');
          await this.#o.bus
            .nack(delivery, {
              error: { type: 'IntakeError', message: (error as Error)?.message ?? String(error) },
              retryable: true,
              delayMs: 1000,
            })
            .catch((e: unknown) => this.#log.warn({ err: e }, 'nack failed'));
        }
      }
    }
  }

  async #refuse(delivery: Delivery, type: string, message: string): Promise<void> {
    this.#log.error({ role: delivery.role, delivery: delivery.id, type, reason: message }, 'control message refused');
    await this.#o.bus.nack(delivery, { error: { type, message }, retryable: false });
  }

  async #createItem(delivery: Delivery): Promise<void> {
    const parsed = ItemRequestSchema.safeParse(dataOf(delivery));
    if (!parsed.success) {
      await this.#refuse(delivery, 'InvalidRequest', parsed.error.issues[0]?.message ?? 'not a work item request');
      return;
    }
    const { requestId, workflow, input } = parsed.data;
    const known = this.#requests.get(requestId);
    if (known !== undefined) {
      this.#log.info({ requestId, itemId: known }, 'request already has its work item');
      await this.#o.bus.ack(delivery);
      return;
    }
    let itemId: string;
    try {
      itemId = await this.#o.coordinator.createWorkItem({
        workflow,
        input,
        attributes: { [REQUEST_ATTRIBUTE]: requestId },
      });
    } catch (error) {
      if (
        error instanceof CoordinatorError &&
        (error.code === 'COORD_UNKNOWN_WORKFLOW' || error.code === 'COORD_INVALID_ARGUMENT')
      ) {
        await this.#refuse(delivery, error.code, error.message);
        return;
      }
      throw error;
    }
    this.#requests.set(requestId, itemId);
    this.#log.info({ requestId, itemId, workflow }, 'work item created');
    await this.#o.bus.ack(delivery);
  }

  async #decide(delivery: Delivery): Promise<void> {
    const parsed = ApprovalRequestSchema.safeParse(dataOf(delivery));
    if (!parsed.success) {
      await this.#refuse(delivery, 'InvalidRequest', parsed.error.issues[0]?.message ?? 'not an approval');
      return;
    }
    const r = parsed.data;
    const item = await this.#o.coordinator.getItem(r.itemId);
    if (item === undefined) {
      await this.#refuse(delivery, 'COORD_UNKNOWN_ITEM', `no work item ${r.itemId}`);
      return;
    }
    if (item.finishedAt !== null) {
      this.#log.info({ itemId: r.itemId, state: item.state }, 'approval for a finished item: nothing to do');
      await this.#o.bus.ack(delivery);
      return;
    }
    if (item.state !== 'awaiting-approval') {
      // Not at its gate yet: try again shortly (the bus's attempts bound the wait).
      await this.#o.bus.nack(delivery, {
        error: { type: 'NotAwaitingApproval', message: `work item ${r.itemId} is ${item.state}` },
        retryable: true,
        delayMs: 1000,
      });
      return;
    }
    try {
      if (r.decision === 'approve') await this.#o.coordinator.approve(r.itemId, r.approver);
      else await this.#o.coordinator.deny(r.itemId, r.approver, r.reason);
    } catch (error) {
      if (error instanceof CoordinatorError) {
        await this.#refuse(delivery, error.code, error.message);
        return;
      }
      throw error;
    }
    this.#log.info({ itemId: r.itemId, approver: r.approver, decision: r.decision }, 'approval applied');
    await this.#o.bus.ack(delivery);
  }

  async close(): Promise<void> {
    this.#stop.abort();
    this.#unsubscribe?.();
    await Promise.all(this.#loops);
    await Promise.all([...this.#pending]);
  }
}
