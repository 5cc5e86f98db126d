import type { Delivery, WorkQueue } from '../../bus/work-queue.js';
import { cancelVerdict, retryVerdict } from '../../decisions/item-controls.js';
import {
  CONTROLS_ROLE,
  type CancelRequest,
  type ItemControl,
  ItemControlSchema,
  RETRY_OF_ATTRIBUTE,
  type RetryRequest,
  retryRequestId,
} from '../../protocol/item-control.js';
import type { Logger } from '../../log/logger.js';
import type { WorkEnvelope } from '../../protocol/work-envelope.js';
import type { Coordinator } from './coordinator.js';
import { CoordinatorError } from './types.js';

/** The work item attribute holding the request id it was created for (see `intake.ts`). */
const REQUEST_ATTRIBUTE = 'switchboard.request';

/** Publishes a cancel or a retry on `$controls`; the same message twice is one while the bus retains its key. */
export async function submitControl(bus: WorkQueue, control: ItemControl): Promise<{ duplicate: boolean }> {
  const c = ItemControlSchema.parse(control);
  const key = c.type === 'switchboard.cancel' ? `cancel:${c.itemId}` : `${retryRequestId(c.itemId)}:${c.from ?? ''}`;
  const envelope: WorkEnvelope = {
    kind: 'work',
    headers: { taskId: key, runId: key, hop: 0, attempt: 1, idempotencyKey: key },
    message: { role: 'user', parts: [{ kind: 'data', data: c }] },
  };
  const result = await bus.publish(CONTROLS_ROLE, envelope, { idempotencyKey: key });
  return { duplicate: result.duplicate };
}

export interface ControlHandling {
  coordinator: Coordinator;
  bus: WorkQueue;
  logger: Logger;
  /** The item created for a request id, if any. */
  itemFor(requestId: string): string | undefined;
  /** Records the item created for a request id. */
  remember(requestId: string, itemId: string): void;
  /** Dead-letters a message the Coordinator refuses (not retried). */
  refuse(delivery: Delivery, type: string, message: string): Promise<void>;
}

/** Applies one control message: checks it against the item as stored (`item-controls` verdicts), then cancels or retries. */
export async function handleControl(delivery: Delivery, h: ControlHandling): Promise<void> {
  const env = delivery.envelope;
  const part = env.kind === 'work' ? env.message.parts[0] : undefined;
  const parsed = ItemControlSchema.safeParse(part?.kind === 'data' ? part.data : undefined);
  if (!parsed.success) {
    await h.refuse(delivery, 'InvalidRequest', parsed.error.issues[0]?.message ?? 'not an item control');
    return;
  }
  try {
    if (parsed.data.type === 'switchboard.cancel') await cancelItem(delivery, parsed.data, h);
    else await retryItem(delivery, parsed.data, h);
  } catch (error) {
    if (error instanceof CoordinatorError && error.code !== 'COORD_CLOSED') {
      await h.refuse(delivery, error.code, error.message);
      return;
    }
    throw error;
  }
}

async function cancelItem(delivery: Delivery, c: CancelRequest, h: ControlHandling): Promise<void> {
  const verdict = cancelVerdict(c.itemId, await h.coordinator.getItem(c.itemId));
  if (verdict.kind === 'refuse') return h.refuse(delivery, verdict.code, verdict.message);
  if (verdict.kind === 'apply') {
    await h.coordinator.cancel(c.itemId, {
      ...(c.by === undefined ? {} : { by: c.by }),
      ...(c.reason === undefined ? {} : { reason: c.reason }),
    });
    h.logger.info({ itemId: c.itemId, by: c.by, reason: c.reason }, 'work item canceled');
  } else {
    h.logger.info({ itemId: c.itemId }, verdict.kind === 'nothing' ? verdict.message : 'cancel: nothing to do');
  }
  await h.bus.ack(delivery);
}

async function retryItem(delivery: Delivery, r: RetryRequest, h: ControlHandling): Promise<void> {
  const requestId = retryRequestId(r.itemId);
  const known = h.itemFor(requestId);
  if (known !== undefined) {
    h.logger.info({ itemId: r.itemId, retry: known }, 'the item was retried already');
    await h.bus.ack(delivery);
    return;
  }
  const item = await h.coordinator.getItem(r.itemId);
  const verdict = retryVerdict(r.itemId, item, r.from, undefined);
  if (verdict.kind !== 'apply' || item === undefined) {
    if (verdict.kind === 'refuse') return h.refuse(delivery, verdict.code, verdict.message);
    await h.bus.ack(delivery);
    return;
  }
  const retry = await h.coordinator.createWorkItem({
    workflow: item.workflow,
    input: item.input,
    ...(item.budget === null ? {} : { budget: item.budget }),
    attributes: {
      ...Object.fromEntries(
        Object.entries(item.attributes ?? {}).filter(([k]) => k !== REQUEST_ATTRIBUTE && k !== RETRY_OF_ATTRIBUTE),
      ),
      [REQUEST_ATTRIBUTE]: requestId,
      [RETRY_OF_ATTRIBUTE]: r.itemId,
      ...(r.by === undefined ? {} : { 'switchboard.retried-by': r.by }),
    },
    ...(r.from === undefined ? {} : { startStage: r.from }),
  });
  h.remember(requestId, retry);
  h.logger.info({ itemId: r.itemId, retry, from: r.from ?? null, by: r.by }, 'failed work item retried');
  await h.bus.ack(delivery);
}
