import { GetTaskRequest, Message, SendMessageRequest, StreamResponse, SubscribeToTaskRequest, Task } from '@a2a-js/sdk';
import type { Client } from '@a2a-js/sdk/client';
import type { Logger } from '../log/logger.js';
import { partToV1 } from '../protocol/a2a-v1/message-mapping.js';
import {
  type V1Message,
  type V1StreamResponse,
  V1StreamResponseSchema,
  type V1TaskStatus,
} from '../protocol/a2a-v1/schemas.js';
import type { Message as LocalMessage } from '../protocol/task.js';
import type { SwitchboardClient } from '../transport/client.js';
import { describeRemoteFailure, networkCode } from './remote-connection.js';
import type { RemoteTaskStore } from './remote-task-store.js';
import { type MirrorOutcome, TaskMirror } from './remote-task-mirror.js';

/** How the bridge waits on remotes, unless told. */
export const DEFAULT_RECONNECT_MS = 30_000;
export const DEFAULT_POLL_MS = 1_000;

/** What carrying one local task to its remote needs. */
export interface CarryContext {
  broker: SwitchboardClient;
  /** The local agent's token: the bridge writes the task as its worker. */
  token: string;
  /** The local agent's name (the row of the task store). */
  agent: string;
  remote: Client;
  /** The remote's URL, for the messages that name it. */
  url: string;
  /** The remote streams (its card's `capabilities.streaming`): else the bridge polls. */
  streaming: boolean;
  store: RemoteTaskStore;
  logger: Logger;
  timeoutMs: number;
  /** How long a remote that stopped answering mid-task is tried again before the local task fails. */
  reconnectMs: number;
  pollMs: number;
}

class StreamEnded extends Error {
  readonly code = 'ECONNRESET';
  constructor() {
    super('the remote closed the stream before the task ended or needed input');
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** A local message as the v1.0 message sent to the remote (its parts; never anything of ours but them). */
function outgoing(message: LocalMessage, remoteTaskId: string | undefined, remoteContextId: string | undefined) {
  const v1: V1Message = {
    messageId: message.messageId,
    role: 'ROLE_USER',
    parts: message.parts.map(partToV1),
    ...(remoteTaskId === undefined ? {} : { taskId: remoteTaskId }),
    ...(remoteContextId === undefined ? {} : { contextId: remoteContextId }),
  };
  return v1;
}

/** A stream response of the SDK in checked v1.0 shape. */
function checked(value: unknown): V1StreamResponse {
  const parsed = V1StreamResponseSchema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`the remote answered something that is not A2A v1.0 (${issue?.path.join('.')}: ${issue?.message})`);
  }
  return parsed.data;
}

/** A SendMessage answer (a task, or a message when the remote made no task) as a stream response. */
function fromSendResult(result: Task | Message): V1StreamResponse {
  if ('status' in result) return checked({ task: Task.toJSON(result) });
  return checked({ message: Message.toJSON(result) });
}

/**
 * Carries one local task to its remote agent until the task ends or needs
 * input: sends `message` (a new task's first message, or the requester's
 * answer to an input-required task) when given, else picks the remote task
 * up again (resubscribes, or polls); writes what the remote says into the
 * local task. A remote that stops answering mid-task is tried again for
 * `reconnectMs`, then the local task fails saying the remote is
 * unreachable; a remote that cannot be reached when a new task is sent fails
 * it at once. Stops when `signal` aborts (the local task was canceled).
 */
