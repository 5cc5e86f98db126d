import { MAX_EVENTS_LIMIT } from '../protocol/bounds.js';
import { type BrokerError, isBrokerError } from '../protocol/broker-error.js';
import type { DurableEvent } from '../protocol/events.js';

/** Events held for one agent before the inbox stops taking more (the rest wait in the broker's log). */
export const MAX_BUFFERED_EVENTS = 10_000;

/** Reads a page of the agent's durable log: events with `seq > after`, ascending. */
export type FetchEventsSince = (after: number, limit: number) => Promise<DurableEvent[]>;

/**
 * Picks, from a page read from the log, the events to keep; the others are
 * passed over (their seqs count as received, so they are never read again).
 */
export type ScreenEvents = (events: DurableEvent[]) => Promise<DurableEvent[]>;

interface Waiter {
  taskId: string | undefined;
  resolve(events: DurableEvent[]): void;
  reject(error: unknown): void;
  timer: NodeJS.Timeout | undefined;
}

/** The task an event is about. */
export function eventTaskId(event: DurableEvent): string {
  return event.method === 'a2a.task.event' ? event.params.event.taskId : event.params.taskId;
}

/**
 * The client-side inbox of one party `(contextId, name)`: the events addressed
 * to it, in seq order, each once, until a `wait` takes them. It tracks the
 * last seq it holds; a live event that skips ahead (a gap: missed while
 * disconnected, or before the server began relaying) makes it read the
 * broker's durable log from that seq, so no wake-up is lost. A log cut past
 * that seq by the broker's task retention (`A2A_EVENTS_PRUNED`) is never a
 * silent gap: the next `wait` is refused with that error (once), and the
 * inbox reads on from the oldest seq the log keeps. When it holds
 * `MAX_BUFFERED_EVENTS` it takes no more until a `wait` makes room; the rest
 * stay in the log and are read then.
 */
export class AgentInbox {
  private readonly fetchSince: FetchEventsSince;
  private seq: number;
  private buffer: DurableEvent[] = [];
  private waiters: Waiter[] = [];
  private held: DurableEvent[] = [];
  private syncing: Promise<void> | undefined;
  private behind = false;
  private closed = false;
  /** The log was cut past the last seq held (`A2A_EVENTS_PRUNED`): the next wait is refused with it, once. */
  private gap: BrokerError | undefined;

  constructor(fetchSince: FetchEventsSince, lastSeq = 0) {
    this.fetchSince = fetchSince;
    this.seq = lastSeq;
  }

  /** Seq of the last event this inbox received (taken by a wait or still buffered). */
  get lastSeq(): number {
    return this.seq;
  }

  /** Events received and not yet taken by a wait. */
  get buffered(): number {
    return this.buffer.length;
  }

  /** A live notification addressed to this party. */
  accept(event: DurableEvent): void {
    if (this.closed || event.seq <= this.seq) return;
    // A full inbox takes nothing: the log holds the event until a wait makes room.
    if (this.behind) return;
    if (this.syncing) {
      this.held.push(event);
      return;
    }
    if (event.seq === this.seq + 1) {
      this.deliver(event);
      return;
    }
    this.held.push(event);
    void this.catchUp();
  }

  /**
   * Reads the durable log after the last seq held, then the live events that
   * came meanwhile. Concurrent calls share one pass. A failed read (the
   * connection went away) keeps the last seq where it was: the next catch-up
   * (after a reconnect) starts from there. With `screen`, each page read
   * from the log keeps only the events `screen` returns (a registration's
   * replay passes over the events of tasks that have ended); live events
   * are never screened.
   */
  catchUp(screen?: ScreenEvents): Promise<void> {
    if (this.syncing) return this.syncing;
    const pass = this.readLog(screen).finally(() => {
      this.syncing = undefined;
    });
    this.syncing = pass;
    return pass;
  }

