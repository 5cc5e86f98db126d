import type { Logger } from '../log/logger.js';
import { type V1Call, notificationToV1, v1Call } from '../protocol/a2a-v1/methods.js';
import type { V1StreamResponse } from '../protocol/a2a-v1/schemas.js';
import type { DurableEvent } from '../protocol/events.js';
import { MAX_EVENTS_LIMIT } from '../protocol/bounds.js';
import type { EventsSinceResult, TaskResult } from '../protocol/methods.js';
import { type TaskState, isTerminalState } from '../protocol/task.js';
import type { SwitchboardClient } from '../transport/client.js';
import { eventTaskId } from '../transport/agent-inbox.js';
import { BLOCKING_SEND_CAPABILITY } from '../protocol/handshake.js';
import { VERSION } from '../version.js';
import { GatewayRefusal } from './gateway-errors.js';
import { ANY_TASK, type GatewayParties } from './gateway-parties.js';
import { isPushMethod, isV1PushMethod } from './gateway-push.js';
import { V03_METHODS, isV03Method, v03Call } from './gateway-v03.js';

/**
 * The JSON-RPC binding of one served agent: each A2A v1.0 request becomes
 * the broker call version 11 maps it to (`v1Call`, the same pure mapping a
 * version-11 connection goes through), made as the key's own agent.
 */

/** The methods answered with one JSON-RPC response. */
const UNARY = new Set(['SendMessage', 'GetTask', 'ListTasks', 'CancelTask', 'GetExtendedAgentCard']);
/** The methods answered with a stream of responses (SSE). */
const STREAMING = new Set(['SendStreamingMessage', 'SubscribeToTask']);
/** Who calls: the key's name and the agent the request is addressed to. */
export interface RpcCaller {
  readonly keyName: string;
  readonly agent: string;
  /** Called with the id of the task a send answers (keeps the push config the send carried). */
  readonly created?: (taskId: string) => Promise<void>;
}

/** Whether a method is answered as a stream. */
export function isStreamingMethod(method: string): boolean {
  return STREAMING.has(method) || (isV03Method(method) && V03_METHODS[method]?.streams === true);
}

/** Whether a name is one of A2A v1.0's JSON-RPC methods. */
export function isV1Method(method: string): boolean {
  return UNARY.has(method) || STREAMING.has(method) || isV1PushMethod(method);
}

/** Refuses a method the gateway does not serve (before anything is called). */
export function checkMethod(method: string): void {
  if (!UNARY.has(method) && !STREAMING.has(method) && !isV03Method(method) && !isPushMethod(method)) {
    throw new GatewayRefusal(
      -32601,
      200,
      `no method "${method}" here: the gateway serves SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, GetExtendedAgentCard and the push notification config methods (Create, Get, List, DeleteTaskPushNotificationConfig)`,
    );
  }
}

function brokerParams(method: string, params: unknown, caller: RpcCaller, capability: string): unknown {
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    throw new GatewayRefusal(-32602, 200, 'params must be an object: the A2A v1.0 request of the method');
  }
  const { tenant: _tenant, ...rest } = (params ?? {}) as Record<string, unknown>;
  const out: Record<string, unknown> = { ...rest, capability };
  if (method === 'SendMessage' || method === 'SendStreamingMessage') {
    const taskId = (rest.message as { taskId?: unknown } | undefined)?.taskId;
    if (taskId === undefined || taskId === '') out.to = caller.agent;
  }
  return out;
}

/**
 * Serves one unary method; answers its v1.0 result. A message sent without
 * `configuration.returnImmediately` (v0.3: with `configuration.blocking`) is
 * answered once its task ends or waits for its client, as A2A says; until
 * then, or until the HTTP client goes away (`gone`).
 */
export async function callUnary(
  client: SwitchboardClient,
  parties: GatewayParties,
  caller: RpcCaller,
  method: string,
  params: unknown,
  gone?: Promise<void>,
): Promise<unknown> {
  if (!blocks(method, params)) {
    const { call, raw } = await callRenewing(client, parties, caller, method, params);
    if (method === 'CancelTask' || method === 'tasks/cancel') parties.ended(caller.keyName, (raw as TaskResult).task);
    return call.answer(raw);
  }
  // The broker answers once the task settles; a send that carries a push config is kept
  // before its task can settle, so it waits here instead.
  if (caller.created === undefined && client.host.capabilities.includes(BLOCKING_SEND_CAPABILITY)) {
    const made = callRenewing(client, parties, caller, method, params, true);
    const first = await (gone === undefined ? made : Promise.race([made, gone.then(() => undefined)]));
    if (first === undefined) {
      // Answered to no one: the broker's answer, when it comes, is dropped.
      made.catch(() => {});
      throw new GatewayRefusal(-32603, 200, 'the client went away before its task ended');
    }
    return first.call.answer(first.raw);
  }
  // Listening to the key's tasks before the send: the new task's end cannot pass unheard.
  const watch = new EndWatch();
  const stop = await parties.listen(caller.keyName, ANY_TASK, (event) => watch.see(event));
  try {
    const { call, raw } = await callRenewing(client, parties, caller, method, params);
    const historyLength = (call.params as { historyLength?: unknown }).historyLength;
    return call.answer(await settled(client, parties, caller.keyName, raw as TaskResult, historyLength, watch, gone));
  } finally {
    stop();
  }
}

