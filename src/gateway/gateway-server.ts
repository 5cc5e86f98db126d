import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log/logger.js';
import { agentCardToV1 } from '../protocol/a2a-v1/task-mapping.js';
import type { V1AgentCard } from '../protocol/a2a-v1/schemas.js';
import { foldAgentName } from '../protocol/agent.js';
import { MAX_LINE_BYTES } from '../protocol/bounds.js';
import type { SwitchboardClient } from '../transport/client.js';
import { VERSION } from '../version.js';
import { agentBasePath, gatewayCard } from './gateway-card.js';
import { GATEWAY_RATE_LIMITED, GatewayRefusal, rpcErrorOf } from './gateway-errors.js';
import {
  authenticate,
  checkContentType,
  isBrokerRefusal,
  notFound,
  readBody,
  sendJson,
  writeEvent,
} from './gateway-http.js';
import { GatewayError, type KeyRing } from './gateway-keys.js';
import { GATEWAY_CONTEXT_ID, GatewayParties } from './gateway-parties.js';
import { GatewayPush, isPushMethod } from './gateway-push.js';
import { PushSender } from './gateway-push-sender.js';
import { PushStore } from './gateway-push-store.js';
import { RateLimiter } from './rate-limiter.js';
import { type RestRoute, restErrorOf, restRoute } from './gateway-rest.js';
import { callStreaming, callUnary, checkMethod, isStreamingMethod, isV1Method } from './gateway-rpc.js';
import { checkVersion } from './gateway-v03.js';

/** Where the gateway listens unless told: loopback only. */
export const DEFAULT_GATEWAY_HOST = '127.0.0.1';
export const DEFAULT_GATEWAY_PORT = 8091;
/** Requests per second a key may send, and the burst it may save up (`--rate`). */
export const DEFAULT_GATEWAY_RATE = 20;
/** How often an idle stream is sent an SSE comment, so that proxies keep it open. */
const KEEPALIVE_MS = 15_000;

export interface GatewayServerOptions {
  /** The broker client (protocol version 10: the gateway maps v1.0 requests with version 11's functions). */
  client: SwitchboardClient;
  keys: KeyRing;
  /** The agents served, by name. */
  agents: readonly string[];
  host?: string;
  port?: number;
  /** PEM certificate and key: HTTPS instead of HTTP. */
  tls?: { cert: Buffer; key: Buffer };
  /** Requests per second per key (the burst is twice it). */
  rate?: number;
  /** The push notification configs' file (default: held in memory only; the CLI keeps it beside the keys file). */
  pushFile?: string;
  /** Largest request body, in bytes (default MAX_LINE_BYTES, the wire's line bound). */
  maxBodyBytes?: number;
  logger: Logger;
}

export interface GatewayServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  stop(): Promise<void>;
}

