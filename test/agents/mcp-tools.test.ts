import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AgentFileSchema, agentFileMcpServers } from '../../src/agents/agent-file.js';
import { McpServerError } from '../../src/agents/mcp/mcp-servers.js';
import { type ModelAgent, createModelAgent } from '../../src/agents/model-agent.js';
// @ts-expect-error: a JavaScript fixture, without types
import { counterServer } from './fixtures/mcp-counter-server.mjs';
import { hopInput, journal, scripted, text, toolCall } from './scripted-model.js';

// A model agent's MCP tools against real MCP servers: the fixture server
// (built with the MCP SDK's McpServer) as a child process over stdio, and the
// same server over streamable HTTP on 127.0.0.1. Each server counts the calls
// it runs; a redelivered hop replays the recorded result without calling it.

const FIXTURE = new URL('./fixtures/mcp-counter-server.mjs', import.meta.url).pathname;
const PRICE = { inputPerMTok: 1, outputPerMTok: 10 };
const dir = mkdtempSync(join(tmpdir(), 'sb-agent-mcp-'));
const agents: ModelAgent[] = [];
afterAll(async () => {
  for (const agent of agents) await agent.close();
  rmSync(dir, { recursive: true, force: true });
});

function stdioServer(name: string) {
  const countFile = join(dir, `${name}.calls`);
  const pidFile = join(dir, `${name}.pid`);
  return {
    config: {
      command: process.execPath,
      args: [FIXTURE],
      env: { COUNT_FILE: countFile, PID_FILE: pidFile, KEEP_ALIVE: '1' },
    },
    calls: (): { tool: string; input: unknown }[] =>
      existsSync(countFile)
        ? readFileSync(countFile, 'utf8')
            .split('\n')
            .filter((line) => line.length > 0)
            .map((line) => JSON.parse(line))
        : [],
    /** The pids of the server's processes, in the order they started. */
    pids: (): number[] =>
      readFileSync(pidFile, 'utf8')
        .split('\n')
        .filter((line) => line.length > 0)
        .map(Number),
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

function agentOf(options: Parameters<typeof createModelAgent>[0]): ModelAgent {
  const agent = createModelAgent(options);
  agents.push(agent);
  return agent;
}

describe('a model agent with a stdio MCP server', () => {
  it('calls the tool once, the model sees its result, a redelivered hop does not call it again, and close() ends the process', async () => {
    const server = stdioServer('once');
    const model = scripted([toolCall('counter__increment', { by: 2 }, 'c1'), text('The count is 2.')]);
    const agent = agentOf({ model, pricing: PRICE, mcpServers: { counter: server.config } });
    const effects = journal();
    const first = await agent(hopInput('Add 2', effects));
    expect(first).toMatchObject({ kind: 'complete', parts: [{ kind: 'text', text: 'The count is 2.' }] });
    expect(server.calls()).toEqual([{ tool: 'increment', input: { by: 2 } }]);
    expect([...effects.records.keys()]).toEqual(['model/0', 'tool/0/c1', 'model/1']);

    // The model was told of the tool as server__tool, with the server's JSON Schema.
    const declared = model.doGenerateCalls[0]?.tools?.find((t) => t.name === 'counter__increment');
    expect(declared).toMatchObject({
      type: 'function',
      description: 'add to the counter and answer its new value',
      inputSchema: { type: 'object', properties: { by: { type: 'integer' } }, required: ['by'] },
    });
    // Its next call sees the structured result.
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'counter__increment',
          output: { type: 'json', value: { count: 2 } },
        },
      ],
    });

    // Delivered again (its worker killed before the completion was recorded): replayed, not called.
    const again = await agent(hopInput('Add 2', effects));
    expect(again).toEqual(first);
    expect(server.calls()).toHaveLength(1);

    // A new process (a new agent, a new server process) replays the same journal: still not called.
    const other = agentOf({ model: scripted([]), pricing: PRICE, mcpServers: { counter: server.config } });
    expect(await other(hopInput('Add 2', effects))).toEqual(first);
    expect(server.calls()).toHaveLength(1);
    const [pid, otherPid] = server.pids() as [number, number];
    await other.close();
    await until(() => !alive(otherPid), `the server process ${otherPid} to end`);

    expect(alive(pid)).toBe(true);
    await agent.close();
    await until(() => !alive(pid), `the server process ${pid} to end`);
    await agent.close(); // idempotent
  }, 60_000);

  it('gives the model an error result for a failed call (isError), and text content as text', async () => {
    const server = stdioServer('errors');
    const model = scripted([
      toolCall('counter__fail', {}, 'f1'),
      toolCall('counter__shout', { word: 'hi' }, 's1'),
      text('Noted.'),
    ]);
    const agent = agentOf({ model, pricing: PRICE, mcpServers: { counter: server.config } });
    await agent(hopInput('Try', journal()));
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toMatchObject({
      content: [{ toolName: 'counter__fail', output: { type: 'error-text', value: 'the disk is full' } }],
    });
    expect(model.doGenerateCalls[2]?.prompt.at(-1)).toMatchObject({
      content: [{ toolName: 'counter__shout', output: { type: 'text', value: 'HI' } }],
    });
    expect(server.calls().map((c) => c.tool)).toEqual(['fail', 'shout']);
    await agent.close();
  }, 60_000);

  it('a call the hop stops (its lease lost) fails the hop and is not recorded, so a redelivery runs it again', async () => {
    const server = stdioServer('abort');
    const model = scripted([toolCall('counter__sleep', { ms: 60_000 }, 'z1'), text('Slept.')]);
    const agent = agentOf({ model, pricing: PRICE, mcpServers: { counter: server.config } });
    const effects = journal();
    const stop = new AbortController();
    const hop = Promise.resolve(agent({ ...hopInput('Sleep', effects), signal: stop.signal })).catch((e: unknown) => e);
    await until(() => server.calls().length === 1, 'the server to get the call');
    stop.abort(new Error('the lease was lost'));
    expect(await hop).toBeInstanceOf(Error);
    expect([...effects.records.keys()]).toEqual(['model/0']);
    await agent.close();
  }, 60_000);

  it('a server that cannot start fails the hop, retryably, naming the server and what to check', async () => {
    const model = scripted([text('never')]);
    const agent = agentOf({
      model,
      pricing: PRICE,
      mcpServers: { broken: { command: join(dir, 'no-such-program') } },
    });
    const error = await Promise.resolve(agent(hopInput('Go', journal()))).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(McpServerError);
    expect(error).toMatchObject({ code: 'MCP_SERVER_UNREACHABLE', retryable: true, details: { server: 'broken' } });
    expect((error as Error).message).toContain('the MCP server broken');
    expect((error as Error).message).toContain('check its command, args and env');
    await expect(agent.connect()).rejects.toThrow(/MCP server broken/);
    expect(model.doGenerateCalls).toHaveLength(0);
  }, 60_000);

  it('refuses a server tool whose name is another tool of the agent, not retried', async () => {
    const server = stdioServer('clash');
    const agent = agentOf({
      model: scripted([text('never')]),
      pricing: PRICE,
      tools: { counter__shout: { inputSchema: z.object({}), execute: () => 'mine' } },
      mcpServers: { counter: server.config },
    });
    const error = await agent.connect().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MCP_TOOL_NAME_TAKEN', retryable: false, details: { tool: 'shout' } });
    expect((error as Error).message).toContain('rename the server in mcpServers or your tool');
    await agent.close();
  }, 60_000);

  it('refuses a server name that is not letters, digits, - and single _', () => {
    expect(() =>
      createModelAgent({
        model: scripted([]),
        pricing: PRICE,
        mcpServers: { a__b: { command: 'node' } },
      }),
    ).toThrow(/letters, digits, - and single _/);
    expect(() =>
      createModelAgent({ model: scripted([]), pricing: PRICE, mcpServers: { web: { url: 'ftp://x' } } }),
    ).toThrow(/http: or https:/);
  });
});

