/**
 * The DNS-rebinding guard of a local HTTP or WebSocket end: a request is
 * answered only when its `Host` names the bound address (or a loopback name
 * on the bound port) and its `Origin`, if any, is an http(s) origin with such
 * a host. A page of another site in the developer's browser then cannot read
 * what the end serves, even through a DNS name rebound to 127.0.0.1.
 */

/** The `host:port` authorities (lower case) a local end on `boundHost:port` answers to. */
export function localAuthorities(boundHost: string, port: number): ReadonlySet<string> {
  const bound = boundHost.includes(':') ? `[${boundHost.toLowerCase()}]` : boundHost.toLowerCase();
  return new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${bound}:${port}`]);
}

/** Why a request with these headers is refused (a short message), or null when it may be answered. */
export function localRequestProblem(
  headers: { host?: string | undefined; origin?: string | undefined },
  authorities: ReadonlySet<string>,
): string | null {
  const host = headers.host?.toLowerCase();
  if (host === undefined || !authorities.has(host)) {
    return `forbidden: the Host header must be one of ${[...authorities].join(', ')}`;
  }
  const origin = headers.origin;
  if (origin === undefined) return null;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return 'forbidden: the Origin header is not a URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'forbidden: the Origin must be http or https';
  const port = url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port;
  if (!authorities.has(`${url.hostname}:${port}`)) {
    return 'forbidden: this local end answers only pages it serves itself (cross-origin request refused)';
  }
  return null;
}
