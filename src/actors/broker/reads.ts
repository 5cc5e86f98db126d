import { DEFAULT_EVENTS_LIMIT, MAX_LINE_BYTES } from '../../protocol/bounds.js';
import { type BrokerError, a2aError, answerTooLarge } from '../../protocol/broker-error.js';
import type { MethodParams, MethodResult } from '../../protocol/methods.js';
import type { TaskState } from '../../protocol/task.js';
import type { AgentCard } from '../../protocol/agent.js';
import { addressable } from './addressing.js';
import { pageOfAgents } from './agent-pages.js';
import type { BrokerMethod } from './api.js';
import type { BrokerState } from './broker-state.js';
import type { CallScope } from './commit-queue.js';
import type { Party } from '../../persistence/a2a/store.js';

/** Methods that write nothing: answered without the commit queue when it is quiet. */
export const READS: ReadonlySet<BrokerMethod> = new Set<BrokerMethod>([
  'a2a.agents.list',
  'a2a.tasks.get',
  'a2a.tasks.list',
  'a2a.tasks.pushNotificationConfig.get',
  'a2a.events.since',
]);

/**
 * The calls that write nothing (the agents the caller may address, its
 * tasks, a push config, its events since a seq): answered from committed
 * state, without the commit queue when it is quiet.
 */
export class Reads {
  /** Bytes of each card as JSON, weighed once (cards never change). */
  private readonly cardBytes = new WeakMap<AgentCard, number>();

  constructor(
    private readonly state: BrokerState,
    /** The seq through which a party's log was cut by a prune (0: never). */
    private readonly eventFloor: (party: Party) => number,
  ) {}

  /** One page of the addressable agents (`pageOfAgents`); `A2A_NO_PEERS` when there are none at all. */
  listAgents(p: MethodParams<'a2a.agents.list'>): MethodResult<'a2a.agents.list'> {
    const caller = this.state.caller(p.token);
    const { order } = this.state.registry.getSnapshot().context;
    const agents = addressable(this.state.registry, caller);
    if (agents.length === 0 && p.cursor === undefined) throw a2aError('A2A_NO_PEERS', 'no addressable peers');
    return pageOfAgents(
      agents.map((r) => ({ order: order.get(r.agentId) ?? 0, card: r.card })),
      { cursor: p.cursor, limit: p.limit, sizeOf: this.sizeOfCard },
    );
  }

  private readonly sizeOfCard = (card: AgentCard): number => {
    let size = this.cardBytes.get(card);
    if (size === undefined) {
      size = Buffer.byteLength(JSON.stringify(card), 'utf8');
      this.cardBytes.set(card, size);
    }
    return size;
  };

  getTask(p: MethodParams<'a2a.tasks.get'>, scope: CallScope): MethodResult<'a2a.tasks.get'> {
    const caller = this.state.caller(p.token);
    const { head } = this.state.partyTask(caller, p.id);
    return { task: this.state.answer(scope, head, p.historyLength) };
  }

  /**
   * A task as it is, for a caller already let through: a blocking send
   * answered before its task settled (its registration may have been
   * renewed since, its token with it).
   */
  sentTask(taskId: string, historyLength: number | undefined, scope: CallScope): MethodResult<'a2a.tasks.get'> {
    const head = this.state.store.taskHead(taskId);
    if (head === undefined) throw a2aError('A2A_UNKNOWN_TASK', 'no such task', { taskId });
    return { task: this.state.answer(scope, head, historyLength) };
  }

  listTasks(p: MethodParams<'a2a.tasks.list'>, scope: CallScope): MethodResult<'a2a.tasks.list'> {
    const caller = this.state.caller(p.token);
    const states = p.states === undefined ? undefined : new Set<TaskState>(p.states);
    const heads = this.state.store
      .tasksOfParty(caller.party, p.role)
      .filter((head) => states === undefined || states.has(head.state));
    let bytes = 0;
    for (const head of heads) bytes += this.state.store.taskBytes(head);
    // A read: refused before anything is loaded.
    if (bytes > MAX_LINE_BYTES) {
      scope.answerWith(answerTooLarge(bytes));
      return { tasks: [] };
    }
    return { tasks: heads.map((head) => this.state.store.loadTask(head)) };
  }

  getPushConfig(
    p: MethodParams<'a2a.tasks.pushNotificationConfig.get'>,
  ): MethodResult<'a2a.tasks.pushNotificationConfig.get'> {
    const caller = this.state.caller(p.token);
    const { head } = this.state.partyTask(caller, p.id);
    return { config: this.state.store.pushConfig(head.taskId) };
  }

  eventsSince(p: MethodParams<'a2a.events.since'>): MethodResult<'a2a.events.since'> {
    const caller = this.state.caller(p.token);
    const floor = this.eventFloor(caller.party);
    if (p.after < floor) throw eventsPruned(p.after, floor);
    return { events: this.state.store.eventsSince(caller.party, p.after, p.limit ?? DEFAULT_EVENTS_LIMIT) };
  }
}

/**
 * A cursor older than the party's log keeps: the events after it up to
 * `oldestCursor` were removed with the ended tasks they were about (task
 * retention). Never a silent gap: the caller reads on from the oldest cursor
 * kept and reads its tasks' current state instead of the events it missed.
 */
export function eventsPruned(after: number, oldestCursor: number): BrokerError {
  return a2aError(
    'A2A_EVENTS_PRUNED',
    `the events after seq ${after} up to seq ${oldestCursor} were removed with the ended tasks they were about (task retention): ` +
      `read your tasks' current state (a2a.tasks.list, a2a.tasks.get), then read events with after >= ${oldestCursor} (details.oldestCursor)`,
    { after, oldestCursor },
  );
}
