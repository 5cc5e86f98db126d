import type { DurableEvent, PushNotification, TaskEvent } from '../../protocol/events.js';
import type { Message, TaskStatus } from '../../protocol/task.js';
import type { Party, TaskHead } from '../../persistence/a2a/store.js';
import type { BrokerState } from './broker-state.js';
import type { CallScope } from './commit-queue.js';
import { type Registration, partyKey } from './registry.js';
import type { SettlingSends } from './settling-sends.js';

/**
 * The events a call commits for the parties of a task (task events and
 * pushes): each is appended to its party's log under the party's next seq,
 * and handed to the party's live registration once the call commits.
 */
export class EventRouter {
  constructor(
    private readonly state: BrokerState,
    /** Told of every status event: the blocking sends of a task that settles are answered. */
    private readonly settling: SettlingSends,
  ) {}

  /** Commits a task event (and the push that may follow it) for one party. */
  notify(scope: CallScope, party: Party, head: TaskHead, event: TaskEvent): void {
    if (event.kind === 'status-update') this.settling.statusCommitted(scope, head);
    const live = this.liveRegistrationOf(party);
    const recipient = live?.agentId ?? this.state.store.latestAgentIdOfParty(party) ?? party.name;
    const seq = this.nextSeq(scope, party, live);
    const durable: DurableEvent = {
      seq,
      method: 'a2a.task.event',
      params: { recipient, recipientName: party.name, contextId: head.contextId, seq, event },
    };
    this.state.store.appendEvent(party, durable, head.taskId, this.state.now());
    if (live !== undefined) scope.afterCommit(() => live.outbox.deliver(durable));
  }

  push(scope: CallScope, party: Party, head: TaskHead, status: TaskStatus): void {
    const config = this.state.store.pushConfig(head.taskId);
    if (config === null) return;
    const live = this.liveRegistrationOf(party);
    const recipient = live?.agentId ?? this.state.store.latestAgentIdOfParty(party) ?? party.name;
    const seq = this.nextSeq(scope, party, live);
    const params: PushNotification = { recipient, contextId: head.contextId, taskId: head.taskId, status, seq };
    if (config.token !== undefined) params.token = config.token;
    const durable: DurableEvent = { seq, method: 'a2a.push', params };
    this.state.store.appendEvent(party, durable, head.taskId, this.state.now());
    if (live !== undefined) scope.afterCommit(() => live.outbox.deliver(durable));
  }

  /**
   * The party's next seq. A live registration remembers its party's last seq
   * (read from the log once, then counted: every event of a party is written
   * here, so nothing else moves it); a refused call puts it back.
   */
  private nextSeq(scope: CallScope, party: Party, live: Registration | undefined): number {
    if (live === undefined) return this.state.store.nextSeq(party);
    const last = live.lastSeq;
    const seq = last === undefined ? this.state.store.nextSeq(party) : last + 1;
    live.lastSeq = seq;
    scope.onUndo(() => {
      live.lastSeq = last;
    });
    return seq;
  }

  private liveRegistrationOf(party: Party): Registration | undefined {
    const { byParty, byId } = this.state.registry.getSnapshot().context;
    const agentId = byParty.get(partyKey(party));
    return agentId === undefined ? undefined : byId.get(agentId);
  }
}

/** A status-update of the task's current status; `message` (a new message) rides in `status.message`. */
export function statusEvent(head: TaskHead, final: boolean, message?: Message): TaskEvent {
  const status: TaskStatus = message === undefined ? head.status : { ...head.status, message };
  return { kind: 'status-update', taskId: head.taskId, contextId: head.contextId, status, final };
}
