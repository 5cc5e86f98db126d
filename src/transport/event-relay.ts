import type { Subscription } from 'rxjs';
import type { BrokerApi } from '../actors/broker/api.js';
import type { Logger } from '../log/logger.js';
import { MAX_EVENTS_LIMIT } from '../protocol/bounds.js';
import { isBrokerError } from '../protocol/broker-error.js';
import type { DurableEvent } from '../protocol/events.js';

/** Where relayed events go: a connection's output, with its congestion signal. */
export interface EventSink {
  write(event: DurableEvent): void;
  readonly congested: boolean;
  /** True once nothing more can be written (the peer went away). */
  readonly closed: boolean;
  whenDrained(): Promise<void>;
}

export interface EventRelayOptions {
  agentId: string;
  /** The registration's token: needed to read its durable log when catching up. */
  token: string;
  broker: Pick<BrokerApi, 'events' | 'eventsSince'>;
  sink: EventSink;
  logger: Logger;
  /** Called once the relay has stopped for good. */
  onStop?: () => void;
  /** Called each time the relay lets go of the live stream to read the durable log (output backed up, or a gap). */
  onPause?: () => void;
}

type Mode = 'live' | 'paused' | 'catching-up' | 'stopped';

/**
 * Relays one registration's events to a connection, in `seq` order, never
 * twice and never with a gap. Live events flow while the connection keeps
 * up; when its output backs up the relay stops consuming the live stream
 * (the broker never waits for a reader and never drops anything: events stay
 * in its durable log), waits for the output to drain, reads what it missed
 * with `eventsSince` and then goes live again.
 */
export class EventRelay {
  private readonly options: EventRelayOptions;
  private mode: Mode = 'live';
  private subscription: Subscription | undefined;
  /** Seq of the last event written; 0 until the first. */
  private lastSeq = 0;
  /** Live events that arrive while the durable log is being read. */
  private held: DurableEvent[] = [];

  constructor(options: EventRelayOptions) {
    this.options = options;
  }

  get stopped(): boolean {
    return this.mode === 'stopped';
  }

  /** Seq of the last event written to the connection (0 before the first). */
  get lastWrittenSeq(): number {
    return this.lastSeq;
  }

  start(): void {
    this.subscribe();
  }

  stop(): void {
    if (this.mode === 'stopped') return;
    this.mode = 'stopped';
    this.unsubscribe();
    this.held = [];
    this.options.onStop?.();
  }

  private subscribe(): void {
    this.subscription = this.options.broker.events(this.options.agentId).subscribe({
      next: (event) => this.onLive(event),
      // The registration ended (deregistered, or the broker is closing).
      complete: () => this.stop(),
      error: (error: unknown) => {
        // An unknown agent: it deregistered before the relay attached.
        if (isBrokerError(error) && error.code === 'A2A_UNKNOWN_AGENT') {
          this.stop();
          return;
        }
        this.options.logger.warn(
          { agentId: this.options.agentId, err: { message: messageOf(error) } },
          'event stream failed',
        );
        this.stop();
      },
    });
  }

  private unsubscribe(): void {
    const subscription = this.subscription;
    this.subscription = undefined;
    subscription?.unsubscribe();
  }

  private onLive(event: DurableEvent): void {
    if (this.mode === 'catching-up') {
      this.held.push(event);
      return;
    }
    if (this.mode !== 'live') return;
    // A party's seqs have no holes: one skipped means the live stream lost
    // events (none should); the durable log fills the gap.
    if (this.lastSeq > 0 && event.seq > this.lastSeq + 1) {
      this.pause();
      return;
    }
    this.deliver(event);
    if (this.options.sink.congested) this.pause();
  }

  private deliver(event: DurableEvent): void {
    if (event.seq <= this.lastSeq) return;
    this.options.sink.write(event);
    this.lastSeq = event.seq;
  }

  /** The mode as it is now (it changes across awaits). */
  private current(): Mode {
    return this.mode;
  }

  private pause(): void {
    this.options.onPause?.();
    this.mode = 'paused';
    this.unsubscribe();
    void this.catchUp();
  }

  /**
   * Reads the durable log after `lastSeq` once output has drained. Live
   * events are subscribed to before the log is read, and held, so that an
   * event committed while the log is read is found in one or the other (the
   * seq check drops the overlap).
   */
  private async catchUp(): Promise<void> {
    const { sink, broker, token, logger, agentId } = this.options;
    try {
      while (this.current() !== 'stopped') {
        await sink.whenDrained();
        if (this.current() === 'stopped' || sink.closed) break;
        this.mode = 'catching-up';
        this.held = [];
        this.subscribe();
        let exhausted = false;
        while (this.current() === 'catching-up') {
          const { events } = await broker.eventsSince({ token, after: this.lastSeq, limit: MAX_EVENTS_LIMIT });
          if (this.current() !== 'catching-up') break;
          for (const event of events) this.deliver(event);
          if (events.length < MAX_EVENTS_LIMIT) {
            exhausted = true;
            break;
          }
          if (sink.congested) break;
        }
        if (this.current() !== 'catching-up') break;
        if (exhausted) {
          const held = this.held;
          this.held = [];
          held.sort((a, b) => a.seq - b.seq);
          for (const event of held) this.deliver(event);
          this.mode = 'live';
          if (!sink.congested) return;
        }
        // Still congested: let go of the live stream again and wait.
        this.mode = 'paused';
        this.unsubscribe();
        this.held = [];
      }
    } catch (error) {
      // A2A_UNKNOWN_TOKEN: the agent deregistered meanwhile; anything else
      // means the broker is going away. Either way this relay is done.
      if (!isBrokerError(error) || error.code !== 'A2A_UNKNOWN_TOKEN') {
        logger.warn({ agentId, err: { message: messageOf(error) } }, 'catching up on events failed');
      }
      this.stop();
      return;
    }
    if (sink.closed) this.stop();
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
