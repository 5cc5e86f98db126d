import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { type Proc, isLog, runCli, startCli, terminate, until } from '../scaleout/processes.js';

// The ask-then-SIGKILL scenario of model agents in real `switchboard worker
// --agent` processes, on whichever bus the caller names (the SQLite bus in
// the Coordinator's file, or Redis Streams): the model a scripted
// MockLanguageModelV3 (test/agents/fixtures) that logs every call to a file,
// so calls are counted across processes. A coding agent asks the architect
// through its `ask` tool; its worker is SIGKILLed between the question and
// the answer; a new worker process resumes the hop from the checkpoint.

const root = new URL('../..', import.meta.url).pathname;
const PROVIDER = join(root, 'test/agents/fixtures/scripted-provider.mjs');

/** A mock step's usage, as the AI SDK's provider reports it. */
export const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: 0 },
});
/** The price the scenario's agents are given. */
export const PRICE = { inputPerMTok: 2, outputPerMTok: 8 };
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

interface ItemRow {
  state: string;
  input_tokens: number;
  output_tokens: number;
  cost_usd: number;
}

/** Reads the Coordinator's SQLite file (undefined while it is not there or busy). */
function read<T>(db: string, sql: string): T | undefined {
  try {
    const handle = new Database(db, { readonly: true, fileMustExist: true });
    try {
      return handle.prepare(sql).get() as T | undefined;
    } finally {
      handle.close();
    }
  } catch {
    return undefined;
  }
}
/** The one work item's row of a Coordinator file. */
export const itemRow = (db: string) => read<ItemRow>(db, 'SELECT * FROM coord_items');
/** The question is out once the Coordinator wrote the suspension's query (the worker wrote its checkpoint before). */
const questionOut = (db: string) =>
  read<{ n: number }>(db, "SELECT count(*) AS n FROM coord_hops WHERE kind = 'query'")?.n === 1;

/** A temp dir for one run of the scenario, removed by the returned cleanup. */
export function scenarioDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'sb-agents-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs the scenario in `dir`: `bus` are the bus arguments every process gets
 * (none for the SQLite bus in `--db`), `workerStore` what a worker opens its
 * Context Engine with (`--db` for the SQLite bus; nothing on Redis, where it
 * is on the bus). Started processes go to `procs`, for the caller to stop.
 */
export async function askThenKill(options: {
  dir: string;
  bus: string[];
  workerStore: (db: string) => string[];
  procs: Proc[];
}): Promise<void> {
  const { dir, bus, procs } = options;
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
  const worker = (name: string, role: string, model: string) => {
    const proc = startCli(
      name,
      ['worker', ...options.workerStore(db), ...bus, '--role', role, '--agent', agent(model)],
      env,
    );
    procs.push(proc);
    return proc;
  };
  const coordinator = startCli('coordinator', ['coordinator', '--db', db, ...bus, '--workflows', workflow]);
  procs.push(coordinator);
  await coordinator.waitForLine(isLog('coordinator ready'), 60_000, { seen: true });
  const coder = worker('coder', 'coding', 'coder-1');
  const sent = await runCli(['submit', '--db', db, ...bus, '--workflow', 'build', '--input', 'Build the store']);
  expect(sent.code, sent.stderr).toBe(0);

  // The question is out (the checkpoint is written): kill the coder before anyone answers.
  await until(
    () => questionOut(db),
    60_000,
    () => coder.lines.slice(-5).join('\n'),
  );
  coder.child.kill('SIGKILL');
  await coder.exited;

  const architect = worker('architect', 'architect', 'architect-1');
  const coder2 = worker('coder2', 'coding', 'coder-1');
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
  // The resumed prompt: the first call's (system prompt, user message), the checkpoint's assistant turn
  // with its `ask` call, and the answer as that call's result.
  expect(second?.prompt).toHaveLength((first?.prompt.length ?? 0) + 2);
  expect(second?.prompt.slice(0, first?.prompt.length)).toEqual(first?.prompt);
  expect(second?.prompt.at(-2)).toMatchObject({
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
}