describe('a model agent with a streamable HTTP MCP server', () => {
  let http: Server;
  let url: string;
  const calls: { tool: string; input: unknown }[] = [];
  const authorizations: (string | undefined)[] = [];
  const state = { count: 0 };

  function body(req: IncomingMessage): Promise<unknown> {
    return new Promise((resolve, reject) => {
      let data = '';
      req.on('data', (chunk) => {
        data += chunk;
      });
      req.on('end', () => resolve(data.length === 0 ? undefined : JSON.parse(data)));
      req.on('error', reject);
    });
  }

  beforeAll(async () => {
    http = createServer(async (req, res) => {
      authorizations.push(req.headers.authorization);
      // Stateless: a server and a transport per request.
      const server = counterServer((tool: string, input: unknown) => calls.push({ tool, input }), state);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, req.method === 'POST' ? await body(req) : undefined);
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  });

  it('calls the tool once with the given headers, the model sees its result, a redelivered hop does not call it again', async () => {
    const model = scripted([toolCall('web__increment', { by: 5 }, 'h1'), text('Five.')]);
    const agent = agentOf({
      model,
      pricing: PRICE,
      mcpServers: { web: { url, headers: { Authorization: 'Bearer test-token' } } },
    });
    const effects = journal();
    const first = await agent(hopInput('Add 5', effects));
    expect(first).toMatchObject({ kind: 'complete', parts: [{ kind: 'text', text: 'Five.' }] });
    expect(calls).toEqual([{ tool: 'increment', input: { by: 5 } }]);
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toMatchObject({
      content: [{ toolCallId: 'h1', toolName: 'web__increment', output: { type: 'json', value: { count: 5 } } }],
    });
    expect(authorizations.length).toBeGreaterThan(0);
    expect(new Set(authorizations)).toEqual(new Set(['Bearer test-token']));

    expect(await agent(hopInput('Add 5', effects))).toEqual(first);
    expect(calls).toHaveLength(1);
    await agent.close();
  }, 60_000);

  it('a server that does not answer fails the hop naming the server, its URL without the query, and what to check', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const agent = agentOf({
      model: scripted([]),
      pricing: PRICE,
      mcpServers: { gone: { url: `http://127.0.0.1:${port}/mcp?key=secret` } },
    });
    const error = await agent.connect().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'MCP_SERVER_UNREACHABLE', details: { server: 'gone' } });
    const message = (error as Error).message;
    expect(message).toContain(`the MCP server gone (http://127.0.0.1:${port}/mcp)`);
    expect(message).toContain('check the url, that the server is running, and its headers');
    expect(message).not.toContain('secret');
  }, 60_000);
});