/** The tasks whose status events said they ended or need input, and a wake for one of them. */
class EndWatch {
  private readonly ended = new Set<string>();
  private waiting: { id: string; wake: () => void } | undefined;

  see(event: DurableEvent): void {
    if (event.method !== 'a2a.task.event') return;
    const e = event.params.event;
    if (e.kind !== 'status-update' || !endsStream(e.status.state)) return;
    this.ended.add(e.taskId);
    if (this.waiting?.id === e.taskId) this.waiting.wake();
  }

  /** Resolves once the task's end is seen (at once if it was already). */
  until(id: string): Promise<void> {
    if (this.ended.has(id)) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiting = { id, wake: resolve };
    });
  }
}

/** Makes the broker call of a request as the key's agent (see `GatewayParties.call`). */
async function callRenewing(
  client: SwitchboardClient,
  parties: GatewayParties,
  caller: RpcCaller,
  method: string,
  params: unknown,
  blocking = false,
): Promise<{ call: V1Call; raw: unknown; capability: string }> {
  let call: V1Call | undefined;
  let capability = '';
  const raw = await parties.call(caller.keyName, (token) => {
    capability = token;
    call = brokerCall(method, params, caller, token);
    const brokerParams = blocking ? { ...(call.params as Record<string, unknown>), blocking: true } : call.params;
    return client.call(call.method, brokerParams);
  });
  const id = (raw as Partial<TaskResult> | undefined)?.task?.id;
  if (caller.created !== undefined && typeof id === 'string') await caller.created(id);
  return { call: call as V1Call, raw, capability };
}

/** Whether a send waits for its task to end: v1.0 unless told to return at once, v0.3 when told to block. */
function blocks(method: string, params: unknown): boolean {
  const configuration = (params as { configuration?: Record<string, unknown> } | undefined)?.configuration;
  if (method === 'SendMessage') return configuration?.returnImmediately !== true;
  if (method === 'message/send') return configuration?.blocking === true;
  return false;
}

/** The task of a send once it ends or waits for its client (read again after the status event that says so). */
async function settled(
  client: SwitchboardClient,
  parties: GatewayParties,
  keyName: string,
  sent: TaskResult,
  historyLength: unknown,
  watch: EndWatch,
  gone: Promise<void> | undefined,
): Promise<TaskResult> {
  if (endsStream(sent.task.status.state)) return sent;
  const id = sent.task.id;
  let left = false;
  await Promise.race([watch.until(id), gone?.then(() => (left = true))]);
  if (left) throw new GatewayRefusal(-32603, 200, 'the client went away before its task ended');
  return parties.call(
    keyName,
    async (token) =>
      (await client.call('a2a.tasks.get', {
        token,
        id,
        ...(historyLength === undefined ? {} : { historyLength }),
      })) as TaskResult,
  );
}

/** The broker call of a request: v0.3's as it is, v1.0's through version 11's mapping. */
function brokerCall(method: string, params: unknown, caller: RpcCaller, capability: string): V1Call {
  if (isV03Method(method)) return v03Call(method, params, capability, caller.agent);
  return v1Call(method, brokerParams(method, params, caller, capability), VERSION);
}

/** A task event as a stream response of the request's version (undefined: not sent, as an agent's presence). */
function streamResponse(v03: boolean, event: DurableEvent): unknown {
  if (event.method !== 'a2a.task.event') return undefined;
  if (v03) {
    const e = event.params.event;
    return e.kind === 'status-update' || e.kind === 'artifact-update' ? e : undefined;
  }
  const { event: response } = notificationToV1(event.method, event.params) as { event: V1StreamResponse };
  return 'statusUpdate' in response || 'artifactUpdate' in response ? response : undefined;
}

/** Where a stream writes its responses. */
export interface StreamSink {
  /** One response: a v1.0 stream response, or a v0.3 task or event. */
  write(response: unknown): void;
  end(): void;
  /** Called once when the HTTP client goes away. */
  onClose(listener: () => void): void;
}

/**
 * Serves a streaming method: the first response is the task (`{task}`), then
 * every status and artifact update of it, until it ends or needs input
 * (then the stream ends; SubscribeToTask picks it up again).
 */
