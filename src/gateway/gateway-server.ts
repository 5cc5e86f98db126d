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
import {
  GATEWAY_BODY_TOO_LARGE,
  GATEWAY_FORBIDDEN,
  GATEWAY_RATE_LIMITED,
  GATEWAY_UNAUTHENTICATED,
  GatewayRefusal,
  rpcErrorOf,
} from './gateway-errors.js';
import { GatewayError, type KeyRing } from './gateway-keys.js';
import { GATEWAY_CONTEXT_ID, GatewayParties } from './gateway-parties.js';
import { RateLimiter } from './rate-limiter.js';
import { type RestRoute, restErrorOf, restRoute } from './gateway-rest.js';
import { callStreaming, callUnary, checkMethod, isStreamingMethod } from './gateway-rpc.js';

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

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://gateway');
    const match = /^\/agents\/([^/]+)(\/.*)?$/.exec(url.pathname);
    const agent = match === null ? undefined : served.get(foldAgentName(decodeURIComponent(match[1] as string)));
    const rest = match?.[2] ?? '';
    if (agent === undefined) {
      sendJson(res, 404, {
        error: `nothing here: the gateway serves ${[...served.values()].map((n) => `${agentBasePath(n)}`).join(', ')}`,
      });
      return;
    }
    if (rest === '/.well-known/agent-card.json' && req.method === 'GET') {
      let card: V1AgentCard | undefined;
      try {
        card = await brokerCard(agent);
      } catch (error) {
        logger.warn({ err: error, agent }, 'gateway: reading the agent card from the broker failed');
      }
      sendJson(res, 200, gatewayCard(agent, `${origin}${agentBasePath(agent)}`, card, VERSION));
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
    sendJson(res, 404, {
      error: `POST JSON-RPC to ${agentBasePath(agent)}, use the HTTP+JSON paths under it (message:send, tasks, ...), or GET ${agentBasePath(agent)}.well-known/agent-card.json`,
    });
  };

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
        const body = await readBody(req, maxBody);
        try {
          params = JSON.parse(body);
        } catch {
          throw new GatewayRefusal(-32602, 400, 'the body is not JSON: send the A2A v1.0 request as JSON');
        }
      } else {
        req.resume();
      }
      checkMethod(route.method);
      const caller = { keyName, agent };
      if (!isStreamingMethod(route.method)) {
        sendJson(res, 200, await callUnary(client, parties, caller, route.method, params));
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
      checkMethod(method);
      const caller = { keyName, agent };
      if (!isStreamingMethod(r.method)) {
        const result = await callUnary(client, parties, caller, r.method, r.params);
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
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error: see the gateway log' });
      else res.end();
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
  origin = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`;
  return {
    url: origin,
    host,
    port,
    async stop() {
      parties.close();
      for (const res of streams) res.end();
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}

/** The key's name, or a refusal: no key (401), an unknown one (401), one not scoped to the agent (403). */
function authenticate(req: IncomingMessage, keys: KeyRing, agent: string): string {
  const header = req.headers.authorization;
  const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (match === null) {
    throw new GatewayRefusal(
      GATEWAY_UNAUTHENTICATED,
      401,
      'send Authorization: Bearer KEY, with a key of switchboard gateway keys add NAME --agents ' + agent,
    );
  }
  const row = keys.find(match[1] as string);
  if (row === undefined) {
    throw new GatewayRefusal(
      GATEWAY_UNAUTHENTICATED,
      401,
      'this key is not one the gateway holds (or it was revoked): ask its operator for a key (switchboard gateway keys add)',
    );
  }
  if (!row.agents.some((name) => foldAgentName(name) === foldAgentName(agent))) {
    throw new GatewayRefusal(
      GATEWAY_FORBIDDEN,
      403,
      `the key "${row.name}" may reach ${row.agents.join(', ')}, not ${agent}: use a key scoped to ${agent}`,
      { agents: row.agents },
    );
  }
  return row.name;
}

function readBody(req: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > max) {
      req.resume();
      reject(tooLarge(max));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.removeAllListeners('data');
        req.resume();
        reject(tooLarge(max));
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function tooLarge(max: number): GatewayRefusal {
  return new GatewayRefusal(
    GATEWAY_BODY_TOO_LARGE,
    413,
    `the request body is larger than ${max} bytes: send large files by url, not inline`,
    { max },
  );
}

function isBrokerRefusal(error: unknown): boolean {
  return error instanceof Error && error.name === 'BrokerError';
}

function writeEvent(res: ServerResponse, value: unknown): void {
  res.write(`data: ${JSON.stringify(value)}\n\n`);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