describe('the mcpServers of an agent file', () => {
  const file = (mcpServers: unknown) =>
    AgentFileSchema.parse({ provider: '@ai-sdk/openai', model: 'gpt-4o', mcpServers });

  it('reads env and header values from environment variables, and cwd from the file folder', () => {
    const parsed = file({
      gh: { command: 'npx', args: ['-y', 'server'], env: { TOKEN: { fromEnv: 'GH_TOKEN' }, MODE: 'ro' }, cwd: 'tools' },
      web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: { fromEnv: 'WEB_AUTH' } } },
    });
    expect(agentFileMcpServers(parsed, '/agents', { GH_TOKEN: 't0k', WEB_AUTH: 'Bearer x' })).toEqual({
      gh: { command: 'npx', args: ['-y', 'server'], env: { TOKEN: 't0k', MODE: 'ro' }, cwd: '/agents/tools' },
      web: { url: 'https://mcp.example.com/mcp', headers: { Authorization: 'Bearer x' } },
    });
  });

  it('refuses a variable that is not set, naming it (not a value)', () => {
    const parsed = file({ gh: { command: 'npx', env: { TOKEN: { fromEnv: 'GH_TOKEN' } } } });
    expect(() => agentFileMcpServers(parsed, '/agents', {})).toThrow(
      'mcpServers.gh.env.TOKEN is read from the environment variable GH_TOKEN, which is not set',
    );
  });

  it('refuses a server with both or neither of command and url, and a bad name', () => {
    expect(() => file({ x: { command: 'a', url: 'http://h/' } })).toThrow();
    expect(() => file({ x: {} })).toThrow();
    expect(() => file({ 'x y': { command: 'a' } })).toThrow();
    expect(() => file({ x: { url: 'file:///etc/passwd' } })).toThrow();
  });
});
