import { createStore } from '@xstate/store';
import { type AgentCard, type AgentKind, agentNameSkeleton, foldAgentName } from '../../protocol/agent.js';
import type { Party } from '../../persistence/a2a/store.js';
import type { AgentOutbox } from './agent-outbox.js';
import type { AgentActor } from './agents.js';
import type { TokenEntry } from './tokens.js';

/** One live registration: an agent actor, its token's digest and its outbox. */
export interface Registration {
  readonly agentId: string;
  readonly party: Party;
  readonly kind: AgentKind;
  readonly card: AgentCard;
  readonly token: TokenEntry;
  /** Replaced (not mutated) when a refused call undoes a counted send. */
  actor: AgentActor;
  readonly outbox: AgentOutbox;
  /** The last seq of its party's event log, once read (the broker counts on from it); undefined until then. */
  lastSeq: number | undefined;
}

export interface RegistryContext {
  /** Live registrations by agentId. */
  readonly byId: ReadonlyMap<string, Registration>;
  /** `partyKey(contextId, name)` → agentId of the live registration. */
  readonly byParty: ReadonlyMap<string, string>;
  /**
   * `partyKey` of the folded name (`foldAgentName`) → agentId: at most one
   * live registration per folded name and context (`Bob` beside `bob` is a duplicate).
   */
  readonly byFoldedParty: ReadonlyMap<string, string>;
  /**
   * `partyKey` of the name's skeleton (`agentNameSkeleton`) → agentId: at most
   * one live registration per skeleton and context (`Iead` beside `lead` is a duplicate).
   */
  readonly bySkeletonParty: ReadonlyMap<string, string>;
  /** Folded name → agentIds of the live registrations with that name, in any context. */
  readonly byName: ReadonlyMap<string, ReadonlySet<string>>;
  /** agentId → registration order (kept when a refused deregistration puts a registration back). */
  readonly order: ReadonlyMap<string, number>;
  /** Bumped on every change. */
  readonly version: number;
}

export function partyKey(party: Party): string {
  return `${party.contextId}\u0000${party.name}`;
}

/** The key of a party's name as folded: two names that fold alike are one name in a context. */
export function foldedPartyKey(party: Party): string {
  return `${party.contextId}\u0000${foldAgentName(party.name)}`;
}

/** The key of a party's name by its skeleton: two names whose skeletons are equal are one name in a context. */
export function skeletonPartyKey(party: Party): string {
  return `${party.contextId}\u0000${agentNameSkeleton(party.name)}`;
}

/**
 * The broker's registry of live registrations, an `@xstate/store`. Its maps
 * are updated in place (O(1) per registration, whatever the number of live
 * agents) and each change yields a new context object with a new `version`.
 * A refused call undoes its change with the inverse event (`removed` for
 * `added`, `added` with the old `order` for `removed`).
 */
export function createRegistry() {
  const byId = new Map<string, Registration>();
  const byParty = new Map<string, string>();
  const byFoldedParty = new Map<string, string>();
  const bySkeletonParty = new Map<string, string>();
  const byName = new Map<string, Set<string>>();
  const order = new Map<string, number>();
  let nextOrder = 0;
  return createStore({
    context: { byId, byParty, byFoldedParty, bySkeletonParty, byName, order, version: 0 } as RegistryContext,
    on: {
      added: (context, event: { registration: Registration; order?: number }) => {
        const r = event.registration;
        byId.set(r.agentId, r);
        byParty.set(partyKey(r.party), r.agentId);
        byFoldedParty.set(foldedPartyKey(r.party), r.agentId);
        bySkeletonParty.set(skeletonPartyKey(r.party), r.agentId);
        const folded = foldAgentName(r.party.name);
        let named = byName.get(folded);
        if (named === undefined) {
          named = new Set();
          byName.set(folded, named);
        }
        named.add(r.agentId);
        order.set(r.agentId, event.order ?? nextOrder++);
        return { ...context, version: context.version + 1 };
      },
      removed: (context, event: { agentId: string }) => {
        const r = byId.get(event.agentId);
        if (r === undefined) return context;
        byId.delete(r.agentId);
        byParty.delete(partyKey(r.party));
        if (byFoldedParty.get(foldedPartyKey(r.party)) === r.agentId) byFoldedParty.delete(foldedPartyKey(r.party));
        const skeletonKey = skeletonPartyKey(r.party);
        if (bySkeletonParty.get(skeletonKey) === r.agentId) bySkeletonParty.delete(skeletonKey);
        const folded = foldAgentName(r.party.name);
        const named = byName.get(folded);
        named?.delete(r.agentId);
        if (named?.size === 0) byName.delete(folded);
        order.delete(r.agentId);
        return { ...context, version: context.version + 1 };
      },
      cleared: (context) => {
        byId.clear();
        byParty.clear();
        byFoldedParty.clear();
        bySkeletonParty.clear();
        byName.clear();
        order.clear();
        return { ...context, version: context.version + 1 };
      },
    },
  });
}

export type Registry = ReturnType<typeof createRegistry>;
