import { simulateReadableStream } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import type { Effects, HopInput, HopResume } from '../../src/actors/worker/handler.js';

// A model agent's hop as the worker runs it, for tests: the AI SDK's
// MockLanguageModelV3 scripted turn by turn, and an in-memory effects journal
// (the worker's is the Context Engine's).

type Generate = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;

/** A step's usage as a provider reports it (`cached` of the input read from cache, `reasoning` of the output). */
export function usage(input: number, output: number, cached = 0, reasoning = 0): Generate['usage'] {
  return {
    inputTokens: { total: input, noCache: input - cached, cacheRead: cached, cacheWrite: undefined },
    outputTokens: { total: output, text: output - reasoning, reasoning },
  };
}
export function text(value: string, u = usage(100, 20)): Generate {
  return {
    content: [{ type: 'text', text: value }],
    finishReason: { unified: 'stop', raw: 'stop' },
    usage: u,
    warnings: [],
  };
}
export function toolCall(name: string, input: unknown, id: string, u = usage(100, 20)): Generate {
  return {
    content: [{ type: 'tool-call', toolCallId: id, toolName: name, input: JSON.stringify(input) }],
    finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
    usage: u,
    warnings: [],
  };
}

/** A mock that answers its turns in order. */
export function scripted(turns: Generate[]): MockLanguageModelV3 {
  let n = 0;
  return new MockLanguageModelV3({
    modelId: 'gpt-4o-mini',
    doGenerate: async () => {
      const turn = turns[n++];
      if (turn === undefined) throw new Error(`the script has no turn ${n}`);
      return turn;
    },
  });
}

/** An effects journal in memory: `once` records each step's result as JSON and replays it. */
export function journal(): Effects & { records: Map<string, unknown> } {
  const records = new Map<string, unknown>();
  return {
    records,
    key: (key) => `hop-key/${key}`,
    async once(key, fn) {
      if (records.has(key)) return records.get(key) as never;
      const value = await fn();
      records.set(key, JSON.parse(JSON.stringify(value)));
      return value;
    },
    atomic() {
      throw new Error('not used');
    },
  };
}

export function hopInput(input: string, effects: Effects, resume?: HopResume): HopInput {
  const headers = { taskId: 't1', runId: 'item-1', hop: 0, attempt: 1, idempotencyKey: 'item-1/0/1' };
  const message = { role: 'user' as const, parts: [{ kind: 'text' as const, text: input }] };
  return {
    role: 'coding',
    envelope: { kind: 'work', headers, message },
    headers,
    message,
    context: { runId: 'item-1', outputs: [], memory: {} },
    resume,
    effects,
    delivery: { id: 'd1', deliveries: 1 },
    signal: new AbortController().signal,
  };
}

/** A model that streams its answer in `pieces`, `delayMs` apart (usage: 100 in, 20 out). */
export function streamingModel(pieces: readonly string[], delayMs: number): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    modelId: 'gpt-4o-mini',
    doStream: async () => ({
      stream: simulateReadableStream({
        initialDelayInMs: 0,
        chunkDelayInMs: delayMs,
        chunks: [
          { type: 'stream-start', warnings: [] },
          { type: 'text-start', id: 't1' },
          ...pieces.map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
          { type: 'text-end', id: 't1' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage: usage(100, 20) },
        ],
      }),
    }),
  });
}
