import { join } from 'node:path';
import { fc } from '@fast-check/vitest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SwitchboardClient, connect } from '../../src/transport/client.js';
import { SocketServe, hostDir } from '../host/helpers.js';
import { type GatewayProcess, addKey, startGateway } from './gateway-helpers.js';

const MAX_BODY = 4096;

/** One request the fuzz sends, and the A2A error it must be answered with. */
interface Probe {
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
  /** JSON-RPC: an envelope with this error code, under `status`. REST: the google.rpc.Status shape with `reason`. */
  readonly expect:
    | { binding: 'jsonrpc'; status: number; code: number }
    | { binding: 'rest'; status: number; reason: string };
}

/** Method names the gateway serves (v1.0 and v0.3): the unknown-method probes avoid them. */
const SERVED = new Set([
  'SendMessage',
  'SendStreamingMessage',
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
  'GetExtendedAgentCard',
  'message/send',
  'message/stream',
  'tasks/get',
  'tasks/list',
  'tasks/cancel',
  'tasks/resubscribe',
  'tasks/pushNotificationConfig/set',
  'tasks/pushNotificationConfig/get',
  'tasks/pushNotificationConfig/list',
  'tasks/pushNotificationConfig/delete',
  'agent/getAuthenticatedExtendedCard',
]);

const WRONG_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'application/xml',
  'multipart/form-data; boundary=x',
  'text/html; charset=utf-8',
  'application/octet-stream',
];

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

const sendBody = (id: string | number) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'SendMessage',
    params: { message: { messageId: 'fuzz', role: 'ROLE_USER', parts: [{ text: 'fuzz' }] } },
  });

