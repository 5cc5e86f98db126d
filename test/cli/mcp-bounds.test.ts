import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_LINE_BYTES } from '../../src/protocol/bounds.js';
import { SWITCHBOARD_BIN } from '../../src/transport/serve-process.js';
import { alive, ownerPid } from '../host/runtime.js';

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

function tempDb(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sb-mcp-bounds-'));
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

type Message = { id?: unknown; result?: Record<string, unknown>; error?: { code: number; message: string } };

/** `switchboard mcp` on real pipes, driven line by line as a host that writes whatever it likes. */
class RawMcp {
  readonly child: ChildProcessWithoutNullStreams;
  readonly messages: Message[] = [];
  stderr = '';
  readonly exited: Promise<number | null>;
  private buffered = '';
  private nextId = 1;
  private readonly listeners = new Set<() => void>();

  constructor(db: string, name: string) {
    this.child = spawn(process.execPath, [SWITCHBOARD_BIN, 'mcp', '--db', db, '--name', name, '--log-level', 'warn'], {
      stdio: 'pipe',
      env: runtimeEnv(db),
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve(code)));
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (text: string) => {
      this.buffered += text;
      for (let newline = this.buffered.indexOf('\n'); newline >= 0; newline = this.buffered.indexOf('\n')) {
        this.messages.push(JSON.parse(this.buffered.slice(0, newline)));
        this.buffered = this.buffered.slice(newline + 1);
      }
      for (const listener of [...this.listeners]) listener();
    });
    this.child.stdout.on('error', () => {});
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (text: string) => {
      this.stderr += text;
    });
    this.child.stdin.on('error', () => {});
    cleanups.push(async () => {
      if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
      await this.exited;
    });
  }

  id(): number {
    return this.nextId++;
  }

  write(line: string): void {
    this.child.stdin.write(`${line}\n`);
  }

  /** Resolves with the first message (already read or to come) that matches. */
  waitFor(match: (message: Message) => boolean, timeoutMs = 60_000): Promise<Message> {
    const found = this.messages.find(match);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`no answer within ${timeoutMs} ms; stderr: ${this.stderr.slice(-2000)}`));
      }, timeoutMs);
      const listener = () => {
        const message = this.messages.find(match);
        if (message === undefined) return;
        clearTimeout(timer);
        this.listeners.delete(listener);
        resolve(message);
      };
      this.listeners.add(listener);
    });
  }

  answer(id: unknown): Promise<Message> {
    return this.waitFor((m) => m.id === id && ('result' in m || 'error' in m));
  }

  async request(method: string, params?: unknown): Promise<Message> {
    const id = this.id();
    this.write(JSON.stringify({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }));
    return this.answer(id);
  }

  async initialize(): Promise<void> {
    const answer = await this.request('initialize', {
      protocolVersion: '2025-06-18',
      capabilities: {},
      clientInfo: { name: 'raw-host', version: '1.0.0' },
    });
    expect(answer.result?.serverInfo).toMatchObject({ name: 'switchboard' });
    this.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  }

  /** The A2A tool's JSON answer to a `tools/call`. */
  async call(args: unknown): Promise<ToolAnswer> {
    const answer = await this.request('tools/call', { name: 'A2A', arguments: args });
    const content = (answer.result?.content ?? []) as { text: string }[];
    return JSON.parse(content[0]?.text ?? 'null');
  }
}

/** What the tests read of the A2A tool's answers. */
interface ToolAnswer {
  ok: boolean;
  errorCode?: string;
  agents?: { name: string }[];
  task: { taskId: string; state: string };
}
type Call = (args: Record<string, unknown>) => Promise<ToolAnswer>;

/** An MCP host (the SDK's own client) that stays to look at discovery and tasks. */
async function sdkHost(db: string, name: string): Promise<Call> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [SWITCHBOARD_BIN, 'mcp', '--db', db, '--name', name, '--log-level', 'warn'],
    env: runtimeEnv(db),
    stderr: 'pipe',
  });
  const client = new Client({ name: 'probe-host', version: '1.0.0' });
  await client.connect(transport);
  cleanups.push(() => client.close());
  return async (args) => {
    const answer = await client.callTool({ name: 'A2A', arguments: args });
    return JSON.parse((answer.content as { text: string }[])[0]?.text ?? 'null');
  };
}

