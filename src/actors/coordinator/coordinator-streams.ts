import { type Observable, Subject, concat, defer, filter, map, of, takeWhile } from 'rxjs';
import { isFinalRunState } from '../../machines/workflow-run-transitions.js';
import type { Clock } from '../../persistence/kernel/clock.js';
import type { ItemEvent, ItemEventKind, ItemRecord } from '../../workflow/records.js';
import type { CoordinatorStorage, LiveItems } from './storage/coordinator-storage.js';
import { CoordinatorError, type ItemStatus, invalid, statusOf } from './types.js';

/** What `Coordinator.settled` takes: how long to wait. */
export interface SettleOptions {
  /**
   * Give up after this many milliseconds (0 to 2147483647): the promise
   * rejects with `COORD_SETTLE_TIMEOUT` and the item runs on. Default: wait
   * as long as it takes.
   */
  timeoutMs?: number;
}

/** Whether an item event is the item's end (the last status `watch` streams). */
function isItemEndEvent(kind: ItemEventKind): boolean {
  return kind === 'completed' || kind === 'failed' || kind === 'canceled';
}

/**
 * The Coordinator's live views: every item's statuses (`statuses$`), one
 * item's (`watch`), and the wait for its end (`settled`). Statuses come in
 * through `emit` after each commit; an item whose broker task is being made
 * has its statuses held (`hold`) and let out once it is (`release`), so that
 * they carry the task's id.
 */
export class CoordinatorStreams {
  readonly #all = new Subject<ItemStatus>();
  /** The statuses of items whose task the mirror is making, by item id: out once it is made (`createWorkItem`). */
  readonly #held = new Map<string, ItemStatus[]>();
  readonly #storage: CoordinatorStorage;
  readonly #live: LiveItems;
  readonly #clock: Clock;
  /** Whether the Coordinator is closing or closed (its streams give no current statuses then). */
  readonly #closed: () => boolean;

  // The live items' current statuses are read and the changes subscribed in one synchronous step: none is missed.
  readonly statuses$: Observable<ItemStatus> = defer(() =>
    this.#closed()
      ? this.#all
      : concat(of(...this.#storage.liveNow(this.#live).map((item) => this.#current(item))), this.#all),
  );

  constructor(options: { storage: CoordinatorStorage; live: LiveItems; clock: Clock; closed: () => boolean }) {
    this.#storage = options.storage;
    this.#live = options.live;
    this.#clock = options.clock;
    this.#closed = options.closed;
  }

  /** Statuses out (held ones kept back until their item's task is made). */
  emit(statuses: Iterable<ItemStatus>): void {
    for (const status of statuses) {
      const held = this.#held.get(status.id);
      if (held === undefined) this.#all.next(status);
      else held.push(status);
    }
  }

  /**
   * A chunk of an artifact a hop of a live item streams (event
   * `artifact-chunk`); false when the item is not live here (nothing is sent).
   */
  chunk(itemId: string, hop: number, role: string, artifact: NonNullable<ItemEvent['artifact']>): boolean {
    const item = this.#storage.itemNow(itemId, this.#live);
    if (item === undefined || item.finishedAt !== null) return false;
    this.emit([
      statusOf(item, {
        kind: 'artifact-chunk',
        itemId,
        hop,
        stage: item.stage,
        role,
        detail: `${artifact.artifactId}: ${artifact.text.length} characters at ${artifact.offset}${artifact.lastChunk ? ' (last)' : ''}`,
        at: this.#clock.now(),
        artifact,
      }),
    ]);
    return true;
  }

  /** Holds the item's statuses until `release`. */
  hold(itemId: string): void {
    this.#held.set(itemId, []);
  }

  /** Lets the item's held statuses out, with its task id (`null` only if the broker failed). */
  release(itemId: string, taskId: string | undefined): void {
    const held = this.#held.get(itemId) ?? [];
    this.#held.delete(itemId);
    for (const status of held) this.#all.next(status.taskId === null ? { ...status, taskId: taskId ?? null } : status);
  }

  /** An item's status as it stands (event `current`). */
  #current(item: ItemRecord): ItemStatus {
    return statusOf(item, {
      kind: 'current',
      itemId: item.id,
      hop: item.hop,
      stage: item.stage,
      role: null,
      detail: `${item.state}`,
      at: this.#clock.now(),
    });
  }

  watch(itemId: string): Observable<ItemStatus> {
    return defer(() => {
      const item = this.#storage.itemNow(itemId, this.#live);
      if (item === undefined) {
        return this.#storage.itemNotNow(itemId).pipe(
          map((stored) => {
            if (stored === undefined) throw new CoordinatorError('COORD_UNKNOWN_ITEM', `no work item ${itemId}`);
            return this.#current(stored);
          }),
        );
      }
      const current = this.#current(item);
      if (item.finishedAt !== null) return of(current);
      return concat(
        of(current),
        this.#all.pipe(
          filter((s) => s.id === itemId),
          // One step's statuses all carry the item as the step left it: an ended item's hop-completed
          // status is final already, so the stream ends at the item's own end event, not at the first final state.
          takeWhile((s) => !isItemEndEvent(s.event.kind), true),
        ),
      );
    });
  }

  settled(itemId: string, options: SettleOptions = {}): Promise<ItemStatus> {
    const timeoutMs = options?.timeoutMs;
    if (
      timeoutMs !== undefined &&
      (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > 2_147_483_647)
    ) {
      return Promise.reject(invalid('settled: timeoutMs is a whole number of milliseconds from 0 to 2147483647'));
    }
    return new Promise((resolve, reject) => {
      let last: ItemStatus | undefined;
      let timer: NodeJS.Timeout | undefined;
      const sub = this.watch(itemId).subscribe({
        next: (s) => {
          last = s;
        },
        error: (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
        complete: () => {
          clearTimeout(timer);
          if (last !== undefined && last.finishedAt !== null && isFinalRunState(last.state)) resolve(last);
          else {
            reject(
              new CoordinatorError('COORD_CLOSED', `the Coordinator closed before work item ${itemId} ended`, {
                details: { itemId, state: last?.state ?? null },
              }),
            );
          }
        },
      });
      if (timeoutMs === undefined || sub.closed) return;
      timer = setTimeout(() => {
        sub.unsubscribe();
        const state = last?.state ?? this.#storage.itemNow(itemId, this.#live)?.state ?? null;
        reject(
          new CoordinatorError(
            'COORD_SETTLE_TIMEOUT',
            `work item ${itemId} did not end within ${timeoutMs} ms (it is ${state}): it runs on; ` +
              'wait again with a longer timeoutMs, read it with getItem(), or cancel it',
            { details: { itemId, timeoutMs, state } },
          ),
        );
      }, timeoutMs);
    });
  }

  /** Completes every stream: no status comes after. */
  complete(): void {
    this.#all.complete();
  }
}
