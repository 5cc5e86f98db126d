import { AgentCard } from '@a2a-js/sdk';
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { type V1AgentCard, V1AgentCardSchema } from '../protocol/a2a-v1/schemas.js';
import { RemoteAgentError } from './remote-errors.js';

/** How long a request to a remote may wait for its answer to start (connect and headers), unless told. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 10_000;

/** Where a remote is and how to reach it: its URL, its bearer key, the bound on a request. */
export interface RemoteEndpoint {
  /** The remote's base URL (its card at `.well-known/agent-card.json` under it), or its card's URL (`....json`). */
  url: string;
  /** Sent as `Authorization: Bearer TOKEN`, to the remote only. */
  token?: string;
  /** How long a request waits for the remote's answer to start (default `DEFAULT_REMOTE_TIMEOUT_MS`). */
  timeoutMs?: number;
  /**
   * How long an open stream may stay silent (not a byte, keep-alive comments
   * included) before it is dropped and picked up again (default
   * `DEFAULT_STREAM_IDLE_MS`): a remote that stopped without closing the
   * connection is not waited for forever.
   */
  streamIdleMs?: number;
}

/** How long an open stream may stay silent before the bridge picks it up again, unless told. */
export const DEFAULT_STREAM_IDLE_MS = 60_000;

/** The code of a request the remote did not start answering within the bound. */
const TIMED_OUT = 'REMOTE_TIMEOUT';
/** The code of a stream that stayed silent longer than its bound. */
const STREAM_IDLE = 'REMOTE_STREAM_IDLE';

/** A body that errors with `STREAM_IDLE` once no chunk has come for `idleMs`. */
function idleBounded(body: ReadableStream<Uint8Array>, idleMs: number): ReadableStream<Uint8Array> {
  const reader = body.getReader();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let timer: NodeJS.Timeout | undefined;
      const idle = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(Object.assign(new Error(`the stream was silent for ${idleMs} ms`), { code: STREAM_IDLE })),
          idleMs,
        );
      });
      try {
        const { done, value } = await Promise.race([reader.read(), idle]);
        if (done) controller.close();
        else controller.enqueue(value);
      } catch (error) {
        void reader.cancel(error).catch(() => {});
        controller.error(error);
      } finally {
        clearTimeout(timer);
      }
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

/**
 * A `fetch` that sends the remote's bearer key (and nothing else of ours)
 * and gives up when the answer has not started within `timeoutMs`; once the
 * headers are in, the body (a stream) may take as long as it takes.
 */
export function remoteFetch(endpoint: RemoteEndpoint): typeof fetch {
  const timeoutMs = endpoint.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
  return async (input, init) => {
    const headers = new Headers(init?.headers);
    if (endpoint.token !== undefined) headers.set('Authorization', `Bearer ${endpoint.token}`);
    const timer = new AbortController();
    const timeout = setTimeout(
      () => timer.abort(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: TIMED_OUT })),
      timeoutMs,
    );
    const signal = init?.signal ? AbortSignal.any([init.signal, timer.signal]) : timer.signal;
    try {
      const response = await fetch(input, { ...init, headers, signal });
      const type = response.headers.get('content-type') ?? '';
      if (response.body === null || !type.startsWith('text/event-stream')) return response;
      return new Response(idleBounded(response.body, endpoint.streamIdleMs ?? DEFAULT_STREAM_IDLE_MS), {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (error) {
      if (timer.signal.aborted) throw timer.signal.reason;
      throw error;
    } finally {
      clearTimeout(timeout);
    }
  };
}

/** The base URL and card path `DefaultAgentCardResolver` takes for a URL given by the user. */
function cardLocation(url: string): { base: string; path: string | undefined } {
  if (new URL(url).pathname.endsWith('.json')) return { base: url, path: '' };
  return { base: url.endsWith('/') ? url : `${url}/`, path: undefined };
}

/** The network codes that say the remote is not there (or not answering), not that it refused. */
const NETWORK_CODES = new Set([
  TIMED_OUT,
  STREAM_IDLE,
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** The network code in an error or its causes (`fetch failed` wraps the socket's error), if any. */
export function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODES.has(code)) return code;
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      for (const inner of errors) {
        const found = networkCode(inner);
        if (found !== undefined) return found;
      }
    }
    current = (current as { cause?: unknown }).cause;
  }
  const message = error instanceof Error ? error.message : '';
  // undici ends a body whose connection dropped with a bare `terminated`.
  if (message === 'terminated' || message === 'fetch failed') return 'ECONNRESET';
  return undefined;
}

