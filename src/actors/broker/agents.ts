import { type Actor, createActor } from 'xstate';
import { type AgentMachine, type AgentMachineInput, agentMachine } from '../../machines/agent-machine.js';
import type { ActorInspector } from '../inspection.js';

/** A registration's agent: an XState actor of `agentMachine`. */
export type AgentActor = Actor<AgentMachine>;

export interface StartAgentOptions {
  input: AgentMachineInput;
  /** A persisted snapshot to start from (what `getPersistedSnapshot` returned). */
  snapshot?: unknown;
  /** Given to the actor (its own root) when the broker is inspected. */
  inspect?: ActorInspector;
}

/** Starts the agent actor of a registration, inspected or not. */
export function startAgentActor(options: StartAgentOptions): AgentActor {
  return createActor(agentMachine, {
    input: options.input,
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
    ...(options.snapshot === undefined ? {} : { snapshot: options.snapshot as never }),
  }).start();
}
