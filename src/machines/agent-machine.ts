import { assign, setup } from 'xstate';
import { A2A_MAX_SENDS_PER_RUN } from '../protocol/bounds.js';

/** Bumped whenever a persisted agent snapshot would no longer restore. */
export const AGENT_MACHINE_VERSION = 1;

export type AgentState = 'live' | 'deregistered';
export type AgentMachineEvent = { type: 'SEND' } | { type: 'DEREGISTER' };

export interface AgentTransition {
  from: AgentState;
  event: AgentMachineEvent['type'];
  to: AgentState;
  /** A condition on the context, by name. */
  when?: 'under-send-cap';
}

/** A registration's life, as data. */
export const AGENT_TRANSITIONS: readonly AgentTransition[] = Object.freeze([
  { from: 'live', event: 'SEND', to: 'live', when: 'under-send-cap' },
  { from: 'live', event: 'DEREGISTER', to: 'deregistered' },
]);

export interface AgentMachineContext {
  agentId: string;
  /** Accepted new messages (creations and follow-ups) of this registration. */
  sends: number;
  sendCap: number;
  /** Set when a SEND was refused for the cap, cleared by the next accepted one. */
  refusedSend: boolean;
}

export interface AgentMachineInput {
  agentId: string;
  sends?: number;
  sendCap?: number;
}

/**
 * One registration: live until deregistered (final). Counts the sends that
 * `A2A_MAX_SENDS_PER_RUN` bounds; a SEND past the cap is refused and leaves
 * the count unchanged.
 */
export const agentMachine = setup({
  types: {
    context: {} as AgentMachineContext,
    events: {} as AgentMachineEvent,
    input: {} as AgentMachineInput,
  },
  guards: {
    'under-send-cap': ({ context }) => context.sends < context.sendCap,
  },
}).createMachine({
  id: 'agent',
  initial: 'live',
  context: ({ input }) => ({
    agentId: input.agentId,
    sends: input.sends ?? 0,
    sendCap: input.sendCap ?? A2A_MAX_SENDS_PER_RUN,
    refusedSend: false,
  }),
  states: {
    live: {
      on: {
        SEND: [
          {
            guard: 'under-send-cap',
            actions: assign(({ context }) => ({ sends: context.sends + 1, refusedSend: false })),
          },
          { actions: assign({ refusedSend: true }) },
        ],
        DEREGISTER: { target: 'deregistered' },
      },
    },
    deregistered: { type: 'final' },
  },
});

export type AgentMachine = typeof agentMachine;
