import type { V1Call } from '../protocol/a2a-v1/methods.js';
import type { TaskResult } from '../protocol/methods.js';
import { GatewayRefusal } from './gateway-errors.js';

/**
 * A2A v0.3 over the JSON-RPC binding, for clients that speak it (its method
 * names are not v1.0's: `message/send`, `tasks/get`, ...). The broker's own
 * model is v0.3's shapes, so a v0.3 request is the broker call itself, with
 * the key's token and the served agent as `to`.
 */

/** The v0.3 methods served, and whether each streams. */
export const V03_METHODS: Readonly<Record<string, { streams: boolean }>> = {
  'message/send': { streams: false },
  'message/stream': { streams: true },
  'tasks/get': { streams: false },
  'tasks/cancel': { streams: false },
  'tasks/resubscribe': { streams: true },
  // Served by the gateway's push config store, not by a broker call (see gateway-push.ts).
  'tasks/pushNotificationConfig/set': { streams: false },
  'tasks/pushNotificationConfig/get': { streams: false },
  'tasks/pushNotificationConfig/list': { streams: false },
  'tasks/pushNotificationConfig/delete': { streams: false },
};

/** A2A v1.0: the request names a protocol version the server does not speak. */
export const A2A_VERSION_NOT_SUPPORTED = -32009;

/**
 * The A2A version a JSON-RPC request is of, from its `A2A-Version` header,
 * as the SDK's server reads it: none (or empty) is 0.3, so is any 0.x from
 * 0.3; 1.x is 1.0. Any other is refused (-32009). The method must then be
 * one of that version's: a v1.0 name sent as v0.3 (or the reverse) is not
 * found (-32601), with what to send instead.
 */
export function checkVersion(header: string | undefined, method: string, v1Method: boolean): void {
  const version = header?.trim() ?? '';
  const match = /^(\d+)(?:\.(\d+))?$/.exec(version);
  const major = match === null ? Number.NaN : Number(match[1]);
  const minor = match === null ? Number.NaN : Number(match[2] ?? 0);
  const v03 = version === '' || (major === 0 && minor >= 3);
  if (!v03 && major !== 1) {
    throw new GatewayRefusal(
      A2A_VERSION_NOT_SUPPORTED,
      200,
      `A2A-Version '${version.slice(0, 40)}' is not served: send 1.0, or 0.3 (or no header) for A2A v0.3`,
      { supported: ['0.3', '1.0'] },
    );
  }
  if (v03 && v1Method && !isV03Method(method)) {
    throw new GatewayRefusal(
      -32601,
      200,
      `"${method}" is an A2A v1.0 method and the request is A2A v0.3 (${version === '' ? 'no A2A-Version header' : `A2A-Version ${version}`}): send the header A2A-Version: 1.0`,
    );
  }
  if (!v03 && isV03Method(method)) {
    throw new GatewayRefusal(
      -32601,
      200,
      `"${method}" is an A2A v0.3 method and the request says A2A-Version ${version}: send it without the header (or with 0.3), or use the v1.0 method`,
    );
  }
}

/** Whether a method name is one of v0.3's that the gateway serves. */
export function isV03Method(method: string): boolean {
  return Object.hasOwn(V03_METHODS, method);
}

function record(value: unknown, what: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new GatewayRefusal(-32602, 200, `${what} must be an object, as A2A v0.3 writes it`);
  }
  return value as Record<string, unknown>;
}

const taskOf = (result: unknown) => (result as TaskResult).task;

/** The broker call of one v0.3 request, made as `capability` for the agent `to`. */
export function v03Call(method: string, raw: unknown, capability: string, to: string): V1Call {
  const params = record(raw ?? {}, 'params');
  if (method === 'message/send' || method === 'message/stream') {
    const message = record(params.message, 'params.message');
    const taskId = typeof message.taskId === 'string' && message.taskId !== '' ? message.taskId : undefined;
    const configuration = params.configuration === undefined ? {} : record(params.configuration, 'configuration');
    return {
      method: 'a2a.message.send',
      params: {
        token: capability,
        ...(taskId === undefined ? { to } : { taskId }),
        message: {
          parts: message.parts,
          ...(message.messageId === undefined ? {} : { messageId: message.messageId }),
          ...(message.metadata === undefined ? {} : { metadata: message.metadata }),
        },
        ...(configuration.historyLength === undefined ? {} : { historyLength: configuration.historyLength }),
      },
      answer: taskOf,
    };
  }
  const id = params.id;
  const brokerMethod =
    method === 'tasks/get' ? 'a2a.tasks.get' : method === 'tasks/cancel' ? 'a2a.tasks.cancel' : 'a2a.tasks.resubscribe';
  return {
    method: brokerMethod,
    params: {
      token: capability,
      id,
      ...(method === 'tasks/get' && params.historyLength !== undefined ? { historyLength: params.historyLength } : {}),
    },
    answer: taskOf,
  };
}
