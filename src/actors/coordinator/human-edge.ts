import type { Part } from '../../protocol/parts.js';
import type { BrokerApi } from '../broker/api.js';

/**
 * The human edge (the operator's side of the design) as the broker sees it. Each work item is
 * an A2A task whose requester is the edge and whose worker is the
 * Coordinator; both are registered per work item, in a broker context named
 * by the item's id, so that every item's hops (the Coordinator's child tasks)
 * stay within the broker's per-context and per-registration bounds however
 * many items run. Tokens live in memory only; after a restart the parties
 * register again under the same `(contextId, name)` and regain their tasks.
 */

export const EDGE_AGENT_NAME = 'edge';
export const COORDINATOR_AGENT_NAME = 'coordinator';

export interface Party {
  agentId: string;
  token: string;
}

export interface ItemParties {
  edge: Party;
  coordinator: Party;
}

import { SWITCHBOARD_METADATA_KEY } from '../../decisions/coordinator-decisions.js';

export { SWITCHBOARD_METADATA_KEY };

export class HumanEdge {
  readonly #broker: BrokerApi;
  readonly #parties = new Map<string, Promise<ItemParties>>();

  constructor(broker: BrokerApi) {
    this.#broker = broker;
  }

  /** The item's two registrations (made on first use; after a restart, made again). */
  parties(itemId: string): Promise<ItemParties> {
    let parties = this.#parties.get(itemId);
    if (parties === undefined) {
      parties = this.#register(itemId);
      this.#parties.set(itemId, parties);
      parties.catch(() => this.#parties.delete(itemId));
    }
    return parties;
  }

  async #register(itemId: string): Promise<ItemParties> {
    const edge = await this.#broker.register({
      name: EDGE_AGENT_NAME,
      contextId: itemId,
      kind: 'parent',
      description: 'the human edge: creates the work item and follows it',
    });
    const coordinator = await this.#broker.register({
      name: COORDINATOR_AGENT_NAME,
      contextId: itemId,
      kind: 'parent',
      description: 'the Coordinator: runs the work item through its workflow',
    });
    return {
      edge: { agentId: edge.agentId, token: edge.token },
      coordinator: { agentId: coordinator.agentId, token: coordinator.token },
    };
  }

  /**
   * Creates the work item's task (edge to Coordinator). Its first message's
   * id is the item id, so that `findItemTask` can recognise it after a crash.
   */
  async createItemTask(itemId: string, input: Part[], metadata: Record<string, unknown>): Promise<string> {
    const { edge, coordinator } = await this.parties(itemId);
    const { task } = await this.#broker.send({
      token: edge.token,
      to: coordinator.agentId,
      message: { messageId: itemId, parts: input, metadata: { [SWITCHBOARD_METADATA_KEY]: metadata } },
    });
    return task.id;
  }

  /** The item's task, found by its first message (after a crash between creating it and recording it). */
  async findItemTask(itemId: string): Promise<string | undefined> {
    const { edge } = await this.parties(itemId);
    const { tasks } = await this.#broker.listTasks({ token: edge.token, role: 'requester' });
    return tasks.find((t) => t.history[0]?.messageId === itemId)?.id;
  }

  /** Cancels the item's task as its requester. */
  async cancelItemTask(itemId: string, taskId: string): Promise<void> {
    const { edge } = await this.parties(itemId);
    await this.#broker.cancel({ token: edge.token, id: taskId });
  }

  /** Ends the item's registrations once its tasks are all final. */
  async release(itemId: string): Promise<void> {
    const parties = this.#parties.get(itemId);
    if (parties === undefined) return;
    this.#parties.delete(itemId);
    const { edge, coordinator } = await parties;
    await this.#broker.deregister({ token: coordinator.token });
    await this.#broker.deregister({ token: edge.token });
  }
}
