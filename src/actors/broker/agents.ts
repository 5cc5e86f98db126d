import { createActor } from 'xstate';
import {
  type AgentMachineContext,
  type AgentMachineEvent,
  type AgentMachineInput,
  type AgentState,
  agentMachine,
} from '../../machines/agent-machine.js';
import { A2A_MAX_SENDS_PER_RUN } from '../../protocol/bounds.js';
import type { ActorInspector } from '../inspection.js';

/** A registration's agent machine as the broker drives it: an XState actor, or the same machine as data. */
export interface AgentActorLike {
  getSnapshot(): {
    readonly value: AgentState;
    readonly status: 'active' | 'done';
    readonly context: AgentMachineContext;
  };
  send(event: AgentMachineEvent): void;
  stop(): void;
  getPersistedSnapshot(): unknown;
}

export interface StartAgentOptions {
  input: AgentMachineInput;
  /** A persisted snapshot to start from (what `getPersistedSnapshot` returned). */
  snapshot?: unknown;
  /** Given: an XState actor reporting to it. Absent: `PlainAgentActor`. */
  inspect?: ActorInspector;
}

/**
 * Starts the agent machine of a registration. Inspected, it is an XState
 * actor (the inspector sees its events); otherwise `PlainAgentActor`, which
 * moves exactly as `agentMachine` does without an actor per registration and
 * per send (test/broker/broker-agents.test.ts compares the two).
 */
export function startAgentActor(options: StartAgentOptions): AgentActorLike {
  if (options.inspect !== undefined) {
    return createActor(agentMachine, {
      input: options.input,
      inspect: options.inspect,
      ...(options.snapshot === undefined ? {} : { snapshot: options.snapshot as never }),
    }).start() as unknown as AgentActorLike;
  }
  return new PlainAgentActor(options.input, options.snapshot);
}

interface PlainSnapshot {
  readonly value: AgentState;
  readonly status: 'active' | 'done';
  readonly context: AgentMachineContext;
}

/**
 * `agentMachine` applied as data: live until DEREGISTER (final); SEND counts
 * while under the cap and is refused (`refusedSend`) at it. A new snapshot
 * object per change, as an actor's snapshots are.
 */
export class PlainAgentActor implements AgentActorLike {
  private snapshot: PlainSnapshot;
  private stopped = false;

  constructor(input: AgentMachineInput, persisted?: unknown) {
    const restored = persisted as Partial<PlainSnapshot> | undefined;
    if (restored?.context !== undefined && restored.value !== undefined && restored.status !== undefined) {
      this.snapshot = { value: restored.value, status: restored.status, context: restored.context };
    } else {
      this.snapshot = {
        value: 'live',
        status: 'active',
        context: {
          agentId: input.agentId,
          sends: input.sends ?? 0,
          sendCap: input.sendCap ?? A2A_MAX_SENDS_PER_RUN,
          refusedSend: false,
        },
      };
    }
  }

  getSnapshot(): PlainSnapshot {
    return this.snapshot;
  }

  send(event: AgentMachineEvent): void {
    const { value, context } = this.snapshot;
    if (this.stopped || value !== 'live') return;
    if (event.type === 'DEREGISTER') {
      this.snapshot = { value: 'deregistered', status: 'done', context };
    } else if (context.sends < context.sendCap) {
      this.snapshot = {
        value,
        status: 'active',
        context: { ...context, sends: context.sends + 1, refusedSend: false },
      };
    } else {
      this.snapshot = { value, status: 'active', context: { ...context, refusedSend: true } };
    }
  }

  stop(): void {
    this.stopped = true;
  }

  getPersistedSnapshot(): unknown {
    const { status, value, context } = this.snapshot;
    return { status, value, historyValue: {}, context, children: {} };
  }
}
