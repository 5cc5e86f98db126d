import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocket, WebSocketServer } from 'ws';
import { type ErrorCodeOf, SwitchboardError } from '../protocol/switchboard-error.js';
import { localAuthorities, localRequestProblem } from './local-origin.js';

/** Where the Stately inspector's UI is loaded from (the page embeds it). */
export const STATELY_INSPECTOR_URL = 'https://stately.ai/inspect';
export const DEFAULT_INSPECT_HOST = '127.0.0.1';
export const DEFAULT_INSPECT_PORT = 8080;
/** Frames kept for a client that connects late (the same as `@statelyai/inspect/server`). */
export const DEFAULT_REPLAY_FRAMES = 200;

/** The inspector could not start (`INSPECTOR_LISTEN_FAILED`: `details.host`, `port`, `reason`). */
export class InspectorError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: ErrorCodeOf<'InspectorError'>;
  constructor(host: string, port: number, reason: string) {
    super(
      'INSPECTOR_LISTEN_FAILED',
      `the inspector cannot listen on ${host}:${port}: ${reason}; pick another port (0 picks a free one)`,
      {
        details: { host, port, reason },
      },
    );
  }
}

export interface InspectorServerOptions {
  /** Interface to bind (default 127.0.0.1: never all interfaces unless asked). */
  host?: string;
  /** TCP port (default 8080; 0 picks a free one). */
  port?: number;
  replayFrames?: number;
  /** The inspector UI the page embeds. */
  inspectorUrl?: string;
}

/**
 * The WebSocket end the Stately inspector connects to, and the page that
 * bridges it: the protocol of `@statelyai/inspect/server` (every frame is one
 * JSON-serialized Stately inspection event; a client that connects gets the
 * last frames replayed, then every new one), but bound to one interface and
 * fed in-process. `GET /` serves a page that embeds the inspector UI and
 * relays the frames to it.
 */
export interface InspectorServer {
  readonly host: string;
  readonly port: number;
  /** The page a user opens in a browser. */
  readonly url: string;
  /** The WebSocket address the page (or any client) connects to. */
  readonly wsUrl: string;
  /** Clients connected now. */
  readonly clients: number;
  /** Frames sent (to the replay buffer and every client) since start. */
  readonly frames: number;
  /** Sends one frame (an already-sanitized event, serialized) to every client. */
  broadcast(frame: string): void;
  /** Closes every connection and the listening socket (else Node stays alive). */
  stop(): Promise<void>;
}

export async function startInspectorServer(options: InspectorServerOptions = {}): Promise<InspectorServer> {
  const host = options.host ?? DEFAULT_INSPECT_HOST;
  const requestedPort = options.port ?? DEFAULT_INSPECT_PORT;
  const replayFrames = options.replayFrames ?? DEFAULT_REPLAY_FRAMES;
  const inspectorUrl = options.inspectorUrl ?? STATELY_INSPECTOR_URL;
  const replay: string[] = [];
  let frames = 0;
  let wsUrl = '';
  // Set once the port is known (before the first request can arrive).
  let authorities: ReadonlySet<string> = new Set();
  const problemOf = (request: IncomingMessage) =>
    localRequestProblem({ host: request.headers.host, origin: request.headers.origin }, authorities);

  const http: Server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const problem = problemOf(request);
    if (problem !== null) {
      response.writeHead(403, { 'content-type': 'text/plain' }).end(`${problem}\n`);
      return;
    }
    if (request.method !== 'GET' || (request.url !== '/' && request.url !== '/index.html')) {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(bridgePage(wsUrl, inspectorUrl));
  });
  const wss = new WebSocketServer({
    server: http,
    // The same Host and Origin check as the page: a WebSocket opened by another site's page is refused.
    verifyClient: (info, done) => {
      const problem = problemOf(info.req);
      if (problem === null) done(true);
      else done(false, 403, problem);
    },
  });
  wss.on('connection', (socket) => {
    socket.on('error', () => socket.terminate());
    for (const frame of replay) socket.send(frame);
  });
  wss.on('error', () => undefined);

  await new Promise<void>((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(new InspectorError(host, requestedPort, error.code ?? error.message));
    };
    http.once('error', onError);
    http.listen(requestedPort, host, () => {
      http.off('error', onError);
      resolve();
    });
  });
  http.on('error', () => undefined);
  const port = (http.address() as AddressInfo).port;
  authorities = localAuthorities(host, port);
  const hostInUrl = host.includes(':') ? `[${host}]` : host;
  wsUrl = `ws://${hostInUrl}:${port}`;
  let stopped: Promise<void> | null = null;

  return {
    host,
    port,
    url: `http://${hostInUrl}:${port}/`,
    wsUrl,
    get clients() {
      return wss.clients.size;
    },
    get frames() {
      return frames;
    },
    broadcast(frame: string) {
      if (stopped !== null) return;
      frames++;
      replay.push(frame);
      if (replay.length > replayFrames) replay.shift();
      for (const client of wss.clients) {
        if (client.readyState === WebSocket.OPEN) client.send(frame);
      }
    },
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        wss.close(() => {
          http.close(() => resolve());
          http.closeAllConnections();
        });
      });
      return stopped;
    },
  };
}

/** The page: the inspector UI in a frame, fed the frames of `wsUrl` by postMessage. */
function bridgePage(wsUrl: string, inspectorUrl: string): string {
  return `<!DOCTYPE html>
<html>
<head>
  <meta charset="utf-8">
  <title>switchboard: Stately inspector</title>
  <style>* { margin: 0; padding: 0; } html, body { height: 100%; } iframe { width: 100%; height: 100%; border: none; }</style>
</head>
<body>
  <iframe id="inspector" src="${inspectorUrl}"></iframe>
  <script>
    const iframe = document.getElementById('inspector');
    const buffer = [];
    let connected = false;
    window.addEventListener('message', (e) => {
      if (e.data && e.data.type === '@statelyai.connected') {
        connected = true;
        for (const event of buffer) iframe.contentWindow.postMessage(event, '*');
        buffer.length = 0;
      }
    });
    const ws = new WebSocket(${JSON.stringify(wsUrl)});
    ws.onmessage = (message) => {
      const event = JSON.parse(message.data);
      if (connected) iframe.contentWindow.postMessage(event, '*');
      else buffer.push(event);
    };
  </script>
</body>
</html>
`;
}
