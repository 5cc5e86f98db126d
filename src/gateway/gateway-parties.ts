import type { Logger } from '../log/logger.js';
import type { DurableEvent } from '../protocol/events.js';
import { eventTaskId } from '../transport/agent-inbox.js';
import type { SwitchboardClient } from '../transport/client.js';

/** The broker context every agent of the gateway registers in. */
export const GATEWAY_CONTEXT_ID = 'gateway';

/** The broker agent of a gateway key: the sender of every task its client creates. */
export function gatewayAgentName(keyName: string): string {
  return `gateway-${keyName}`;
}

/** Called with each event of one task that reaches the party. */
export type TaskListener = (event: DurableEvent) => void;

/**
 * One broker agent per gateway key (`gateway-NAME`), registered on first
 * use: the remote client is a party to the tasks it creates and to no one
 * else's. A loop per party takes the events addressed to it and hands each
 * to the streams open on its task; events no stream waits for are dropped
 * here (they stay in the broker's log: a stream that opens later starts from
 * the task as it is then).
 */
export class GatewayParties {
  private readonly client: SwitchboardClient;
  private readonly logger: Logger;
  private readonly parties = new Map<string, Promise<Party>>();
  private closed = false;

  constructor(client: SwitchboardClient, logger: Logger) {
    this.client = client;
    this.logger = logger;
  }

  /** The capability token of the key's agent, registering it the first time. */
  async token(keyName: string): Promise<string> {
    return (await this.party(keyName)).token;
  }

  /** Listens to the events of one task of the key's agent; the answer stops listening. */
  async listen(keyName: string, taskId: string, listener: TaskListener): Promise<() => void> {
    const party = await this.party(keyName);
    let set = party.listeners.get(taskId);
    if (set === undefined) {
      set = new Set();
      party.listeners.set(taskId, set);
    }
    set.add(listener);
    return () => {
      const current = party.listeners.get(taskId);
      current?.delete(listener);
      if (current?.size === 0) party.listeners.delete(taskId);
    };
  }

  /** Stops every loop (the client is closed by its owner). */
  close(): void {
    this.closed = true;
  }

  private party(keyName: string): Promise<Party> {
    let party = this.parties.get(keyName);
    if (party === undefined) {
      party = this.register(keyName);
      this.parties.set(keyName, party);
      // A failed registration is tried again by the next request.
      party.catch(() => this.parties.delete(keyName));
    }
    return party;
  }

  private async register(keyName: string): Promise<Party> {
    const name = gatewayAgentName(keyName);
    const { token } = await this.client.register({
      name,
      contextId: GATEWAY_CONTEXT_ID,
      description: `the A2A clients of the gateway key ${keyName}`,
    });
    const party: Party = { token, listeners: new Map() };
    void this.pump(name, party);
    return party;
  }

  private async pump(name: string, party: Party): Promise<void> {
    while (!this.closed && this.client.connected) {
      let events: DurableEvent[];
      try {
        events = await this.client.wait({ token: party.token, timeoutSeconds: 30 });
      } catch (error) {
        if (this.closed || !this.client.connected) return;
        this.logger.warn({ agent: name, err: error }, 'gateway: reading the events of a key failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      for (const event of events) {
        for (const listener of party.listeners.get(eventTaskId(event)) ?? []) listener(event);
      }
    }
  }
}

interface Party {
  readonly token: string;
  readonly listeners: Map<string, Set<TaskListener>>;
}
