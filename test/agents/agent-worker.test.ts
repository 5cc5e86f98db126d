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
