import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import {
  A2A_TOOL_DESCRIPTION,
  type A2AToolResult,
  type AgentView,
  type EventView,
  type TaskView,
} from '../../src/transport/a2a-tool.js';
import { MCP_FLAGS } from '../../src/cli/mcp.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { alive, ownerPid } from '../host/runtime.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'switchboard-mcp-'));
  const db = join(dir, 'agents.db');
  cleanups.push(() => {
    // The background broker the servers started (it would idle out later) goes with its file.
    const pid = ownerPid(db);
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  return db;
}

/** The servers' environment: the background broker's socket and log in the test's directory, not the user's. */
function runtimeEnv(db: string): Record<string, string> {
  return { ...(process.env as Record<string, string>), XDG_RUNTIME_DIR: join(dirname(db), 'run') };
}

/** A token's shape: 256 random bits in base64url. */
const TOKEN_SHAPE = /[A-Za-z0-9_-]{43}/;

interface Host {
  client: Client;
  transport: StdioClientTransport;
  /** Every MCP message, both ways, from the first (initialize) on. */
  frames: JSONRPCMessage[];
  stderr: () => string;
  /** Calls A2A; the result is the tool's JSON, `isError` MCP's flag. */
  call(args: Record<string, unknown>): Promise<{ isError: boolean; result: A2AToolResult }>;
}

/** An MCP host (the SDK's own `Client`) running `switchboard mcp` over stdio, recording every frame. */
async function host(db: string, name: string, extra: string[] = []): Promise<Host> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SWITCHBOARD_BIN, 'mcp', '--db', db, '--name', name, '--log-level', 'warn', ...extra],
    env: runtimeEnv(db),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  const frames: JSONRPCMessage[] = [];
  // The SDK's Protocol keeps a handler set before connect() and calls it first for every message in.
  transport.onmessage = (message) => {
    frames.push(message);
  };
  const send = transport.send.bind(transport);
  transport.send = (message: JSONRPCMessage) => {
    frames.push(message);
    return send(message);
  };
  const client = new Client({ name: 'test-host', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  // The host's stderr names what went wrong when a test fails.
  cleanups.push(() => {
    if (stderr.includes('"level":50')) process.stderr.write(stderr);
  });
  return {
    client,
    transport,
    frames,
    stderr: () => stderr,
    async call(args) {
      const answer = await client.callTool({ name: 'A2A', arguments: args });
      const content = answer.content as { type: string; text: string }[];
      expect(content).toHaveLength(1);
      expect(content[0]?.type).toBe('text');
      return { isError: answer.isError === true, result: JSON.parse(content[0]?.text ?? 'null') };
    },
  };
}

function expectNoToken(frames: JSONRPCMessage[]): void {
  expect(frames.length).toBeGreaterThan(2);
  for (const frame of frames) {
    const text = JSON.stringify(frame);
    expect(text, text.slice(0, 200)).not.toMatch(TOKEN_SHAPE);
    expect(text).not.toMatch(/"token"/);
  }
}

describe('switchboard mcp', () => {
  it('lists one A2A tool with a valid schema; bad arguments are isError results; no frame carries a token', async () => {
    const db = tempDb();
    const lead = await host(db, 'lead', ['--description', 'plans the work', '--skill', 'plan:Planning']);
    expect(lead.client.getServerVersion()?.name).toBe('switchboard');
    expect(lead.client.getInstructions()).toContain('"lead"');

    const { tools } = await lead.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['A2A']);
    const [tool] = tools;
    expect(tool?.description).toBe(A2A_TOOL_DESCRIPTION);
    expect(tool?.inputSchema.type).toBe('object');
    const validate = new AjvJsonSchemaValidator().getValidator(tool?.inputSchema as never);
    expect(validate({ action: 'send', to: 'researcher', text: 'hi' }).valid).toBe(true);
    expect(validate({ action: 'fly' }).valid).toBe(false);
    expect(Object.keys(tool?.inputSchema.properties ?? {})).not.toContain('token');

    for (const [args, code] of [
      [{ action: 'fly' }, 'INVALID_INPUT'],
      [{ action: 'get' }, 'INVALID_INPUT'],
      [{ action: 'ask', taskId: 'nope', text: 'why?' }, 'A2A_UNKNOWN_TASK'],
      [{ action: 'send', to: 'nobody', text: 'hi' }, 'A2A_UNKNOWN_AGENT'],
      [{}, 'INVALID_INPUT'],
    ] as const) {
      const { isError, result } = await lead.call(args);
      expect(isError, JSON.stringify(args)).toBe(true);
      expect(result).toMatchObject({ ok: false, errorCode: code, message: expect.stringMatching(/^[A-Z].*[.]$/) });
    }
    await expect(lead.client.callTool({ name: 'Bash', arguments: {} })).rejects.toThrow(/one tool, A2A/);

    // A wait never outlives the client's request timeout: it is bounded, says so, and reports progress.
    const otherDb = tempDb();
    const bounded = await host(otherDb, 'waiter', ['--max-wait', '1']);
    const { result: waited } = await bounded.call({ action: 'wait', timeoutSeconds: 120 });
    expect(waited).toMatchObject({
      ok: true,
      events: [],
      note: expect.stringContaining('the longest one wait lasts here'),
    });
    let progress = 0;
    const long = await lead.client.callTool(
      { name: 'A2A', arguments: { action: 'wait', timeoutSeconds: 8 } },
      undefined,
      {
        onprogress: () => {
          progress += 1;
        },
      },
    );
    expect(long.isError).toBe(false);
    expect(progress).toBeGreaterThan(0);
    expectNoToken(lead.frames);
    expectNoToken(bounded.frames);

    // Closing the host ends the agent's registration as a closed connection does (its tasks kept).
    await lead.client.close();
    await bounded.client.close();
    const agents = (file: string) => {
      const sqlite = new Database(file, { readonly: true });
      try {
        return sqlite.prepare('SELECT name, description, end_reason FROM a2a_agents').all();
      } finally {
        sqlite.close();
      }
    };
    // The broker ends it once it sees the connection close: polled for up to 2 s.
    const ended = async (file: string) => {
      for (let attempt = 0; attempt < 20; attempt++) {
        const rows = agents(file) as { end_reason: string | null }[];
        if (rows.every((row) => row.end_reason !== null)) break;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      return agents(file);
    };
    expect(await ended(db)).toEqual([{ name: 'lead', description: 'plans the work', end_reason: 'disconnected' }]);
    expect(await ended(otherDb)).toEqual([{ name: 'waiter', description: '', end_reason: 'disconnected' }]);
  });

  it('two MCP servers on one database: the lead delegates, the researcher asks, streams and completes', async () => {
    const db = tempDb();
    const lead = await host(db, 'lead');
    const researcher = await host(db, 'researcher', ['--description', 'finds facts', '--skill', 'search:Search']);
    const ok = async (who: Host, args: Record<string, unknown>) => {
      const { isError, result } = await who.call(args);
      if (!result.ok) throw new Error(`${args.action}: ${result.errorCode}: ${result.message}`);
      expect(isError).toBe(false);
      // One shape for every action: the test knows which it called.
      return result as unknown as { task: TaskView; agents: AgentView[]; events: EventView[] };
    };

    const found = await ok(lead, { action: 'discover' });
    expect(found.agents).toEqual([
      expect.objectContaining({
        name: 'researcher',
        contextId: 'mcp',
        description: 'finds facts',
        skills: [{ id: 'search', name: 'Search' }],
      }),
    ]);
    const sent = await ok(lead, { action: 'send', to: 'researcher', text: 'Summarize the 2024 report.' });
    const taskId = sent.task.taskId;
    expect(sent.task).toMatchObject({ state: 'submitted', worker: 'researcher', requester: 'lead' });

    const incoming = await ok(researcher, { action: 'wait', timeoutSeconds: 20 });
    expect(incoming.events).toEqual([
      expect.objectContaining({ taskId, state: 'submitted', message: expect.objectContaining({ from: 'lead' }) }),
    ]);
    await ok(researcher, { action: 'ask', taskId, text: 'Which section matters most?' });
    const question = await ok(lead, { action: 'wait', taskId, timeoutSeconds: 20 });
    expect(question.events).toEqual([
      expect.objectContaining({
        state: 'input-required',
        message: { from: 'researcher', role: 'agent', text: 'Which section matters most?' },
      }),
    ]);
    const answered = await ok(lead, { action: 'send', taskId, text: 'The budget.' });
    expect(answered.task.state).toBe('working');
    const answer = await ok(researcher, { action: 'wait', taskId, timeoutSeconds: 20 });
    expect(answer.events).toEqual([
      expect.objectContaining({ state: 'working', message: { from: 'lead', role: 'user', text: 'The budget.' } }),
    ]);

    await ok(researcher, { action: 'stream', taskId, artifact: { name: 'summary.md', text: 'Budget: up 4%.' } });
    const partial = await ok(lead, { action: 'wait', taskId, timeoutSeconds: 20 });
    expect(partial.events).toEqual([
      expect.objectContaining({
        type: 'artifact',
        artifact: { artifactId: 'summary.md', name: 'summary.md', text: 'Budget: up 4%.' },
        lastChunk: false,
      }),
    ]);
    await ok(researcher, {
      action: 'complete',
      taskId,
      text: 'Done.',
      artifact: { name: 'summary.md', text: 'Staff: flat.' },
    });
    const end = await ok(lead, { action: 'wait', taskId, timeoutSeconds: 20 });
    expect(end.events.map((e) => e.state ?? e.type)).toEqual(['artifact', 'completed']);
    const read = await ok(lead, { action: 'get', taskId });
    expect(read.task.artifacts).toEqual([
      { artifactId: 'summary.md', name: 'summary.md', text: 'Budget: up 4%.\nStaff: flat.' },
    ]);

    // A wait the host cancels may still take an event: the next wait returns it.
    const controller = new AbortController();
    const dropped = lead.client.callTool(
      { name: 'A2A', arguments: { action: 'wait', timeoutSeconds: 20 } },
      undefined,
      { signal: controller.signal },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    controller.abort(new Error('the host gave up'));
    await expect(dropped).rejects.toThrow();
    const review = await ok(researcher, { action: 'send', to: 'lead', text: 'Your turn: review it.' });
    const kept = await ok(lead, { action: 'wait', timeoutSeconds: 5 });
    expect(kept.events).toEqual([
      expect.objectContaining({
        taskId: review.task.taskId,
        state: 'submitted',
        message: expect.objectContaining({ text: 'Your turn: review it.' }),
      }),
    ]);
    expectNoToken(lead.frames);
    expectNoToken(researcher.frames);
  });

  it('refuses bad flags with its help, and a name that cannot register with why', async () => {
    const db = tempDb();
    const { spawnSync } = await import('node:child_process');
    const run = (args: string[]) =>
      spawnSync(process.execPath, [SWITCHBOARD_BIN, 'mcp', ...args], { encoding: 'utf8', env: runtimeEnv(db) });
    const help = run(['--help']);
    expect(help.status).toBe(0);
    for (const flag of Object.keys(MCP_FLAGS)) expect(help.stdout).toMatch(new RegExp(`^  --${flag}\\b`, 'm'));
    expect(help.stdout).toContain('Exit status:');
    expect(spawnSync(process.execPath, [SWITCHBOARD_BIN, '--help'], { encoding: 'utf8' }).stdout).toMatch(
      /^ {2}mcp +\S/m,
    );
    const missing = run(['--db', db]);
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('--name NAME is required');
    expect(run(['--db', db, '--name', 'x', '--skill', 'nocolon']).stderr).toContain('--skill takes ID:NAME');
    expect(run(['--db', db, '--name', 'x', '--max-wait', '500']).status).toBe(2);
    expect(run(['--db', ':memory:', '--name', 'x']).status).toBe(2);
    const bad = run(['--db', db, '--name', ' spaced ']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('cannot register');
    expect(bad.stdout).toBe('');
  });
});