/** Starts the gateway's HTTP(S) server over a connected broker client. */
export async function startGatewayServer(options: GatewayServerOptions): Promise<GatewayServer> {
  const { client, keys, logger } = options;
  const served = new Map(options.agents.map((name) => [foldAgentName(name), name]));
  const parties = new GatewayParties(client, logger);
  const pushSender = new PushSender(logger);
  const push = new GatewayPush(client, parties, new PushStore(options.pushFile), pushSender, logger, (name) =>
    keys.isLive(name),
  );
  const limiter = new RateLimiter(options.rate ?? DEFAULT_GATEWAY_RATE);
  const maxBody = options.maxBodyBytes ?? MAX_LINE_BYTES;
  const host = options.host ?? '127.0.0.1';
  const scheme = options.tls ? 'https' : 'http';
  let origin = '';
  const streams = new Set<ServerResponse>();

  let cardToken: Promise<string> | undefined;
  const brokerCard = async (name: string): Promise<V1AgentCard | undefined> => {
    cardToken ??= client
      .register({ name: 'gateway', contextId: GATEWAY_CONTEXT_ID, description: 'reads the cards the gateway serves' })
      .then((r) => r.token);
    const token = await cardToken;
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const result = await client.listAgents({ token, ...(cursor === undefined ? {} : { cursor }) });
      const found = result.agents.find((card) => foldAgentName(card.name) === foldAgentName(name));
      if (found !== undefined) return agentCardToV1(found, VERSION);
      if (result.nextCursor === undefined || result.nextCursor === null) return undefined;
      cursor = result.nextCursor;
    }
    return undefined;
  };

  /** The card of a served agent (the public one, and the extended one: they are the same). */
  const agentCard = async (agent: string): Promise<V1AgentCard> => {
    let card: V1AgentCard | undefined;
    try {
      card = await brokerCard(agent);
    } catch (error) {
      logger.warn({ err: error, agent }, 'gateway: reading the agent card from the broker failed');
    }
    return gatewayCard(agent, `${origin}${agentBasePath(agent)}`, card, VERSION);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const match = /^\/agents\/([^/]+)(\/.*)?$/.exec(url.pathname);
    const agent = match === null ? undefined : served.get(foldAgentName(decodeURIComponent(match[1] as string)));
    const rest = match?.[2] ?? '';
    if (agent === undefined) {
      req.resume();
      notFound(
        res,
        `nothing here: the gateway serves ${[...served.values()].map((n) => `${agentBasePath(n)}`).join(', ')}`,
      );
      return;
    }
    if (rest === '/.well-known/agent-card.json' && req.method === 'GET') {
      sendJson(res, 200, await agentCard(agent));
      return;
    }
    if ((rest === '' || rest === '/') && req.method === 'POST') {
      await handleRpc(req, res, agent);
      return;
    }
    let route: RestRoute | undefined;
    try {
      route = restRoute(req.method ?? '', rest, url.searchParams);
    } catch (error) {
      const refused = restErrorOf(rpcErrorOf(error, ''));
      sendJson(res, refused.status, refused.body);
      return;
    }
    if (route !== undefined) {
      await handleRest(req, res, agent, route);
      return;
    }
    req.resume();
    notFound(
      res,
      `POST JSON-RPC to ${agentBasePath(agent)}, use the HTTP+JSON paths under it (message:send, tasks, ...), or GET ${agentBasePath(agent)}.well-known/agent-card.json`,
    );
  };

  /** Resolves when the HTTP client goes away before its answer is sent. */
  const closed = (res: ServerResponse): Promise<void> =>
    new Promise((resolve) => res.once('close', () => (res.writableFinished ? undefined : resolve())));

  /** The key's name once it is checked and under its rate (else a refusal). */
  const admit = (req: IncomingMessage, agent: string): string => {
    const keyName = authenticate(req, keys, agent);
    if (!limiter.take(keyName)) {
      throw new GatewayRefusal(
        GATEWAY_RATE_LIMITED,
        429,
        `the key "${keyName}" sent more than ${limiter.rate} requests a second: wait a second and retry`,
      );
    }
    return keyName;
  };

  const handleRest = async (req: IncomingMessage, res: ServerResponse, agent: string, route: RestRoute) => {
    try {
      const keyName = admit(req, agent);
      let params: unknown = route.params;
      if (route.body) {
        checkContentType(req, 400);
        const body = await readBody(req, maxBody);
        try {
          params = JSON.parse(body);
        } catch {
          throw new GatewayRefusal(-32602, 400, 'the body is not JSON: send the A2A v1.0 request as JSON');
        }
        // The path's params (a task id) win over the body's.
        if (params !== null && typeof params === 'object' && !Array.isArray(params)) {
          params = { ...(params as Record<string, unknown>), ...route.params };
        }
      } else {
        req.resume();
      }
      checkMethod(route.method);
      const taken = push.takeFromSend(keyName, route.method, params);
      params = taken.params;
      const caller = { keyName, agent, ...(taken.created === undefined ? {} : { created: taken.created }) };
      if (route.method === 'GetExtendedAgentCard') {
        sendJson(res, 200, await agentCard(agent));
        return;
      }
      if (isPushMethod(route.method)) {
        sendJson(res, 200, await push.handle(keyName, route.method, params));
        return;
      }
      if (!isStreamingMethod(route.method)) {
        sendJson(res, 200, await callUnary(client, parties, caller, route.method, params, closed(res)));
        return;
      }
      await stream(
        res,
        (result) => result,
        (sink) => callStreaming(client, parties, caller, route.method, params, sink, logger),
      );
    } catch (error) {
      const refused = restErrorOf(rpcErrorOf(error, route.method));
      if (res.headersSent) {
        res.write(`event: error\ndata: ${JSON.stringify(refused.body)}\n\n`);
        res.end();
        return;
      }
      if (!(error instanceof GatewayRefusal) && !isBrokerRefusal(error)) {
        logger.error({ err: error }, 'gateway: a request failed');
      }
      const headers: Record<string, string> = {};
      if (refused.status === 401) headers['WWW-Authenticate'] = 'Bearer realm="switchboard gateway"';
      sendJson(res, refused.status, refused.body, headers);
    }
  };

  const handleRpc = async (req: IncomingMessage, res: ServerResponse, agent: string): Promise<void> => {
    let id: string | number | null = null;
    let method = '';
    try {
      const keyName = admit(req, agent);
      checkContentType(req, 200);
      const body = await readBody(req, maxBody);
      let request: unknown;
      try {
        request = JSON.parse(body);
      } catch {
        throw new GatewayRefusal(-32700, 200, 'the body is not JSON: send one JSON-RPC 2.0 request object');
      }
      if (request === null || typeof request !== 'object' || Array.isArray(request)) {
        throw new GatewayRefusal(-32600, 200, 'send one JSON-RPC 2.0 request object (batches are not served)');
      }
      const r = request as { jsonrpc?: unknown; method?: unknown; params?: unknown; id?: unknown };
      if (typeof r.id === 'string' || typeof r.id === 'number') id = r.id;
      if (r.jsonrpc !== '2.0' || typeof r.method !== 'string' || (r.id !== undefined && id === null)) {
        throw new GatewayRefusal(
          -32600,
          200,
          'not a JSON-RPC 2.0 request: it needs jsonrpc "2.0", a method name and a string or number id',
        );
      }
      method = r.method;
      const header = req.headers['a2a-version'];
      checkVersion(Array.isArray(header) ? header[0] : header, method, isV1Method(method));
      checkMethod(method);
      const taken = push.takeFromSend(keyName, method, r.params);
      r.params = taken.params;
      const caller = { keyName, agent, ...(taken.created === undefined ? {} : { created: taken.created }) };
      if (method === 'GetExtendedAgentCard') {
        sendJson(res, 200, { jsonrpc: '2.0', id, result: await agentCard(agent) });
        return;
      }
      if (isPushMethod(method)) {
        sendJson(res, 200, { jsonrpc: '2.0', id, result: await push.handle(keyName, method, r.params) });
        return;
      }
      if (!isStreamingMethod(r.method)) {
        const result = await callUnary(client, parties, caller, r.method, r.params, closed(res));
        sendJson(res, 200, { jsonrpc: '2.0', id, result });
        return;
      }
      await stream(
        res,
        (result) => ({ jsonrpc: '2.0', id, result }),
        (sink) => callStreaming(client, parties, caller, r.method as string, r.params, sink, logger),
      );
    } catch (error) {
      if (res.headersSent) {
        // A stream already open: the error is its last event.
        writeEvent(res, { jsonrpc: '2.0', id, error: rpcErrorOf(error, method) });
        res.end();
        return;
      }
      const status = error instanceof GatewayRefusal ? error.status : 200;
      if (!(error instanceof GatewayRefusal) && !isBrokerRefusal(error)) {
        logger.error({ err: error }, 'gateway: a request failed');
      }
      const headers: Record<string, string> = {};
      if (status === 401) headers['WWW-Authenticate'] = 'Bearer realm="switchboard gateway"';
      sendJson(res, status, { jsonrpc: '2.0', id, error: rpcErrorOf(error, method) }, headers);
    }
  };

  const stream = async (
    res: ServerResponse,
    envelope: (result: unknown) => unknown,
    run: (sink: Parameters<typeof callStreaming>[5]) => Promise<void>,
  ): Promise<void> => {
    let keepalive: NodeJS.Timeout | undefined;
    const opened = () => {
      if (res.headersSent) return;
      res.writeHead(200, {
        'Content-Type': 'text/event-stream',
        'Cache-Control': 'no-cache',
        Connection: 'keep-alive',
      });
      streams.add(res);
      keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
      keepalive.unref();
    };
    const close = () => {
      if (keepalive !== undefined) clearInterval(keepalive);
      streams.delete(res);
    };
    res.on('close', close);
    await run({
      write: (result) => {
        opened();
        writeEvent(res, envelope(result));
      },
      end: () => {
        close();
        res.end();
      },
      onClose: (listener) => res.on('close', listener),
    });
  };

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((error: unknown) => {
      logger.error({ err: error }, 'gateway: a request failed');
      if (!res.headersSent) {
        const refused = restErrorOf({ code: -32603, message: 'internal error: see the gateway log' });
        sendJson(res, refused.status, refused.body);
      } else res.end();
    });
  };
  const http: Server = options.tls
    ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, listener)
    : createServer(listener);
  // Idle keep-alive connections stay open longer than clients' pools keep them, so that
  // no client reuses a connection the gateway is closing at that moment.
  http.keepAliveTimeout = 65_000;
  http.headersTimeout = 66_000;
  const requestedPort = options.port ?? DEFAULT_GATEWAY_PORT;
  await new Promise<void>((resolve, reject) => {
    http.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new GatewayError(
          'GATEWAY_LISTEN_FAILED',
          `the gateway cannot listen on ${host}:${requestedPort}: ${error.code ?? error.message}; pick another --listen HOST:PORT (port 0 picks a free one)`,
          { details: { host, port: requestedPort, reason: error.code ?? error.message } },
        ),
      ),
    );
    http.listen(requestedPort, host, () => resolve());
  });
  const port = (http.address() as AddressInfo).port;
  // The keys with configs are watched from the start: their tasks' updates reach the webhooks again.
  await push.start();
  origin = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: origin,
    host,
    port,
    async stop() {
      parties.close();
      push.close();
      pushSender.close();
      for (const res of streams) res.end();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
