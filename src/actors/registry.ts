import { createStore } from '@xstate/store';
import type { Actor } from 'xstate';
import type { AgentMachine } from '../machines/agent-machine.js';
import type { AgentCard, AgentKind } from '../protocol/agent.js';
import type { Party } from '../persistence/a2a-store.js';
import type { AgentOutbox } from './agent-outbox.js';
import type { TokenEntry } from './broker-tokens.js';

/** One live registration: an agent actor, its token's digest and its outbox. */
export interface Registration {
  readonly agentId: string;
  readonly party: Party;
  readonly kind: AgentKind;
  readonly card: AgentCard;
  readonly token: TokenEntry;
  /** Replaced (not mutated) when a refused call undoes a counted send. */
  actor: Actor<AgentMachine>;
  readonly outbox: AgentOutbox;
}

export interface RegistryContext {
  /** Live registrations by agentId, in registration order. */
  readonly byId: ReadonlyMap<string, Registration>;
  /** `partyKey(contextId, name)` → agentId of the live registration. */
  readonly byParty: ReadonlyMap<string, string>;
}

export function partyKey(party: Party): string {
  return `${party.contextId}\u0000${party.name}`;
}

const EMPTY: RegistryContext = { byId: new Map(), byParty: new Map() };

/**
 * The broker's registry of live registrations, an `@xstate/store`. Its
 * context is replaced, never mutated, so a refused call restores it by
 * sending back the context it saw before (`restored`).
 */
export function createRegistry() {
  return createStore({
    context: EMPTY as RegistryContext,
    on: {
      added: (context, event: { registration: Registration }) => {
        const byId = new Map(context.byId);
        byId.set(event.registration.agentId, event.registration);
        const byParty = new Map(context.byParty);
        byParty.set(partyKey(event.registration.party), event.registration.agentId);
        return { byId, byParty };
      },
      removed: (context, event: { agentId: string }) => {
        const registration = context.byId.get(event.agentId);
        if (registration === undefined) return context;
        const byId = new Map(context.byId);
        byId.delete(event.agentId);
        const byParty = new Map(context.byParty);
        byParty.delete(partyKey(registration.party));
        return { byId, byParty };
      },
      restored: (_context, event: { context: RegistryContext }) => event.context,
      cleared: () => EMPTY,
    },
  });
}

export type Registry = ReturnType<typeof createRegistry>;
