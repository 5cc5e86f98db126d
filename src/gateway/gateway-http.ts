import type { IncomingMessage, ServerResponse } from 'node:http';
import { foldAgentName } from '../protocol/agent.js';
import {
  A2A_CONTENT_TYPE_NOT_SUPPORTED,
  GATEWAY_BODY_TOO_LARGE,
  GATEWAY_FORBIDDEN,
  GATEWAY_UNAUTHENTICATED,
  GatewayRefusal,
} from './gateway-errors.js';
import type { KeyRing } from './gateway-keys.js';
import { restErrorOf } from './gateway-rest.js';

/** The HTTP edge of the gateway: the key check, the body's type and bound, and JSON and SSE writing. */

/** The key's name, or a refusal: no key (401), an unknown one (401), one not scoped to the agent (403). */
export function authenticate(req: IncomingMessage, keys: KeyRing, agent: string): string {
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

/** The media types a request body may be sent as (none named: JSON is assumed, as the SDK's server does). */
const JSON_MEDIA_TYPES = new Set(['application/json', 'application/a2a+json']);

/** Refuses a body sent as anything but JSON, before it is read. */
export function checkContentType(req: IncomingMessage, status: number): void {
  const header = req.headers['content-type'];
  if (header === undefined || header === '') return;
  const media = (header.split(';', 1)[0] as string).trim().toLowerCase();
  if (JSON_MEDIA_TYPES.has(media)) return;
  req.resume();
  throw new GatewayRefusal(
    A2A_CONTENT_TYPE_NOT_SUPPORTED,
    status,
    `the body is sent as '${header.slice(0, 100)}': send it as application/json`,
  );
}

/** A 404 of a path the gateway does not serve, as an HTTP+JSON error. */
export function notFound(res: ServerResponse, message: string): void {
  const refused = restErrorOf({ code: -32601, message });
  sendJson(res, refused.status, refused.body);
}

export function readBody(req: IncomingMessage, max: number): Promise<string> {
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

export function isBrokerRefusal(error: unknown): boolean {
  return error instanceof Error && error.name === 'BrokerError';
}

export function writeEvent(res: ServerResponse, value: unknown): void {
  res.write(`data: ${JSON.stringify(value)}\n\n`);
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
