import { readdirSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostDir } from '../host/helpers.js';
import { agentsCli, agentsCliAsync } from './remote-helpers.js';

describe('switchboard agents', () => {
  const h = hostDir();
  let silent: Server;
  let silentUrl: string;
  const sockets: import('node:net').Socket[] = [];

  beforeAll(async () => {
    // Accepts connections and never answers: a remote that hangs.
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const address = silent.address() as { port: number };
    silentUrl = `http://127.0.0.1:${address.port}/`;
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    h.cleanup();
  });

  it('--help documents every verb and flag and the exit status; switchboard --help lists it', () => {
    const help = agentsCli(['--help']);
    expect(help.status).toBe(0);
    for (const verb of ['add-remote URL', 'remotes', 'remove-remote NAME', 'bridge']) {
      expect(help.stdout).toContain(`switchboard agents ${verb}`);
    }
    for (const flag of ['db', 'name', 'token', 'timeout', 'reconnect', 'poll', 'log-level', 'json']) {
      expect(help.stdout, flag).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    }
    expect(help.stdout).toContain('Exit status:');
  });

  it('refuses bad input with exit 2 and writes nothing', () => {
    const cases: [string[], RegExp][] = [
      [[], /agents takes add-remote, remotes, remove-remote, bridge/],
      [['add-remote', '--db', h.db], /needs the remote URL/],
      [['add-remote', 'not a url', '--db', h.db], /is not a URL/],
      [['add-remote', 'ftp://x/', '--db', h.db], /not an http\(s\) URL/],
      [['add-remote', silentUrl], /--db PATH is required/],
      [['add-remote', silentUrl, '--db', h.db, '--json'], /--json does not go with agents add-remote/],
      [['add-remote', silentUrl, '--db', h.db, '--timeout', '0'], /--timeout takes a number of seconds above 0/],
      [['remove-remote', '--db', h.db], /needs a NAME/],
      [['remotes', 'x', '--db', h.db], /takes no argument/],
      [['bridge', '--db', ':memory:'], /database in memory/],
    ];
    for (const [args, message] of cases) {
      const run = agentsCli(args);
      expect(run.status, args.join(' ')).toBe(2);
      expect(run.stderr, args.join(' ')).toMatch(message);
    }
    expect(readdirSync(h.dir)).toEqual([]);
  });

  it('a remote that does not answer: add-remote gives up after --timeout, naming the URL', () => {
    const run = agentsCli(['add-remote', silentUrl, '--db', h.db, '--timeout', '1']);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain(`the remote agent at ${silentUrl} is unreachable: no answer within 1000 ms (timeout)`);
    expect(readdirSync(h.dir)).toEqual([]);
  });

  it('an answer that is not a card is said so', async () => {
    const { createServer: createHttp } = await import('node:http');
    const http = createHttp((_req, res) => res.writeHead(404).end('no'));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(http.address() as { port: number }).port}/agents/x/`;
    try {
      const run = await agentsCliAsync(['add-remote', url, '--db', h.db]);
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(/cannot read the agent card of http:.*: Failed to fetch Agent Card .*404/);
      expect(agentsCli(['remotes', '--db', h.db, '--json']).stdout).toBe('{"remotes":[]}\n');
    } finally {
      http.close();
    }
  });
});
