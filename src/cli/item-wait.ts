import type { WorkQueue } from '../bus/work-queue.js';
import type { DeadLetterQueue } from '../bus/work-queue.js';
import type { ItemRecord } from '../workflow/records.js';
import type { CoordinatorReader } from './coordinator-reader.js';

/** What became of a request the Coordinator was sent: its item, its refusal (a dead letter), or nothing yet. */
export type RequestOutcome =
  | { kind: 'item'; item: ItemRecord }
  | { kind: 'refused'; message: string }
  | { kind: 'timeout' };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function deadLettersOf(bus: WorkQueue): DeadLetterQueue | undefined {
  const dlq = (bus as { deadLetters?: DeadLetterQueue }).deadLetters;
  return dlq !== undefined && typeof dlq.list === 'function' ? dlq : undefined;
}

/**
 * Polls until the Coordinator made the item a request asked for (found by
 * `find`) or dead-lettered the request (on `role`, by its idempotency key),
 * or `deadline` passes.
 */
export async function awaitRequest(
  find: () => Promise<ItemRecord | undefined>,
  bus: WorkQueue,
  role: string,
  key: string,
  deadline: number,
): Promise<RequestOutcome> {
  const dlq = deadLettersOf(bus);
  for (let wait = 50; ; wait = Math.min(500, wait * 2)) {
    const item = await find();
    if (item !== undefined) return { kind: 'item', item };
    if (dlq !== undefined) {
      const letters = await dlq.list(role, { limit: 1000 });
      const dead = letters.find((l) => l.idempotencyKey === key);
      if (dead !== undefined) return { kind: 'refused', message: dead.lastError.message };
    }
    if (Date.now() >= deadline) return { kind: 'timeout' };
    await sleep(wait);
  }
}

/** Polls until the item ended (its record then), or `deadline` passes (`undefined`). */
export async function awaitSettled(
  reader: CoordinatorReader,
  itemId: string,
  deadline: number,
): Promise<ItemRecord | undefined> {
  for (let wait = 50; ; wait = Math.min(500, wait * 2)) {
    const item = await reader.readItem(itemId);
    if (item !== undefined && item.finishedAt !== null) return item;
    if (Date.now() >= deadline) return undefined;
    await sleep(wait);
  }
}
