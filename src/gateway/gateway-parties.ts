import type { Logger } from '../log/logger.js';
import { BrokerError } from '../protocol/broker-error.js';
import type { DurableEvent } from '../protocol/events.js';
import type { TaskStatus } from '../protocol/task.js';
import { eventTaskId } from '../transport/agent-inbox.js';
import type { SwitchboardClient } from '../transport/client.js';

const SENDS_CAP = 'A2A_MAX_SENDS_PER_RUN';

/** The broker context every agent of the gateway registers in. */
export const GATEWAY_CONTEXT_ID = 'gateway';

/** The broker agent of a gateway key: the sender of every task its client creates. */
export function gatewayAgentName(keyName: string): string {
  return `gateway-${keyName}`;
}

/** Listens to every task of the key (`listen(key, ANY_TASK, ...)`): no task has an empty id. */
export const ANY_TASK = '';

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
  /** The listeners of each key's tasks, kept apart from its registration: they hear its replay too. */
  private readonly listeners = new Map<string, Map<string, Set<TaskListener>>>();
  /** Where a key's first registration replays from (`resumeAfter`). */
  private readonly resumeFrom = new Map<string, number>();
  private closed = false;

  constructor(client: SwitchboardClient, logger: Logger) {
    this.client = client;
    this.logger = logger;
  }

  /** The capability token of the key's agent, registering it the first time. */
  async token(keyName: string): Promise<string> {
    return (await this.party(keyName)).token;
  }

  /**
   * Makes a broker call as the key's agent (`call` is given its token). A
   * send refused because the registration has sent as many messages as one
   * may (`A2A_MAX_SENDS_PER_RUN`) is made again under a new registration
   * (`renew`); a call whose token a concurrent renewal replaced, again with
   * the new one.
   */
  async call<T>(keyName: string, call: (token: string) => Promise<T>): Promise<T> {
    const party = await this.party(keyName);
    const token = party.token;
    try {
      return await call(token);
    } catch (error) {
      if (!(error instanceof BrokerError)) throw error;
      if (error.code === 'A2A_SEND_CAP' && (error.details as { limit?: unknown } | undefined)?.limit === SENDS_CAP) {
        return call(await this.renew(keyName, token));
      }
      if (error.code === 'A2A_UNKNOWN_TOKEN') {
        await party.renewing?.catch(() => {});
        if (party.token !== token) return call(party.token);
      }
      throw error;
    }
  }

  /**
   * The key's agent, when it first registers, replays its durable events
   * after `seq` (every one, those of ended tasks included) instead of what a
   * new registration replays. For the push configs' cursor: a restarted
   * gateway sends on what came while it was down.
   */
  resumeAfter(keyName: string, seq: number): void {
    if (!this.parties.has(keyName)) this.resumeFrom.set(keyName, seq);
  }

  /**
   * Listens to the events of one task of the key's agent (registering it
   * first if need be: the listener hears the registration's replay); the
   * answer stops listening.
   */
  async listen(keyName: string, taskId: string, listener: TaskListener): Promise<() => void> {
    const listeners = this.listenersOf(keyName);
    let set = listeners.get(taskId);
    if (set === undefined) {
      set = new Set();
      listeners.set(taskId, set);
    }
    set.add(listener);
    const stop = () => {
      const current = listeners.get(taskId);
      current?.delete(listener);
      if (current?.size === 0) listeners.delete(taskId);
    };
    try {
      await this.party(keyName);
    } catch (error) {
      stop();
      throw error;
    }
    return stop;
  }

  private listenersOf(keyName: string): Map<string, Set<TaskListener>> {
    let listeners = this.listeners.get(keyName);
    if (listeners === undefined) {
      listeners = new Map();
      this.listeners.set(keyName, listeners);
    }
    return listeners;
  }

  /**
   * Registers the key's agent again (same name and context: the same party,
   * its tasks still its own) under a new registration, whose count of sends
   * starts again at zero. `spent` is the token that hit the cap: when a
   * concurrent request renewed it already, nothing more is done. The new
   * registration replays nothing (it starts after the last event the old one
   * had) and the party's listeners carry over.
   */
  async renew(keyName: string, spent: string): Promise<string> {
    const party = await this.party(keyName);
    if (party.token !== spent) return party.token;
    party.renewing ??= (async () => {
      const after = this.client.lastSeq(party.token) ?? 0;
      // One live registration per name: the old one goes first, its open tasks kept for the new one
      // (its events wait in the log meanwhile).
      await this.client.deregister({ token: party.token, keepTasks: true });
      const { token } = await this.client.register(this.params(keyName), { after });
      party.token = token;
      // The old loop ends at its next wake; this one reads the new registration.
      void this.pump(gatewayAgentName(keyName), party);
      return token;
    })().finally(() => {
      party.renewing = undefined;
    });
    return party.renewing;
  }

  /**
   * Tells the streams open on a task of the key that it has ended, as an event
   * would: the broker sends a cancel's event to the worker, not to the party
   * that canceled, so the key's own streams learn it from here.
   */
  ended(keyName: string, task: { id: string; contextId: string; status: TaskStatus }): void {
    const party = this.parties.get(keyName);
    if (party === undefined) return;
    void party.then((p) => {
      const event: DurableEvent = {
        // After any seq: a stream takes it as news, and nothing after it.
        seq: Number.MAX_SAFE_INTEGER,
        method: 'a2a.task.event',
        params: {
          recipient: gatewayAgentName(keyName),
          recipientName: gatewayAgentName(keyName),
          contextId: task.contextId,
          seq: Number.MAX_SAFE_INTEGER,
          event: {
            kind: 'status-update',
            taskId: task.id,
            contextId: task.contextId,
            status: task.status,
            final: true,
          },
        },
      };
      for (const listener of [...(p.listeners.get(task.id) ?? []), ...(p.listeners.get(ANY_TASK) ?? [])]) {
        listener(event);
      }
    });
  }

  /** The seq of the last event of the key's agent this gateway has read (undefined before its registration). */
  async lastSeq(keyName: string): Promise<number | undefined> {
    const party = await this.party(keyName);
    return this.client.lastSeq(party.token);
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
    const after = this.resumeFrom.get(keyName);
    this.resumeFrom.delete(keyName);
    const { token } = await this.client.register(this.params(keyName), after === undefined ? {} : { after });
    const party: Party = { token, listeners: this.listenersOf(keyName), renewing: undefined };
    void this.pump(name, party);
    return party;
  }

  private params(keyName: string) {
    return {
      name: gatewayAgentName(keyName),
      contextId: GATEWAY_CONTEXT_ID,
      description: `the A2A clients of the gateway key ${keyName}`,
    };
  }

  private async pump(name: string, party: Party): Promise<void> {
    const token = party.token;
    while (!this.closed && this.client.connected) {
      let events: DurableEvent[];
      try {
        events = await this.client.wait({ token, timeoutSeconds: 30 });
      } catch (error) {
        // A renewal under way ended this registration: its loop ends once the new one runs.
        await party.renewing?.catch(() => {});
        if (this.closed || !this.client.connected || party.token !== token) return;
        if (error instanceof BrokerError && error.code === 'A2A_EVENTS_PRUNED') {
          // Told once; reading goes on from the oldest event kept.
          this.logger.warn(
            { agent: name, err: error },
            'gateway: events of the key were pruned before they were read (their push notifications are not sent): read those tasks with GetTask',
          );
          continue;
        }
        this.logger.warn({ agent: name, err: error }, 'gateway: reading the events of a key failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, 1000));
        continue;
      }
      for (const event of events) {
        for (const listener of party.listeners.get(eventTaskId(event)) ?? []) listener(event);
        for (const listener of party.listeners.get(ANY_TASK) ?? []) listener(event);
      }
      if (party.token !== token) return;
    }
  }
}

interface Party {
  /** The current registration's token (a renewal replaces it). */
  token: string;
  readonly listeners: Map<string, Set<TaskListener>>;
  renewing: Promise<string> | undefined;
}
