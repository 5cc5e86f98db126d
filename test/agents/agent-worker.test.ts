import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { type Proc, isLog, runCli, startCli, terminate, until } from '../scaleout/processes.js';
import { PRICE, askThenKill, itemRow, scenarioDir, usage } from './ask-kill-scenario.js';

// Model agents in real `switchboard worker --agent` processes on the SQLite
// bus: the ask-then-SIGKILL scenario (ask-kill-scenario.ts; the same runs on
// Redis in agent-worker-redis.test.ts), MCP servers, and a missing provider package.

const root = new URL('../..', import.meta.url).pathname;
const PROVIDER = join(root, 'test/agents/fixtures/scripted-provider.mjs');
const MCP_SERVER = join(root, 'test/agents/fixtures/mcp-counter-server.mjs');
const { dir, cleanup } = scenarioDir();
const procs: Proc[] = [];
afterAll(async () => {
  for (const proc of procs) await terminate(proc);
  cleanup();
});

/** The text of the model's streamed answer on the item's task (the artifact `answer-…`), or undefined before it. */
function streamedText(db: string): string | undefined {
  try {
    const handle = new Database(db, { readonly: true, fileMustExist: true });
    try {
      const row = handle.prepare("SELECT body FROM a2a_artifacts WHERE artifact_id LIKE 'answer-%'").get() as
        | { body: string }
        | undefined;
      if (row === undefined) return undefined;
      const artifact = JSON.parse(row.body) as { parts: { kind: string; text?: string }[] };
      return artifact.parts.map((p) => p.text ?? '').join('');
    } finally {
      handle.close();
    }
  } catch {
    return undefined;
  }
}

describe('switchboard worker --agent', () => {
  it('resumes an asking agent in a new process after a SIGKILL: checkpoint + answer, no step twice, cost = priced usage', async () => {
    await askThenKill({ dir, bus: [], workerStore: (db) => ['--db', db], procs });
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

  it('streams the answer to the item task; after a SIGKILL mid-stream the new worker’s chunks add no text twice', async () => {
    const db = join(dir, 'stream.db');
    const log = join(dir, 'stream-calls.ndjson');
    const turns = join(dir, 'stream-turns.json');
    const pieces = Array.from({ length: 12 }, (_, i) => `piece ${i}; `);
    const answer = pieces.join('');
    // The same answer twice: the first run is killed mid-stream, the second (the redelivered hop) writes it whole.
    const turn = {
      content: [{ type: 'text', text: answer }],
      pieces,
      delayMs: 250,
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: usage(200, 40),
    };
    // The second run writes the same text in other pieces: its chunks are not the bus messages the first
    // run sent (the bus would drop those as duplicates), the Coordinator drops by offset what it has.
    const again = { ...turn, pieces: pieces.flatMap((p, i) => (i % 2 === 0 ? [p + (pieces[i + 1] ?? '')] : [])) };
    writeFileSync(turns, JSON.stringify({ 'streamer-1': [turn, again] }));
    const file = join(dir, 'streamer-1.json');
    writeFileSync(
      file,
      JSON.stringify({ provider: PROVIDER, export: 'scripted', model: 'streamer-1', pricing: PRICE, ask: false }),
    );
    const workflow = join(dir, 'stream-workflows');
    mkdirSync(workflow);
    writeFileSync(
      join(workflow, 'write.json'),
      JSON.stringify({
        id: 'write',
        version: 1,
        start: 'write',
        stages: { write: { role: 'writer', next: [{ on: 'succeeded', end: 'completed' }] } },
      }),
    );
    const env = { SCRIPTED_LOG: log, SCRIPTED_TURNS: turns };
    const coordinator = startCli('stream-coordinator', ['coordinator', '--db', db, '--workflows', workflow]);
    procs.push(coordinator);
    await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
    const writer = startCli(
      'writer',
      ['worker', '--db', db, '--role', 'writer', '--agent', file, '--lease-ms', '2000'],
      env,
    );
    procs.push(writer);
    const sent = await runCli(['submit', '--db', db, '--workflow', 'write', '--input', 'Write it']);
    expect(sent.code, sent.stderr).toBe(0);

    // Part of the answer is on the item's task: kill the writer before the model has written it all.
    await until(
      () => (streamedText(db)?.length ?? 0) > 0,
      60_000,
      () => writer.lines.slice(-5).join('\n'),
    );
    writer.child.kill('SIGKILL');
    await writer.exited;
    const before = streamedText(db) ?? '';
    expect(before.length).toBeLessThan(answer.length);
    expect(answer.startsWith(before)).toBe(true);

    const writer2 = startCli(
      'writer2',
      ['worker', '--db', db, '--role', 'writer', '--agent', file, '--lease-ms', '2000'],
      env,
    );
    procs.push(writer2);
    await until(
      () => itemRow(db)?.state === 'completed',
      90_000,
      () => `${JSON.stringify(itemRow(db))}\n${writer2.lines.slice(-5).join('\n')}`,
    );
    // The model ran twice (the killed call was never recorded); the streamed artifact is the answer, once.
    expect(readFileSync(log, 'utf8').trim().split('\n')).toHaveLength(2);
    expect(streamedText(db)).toBe(answer);
    for (const p of [writer2, coordinator]) expect((await terminate(p)).code).toBe(0);
  }, 240_000);

  it('names the provider package to install when it is missing, and exits 1', async () => {
    const file = join(dir, 'openai.json');
    writeFileSync(file, JSON.stringify({ provider: '@ai-sdk/not-installed-here', model: 'gpt-4o' }));
    const run = await runCli(['worker', '--db', join(dir, 'x.db'), '--role', 'coding', '--agent', file]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('npm install @ai-sdk/not-installed-here');
  }, 60_000);
});
