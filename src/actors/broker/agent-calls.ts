import type { AgentCard } from '../../protocol/agent.js';
import type { AgentPresence } from '../../protocol/events.js';
import { invalidParams } from '../../protocol/broker-error.js';
import type { MethodParams, MethodResult } from '../../protocol/methods.js';
import type { TaskStatus } from '../../protocol/task.js';
import { type Party, agentCard } from '../../persistence/a2a/store.js';
import { AgentOutbox } from './agent-outbox.js';
import { startAgentActor } from './agents.js';
import type { BrokerState } from './broker-state.js';
import type { CallScope } from './commit-queue.js';
import { type EventRouter, statusEvent } from './event-routing.js';
import { type Registration, foldedPartyKey, partyKey, skeletonPartyKey } from './registry.js';

/**
 * The registration calls: an agent registers (a token, its card and actor),
 * deregisters (its open tasks end: the worker's fail, the requester's are
 * canceled; or, with `keepTasks`, they are kept) or its connection ends (its tasks kept; the requesters of those
 * it serves are told it left, and told again when it is back). Each change
 * is undone when its call is refused.
 */
export class AgentCalls {
  /**
   * Parties whose connection closed while they served open tasks (their
   * requesters were told `left`): their next registration tells them `back`.
   * Kept while this broker runs; after a restart every party registers anew.
   */
  private readonly leftParties = new Set<string>();

  constructor(
    private readonly state: BrokerState,
    private readonly events: EventRouter,
  ) {}

  /**
   * Refuses a name that is, or looks like, a live name of its context: equal
   * once folded (`foldAgentName`: `Bob` beside `bob`) or by skeleton
   * (`agentNameSkeleton`: `Iead` beside `lead`). The error names the live one.
   */
  private refuseLiveLookAlike(party: Party): void {
    const { byId, byFoldedParty, bySkeletonParty } = this.state.registry.getSnapshot().context;
    const folded = byFoldedParty.get(foldedPartyKey(party));
    const existingId = folded ?? bySkeletonParty.get(skeletonPartyKey(party));
    const existing = existingId === undefined ? undefined : byId.get(existingId);
    if (existing === undefined) return;
    const how =
      folded !== undefined
        ? 'the same name compared case-insensitively after NFKC'
        : 'a look-alike: their UTS #39 skeletons are equal';
    throw invalidParams(
      `"${party.name}" is ${how} of "${existing.party.name}" (agentId ${existing.agentId}), already live in this context: ` +
        'choose a name that does not look like a live one, or deregister that agent first',
      [{ path: ['name'], message: `duplicate live name in this context: "${existing.party.name}"`, code: 'custom' }],
      { existing: { agentId: existing.agentId, name: existing.party.name } },
    );
  }

  register(p: MethodParams<'a2a.agents.register'>, scope: CallScope): MethodResult<'a2a.agents.register'> {
    // `p.name` is NFKC-normalized and checked by the schema; names that fold alike, or whose skeletons are equal, are one name.
    const party: Party = { contextId: p.contextId, name: p.name };
    this.refuseLiveLookAlike(party);
    const agentId = this.state.ids.next();
    const row = {
      agentId,
      contextId: p.contextId,
      name: p.name,
      kind: p.kind ?? 'subagent',
      description: p.description ?? '',
      skills: p.skills ?? [],
      sends: 0,
      registeredAt: this.state.now(),
    };
    this.state.store.insertAgent(row);
    const card: AgentCard = agentCard(row);
    const { token, entry } = this.state.tokens.mint(agentId);
    const actor = startAgentActor({ input: { agentId }, inspect: this.state.inspect });
    const registration: Registration = {
      agentId,
      party,
      kind: row.kind,
      card,
      token: entry,
      actor,
      outbox: new AgentOutbox(),
      lastSeq: undefined,
    };
    this.state.registry.trigger.added({ registration });
    scope.onUndo(() => {
      this.state.tokens.revoke(entry);
      actor.stop();
      this.state.registry.trigger.removed({ agentId });
    });
    // Back after it left: the requesters of the tasks it serves learn it.
    const key = partyKey(party);
    if (this.leftParties.delete(key)) {
      scope.onUndo(() => this.leftParties.add(key));
      this.tellRequesters(scope, party, 'back');
    }
    this.state.logger.info({ agentId, contextId: p.contextId, name: p.name, kind: row.kind }, 'a2a agent registered');
    return { agentId, token, card };
  }

