import { type ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SocketServe, hostDir } from '../host/helpers.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'switchboard.js');

function gatewayCli(args: string[]) {
  return spawnSync(process.execPath, [BIN, 'gateway', ...args], { encoding: 'utf8', timeout: 30_000 });
}

function startGateway(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [BIN, 'gateway', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (t: string) => {
    stderr += t;
  });
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`gateway exited ${code}: ${stderr.slice(-2000)}`)));
    child.stdout?.setEncoding('utf8').on('data', (t: string) => {
      stdout += t;
      const match = /switchboard gateway on (https?\S+)/.exec(stdout);
      if (match) resolve({ child, url: match[1] as string });
    });
  });
}

function rpc(url: string, key: string, body: string) {
  return fetch(`${url}/agents/echo/`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'A2A-Version': '1.0', Authorization: `Bearer ${key}` },
    body,
  });
}

describe('switchboard gateway at its edge', () => {
  const h = hostDir();
  const keys = join(h.dir, 'keys.json');
  let serve: SocketServe;
  const children: ChildProcess[] = [];
  let key = '';

  beforeAll(async () => {
    serve = new SocketServe(h.db, ['--listen', `unix:${h.socket}`]);
    await serve.listening(h.socket);
    const added = gatewayCli(['keys', 'add', 'edge', '--agents', 'echo', '--keys', keys]);
    expect(added.status).toBe(0);
    key = added.stdout.split('\n')[0] as string;
  }, 60_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGTERM');
    await serve?.stop();
    h.cleanup();
  }, 30_000);

  it('refuses to serve plain HTTP beyond loopback unless told, before joining any broker', () => {
    const plain = gatewayCli(['--agents', 'echo', '--socket', h.socket, '--keys', keys, '--listen', '0.0.0.0:0']);
    expect(plain.status).toBe(2);
    expect(plain.stderr).toMatch(/--tls-cert FILE --tls-key FILE .* or --insecure/);
    const half = gatewayCli(['--agents', 'echo', '--socket', h.socket, '--keys', keys, '--tls-cert', 'x.pem']);
    expect(half.status).toBe(2);
    expect(gatewayCli(['--agents', 'echo', '--socket', h.socket]).stderr).toMatch(/--socket needs --keys FILE/);
    expect(gatewayCli(['keys', 'add', 'bad name!', '--agents', 'echo', '--keys', keys]).status).toBe(2);
  });

  it('serves HTTPS with --tls-cert and --tls-key, and names https URLs in its cards', async () => {
    const cert = join(h.dir, 'cert.pem');
    const tlsKey = join(h.dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        tlsKey,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const gateway = await startGateway([
      '--agents',
      'echo',
      '--socket',
      h.socket,
      '--keys',
      keys,
      '--listen',
      '127.0.0.1:0',
      '--tls-cert',
      cert,
      '--tls-key',
      tlsKey,
    ]);
    children.push(gateway.child);
    expect(gateway.url).toMatch(/^https:\/\//);
    const body = await new Promise<string>((resolve, reject) => {
      request(`${gateway.url}/agents/echo/.well-known/agent-card.json`, { rejectUnauthorized: false }, (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (t: string) => {
          text += t;
        });
        res.on('end', () => resolve(text));
      })
        .on('error', reject)
        .end();
    });
    const card = JSON.parse(body) as { supportedInterfaces: { url: string }[] };
    expect(card.supportedInterfaces[0]?.url).toBe(`${gateway.url}/agents/echo/`);
  }, 60_000);

  it('limits each key’s rate, and bounds the body', async () => {
    const gateway = await startGateway([
      '--agents',
      'echo',
      '--socket',
      h.socket,
      '--keys',
      keys,
      '--listen',
      '127.0.0.1:0',
      '--rate',
      '0.01',
    ]);
    children.push(gateway.child);
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} });
    // A burst of twice the rate: 0.02 of a request, so the first is over it already.
    const limited = await rpc(gateway.url, key, list);
    expect(limited.status).toBe(429);
    expect(((await limited.json()) as { error: { code: number; message: string } }).error).toMatchObject({
      code: -32042,
      message: expect.stringMatching(/wait a second and retry/),
    });

    const roomy = await startGateway([
      '--agents',
      'echo',
      '--socket',
      h.socket,
      '--keys',
      keys,
      '--listen',
      '127.0.0.1:0',
    ]);
    children.push(roomy.child);
    const big = await rpc(roomy.url, key, ' '.repeat(32 * 1024 * 1024 + 1));
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { code: number } }).error.code).toBe(-32043);
    const fine = await rpc(roomy.url, key, list);
    expect(fine.status).toBe(200);
    expect(((await fine.json()) as { result: { tasks: unknown[] } }).result.tasks).toEqual([]);
  }, 60_000);
});
