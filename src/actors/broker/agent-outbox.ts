import { Observable, Subject } from 'rxjs';
import type { DurableEvent } from '../../protocol/events.js';

/** Events kept for a registration until its first subscriber arrives. */
export const OUTBOX_BUFFER_MAX = 1024;

/**
 * The live notifications of one registration. Events delivered before anyone
 * subscribed are held (up to `OUTBOX_BUFFER_MAX`, the oldest dropped first:
 * all of them stay in the durable log) and handed to the first subscriber, so
 * an event committed in the same batch as the registration is not lost to a
 * subscriber that attaches when `register` resolves.
 */
export class AgentOutbox {
  private readonly subject = new Subject<DurableEvent>();
  private held: DurableEvent[] | null = [];
  private done = false;

  deliver(event: DurableEvent): void {
    if (this.done) return;
    if (this.held !== null) {
      this.held.push(event);
      if (this.held.length > OUTBOX_BUFFER_MAX) this.held.shift();
      return;
    }
    this.subject.next(event);
  }

  complete(): void {
    if (this.done) return;
    this.done = true;
    this.subject.complete();
  }

  observable(): Observable<DurableEvent> {
    return new Observable<DurableEvent>((subscriber) => {
      const held = this.held;
      this.held = null;
      if (held !== null) for (const event of held) subscriber.next(event);
      if (this.done) {
        subscriber.complete();
        return undefined;
      }
      const subscription = this.subject.subscribe(subscriber);
      return () => subscription.unsubscribe();
    });
  }
}
