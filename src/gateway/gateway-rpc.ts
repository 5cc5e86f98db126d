import type { Logger } from '../log/logger.js';
import { type V1Call, notificationToV1, v1Call } from '../protocol/a2a-v1/methods.js';
import type { V1StreamResponse } from '../protocol/a2a-v1/schemas.js';
import type { DurableEvent } from '../protocol/events.js';
import type { TaskResult } from '../protocol/methods.js';
import { type TaskState, isTerminalState } from '../protocol/task.js';
import type { SwitchboardClient } from '../transport/client.js';
import { VERSION } from '../version.js';
import { A2A_PUSH_NOT_SUPPORTED, A2A_UNSUPPORTED_OPERATION, GatewayRefusal } from './gateway-errors.js';
import type { GatewayParties } from './gateway-parties.js';
import { V03_METHODS, isV03Method, v03Call } from './gateway-v03.js';

/**
 * The JSON-RPC binding of one served agent: each A2A v1.0 request becomes
 * the broker call version 11 maps it to (`v1Call`, the same pure mapping a
 * version-11 connection goes through), made as the key's own agent.
 */

/** The methods answered with one JSON-RPC response. */
const UNARY = new Set(['SendMessage', 'GetTask', 'ListTasks', 'CancelTask']);
/** The methods answered with a stream of responses (SSE). */
const STREAMING = new Set(['SendStreamingMessage', 'SubscribeToTask']);
/** v1.0 methods the gateway does not offer, and what to do instead. */
const REFUSED: Readonly<Record<string, { code: number; message: string }>> = {
  CreateTaskPushNotificationConfig: {
    code: A2A_PUSH_NOT_SUPPORTED,
    message: 'the gateway sends no push notifications: stream the task (SubscribeToTask) instead',
  },
  GetTaskPushNotificationConfig: {
    code: A2A_PUSH_NOT_SUPPORTED,
    message: 'the gateway sends no push notifications: stream the task (SubscribeToTask) instead',
  },
  ListTaskPushNotificationConfigs: {
    code: A2A_PUSH_NOT_SUPPORTED,
    message: 'the gateway sends no push notifications: stream the task (SubscribeToTask) instead',
  },
  DeleteTaskPushNotificationConfig: {
    code: A2A_PUSH_NOT_SUPPORTED,
    message: 'the gateway sends no push notifications: stream the task (SubscribeToTask) instead',
  },
  GetExtendedAgentCard: {
    code: A2A_UNSUPPORTED_OPERATION,
    message: 'the gateway has no extended card: read the agent card at .well-known/agent-card.json',
  },
};

/** Who calls: the key's name and the agent the request is addressed to. */
export interface RpcCaller {
  readonly keyName: string;
  readonly agent: string;
}

/** Whether a method is answered as a stream. */
export function isStreamingMethod(method: string): boolean {
  return STREAMING.has(method) || (isV03Method(method) && V03_METHODS[method]?.streams === true);
}

/** Refuses a method the gateway does not serve (before anything is called). */
export function checkMethod(method: string): void {
  const refused = Object.hasOwn(REFUSED, method) ? REFUSED[method] : undefined;
  if (refused !== undefined) throw new GatewayRefusal(refused.code, 200, refused.message);
  if (!UNARY.has(method) && !STREAMING.has(method) && !isV03Method(method)) {
    throw new GatewayRefusal(
      -32601,
      200,
      `no method "${method}" here: the gateway serves SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask and SubscribeToTask`,
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

/** Serves one unary method; answers its v1.0 result. */
export async function callUnary(
  client: SwitchboardClient,
  parties: GatewayParties,
  caller: RpcCaller,
  method: string,
  params: unknown,
): Promise<unknown> {
  const capability = await parties.token(caller.keyName);
  const call = brokerCall(method, params, caller, capability);
  return call.answer(await client.call(call.method, call.params));
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
  const capability = await parties.token(caller.keyName);
  const call = brokerCall(method, params, caller, capability);
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
  if (taskId !== undefined && taskId !== '') {
    stop = await parties.listen(caller.keyName, taskId, (event) => deliver(event));
  }
  let raw: TaskResult;
  let first: unknown;
  try {
    raw = (await client.call(call.method, call.params)) as TaskResult;
    first = call.answer(raw);
  } catch (error) {
    stop?.();
    throw error;
  }
  if (ended) {
    stop?.();
    return;
  }
  if (stop === undefined) {
    taskId = raw.task.id;
    stop = await parties.listen(caller.keyName, taskId, (event) => deliver(event));
  }
  sink.write(first);
  if (endsStream(raw.task.status.state)) {
    finish();
    return;
  }
  deliver = (event) => {
    if (ended || event.method !== 'a2a.task.event') return;
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
  for (const event of early.splice(0)) deliver(event);
}

/** A state (the broker's) after which a stream ends: the task ended, or waits for its client. */
function endsStream(state: TaskState): boolean {
  return state === 'input-required' || state === 'auth-required' || isTerminalState(state);
}
