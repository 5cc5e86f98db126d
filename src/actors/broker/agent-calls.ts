import type { Logger } from '../../log/logger.js';
import type { AgentCard } from '../../protocol/agent.js';
import { invalidParams } from '../../protocol/broker-error.js';
import type { MethodParams, MethodResult } from '../../protocol/methods.js';
import type { TaskStatus } from '../../protocol/task.js';
import { type A2AStore, type Party, agentCard } from '../../persistence/a2a/store.js';
import type { IdSource } from '../../persistence/kernel/ids.js';
import type { ActorInspector } from '../inspection.js';
import { AgentOutbox } from './agent-outbox.js';
import { startAgentActor } from './agents.js';
import type { BrokerState } from './broker-state.js';
import type { CallScope } from './commit-queue.js';
import { type EventRouter, statusEvent } from './event-routing.js';
import { type Registration, type Registry, foldedPartyKey } from './registry.js';
import type { TokenAuthority } from './tokens.js';

/**
 * The registration calls: an agent registers (a token, its card and actor),
 * deregisters (its open tasks end: the worker's fail, the requester's are
 * canceled) or its connection ends (its tasks kept). Each change is undone
 * when its call is refused.
 */
export class AgentCalls {
  private readonly store: A2AStore;
  private readonly registry: Registry;
  private readonly tokens: TokenAuthority;
  private readonly ids: IdSource;
  private readonly logger: Logger;
  private readonly inspect: ActorInspector | undefined;

  constructor(
    private readonly state: BrokerState,
    private readonly events: EventRouter,
  ) {
    this.store = state.store;
    this.registry = state.registry;
    this.tokens = state.tokens;
    this.ids = state.ids;
    this.logger = state.logger;
    this.inspect = state.inspect;
  }

  register(p: MethodParams<'a2a.agents.register'>, scope: CallScope): MethodResult<'a2a.agents.register'> {
    // `p.name` is NFKC-normalized and checked by the schema; names that fold alike are one name.
    const party: Party = { contextId: p.contextId, name: p.name };
    if (this.registry.getSnapshot().context.byFoldedParty.has(foldedPartyKey(party))) {
      throw invalidParams(
        'an agent with this name (compared case-insensitively after NFKC) is already live in this context',
        [{ path: ['name'], message: 'duplicate live name in this context', code: 'custom' }],
      );
    }
    const agentId = this.ids.next();
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
    this.store.insertAgent(row);
    const card: AgentCard = agentCard(row);
    const { token, entry } = this.tokens.mint(agentId);
    const actor = startAgentActor({ input: { agentId }, inspect: this.inspect });
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
    this.registry.trigger.added({ registration });
    scope.onUndo(() => {
      this.tokens.revoke(entry);
      actor.stop();
      this.registry.trigger.removed({ agentId });
    });
    this.logger.info({ agentId, contextId: p.contextId, name: p.name, kind: row.kind }, 'a2a agent registered');
    return { agentId, token, card };
  }

  deregister(p: MethodParams<'a2a.agents.deregister'>, scope: CallScope): { deregistered: true } {
    const caller = this.state.caller(p.token);
    const at = this.state.now();
    // The broker's own moves: the worker's open tasks fail, the requester's are canceled.
    for (const head of this.store.openTasksOfParty(caller.party, 'worker')) {
      const status: TaskStatus = { state: 'failed', timestamp: at };
      const moved = this.state.moveTask(scope, head, { to: 'failed', by: 'broker', via: 'deregistration' }, status);
      this.store.writeHead(moved);
      const requester = { contextId: head.contextId, name: head.requesterName };
      this.events.notify(scope, requester, moved, statusEvent(moved, true));
      this.events.push(scope, requester, moved, status);
    }
    for (const head of this.store.openTasksOfParty(caller.party, 'requester')) {
      const status: TaskStatus = { state: 'canceled', timestamp: at };
      const moved = this.state.moveTask(scope, head, { to: 'canceled', by: 'broker', via: 'deregistration' }, status);
      this.store.writeHead(moved);
      const worker = { contextId: head.agentContextId, name: head.agentName };
      this.events.notify(scope, worker, moved, statusEvent(moved, true));
      this.events.push(scope, worker, moved, status);
    }
    this.store.endAgent(caller.agentId, at, 'deregistered');
    const order = this.registry.getSnapshot().context.order.get(caller.agentId);
    const actorBefore = caller.actor.getPersistedSnapshot();
    caller.actor.send({ type: 'DEREGISTER' });
    caller.actor.stop();
    this.tokens.revoke(caller.token);
    this.registry.trigger.removed({ agentId: caller.agentId });
    scope.onUndo(() => {
      caller.actor = startAgentActor({
        snapshot: actorBefore,
        input: { agentId: caller.agentId },
        inspect: this.inspect,
      });
      this.tokens.reinstate(caller.token);
      this.registry.trigger.added({ registration: caller, ...(order === undefined ? {} : { order }) });
    });
    scope.afterCommit(() => caller.outbox.complete());
    this.logger.info({ agentId: caller.agentId }, 'a2a agent deregistered');
    return { deregistered: true };
  }

  /** Ends one registration, its tasks untouched (`endRegistrations`); false for an unknown token. */
  endRegistration(token: string, scope: CallScope): boolean {
    const agentId = this.tokens.resolve(token);
    const registration = agentId === undefined ? undefined : this.registry.getSnapshot().context.byId.get(agentId);
    if (registration === undefined) return false;
    this.store.endAgent(registration.agentId, this.state.now(), 'disconnected');
    const order = this.registry.getSnapshot().context.order.get(registration.agentId);
    const actorBefore = registration.actor.getPersistedSnapshot();
    registration.actor.stop();
    this.tokens.revoke(registration.token);
    this.registry.trigger.removed({ agentId: registration.agentId });
    scope.onUndo(() => {
      registration.actor = startAgentActor({
        snapshot: actorBefore,
        input: { agentId: registration.agentId },
        inspect: this.inspect,
      });
      this.tokens.reinstate(registration.token);
      this.registry.trigger.added({ registration, ...(order === undefined ? {} : { order }) });
    });
    scope.afterCommit(() => registration.outbox.complete());
    this.logger.info({ agentId: registration.agentId }, 'a2a agent disconnected: registration ended, tasks kept');
    return true;
  }
}
