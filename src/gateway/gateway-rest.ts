import {
  A2A_CONTENT_TYPE_NOT_SUPPORTED,
  A2A_PUSH_NOT_SUPPORTED,
  A2A_TASK_NOT_CANCELABLE,
  A2A_TASK_NOT_FOUND,
  A2A_UNSUPPORTED_OPERATION,
  GATEWAY_BODY_TOO_LARGE,
  GATEWAY_FORBIDDEN,
  GATEWAY_RATE_LIMITED,
  GATEWAY_UNAUTHENTICATED,
  GatewayRefusal,
} from './gateway-errors.js';

/**
 * The HTTP+JSON binding of A2A v1.0, as paths under an agent's base URL:
 * each route names the JSON-RPC method it is, and where its params come
 * from (the body, the path, the query). The gateway then serves it as it
 * serves that method; only the answer's envelope and the errors' shape
 * differ.
 */

/** One request of the HTTP+JSON binding, as the JSON-RPC method it is. */
export interface RestRoute {
  readonly method: string;
  /** The params, but for a body (`body: true`): the body is the params. */
  readonly params: Record<string, unknown>;
  readonly body: boolean;
}

function numberOf(value: string | null): number | undefined {
  if (value === null) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n)) throw new GatewayRefusal(-32602, 400, `expected an integer in the query, got '${value}'`);
  return n;
}

function defined(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v !== undefined));
}

/** The route of `METHOD /path` (the path after the agent's base), or undefined when it is none of the binding's. */
export function restRoute(httpMethod: string, path: string, query: URLSearchParams): RestRoute | undefined {
  if (httpMethod === 'POST' && path === '/message:send') return { method: 'SendMessage', params: {}, body: true };
  if (httpMethod === 'POST' && path === '/message:stream') {
    return { method: 'SendStreamingMessage', params: {}, body: true };
  }
  if (httpMethod === 'GET' && path === '/tasks') {
    const includeArtifacts = query.get('includeArtifacts');
    return {
      method: 'ListTasks',
      body: false,
      params: defined({
        contextId: query.get('contextId') ?? undefined,
        status: query.get('status') ?? undefined,
        pageSize: numberOf(query.get('pageSize')),
        pageToken: query.get('pageToken') ?? undefined,
        historyLength: numberOf(query.get('historyLength')),
        statusTimestampAfter: query.get('statusTimestampAfter') ?? undefined,
        includeArtifacts: includeArtifacts === null ? undefined : includeArtifacts === 'true',
      }),
    };
  }
  if (path === '/extendedAgentCard') return { method: 'GetExtendedAgentCard', params: {}, body: false };
  const task = /^\/tasks\/([^/:]+)(:cancel|:subscribe|\/pushNotificationConfigs(?:\/[^/]+)?)?$/.exec(path);
  if (task === null) return undefined;
  const id = decodeURIComponent(task[1] as string);
  const verb = task[2];
  if (verb === undefined && httpMethod === 'GET') {
    return {
      method: 'GetTask',
      body: false,
      params: defined({ id, historyLength: numberOf(query.get('historyLength')) }),
    };
  }
  if (verb === ':cancel' && httpMethod === 'POST') return { method: 'CancelTask', params: { id }, body: false };
  if (verb === ':subscribe' && (httpMethod === 'POST' || httpMethod === 'GET')) {
    return { method: 'SubscribeToTask', params: { id }, body: false };
  }
  if (verb === '/pushNotificationConfigs') {
    if (httpMethod === 'POST')
      return { method: 'CreateTaskPushNotificationConfig', params: { taskId: id }, body: true };
    if (httpMethod === 'GET') {
      return {
        method: 'ListTaskPushNotificationConfigs',
        body: false,
        params: defined({
          taskId: id,
          pageSize: numberOf(query.get('pageSize')),
          pageToken: query.get('pageToken') ?? undefined,
        }),
      };
    }
  }
  if (verb?.startsWith('/pushNotificationConfigs/')) {
    const configId = decodeURIComponent(verb.slice('/pushNotificationConfigs/'.length));
    if (httpMethod === 'GET')
      return { method: 'GetTaskPushNotificationConfig', params: { taskId: id, id: configId }, body: false };
    if (httpMethod === 'DELETE') {
      return { method: 'DeleteTaskPushNotificationConfig', params: { taskId: id, id: configId }, body: false };
    }
  }
  return undefined;
}

/** How a JSON-RPC error code reads in the HTTP+JSON binding: its HTTP status and A2A reason. */
const REST_ERRORS: ReadonlyMap<number, { status: number; reason: string }> = new Map([
  [A2A_TASK_NOT_FOUND, { status: 404, reason: 'TASK_NOT_FOUND' }],
  [A2A_TASK_NOT_CANCELABLE, { status: 409, reason: 'TASK_NOT_CANCELABLE' }],
  [A2A_PUSH_NOT_SUPPORTED, { status: 400, reason: 'PUSH_NOTIFICATION_NOT_SUPPORTED' }],
  [A2A_UNSUPPORTED_OPERATION, { status: 400, reason: 'UNSUPPORTED_OPERATION' }],
  [A2A_CONTENT_TYPE_NOT_SUPPORTED, { status: 400, reason: 'CONTENT_TYPE_NOT_SUPPORTED' }],
  [-32009, { status: 400, reason: 'VERSION_NOT_SUPPORTED' }],
  [-32601, { status: 404, reason: 'UNSUPPORTED_OPERATION' }],
  [-32700, { status: 400, reason: 'INVALID_PARAMS' }],
  [-32600, { status: 400, reason: 'INVALID_PARAMS' }],
  [-32602, { status: 400, reason: 'INVALID_PARAMS' }],
  [GATEWAY_UNAUTHENTICATED, { status: 401, reason: 'GATEWAY_UNAUTHENTICATED' }],
  [GATEWAY_FORBIDDEN, { status: 403, reason: 'GATEWAY_FORBIDDEN' }],
  [GATEWAY_RATE_LIMITED, { status: 429, reason: 'GATEWAY_RATE_LIMITED' }],
  [GATEWAY_BODY_TOO_LARGE, { status: 413, reason: 'GATEWAY_BODY_TOO_LARGE' }],
]);

/** The google.rpc.Code name of an HTTP status, as the `status` of an error body. */
const STATUS_NAMES: ReadonlyMap<number, string> = new Map([
  [400, 'INVALID_ARGUMENT'],
  [401, 'UNAUTHENTICATED'],
  [403, 'PERMISSION_DENIED'],
  [404, 'NOT_FOUND'],
  [409, 'FAILED_PRECONDITION'],
  [413, 'INVALID_ARGUMENT'],
  [429, 'RESOURCE_EXHAUSTED'],
  [500, 'INTERNAL'],
]);

/** An error of the HTTP+JSON binding: `{error: {code, status, message, details}}`, as google.rpc.Status writes it. */
export function restErrorOf(rpc: { code: number; message: string; data?: unknown }): {
  status: number;
  body: unknown;
} {
  const mapped = REST_ERRORS.get(rpc.code) ?? { status: 500, reason: 'INTERNAL' };
  return {
    status: mapped.status,
    body: {
      error: {
        code: mapped.status,
        status: STATUS_NAMES.get(mapped.status) ?? 'UNKNOWN',
        message: rpc.message,
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
            reason: mapped.reason,
            domain: 'a2a-protocol.org',
            metadata: { jsonRpcCode: String(rpc.code) },
          },
        ],
      },
    },
  };
}