/** Words for a network code, for the messages that name it. */
function networkWords(code: string, timeoutMs: number): string {
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === TIMED_OUT) return `no answer within ${timeoutMs} ms (timeout)`;
  if (code === STREAM_IDLE) return 'the stream went silent (no byte, no keep-alive)';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'UND_ERR_CLOSED') {
    return `the connection was closed (${code})`;
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return `the host name does not resolve (${code})`;
  return code;
}

/** The cause of a failed call to a remote, in words. */
export function describeRemoteFailure(error: unknown, timeoutMs = DEFAULT_REMOTE_TIMEOUT_MS): string {
  const code = networkCode(error);
  if (code !== undefined) return networkWords(code, timeoutMs);
  return error instanceof Error ? error.message : String(error);
}

/**
 * Reads a remote's card (A2A v1.0; a v0.3 card is translated by the SDK).
 * A remote that cannot be reached, or answers something that is not a card,
 * is a `RemoteAgentError` naming the URL, the cause and what to do.
 */
export async function fetchRemoteCard(endpoint: RemoteEndpoint): Promise<V1AgentCard> {
  const timeoutMs = endpoint.timeoutMs ?? DEFAULT_REMOTE_TIMEOUT_MS;
  const { base, path } = cardLocation(endpoint.url);
  let card: AgentCard;
  try {
    card = await new DefaultAgentCardResolver({ fetchImpl: remoteFetch(endpoint) }).resolve(base, path);
  } catch (error) {
    const code = networkCode(error);
    if (code !== undefined) {
      throw new RemoteAgentError(
        'REMOTE_UNREACHABLE',
        `the remote agent at ${endpoint.url} is unreachable: ${networkWords(code, timeoutMs)}; check that it runs and that the URL is right, then add it again`,
        { details: { url: endpoint.url, reason: code }, cause: error },
      );
    }
    throw new RemoteAgentError(
      'REMOTE_CARD_INVALID',
      `cannot read the agent card of ${endpoint.url}: ${describeRemoteFailure(error, timeoutMs)}; give the agent's base URL (its card is at .well-known/agent-card.json under it) or its card's URL`,
      { details: { url: endpoint.url }, cause: error },
    );
  }
  // ProtoJSON leaves empty values out (an empty description, no skills): they are put back here.
  const json = AgentCard.toJSON(card) as Record<string, unknown>;
  const parsed = V1AgentCardSchema.safeParse({
    description: '',
    capabilities: {},
    defaultInputModes: [],
    defaultOutputModes: [],
    skills: [],
    ...json,
    version: typeof json.version === 'string' && json.version !== '' ? json.version : 'unspecified',
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new RemoteAgentError(
      'REMOTE_CARD_INVALID',
      `the agent card of ${endpoint.url} is not an A2A v1.0 card (${issue?.path.join('.')}: ${issue?.message})`,
      { details: { url: endpoint.url } },
    );
  }
  if ((parsed.data.supportedInterfaces ?? []).length === 0) {
    throw new RemoteAgentError(
      'REMOTE_CARD_INVALID',
      `the agent card of ${endpoint.url} names no interface (supportedInterfaces) to send to`,
      { details: { url: endpoint.url } },
    );
  }
  return parsed.data;
}

/** An SDK client of a remote, from the card it was added with (JSON-RPC or HTTP+JSON, as the card offers). */
export async function remoteClient(endpoint: RemoteEndpoint, card: V1AgentCard): Promise<Client> {
  const fetchImpl = remoteFetch(endpoint);
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }),
  );
  return factory.createFromAgentCard(AgentCard.fromJSON(card));
}