/** Discovery, polled for up to 2 s, until `name` is no longer live; the names live at the end. */
async function liveAfterLeaving(call: Call, name: string) {
  let names: string[] = [];
  for (let attempt = 0; attempt < 20; attempt++) {
    const found = await call({ action: 'discover' });
    names = found.ok ? (found.agents ?? []).map((a) => a.name) : [];
    if (!found.ok) expect(found.errorCode).toBe('A2A_NO_PEERS');
    if (!names.includes(name)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return names;
}

describe('switchboard mcp within bounds', () => {
  it('answers an oversized, malformed or non-object call with a JSON-RPC error and keeps serving', async () => {
    const db = tempDb();
    const host = new RawMcp(db, 'bulky');
    await host.initialize();

    // 16 MiB of arguments (over the MCP SDK's own 10 MiB read limit, under the line bound): answered, as an error.
    const big = host.id();
    host.write(
      JSON.stringify({
        jsonrpc: '2.0',
        id: big,
        method: 'tools/call',
        params: { name: 'A2A', arguments: { action: 'send', to: 'bulky', text: 'x'.repeat(16 * 1024 * 1024) } },
      }),
    );
    const bigAnswer = await host.answer(big);
    expect(bigAnswer.error !== undefined || bigAnswer.result?.isError === true).toBe(true);
    // Alone on the broker: discover runs and says there is nobody else.
    const alone = { ok: false, errorCode: 'A2A_NO_PEERS' };
    expect(await host.call({ action: 'discover' })).toMatchObject(alone);

    // Over the line bound, with the id last as the MCP SDK writes it: discarded, answered with that id.
    const huge = host.id();
    const filler = 'y'.repeat(MAX_LINE_BYTES + 1024);
    host.write(
      `{"method":"tools/call","params":{"name":"A2A","arguments":{"action":"send","to":"bulky","text":"${filler}"}},"jsonrpc":"2.0","id":${huge}}`,
    );
    const hugeAnswer = await host.answer(huge);
    expect(hugeAnswer.error).toMatchObject({ code: -32600, message: expect.stringContaining('MAX_LINE_BYTES') });
    expect((await host.request('tools/list')).result?.tools).toEqual([expect.objectContaining({ name: 'A2A' })]);

    // Not JSON, not a message: answered (id null when none can be read), then the next call works.
    const before = host.messages.length;
    host.write('{not json');
    await host.waitFor((m) => host.messages.indexOf(m) >= before && m.error?.code === -32700 && m.id === null);
    host.write('{"jsonrpc":"2.0","id":"odd"}');
    expect((await host.answer('odd')).error?.code).toBe(-32600);

    // Arguments that are not an object: -32602 with one line saying what to send.
    for (const args of [[], 'discover', null, 7]) {
      const answer = await host.request('tools/call', { name: 'A2A', arguments: args });
      expect(answer.error?.code, JSON.stringify(args)).toBe(-32602);
      expect(answer.error?.message).toMatch(/^Invalid params: the tool's arguments must be a JSON object, not .*A2A/);
      expect(answer.error?.message).not.toContain('\n');
    }
    expect(await host.call({ action: 'discover' })).toMatchObject(alone);
    expect(host.child.exitCode).toBeNull();
  }, 120_000);

  it('stdin ended: the agent leaves discovery, its open tasks stay open, one line on stderr', async () => {
    const db = tempDb();
    const worker = new RawMcp(db, 'worker');
    await worker.initialize();
    const lead = await sdkHost(db, 'lead');
    const sent = await lead({ action: 'send', to: 'worker', text: 'Take this.' });
    expect(sent).toMatchObject({ ok: true, task: { state: 'submitted' } });
    // The worker asked something of the lead too: its own task as requester.
    const own = await worker.call({ action: 'send', to: 'lead', text: 'Review mine.' });
    expect(own).toMatchObject({ ok: true, task: { state: 'submitted' } });

    worker.child.stdin.end();
    expect(await worker.exited).toBe(0);
    expect(worker.stderr.trim().split('\n')).toEqual([
      'switchboard mcp: the host closed stdin; "worker" is no longer live (its open tasks are kept)',
    ]);
    expect(await liveAfterLeaving(lead, 'worker')).not.toContain('worker');
    // Neither failed (as the worker's) nor canceled (as the requester's): kept as they were.
    expect((await lead({ action: 'get', taskId: sent.task.taskId })).task.state).toBe('submitted');
    // (The lead reading the task it serves is what moves it to working.)
    expect((await lead({ action: 'get', taskId: own.task.taskId })).task.state).toBe('working');
  }, 60_000);

  it('stdout fails (the host stopped reading): the agent leaves discovery, exit 1 with one line', async () => {
    const db = tempDb();
    const probe = await sdkHost(db, 'probe');
    const host = new RawMcp(db, 'deaf');
    await host.initialize();
    expect(await liveAfterLeaving(probe, 'nobody')).toEqual(['deaf']);
    host.child.stdout.destroy();
    // The answer to this has nowhere to go: the write fails, the transport closes.
    host.write(JSON.stringify({ jsonrpc: '2.0', id: host.id(), method: 'tools/list' }));
    expect(await host.exited).toBe(1);
    const lines = host.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^switchboard mcp: writing to stdout failed, .*"deaf" is no longer live/);
    expect(await liveAfterLeaving(probe, 'deaf')).toEqual([]);
  }, 60_000);
});