  /**
   * Resolves with the buffered events (of `taskId` when given), at once when
   * there are any, else with the next ones to arrive, or `[]` after
   * `timeoutMs`.
   */
  wait(taskId: string | undefined, timeoutMs: number): Promise<DurableEvent[]> {
    const gap = this.gap;
    if (gap !== undefined) {
      this.gap = undefined;
      return Promise.reject(gap);
    }
    const ready = this.take(taskId);
    if (ready.length > 0 || this.closed || timeoutMs <= 0) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { taskId, resolve, reject, timer: undefined };
      waiter.timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve([]);
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** The registration ended: pending waits resolve with what is left for them. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.resolve(this.take(waiter.taskId));
    }
    this.held = [];
  }

  private async readLog(screen: ScreenEvents | undefined): Promise<void> {
    try {
      for (;;) {
        let events: DurableEvent[];
        try {
          events = await this.fetchSince(this.seq, MAX_EVENTS_LIMIT);
        } catch (error) {
          const oldest = prunedThrough(error);
          if (oldest === undefined) throw error;
          // Never a silent gap: the next wait says what was missed, and reading goes on from what is kept.
          this.gap = error as BrokerError;
          this.seq = oldest;
          this.refuseWaiters(this.gap);
          continue;
        }
        const kept = screen === undefined ? undefined : new Set(await screen(events));
        for (const event of events) {
          if (event.seq <= this.seq) continue;
          if (kept !== undefined && !kept.has(event)) {
            if (this.closed) break;
            this.seq = event.seq;
            continue;
          }
          if (!this.deliver(event)) break;
        }
        if (this.behind || events.length < MAX_EVENTS_LIMIT || this.closed) break;
      }
    } catch {
      // The live events held are in the log too: the next pass reads them.
      this.held = [];
      return;
    }
    const held = this.held.sort((a, b) => a.seq - b.seq);
    this.held = [];
    for (const event of held) {
      if (event.seq > this.seq && !this.deliver(event)) break;
    }
  }

  /** The waits pending when a gap is found are refused with it (the gap is then told). */
  private refuseWaiters(gap: BrokerError): void {
    if (this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    this.gap = undefined;
    for (const waiter of waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(gap);
    }
  }

  /** Buffers one event and wakes the waits it matches; false when the buffer is full. */
  private deliver(event: DurableEvent): boolean {
    if (this.closed) return false;
    if (this.buffer.length >= MAX_BUFFERED_EVENTS) {
      this.behind = true;
      return false;
    }
    this.seq = event.seq;
    this.buffer.push(event);
    if (this.waiters.length > 0) this.serveWaiters();
    return true;
  }

  /** Hands the buffered events to the waits they match, in the order the waits were made. */
  private serveWaiters(): void {
    let i = 0;
    while (i < this.waiters.length && this.buffer.length > 0) {
      const waiter = this.waiters[i] as Waiter;
      const { taskId } = waiter;
      // Most waits are for one task: look before taking, so a wait with nothing for it costs no copy.
      if (taskId !== undefined && !this.buffer.some((event) => eventTaskId(event) === taskId)) {
        i++;
        continue;
      }
      const events = this.take(taskId);
      this.waiters.splice(i, 1);
      clearTimeout(waiter.timer);
      waiter.resolve(events);
    }
  }

  private take(taskId: string | undefined): DurableEvent[] {
    let taken: DurableEvent[];
    if (taskId === undefined) {
      taken = this.buffer;
      this.buffer = [];
    } else {
      taken = [];
      const kept: DurableEvent[] = [];
      for (const event of this.buffer) (eventTaskId(event) === taskId ? taken : kept).push(event);
      this.buffer = kept;
    }
    if (this.behind && !this.closed && this.buffer.length < MAX_BUFFERED_EVENTS) {
      this.behind = false;
      void this.catchUp();
    }
    return taken;
  }
}

/** The oldest cursor the broker keeps, when `error` refused a cursor older than it (`A2A_EVENTS_PRUNED`). */
function prunedThrough(error: unknown): number | undefined {
  if (!isBrokerError(error) || error.code !== 'A2A_EVENTS_PRUNED') return undefined;
  const oldest = error.details?.oldestCursor;
  return typeof oldest === 'number' && Number.isInteger(oldest) && oldest >= 0 ? oldest : undefined;
}