export async function carryTask(
  ctx: CarryContext,
  localTaskId: string,
  message: LocalMessage | undefined,
  signal: AbortSignal,
): Promise<void> {
  const mirror = await TaskMirror.load(ctx.broker, ctx.token, localTaskId);
  const { store } = ctx;
  if (mirror.ended) {
    store.end(localTaskId);
    return;
  }
  let pending = message;
  /**
   * After an answer to a task that needed input, the remote may still show the
   * question it asked (a stream's first answer is the task as it was; a poll may
   * come before the remote has read the answer): until the remote says
   * something new, an input-required status with no new message is stale.
   */
  let answered = message !== undefined && store.get(localTaskId)?.remoteTaskId !== undefined;
  let brokenSince: number | undefined;
  let attempt = 0;
  const row = () => store.get(localTaskId);

  /** A remote status into the local task, unless it is the question already answered. */
  const status = async (value: V1TaskStatus): Promise<MirrorOutcome | undefined> => {
    const interrupted = value.state === 'TASK_STATE_INPUT_REQUIRED' || value.state === 'TASK_STATE_AUTH_REQUIRED';
    if (answered && interrupted && !mirror.isFresh(value.message)) return undefined;
    if (value.state !== 'TASK_STATE_SUBMITTED') answered = false;
    return mirror.status(value);
  };

  const settle = async (outcome: MirrorOutcome | undefined): Promise<boolean> => {
    if (outcome === undefined) return false;
    if (outcome === 'ended') store.end(localTaskId);
    return outcome !== 'going';
  };

  /** Writes one remote answer into the local task; true once the task has ended or needs input. */
  const apply = async (response: V1StreamResponse): Promise<boolean> => {
    const known = row();
    const name = (taskId: string, contextId: string) => {
      if (known?.remoteTaskId === undefined) store.named(localTaskId, taskId, contextId);
    };
    if ('task' in response) {
      name(response.task.id, response.task.contextId);
      for (const artifact of response.task.artifacts ?? []) await mirror.artifact(artifact);
      return settle(await status(response.task.status));
    }
    if ('statusUpdate' in response) {
      name(response.statusUpdate.taskId, response.statusUpdate.contextId);
      return settle(await status(response.statusUpdate.status));
    }
    if ('artifactUpdate' in response) {
      const { artifact, append, lastChunk, taskId, contextId } = response.artifactUpdate;
      name(taskId, contextId);
      await mirror.artifact(artifact, append ?? false, lastChunk ?? false);
      return false;
    }
    if ('message' in response) {
      // A remote that answers with a message and no task: that answer completes the local task.
      if (known?.remoteTaskId === undefined && response.message.taskId === undefined) {
        return settle(await mirror.status({ state: 'TASK_STATE_COMPLETED', message: response.message }));
      }
      return settle(await mirror.status({ state: 'TASK_STATE_WORKING', message: response.message }));
    }
    return false;
  };

  /** The remote's answers for this round: a send, a resubscribe, or polls. */
  async function* answers(): AsyncGenerator<V1StreamResponse> {
    const current = row();
    const remoteTaskId = current?.remoteTaskId;
    if (pending !== undefined) {
      const request = SendMessageRequest.fromJSON({
        message: outgoing(pending, remoteTaskId, current?.remoteContextId),
        ...(ctx.streaming ? {} : { configuration: { returnImmediately: true } }),
      });
      if (ctx.streaming) {
        for await (const response of ctx.remote.sendMessageStream(request, { signal })) {
          pending = undefined;
          yield checked(StreamResponse.toJSON(response));
        }
        throw new StreamEnded();
      }
      const result = await ctx.remote.sendMessage(request, { signal });
      pending = undefined;
      yield fromSendResult(result);
    } else if (remoteTaskId === undefined) {
      throw new Error('the remote has not named the task, and there is no message to send it');
    } else if (ctx.streaming) {
      for await (const response of ctx.remote.resubscribeTask(SubscribeToTaskRequest.fromJSON({ id: remoteTaskId }), {
        signal,
      })) {
        yield checked(StreamResponse.toJSON(response));
      }
      throw new StreamEnded();
    }
    for (;;) {
      const id = row()?.remoteTaskId;
      if (id === undefined) throw new Error('the remote answered no task to poll');
      await sleep(ctx.pollMs, signal);
      if (signal.aborted) return;
      yield checked({ task: Task.toJSON(await ctx.remote.getTask(GetTaskRequest.fromJSON({ id }), { signal })) });
    }
  }

  while (!signal.aborted) {
    try {
      for await (const response of answers()) {
        brokenSince = undefined;
        attempt = 0;
        if (await apply(response)) return;
        if (signal.aborted) return;
      }
      return;
    } catch (error) {
      if (signal.aborted || mirror.ended) return;
      const code = networkCode(error);
      const remoteTaskId = row()?.remoteTaskId;
      if (code === undefined) {
        // The remote answered an error: the task as the remote holds it may still say it has ended.
        if (remoteTaskId !== undefined && pending === undefined) {
          try {
            const task = await ctx.remote.getTask(GetTaskRequest.fromJSON({ id: remoteTaskId }), { signal });
            if (await apply(checked({ task: Task.toJSON(task) }))) return;
          } catch {
            // Fails below with the first error.
          }
        }
        await mirror.fail(`the remote agent at ${ctx.url} answered an error: ${describeRemoteFailure(error)}`);
        store.end(localTaskId);
        return;
      }
      const words = describeRemoteFailure(error, ctx.timeoutMs);
      if (remoteTaskId === undefined) {
        await mirror.fail(
          `the remote agent at ${ctx.url} is unreachable: ${words}; send again once it runs (switchboard agents remotes lists it)`,
        );
        store.end(localTaskId);
        return;
      }
      brokenSince ??= Date.now();
      if (Date.now() - brokenSince >= ctx.reconnectMs) {
        await mirror.fail(
          `the remote agent at ${ctx.url} is unreachable: ${words}; tried again for ${Math.round(ctx.reconnectMs / 1000)} s (remote task ${remoteTaskId})`,
        );
        store.end(localTaskId);
        return;
      }
      ctx.logger.warn(
        { task: localTaskId, remoteTask: remoteTaskId, url: ctx.url, reason: words },
        'remote agent: lost the remote; picking the task up again',
      );
      await sleep(Math.min(200 * 2 ** attempt++, 2000), signal);
    }
  }
}
