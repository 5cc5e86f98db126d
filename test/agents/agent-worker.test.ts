import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, isLog, runCli, startCli, terminate, until } from '../scaleout/processes.js';

// Model agents in real `switchboard worker --agent` processes on the SQLite
// bus, the model a scripted MockLanguageModelV3 (test/agents/fixtures) that
// logs every call to a file, so calls are counted across processes. A coding
// agent asks the architect through its `ask` tool; its worker is SIGKILLed
// between the question and the answer; a new worker process resumes the hop
// from the checkpoint.

const root = new URL('../..', import.meta.url).pathname;
const PROVIDER = join(root, 'test/agents/fixtures/scripted-provider.mjs');
const MCP_SERVER = join(root, 'test/agents/fixtures/mcp-counter-server.mjs');
const dir = mkdtempSync(join(tmpdir(), 'sb-agents-'));
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  rmSync(dir, { recursive: true, force: true });
});

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: 0 },
});
const PRICE = { inputPerMTok: 2, outputPerMTok: 8 };
const TURNS = {
  'coder-1': [
    {
      content: [
        {
          type: 'tool-call',
          toolCallId: 'q1',
          toolName: 'ask',
          input: JSON.stringify({ role: 'architect', question: 'Which database?' }),
        },
      ],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: usage(1000, 100),
    },
    {
      content: [{ type: 'text', text: 'Built on SQLite.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(1500, 300),
    },
  ],
  'architect-1': [
    {
      content: [{ type: 'text', text: 'SQLite, one file.' }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(400, 50),
    },
  ],
};
const cost = (i: number, o: number) => (i * PRICE.inputPerMTok + o * PRICE.outputPerMTok) / 1e6;

function itemRow(
  db: string,
): { state: string; input_tokens: number; output_tokens: number; cost_usd: number } | undefined {
  try {
    const handle = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return handle.prepare('SELECT * FROM coord_items').get() as
        | { state: string; input_tokens: number; output_tokens: number; cost_usd: number }
        | undefined;
    } finally {
      handle.close();
    }
  } catch {
    return undefined;
  }
}
function checkpoints(db: string): { state: string }[] {
  try {
    const handle = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return handle.prepare('SELECT state FROM context_checkpoints').all() as { state: string }[];
    } finally {
      handle.close();
    }
  } catch {
    return [];
  }
}

describe('switchboard worker --agent', () => {
  it('resumes an asking agent in a new process after a SIGKILL: checkpoint + answer, no step twice, cost = priced usage', async () => {
    const db = join(dir, 'agents.db');
    const log = join(dir, 'calls.ndjson');
    const turns = join(dir, 'turns.json');
    writeFileSync(turns, JSON.stringify(TURNS));
    const agent = (model: string) => {
      const file = join(dir, `${model}.json`);
      writeFileSync(
        file,
        JSON.stringify({ provider: PROVIDER, export: 'scripted', model, system: `You are ${model}.`, pricing: PRICE }),
      );
      return file;
    };
    const workflow = join(dir, 'workflows');
    mkdirSync(workflow);
    // The architect's own workflow makes its role known (the Coordinator asks only known roles).
    writeFileSync(
      join(workflow, 'design.json'),
      JSON.stringify({
        id: 'design',
        version: 1,
        start: 'design',
        stages: { design: { role: 'architect', next: [{ on: 'succeeded', end: 'completed' }] } },
      }),
    );
    writeFileSync(
      join(workflow, 'build.json'),
      JSON.stringify({
        id: 'build',
        version: 1,
        start: 'code',
        stages: { code: { role: 'coding', next: [{ on: 'succeeded', end: 'completed' }] } },
      }),
    );
    const env = { SCRIPTED_LOG: log, SCRIPTED_TURNS: turns };
    const coordinator = startCli('coordinator', ['coordinator', '--db', db, '--workflows', workflow]);
    procs.push(coordinator);
    await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
    const coder = startCli('coder', ['worker', '--db', db, '--role', 'coding', '--agent', agent('coder-1')], env);
    procs.push(coder);
    const sent = await runCli(['submit', '--db', db, '--workflow', 'build', '--input', 'Build the store']);
    expect(sent.code, sent.stderr).toBe(0);

    // The question is out (the checkpoint is written): kill the coder before anyone answers.
    await until(
      () => checkpoints(db).length === 1,
      60_000,
      () => coder.lines.slice(-5).join('\n'),
    );
    coder.child.kill('SIGKILL');
    await coder.exited;

    const architect = startCli(
      'architect',
      ['worker', '--db', db, '--role', 'architect', '--agent', agent('architect-1')],
      env,
    );
    procs.push(architect);
    const coder2 = startCli('coder2', ['worker', '--db', db, '--role', 'coding', '--agent', agent('coder-1')], env);
    procs.push(coder2);
    await until(
      () => itemRow(db)?.state === 'completed',
      90_000,
      () => `${JSON.stringify(itemRow(db))}\n${coder2.lines.slice(-5).join('\n')}`,
    );

    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { modelId: string; n: number; prompt: unknown[] });
    // No model step ran twice: two coder calls, one architect call, in all the processes.
    expect(calls.map((c) => `${c.modelId}#${c.n}`).sort()).toEqual(['architect-1#0', 'coder-1#0', 'coder-1#1']);
    const [first, second] = calls.filter((c) => c.modelId === 'coder-1');
    const checkpoint = JSON.parse(checkpoints(db)[0]?.state ?? '{}') as { messages: unknown[] };
    // The resumed prompt: the system prompt, the checkpoint's conversation, and the answer.
    expect(second?.prompt).toHaveLength(1 + checkpoint.messages.length + 1);
    expect(second?.prompt.slice(0, first?.prompt.length)).toEqual(first?.prompt);
    expect(second?.prompt[1 + checkpoint.messages.length - 1]).toMatchObject({
      role: 'assistant',
      content: [{ type: 'tool-call', toolCallId: 'q1', toolName: 'ask' }],
    });
    expect(second?.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'q1',
          toolName: 'ask',
          output: { type: 'text', value: 'SQLite, one file.' },
        },
      ],
    });
    // The item's cost: the sum of the priced usage the mock reported.
    const spent = itemRow(db);
    expect(spent?.input_tokens).toBe(1000 + 1500 + 400);
    expect(spent?.output_tokens).toBe(100 + 300 + 50);
    expect(spent?.cost_usd).toBeCloseTo(cost(1000, 100) + cost(1500, 300) + cost(400, 50), 9);
    const by = await runCli(['usage', '--db', db, '--by', 'model', '--json']);
    expect(by.stdout).toContain('coder-1');

    for (const p of [coder2, architect, coordinator]) expect((await terminate(p)).code).toBe(0);
  }, 240_000);

  it("calls an MCP server's tool once through a stdio child process, reads env values from the worker's environment without logging them, and ends the child when it stops", async () => {
    const db = join(dir, 'mcp.db');
    const log = join(dir, 'mcp-calls.ndjson');
    const turns = join(dir, 'mcp-turns.json');
    const countFile = join(dir, 'mcp-server.calls');
    const pidFile = join(dir, 'mcp-server.pid');
    writeFileSync(
      turns,
      JSON.stringify({
        'mcp-coder': [
          {
            content: [
              { type: 'tool-call', toolCallId: 'm1', toolName: 'counter__increment', input: JSON.stringify({ by: 3 }) },
            ],
            finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
            usage: usage(100, 10),
          },
          {
            content: [{ type: 'text', text: 'Counted to 3.' }],
            finishReason: { unified: 'stop', raw: 'stop' },
            usage: usage(200, 20),
          },
        ],
      }),
    );
    const file = join(dir, 'mcp-coder.json');
    writeFileSync(
      file,
      JSON.stringify({
        provider: PROVIDER,
        export: 'scripted',
        model: 'mcp-coder',
        pricing: PRICE,
        mcpServers: {
          counter: {
            command: process.execPath,
            args: [MCP_SERVER],
            env: {
              COUNT_FILE: { fromEnv: 'MCP_COUNT_FILE' },
              PID_FILE: pidFile,
              TOKEN: { fromEnv: 'MCP_TOKEN' },
              KEEP_ALIVE: '1',
            },
          },
        },
      }),
    );
    const workflow = join(dir, 'mcp-workflows');
    mkdirSync(workflow);
    writeFileSync(
      join(workflow, 'count.json'),
      JSON.stringify({
        id: 'count',
        version: 1,
        start: 'code',
        stages: { code: { role: 'coding', next: [{ on: 'succeeded', end: 'completed' }] } },
      }),
    );
    const coordinator = startCli('mcp-coordinator', ['coordinator', '--db', db, '--workflows', workflow]);
    procs.push(coordinator);
    await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
    const secret = 'sk-mcp-never-logged';
    const worker = startCli('mcp-coder', ['worker', '--db', db, '--role', 'coding', '--agent', file], {
      SCRIPTED_LOG: log,
      SCRIPTED_TURNS: turns,
      MCP_COUNT_FILE: countFile,
      MCP_TOKEN: secret,
    });
    procs.push(worker);
    const sent = await runCli(['submit', '--db', db, '--workflow', 'count', '--input', 'Count to 3']);
    expect(sent.code, sent.stderr).toBe(0);
    await until(
      () => itemRow(db)?.state === 'completed',
      90_000,
      () => `${JSON.stringify(itemRow(db))}\n${worker.lines.slice(-5).join('\n')}`,
    );
    // The server ran the tool once; the model's second call saw its structured result.
    expect(readFileSync(countFile, 'utf8').trim().split('\n')).toEqual([
      JSON.stringify({ tool: 'increment', input: { by: 3 } }),
    ]);
    const calls = readFileSync(log, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { prompt: unknown[] });
    expect(calls).toHaveLength(2);
    expect(calls[1]?.prompt.at(-1)).toMatchObject({
      content: [{ toolCallId: 'm1', toolName: 'counter__increment', output: { type: 'json', value: { count: 3 } } }],
    });

    const pid = Number(readFileSync(pidFile, 'utf8').trim());
    expect((await terminate(worker)).code).toBe(0);
    // The server's child process did not outlive the worker.
    await until(
      () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      },
      10_000,
      () => `the MCP server process ${pid} is still running`,
    );
    expect(worker.lines.join('\n')).not.toContain(secret);
    expect((await terminate(coordinator)).code).toBe(0);
  }, 240_000);

  it('exits 1 naming the MCP server that cannot start, before taking work', async () => {
    const file = join(dir, 'broken-mcp.json');
    writeFileSync(
      file,
      JSON.stringify({
        provider: PROVIDER,
        export: 'scripted',
        model: 'broken-mcp',
        pricing: PRICE,
        mcpServers: { tools: { command: join(dir, 'no-such-server') } },
      }),
    );
    const run = await runCli(['worker', '--db', join(dir, 'y.db'), '--role', 'coding', '--agent', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('cannot use the MCP server tools');
    expect(run.stderr).toContain('check its command, args and env');
  }, 60_000);

  it('exits 1 naming the environment variable an MCP server value is read from when it is not set', async () => {
    const file = join(dir, 'unset-mcp.json');
    writeFileSync(
      file,
      JSON.stringify({
        provider: PROVIDER,
        export: 'scripted',
        model: 'unset-mcp',
        pricing: PRICE,
        mcpServers: {
          web: { url: 'http://127.0.0.1:9/mcp', headers: { Authorization: { fromEnv: 'SB_TEST_UNSET_VAR' } } },
        },
      }),
    );
    const run = await runCli(['worker', '--db', join(dir, 'z.db'), '--role', 'coding', '--agent', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      'mcpServers.web.headers.Authorization is read from the environment variable SB_TEST_UNSET_VAR',
    );
  }, 60_000);

  it('names the provider package to install when it is missing, and exits 1', async () => {
    const file = join(dir, 'openai.json');
    writeFileSync(file, JSON.stringify({ provider: '@ai-sdk/not-installed-here', model: 'gpt-4o' }));
    const run = await runCli(['worker', '--db', join(dir, 'x.db'), '--role', 'coding', '--agent', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('npm install @ai-sdk/not-installed-here');
  }, 60_000);
});