  deregister(p: MethodParams<'a2a.agents.deregister'>, scope: CallScope): { deregistered: true } {
    const caller = this.state.caller(p.token);
    if (p.keepTasks === true) {
      this.endKeepingTasks(caller, scope);
      return { deregistered: true };
    }
    const at = this.state.now();
    // The broker's own moves: the worker's open tasks fail, the requester's are canceled.
    for (const head of this.state.store.openTasksOfParty(caller.party, 'worker')) {
      const status: TaskStatus = { state: 'failed', timestamp: at };
      const moved = this.state.moveTask(scope, head, { to: 'failed', by: 'broker', via: 'deregistration' }, status);
      this.state.store.writeHead(moved);
      const requester = { contextId: head.contextId, name: head.requesterName };
      this.events.notify(scope, requester, moved, statusEvent(moved, true));
      this.events.push(scope, requester, moved, status);
    }
    for (const head of this.state.store.openTasksOfParty(caller.party, 'requester')) {
      const status: TaskStatus = { state: 'canceled', timestamp: at };
      const moved = this.state.moveTask(scope, head, { to: 'canceled', by: 'broker', via: 'deregistration' }, status);
      this.state.store.writeHead(moved);
      const worker = { contextId: head.agentContextId, name: head.agentName };
      this.events.notify(scope, worker, moved, statusEvent(moved, true));
      this.events.push(scope, worker, moved, status);
    }
    this.end(caller, scope, at, 'deregistered');
    this.state.logger.info({ agentId: caller.agentId }, 'a2a agent deregistered');
    return { deregistered: true };
  }

  /** Ends one registration, its tasks untouched (`endRegistrations`); false for an unknown token. */
  endRegistration(token: string, scope: CallScope): boolean {
    const agentId = this.state.tokens.resolve(token);
    const registration =
      agentId === undefined ? undefined : this.state.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) return false;
    this.endKeepingTasks(registration, scope);
    return true;
  }

  /** Ends a registration as a closed connection does: its open tasks are kept for its next registration. */
  private endKeepingTasks(registration: Registration, scope: CallScope): void {
    this.end(registration, scope, this.state.now(), 'disconnected');
    // Its tasks wait for it: their requesters learn that it left (a dead worker, not a slow one).
    if (this.tellRequesters(scope, registration.party, 'left') > 0) {
      const key = partyKey(registration.party);
      if (!this.leftParties.has(key)) {
        this.leftParties.add(key);
        scope.onUndo(() => this.leftParties.delete(key));
      }
    }
    this.state.logger.info({ agentId: registration.agentId }, 'a2a agent disconnected: registration ended, tasks kept');
  }

  /** An `agent-update` event to the requester of each open task the party serves; how many were told. */
  private tellRequesters(scope: CallScope, worker: Party, presence: AgentPresence): number {
    const heads = this.state.store.openTasksOfParty(worker, 'worker');
    for (const head of heads) {
      this.events.notify(scope, { contextId: head.contextId, name: head.requesterName }, head, {
        kind: 'agent-update',
        taskId: head.taskId,
        contextId: head.contextId,
        agentName: head.agentName,
        agentContextId: head.agentContextId,
        presence,
      });
    }
    return heads.length;
  }

  /**
   * Ends a registration (its row, its actor, its token, its place in the
   * registry), all put back if the call is refused; its outbox completes once
   * the call commits.
   */
  private end(registration: Registration, scope: CallScope, at: string, how: 'deregistered' | 'disconnected'): void {
    this.state.store.endAgent(registration.agentId, at, how);
    const order = this.state.registry.getSnapshot().context.order.get(registration.agentId);
    const actorBefore = registration.actor.getPersistedSnapshot();
    if (how === 'deregistered') registration.actor.send({ type: 'DEREGISTER' });
    registration.actor.stop();
    this.state.tokens.revoke(registration.token);
    this.state.registry.trigger.removed({ agentId: registration.agentId });
    scope.onUndo(() => {
      registration.actor = startAgentActor({
        snapshot: actorBefore,
        input: { agentId: registration.agentId },
        inspect: this.state.inspect,
      });
      this.state.tokens.reinstate(registration.token);
      this.state.registry.trigger.added({ registration, ...(order === undefined ? {} : { order }) });
    });
    scope.afterCommit(() => registration.outbox.complete());
  }
}
