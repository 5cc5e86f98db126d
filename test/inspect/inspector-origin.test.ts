/**
 * The inspector's DNS-rebinding guard, over real HTTP and WebSocket
 * requests: a bad Host or a foreign Origin is refused with 403 on the page
 * and on the WebSocket upgrade; the bound address and loopback names pass.
 */
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { type InspectorServer, startInspectorServer } from '../../src/inspect/inspector-server.js';
import { localAuthorities, localRequestProblem } from '../../src/inspect/local-origin.js';

let server: InspectorServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

function get(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Opens a WebSocket with these headers: 'open' with the first replayed frame, or the refusal's status. */
function openSocket(port: number, headers: Record<string, string>): Promise<{ opened: boolean; status?: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://127.0.0.1:${port}`, { headers, handshakeTimeout: 5000 });
    socket.once('open', () => {
      socket.close();
      resolve({ opened: true });
    });
    socket.once('unexpected-response', (_req, res) => {
      resolve({ opened: false, status: res.statusCode ?? 0 });
      socket.terminate();
    });
    socket.once('error', () => resolve({ opened: false }));
  });
}

describe('inspector Host and Origin check', () => {
  it('refuses GET / with a foreign Host or Origin (403), answers the bound address and loopback names', async () => {
    server = await startInspectorServer({ port: 0 });
    const port = server.port;
    for (const headers of <Record<string, string>[]>[
      { host: `evil.example:${port}` },
      { host: 'evil.example' },
      { host: `127.0.0.1:${port + 1}` },
      { host: `127.0.0.1:${port}`, origin: 'http://evil.example' },
      { host: `127.0.0.1:${port}`, origin: `http://evil.example:${port}` },
      { host: `127.0.0.1:${port}`, origin: 'null' },
      { host: `127.0.0.1:${port}`, origin: `file://127.0.0.1:${port}` },
    ]) {
      const answer = await get(port, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(answer.body).toMatch(/^forbidden: /);
      expect(answer.body).not.toContain('<html');
    }
    for (const headers of <Record<string, string>[]>[
      { host: `127.0.0.1:${port}` },
      { host: `localhost:${port}` },
      { host: `LOCALHOST:${port}` },
      { host: `[::1]:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` },
      { host: `localhost:${port}`, origin: `https://localhost:${port}` },
    ]) {
      const answer = await get(port, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(200);
      expect(answer.body).toContain('<html');
    }
  });

  it('refuses a WebSocket upgrade with a foreign Origin or Host (403), accepts a local one and replays to it', async () => {
    server = await startInspectorServer({ port: 0 });
    const port = server.port;
    server.broadcast('{"type":"@xstate.event"}');
    for (const headers of <Record<string, string>[]>[
      { Origin: 'http://evil.example' },
      { Origin: `http://evil.example:${port}` },
      { Host: `evil.example:${port}` },
    ]) {
      expect(await openSocket(port, headers), JSON.stringify(headers)).toEqual({ opened: false, status: 403 });
    }
    expect(await openSocket(port, {})).toEqual({ opened: true });
    expect(await openSocket(port, { Origin: `http://localhost:${port}` })).toEqual({ opened: true });
    expect(await openSocket(port, { Origin: `http://127.0.0.1:${port}`, Host: `localhost:${port}` })).toEqual({
      opened: true,
    });
  });

  it('the check alone: default ports of the Origin scheme, a missing Host, a bound IPv6 address', () => {
    const on80 = localAuthorities('127.0.0.1', 80);
    expect(localRequestProblem({ host: 'localhost:80', origin: 'http://localhost' }, on80)).toBeNull();
    expect(localRequestProblem({ host: 'localhost:80', origin: 'https://localhost' }, on80)).not.toBeNull();
    expect(localRequestProblem({}, on80)).toMatch(/Host/);
    const v6 = localAuthorities('::1', 9000);
    expect(localRequestProblem({ host: '[::1]:9000', origin: 'http://[::1]:9000' }, v6)).toBeNull();
    const lan = localAuthorities('192.168.1.5', 9000);
    expect(localRequestProblem({ host: '192.168.1.5:9000' }, lan)).toBeNull();
    expect(localRequestProblem({ host: 'rebound.example:9000' }, lan)).not.toBeNull();
  });
});