describe('switchboard gateway under random requests', () => {
  const h = hostDir();
  const keysFile = join(h.dir, 'keys.json');
  let serve: SocketServe;
  let agents: SwitchboardClient;
  let gateway: GatewayProcess;
  const keys: Record<'alice' | 'bob' | 'carol', string> = { alice: '', bob: '', carol: '' };
  const tasks: Record<'alice' | 'bob', string[]> = { alice: [], bob: [] };

  const rpc = async (key: string, method: string, params: unknown) => {
    const response = await fetch(`${gateway.url}/agents/echo/`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${key}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
    const body = (await response.json()) as { result?: unknown; error?: unknown };
    if (body.error !== undefined) throw new Error(JSON.stringify(body.error));
    return body.result as Record<string, unknown>;
  };

  /** What each key sees: its tasks, with their state, history and artifacts. */
  const listing = async () => {
    const out: Record<string, unknown> = {};
    for (const name of ['alice', 'bob'] as const) {
      out[name] = (
        await rpc(keys[name], 'ListTasks', { pageSize: 100, historyLength: 10, includeArtifacts: true })
      ).tasks;
    }
    return out;
  };

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    // Agents that take tasks and never move them: any change would be the fuzz's.
    agents = await connect({ socket: h.socket });
    await agents.register({ name: 'echo', contextId: 'workers' });
    await agents.register({ name: 'other', contextId: 'workers' });
    keys.alice = addKey(keysFile, 'alice', 'echo');
    keys.bob = addKey(keysFile, 'bob', 'echo');
    keys.carol = addKey(keysFile, 'carol', 'other');
    gateway = await startGateway([
      '--agents',
      'echo,other',
      '--socket',
      h.socket,
      '--keys',
      keysFile,
      '--listen',
      '127.0.0.1:0',
      '--rate',
      '100000',
      '--max-body',
      String(MAX_BODY),
    ]);
    for (const name of ['alice', 'alice', 'bob'] as const) {
      const result = await rpc(keys[name], 'SendMessage', {
        message: { messageId: `seed-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'seed' }] },
        configuration: { returnImmediately: true },
      });
      tasks[name].push(String((result.task as { id: string }).id));
    }
  }, 60_000);

  afterAll(async () => {
    gateway?.child.kill('SIGTERM');
    await agents?.close().catch(() => {});
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  const jsonHeaders = (key?: string): Record<string, string> => ({
    'Content-Type': 'application/json',
    'A2A-Version': '1.0',
    ...(key === undefined ? {} : { Authorization: `Bearer ${key}` }),
  });
  const id = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }), fc.string({ maxLength: 20 }));

  const probe = (): fc.Arbitrary<Probe> =>
    fc.oneof(
      // Malformed JSON, over both bindings.
      fc
        .tuple(
          fc.string({ maxLength: 200 }).filter((t) => !isJson(t)),
          fc.boolean(),
        )
        .map(
          ([body, rest]): Probe => ({
            label: 'malformed JSON',
            method: 'POST',
            path: rest ? '/agents/echo/message:send' : '/agents/echo/',
            headers: jsonHeaders(keys.alice),
            body,
            expect: rest
              ? { binding: 'rest', status: 400, reason: 'INVALID_PARAMS' }
              : { binding: 'jsonrpc', status: 200, code: -32700 },
          }),
        ),
      // JSON that is not one request object.
      fc.oneof(fc.array(fc.jsonValue(), { maxLength: 3 }), fc.integer(), fc.string(), fc.constant(null)).map(
        (value): Probe => ({
          label: 'not a request object',
          method: 'POST',
          path: '/agents/echo/',
          headers: jsonHeaders(keys.alice),
          body: JSON.stringify(value),
          expect: { binding: 'jsonrpc', status: 200, code: -32600 },
        }),
      ),
      // A request that would create a task, sent as another media type.
      fc.tuple(fc.constantFrom(...WRONG_TYPES), fc.boolean(), id).map(
        ([type, rest, rid]): Probe => ({
          label: `content type ${type}`,
          method: 'POST',
          path: rest ? '/agents/echo/message:send' : '/agents/echo/',
          headers: { 'Content-Type': type, Authorization: `Bearer ${keys.alice}` },
          body: rest ? JSON.stringify(JSON.parse(sendBody(rid)).params) : sendBody(rid),
          expect: rest
            ? { binding: 'rest', status: 400, reason: 'CONTENT_TYPE_NOT_SUPPORTED' }
            : { binding: 'jsonrpc', status: 200, code: -32005 },
        }),
      ),
      // A body over the bound.
      fc.tuple(fc.integer({ min: MAX_BODY + 1, max: MAX_BODY * 4 }), fc.boolean()).map(
        ([size, rest]): Probe => ({
          label: `body of ${size} bytes`,
          method: 'POST',
          path: rest ? '/agents/echo/message:send' : '/agents/echo/',
          headers: jsonHeaders(keys.alice),
          body: `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":"${'a'.repeat(size)}"}}`,
          expect: rest
            ? { binding: 'rest', status: 413, reason: 'GATEWAY_BODY_TOO_LARGE' }
            : { binding: 'jsonrpc', status: 413, code: -32043 },
        }),
      ),
      // A method nobody serves.
      fc
        .tuple(
          fc.string({ minLength: 1, maxLength: 30 }).filter((m) => !SERVED.has(m)),
          fc.option(fc.jsonValue(), { nil: undefined }),
          id,
        )
        .map(
          ([method, params, rid]): Probe => ({
            label: `method ${JSON.stringify(method)}`,
            method: 'POST',
            path: '/agents/echo/',
            headers: jsonHeaders(keys.alice),
            body: JSON.stringify({ jsonrpc: '2.0', id: rid, method, params }),
            expect: { binding: 'jsonrpc', status: 200, code: -32601 },
          }),
        ),
      // No key, a key the gateway does not hold, or a key scoped to another agent.
      fc
        .tuple(
          fc.oneof(
            fc.constant<string | undefined>(undefined),
            fc.string({ maxLength: 40 }).map((k) => `Bearer sbgw_${k.replace(/\s/g, '')}x`),
            fc.string({ maxLength: 40 }).map((k) => `Basic ${Buffer.from(k).toString('base64')}`),
            fc.constant('carol'),
          ),
          fc.boolean(),
        )
        .map(([auth, rest]): Probe => {
          const forbidden = auth === 'carol';
          const headers: Record<string, string> = { 'Content-Type': 'application/json' };
          if (forbidden) headers.Authorization = `Bearer ${keys.carol}`;
          else if (auth !== undefined) headers.Authorization = auth;
          return {
            label: `authorization ${auth ?? 'none'}`,
            method: 'POST',
            path: rest ? '/agents/echo/message:send' : '/agents/echo/',
            headers,
            body: rest ? JSON.stringify(JSON.parse(sendBody(1)).params) : sendBody(1),
            expect: rest
              ? forbidden
                ? { binding: 'rest', status: 403, reason: 'GATEWAY_FORBIDDEN' }
                : { binding: 'rest', status: 401, reason: 'GATEWAY_UNAUTHENTICATED' }
              : forbidden
                ? { binding: 'jsonrpc', status: 403, code: -32041 }
                : { binding: 'jsonrpc', status: 401, code: -32040 },
          };
        }),
      // Another key's task (bob's, as alice), or a task that does not exist.
      fc
        .tuple(
          fc.oneof(fc.constant('bob'), fc.stringMatching(/^[A-Za-z0-9_-]{1,40}$/)),
          fc.constantFrom('GetTask', 'CancelTask', 'SubscribeToTask'),
          fc.boolean(),
        )
        .map(([which, method, rest]): Probe => {
          const taskId = which === 'bob' ? (tasks.bob[0] as string) : which;
          const path = {
            GetTask: ['GET', `/agents/echo/tasks/${taskId}`],
            CancelTask: ['POST', `/agents/echo/tasks/${taskId}:cancel`],
            SubscribeToTask: ['POST', `/agents/echo/tasks/${taskId}:subscribe`],
          }[method] as [string, string];
          return rest
            ? {
                label: `REST ${method} of ${taskId}`,
                method: path[0],
                path: path[1],
                headers: { Authorization: `Bearer ${keys.alice}` },
                expect: { binding: 'rest', status: 404, reason: 'TASK_NOT_FOUND' },
              }
            : {
                label: `${method} of ${taskId}`,
                method: 'POST',
                path: '/agents/echo/',
                headers: jsonHeaders(keys.alice),
                body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { id: taskId } }),
                expect: { binding: 'jsonrpc', status: 200, code: -32001 },
              };
        }),
      // Paths the gateway does not serve.
      fc
        .tuple(
          fc.constantFrom('/agents/echo/zz', '/agents/nobody/', '/', '/zz', '/agents/echo/tasks/x/y/'),
          fc.webSegment(),
          fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH'),
        )
        .map(
          ([prefix, segment, method]): Probe => ({
            label: `${method} ${prefix}${segment}`,
            method,
            path: `${prefix}${segment}`,
            headers: jsonHeaders(keys.alice),
            ...(method === 'GET' ? {} : { body: sendBody(1) }),
            expect: { binding: 'rest', status: 404, reason: 'UNSUPPORTED_OPERATION' },
          }),
        ),
    );

  it('answers every malformed, unauthorized or misdirected request with a well-formed A2A error, changes nothing and stays up', async () => {
    const before = await listing();
    await fc.assert(
      fc.asyncProperty(fc.array(probe(), { minLength: 1, maxLength: 5 }), async (probes) => {
        for (const p of probes) {
          const response = await fetch(`${gateway.url}${p.path}`, {
            method: p.method,
            headers: p.headers,
            ...(p.body === undefined ? {} : { body: p.body }),
          });
          const text = await response.text();
          const context = `${p.label}: ${response.status} ${text.slice(0, 300)}`;
          expect(response.status, context).toBe(p.expect.status);
          expect(response.headers.get('content-type'), context).toMatch(/^application\/json/);
          const body = JSON.parse(text) as Record<string, unknown>;
          if (p.expect.binding === 'jsonrpc') {
            expect(body, context).toMatchObject({
              jsonrpc: '2.0',
              error: { code: p.expect.code, message: expect.any(String) },
            });
            expect('id' in body && !('result' in body), context).toBe(true);
          } else {
            expect(body, context).toMatchObject({
              error: {
                code: p.expect.status,
                status: expect.any(String),
                message: expect.any(String),
                details: [expect.objectContaining({ reason: p.expect.reason, domain: 'a2a-protocol.org' })],
              },
            });
          }
          if (p.expect.status === 401) expect(response.headers.get('www-authenticate'), context).toMatch(/^Bearer/);
        }
        expect(gateway.child.exitCode).toBe(null);
        expect(await listing()).toEqual(before);
      }),
      { numRuns: 60 },
    );
    expect((await fetch(`${gateway.url}/agents/echo/.well-known/agent-card.json`)).status).toBe(200);
  }, 120_000);
});
