import { artifactToV03, messageSendFromV1 } from '../protocol/a2a-v1/message-mapping.js';
import { TASK_STATE_V03 } from '../protocol/a2a-v1/field-table.js';
import type { V1Artifact, V1Task, V1TaskStatus } from '../protocol/a2a-v1/schemas.js';
import { BrokerError } from '../protocol/broker-error.js';
import { type Task, type TaskState, isTerminalState } from '../protocol/task.js';
import type { SwitchboardClient } from '../transport/client.js';

/** Where a remote status leaves the local task: still going, paused for input, or ended. */
export type MirrorOutcome = 'going' | 'interrupted' | 'ended';

function outcomeOf(state: TaskState): MirrorOutcome {
  if (isTerminalState(state)) return 'ended';
  if (state === 'input-required' || state === 'auth-required') return 'interrupted';
  return 'going';
}

/** The broker refusals that say the local task has moved on (ended, canceled by its requester). */
function isSettled(error: unknown): boolean {
  return (
    error instanceof BrokerError && (error.code === 'A2A_TASK_TERMINAL' || error.code === 'A2A_INVALID_TRANSITION')
  );
}

/**
 * The local task a remote one is carried into, written by the bridge as its
 * worker. It knows what the local task already holds (its state, its
 * artifacts, the ids of its messages), so that a remote event seen twice (a
 * resubscribe's first answer is the whole task; a poll answers the whole
 * task each time) is written once: a status whose state and message the
 * task already has, and an artifact whose id it already holds, are passed
 * over.
 */
export class TaskMirror {
  private stateNow: TaskState;
  private readonly artifacts = new Set<string>();
  private readonly messageIds = new Set<string>();

  private constructor(
    private readonly client: SwitchboardClient,
    private readonly token: string,
    readonly task: Task,
  ) {
    this.stateNow = task.status.state;
    for (const artifact of task.artifacts) this.artifacts.add(artifact.artifactId);
    for (const message of task.history) this.messageIds.add(message.messageId);
    if (task.status.message !== undefined) this.messageIds.add(task.status.message.messageId);
  }

  /** The local task as the broker holds it now. */
  static async load(client: SwitchboardClient, token: string, taskId: string): Promise<TaskMirror> {
    const { task } = await client.getTask({ token, id: taskId });
    return new TaskMirror(client, token, task);
  }

  get state(): TaskState {
    return this.stateNow;
  }

  get ended(): boolean {
    return isTerminalState(this.stateNow);
  }

  /** Whether a remote status message is news to the local task (absent: not news). */
  isFresh(message: { messageId: string } | undefined): boolean {
    return message !== undefined && !this.messageIds.has(message.messageId);
  }

  /** A remote status, written unless the local task holds it already. */
  async status(status: V1TaskStatus): Promise<MirrorOutcome> {
    if (this.ended) return 'ended';
    const to = TASK_STATE_V03[status.state];
    const fresh = status.message !== undefined && !this.messageIds.has(status.message.messageId);
    if (to === 'submitted') return outcomeOf(this.stateNow);
    if (to === this.stateNow && (!fresh || to === 'input-required' || to === 'auth-required')) {
      return outcomeOf(to);
    }
    // A remote may reject a task it has started; the broker takes `rejected` from `submitted` only.
    const target: TaskState = to === 'rejected' && this.stateNow !== 'submitted' ? 'failed' : to;
    try {
      if (target === 'canceled') {
        await this.client.cancel({ token: this.token, id: this.task.id });
      } else {
        await this.client.setStatus({
          token: this.token,
          id: this.task.id,
          state: target,
          ...(fresh && status.message !== undefined ? { message: messageSendFromV1(status.message) } : {}),
        });
      }
    } catch (error) {
      if (!isSettled(error)) throw error;
      const { task } = await this.client.getTask({ token: this.token, id: this.task.id });
      this.stateNow = task.status.state;
      return outcomeOf(this.stateNow);
    }
    if (fresh && status.message !== undefined) this.messageIds.add(status.message.messageId);
    this.stateNow = target;
    return outcomeOf(target);
  }

  /** A remote artifact (or chunk), written unless the local task holds its id already (a whole artifact). */
  async artifact(artifact: V1Artifact, append = false, lastChunk = false): Promise<void> {
    if (this.ended) return;
    if (!append && this.artifacts.has(artifact.artifactId)) return;
    const { artifactId, name, description, parts, metadata } = artifactToV03(artifact);
    try {
      await this.client.addArtifact({
        token: this.token,
        id: this.task.id,
        artifact: {
          artifactId,
          parts,
          ...(name === undefined ? {} : { name }),
          ...(description === undefined ? {} : { description }),
          ...(metadata === undefined ? {} : { metadata }),
        },
        ...(append ? { append } : {}),
        ...(lastChunk ? { lastChunk } : {}),
      });
    } catch (error) {
      if (!isSettled(error)) throw error;
      this.stateNow = (await this.client.getTask({ token: this.token, id: this.task.id })).task.status.state;
      return;
    }
    this.artifacts.add(artifact.artifactId);
  }

  /** A whole remote task: its artifacts the local task lacks, then its status. */
  async whole(task: V1Task): Promise<MirrorOutcome> {
    for (const artifact of task.artifacts ?? []) await this.artifact(artifact);
    return this.status(task.status);
  }

  /** Ends the local task as failed, saying why (nothing when it has ended already). */
  async fail(text: string): Promise<void> {
    if (this.ended) return;
    try {
      await this.client.setStatus({
        token: this.token,
        id: this.task.id,
        state: 'failed',
        message: { parts: [{ kind: 'text', text }] },
      });
      this.stateNow = 'failed';
    } catch (error) {
      if (!isSettled(error)) throw error;
    }
  }
}
