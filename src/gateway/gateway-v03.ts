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
};

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