export async function callStreaming(
  client: SwitchboardClient,
  parties: GatewayParties,
  caller: RpcCaller,
  method: string,
  params: unknown,
  sink: StreamSink,
  logger: Logger,
): Promise<void> {
  let capability = await parties.token(caller.keyName);
  const v03 = isV03Method(method);
  let taskId: string | undefined =
    method === 'SubscribeToTask' || method === 'tasks/resubscribe'
      ? String((params as { id?: unknown } | undefined)?.id ?? '')
      : undefined;
  const early: DurableEvent[] = [];
  let deliver: (event: DurableEvent) => void = (event) => early.push(event);
  let stop: (() => void) | undefined;
  let ended = false;
  const finish = () => {
    if (ended) return;
    ended = true;
    stop?.();
    sink.end();
  };
  sink.onClose(() => {
    ended = true;
    stop?.();
  });
  // SubscribeToTask: listen before reading the task, so that nothing between the two is lost.
  const subscribing = taskId !== undefined && taskId !== '';
  if (subscribing) {
    stop = await parties.listen(caller.keyName, taskId as string, (event) => deliver(event));
  }
  // Every event of the party up to here is in the task as it is read next.
  const base = client.lastSeq(capability) ?? 0;
  let raw: TaskResult;
  let first: unknown;
  /** Events at or below this seq are in the task the stream starts with: not sent again. */
  let seen = 0;
  try {
    const made = await callRenewing(client, parties, caller, method, params);
    capability = made.capability;
    raw = made.raw as TaskResult;
    first = made.call.answer(raw);
    if (subscribing) seen = await snapshotSeq(client, parties, caller.keyName, raw, base);
  } catch (error) {
    stop?.();
    throw error;
  }
  if (ended) {
    stop?.();
    return;
  }
  let backlog: DurableEvent[] = [];
  if (stop === undefined) {
    const id = raw.task.id;
    taskId = id;
    stop = await parties.listen(caller.keyName, id, (event) => deliver(event));
    // What reached the key between the send and the listener: read back from its log.
    seen = base;
    try {
      backlog = (await eventsAfter(client, parties, caller.keyName, base)).filter((event) => eventTaskId(event) === id);
    } catch (error) {
      stop();
      throw error;
    }
  }
  if (ended) {
    stop();
    return;
  }
  sink.write(first);
  if (endsStream(raw.task.status.state)) {
    finish();
    return;
  }
  const { state, timestamp } = raw.task.status;
  deliver = (event) => {
    if (ended || event.method !== 'a2a.task.event' || event.seq <= seen) return;
    seen = event.seq;
    const e0 = event.params.event;
    // The status the stream started with is not news.
    if (e0.kind === 'status-update' && e0.status.state === state && e0.status.timestamp === timestamp) return;
    const response = streamResponse(v03, event);
    if (response === undefined) return;
    try {
      sink.write(response);
    } catch (error) {
      logger.warn({ err: error, taskId }, 'gateway: a stream could not be written; ending it');
      finish();
      return;
    }
    const e = event.params.event;
    if (e.kind === 'status-update' && endsStream(e.status.state)) finish();
  };
  for (const event of [...backlog, ...early.splice(0)].sort((a, b) => a.seq - b.seq)) deliver(event);
}

/** Every durable event of the key's agent after a seq, page by page. */
async function eventsAfter(
  client: SwitchboardClient,
  parties: GatewayParties,
  keyName: string,
  after: number,
): Promise<DurableEvent[]> {
  const out: DurableEvent[] = [];
  for (let from = after; ; ) {
    const { events } = await parties.call(
      keyName,
      async (token) =>
        (await client.call('a2a.events.since', { token, after: from, limit: MAX_EVENTS_LIMIT })) as EventsSinceResult,
    );
    out.push(...events);
    if (events.length < MAX_EVENTS_LIMIT) return out;
    from = (events.at(-1) as DurableEvent).seq;
  }
}

/**
 * The seq up to which the party's events are in the task a resubscribe
 * answered: the broker's resubscribe writes the task's status as an event
 * (the last one of the party with that status) in the same step as it reads
 * the task, so every event before it is in the task and every one after is
 * news. Found in the party's log after `base` (the seq the client had
 * before the call); `base` when it is not there.
 */
async function snapshotSeq(
  client: SwitchboardClient,
  parties: GatewayParties,
  keyName: string,
  raw: TaskResult,
  base: number,
): Promise<number> {
  const { status, id } = raw.task;
  let marker = base;
  for (const event of await eventsAfter(client, parties, keyName, base)) {
    if (event.method !== 'a2a.task.event') continue;
    const e = event.params.event;
    if (
      e.kind === 'status-update' &&
      e.taskId === id &&
      e.status.state === status.state &&
      e.status.timestamp === status.timestamp
    ) {
      marker = event.seq;
    }
  }
  return marker;
}

/** A state (the broker's) after which a stream ends: the task ended, or waits for its client. */
function endsStream(state: TaskState): boolean {
  return state === 'input-required' || state === 'auth-required' || isTerminalState(state);
}
