import { generateText, stepCountIs, streamText } from 'ai';
import { MockLanguageModelV3, convertArrayToReadableStream } from 'ai/test';
import { afterEach, describe, expect, it } from 'vitest';
import { createBroker } from '../../src/actors/broker/broker.js';
import { createA2ATool } from '../../src/transport/a2a-tool.js';
import { toAISDKTool } from '../../src/transport/a2a-tool-ai-sdk.js';
import { connectInProcess } from '../../src/transport/in-process.js';
import { tempDir } from './helpers.js';

// The model interface's types, as the mock declares them.
type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
type LanguageModelV3Content = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>['content'][number];
type LanguageModelV3StreamPart =
  Awaited<ReturnType<MockLanguageModelV3['doStream']>>['stream'] extends ReadableStream<infer P> ? P : never;

let cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
  cleanups = [];
});

/** A tool result as a scripted model reads it (the fields it looks at). */
interface Result {
  ok: boolean;
  action?: string;
  agents?: { name: string }[];
  task?: { taskId: string };
  events?: { taskId: string; final?: boolean; state?: string; message?: { text?: string } }[];
}
/** What a scripted model decides from the tool results it has read so far: a tool call, or its final text. */
type Policy = (results: Result[]) => { call: Record<string, unknown> } | { text: string };

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/** The A2A tool results in the prompt, oldest first (what the model has seen). */
function toolResults(options: LanguageModelV3CallOptions): Result[] {
  const out: Result[] = [];
  for (const message of options.prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type === 'tool-result' && part.toolName === 'A2A' && part.output.type === 'json') {
        out.push(part.output.value as unknown as Result);
      }
    }
  }
  return out;
}

/** A mock language model following a policy: no real LLM, only tool calls decided from the results. */
function scriptedModel(policy: Policy): { model: MockLanguageModelV3; calls: Record<string, unknown>[] } {
  const calls: Record<string, unknown>[] = [];
  const decide = (options: LanguageModelV3CallOptions) => {
    const results = toolResults(options);
    // The tool is offered with the A2A JSON Schema.
    const offered = options.tools?.find((t) => t.name === 'A2A');
    if (offered?.type !== 'function' || offered.inputSchema.type !== 'object') throw new Error('A2A not offered');
    const next = policy(results);
    if ('call' in next) calls.push(next.call);
    return { next, id: `call-${calls.length}` };
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      const { next, id } = decide(options);
      const content: LanguageModelV3Content[] =
        'call' in next
          ? [{ type: 'tool-call', toolCallId: id, toolName: 'A2A', input: JSON.stringify(next.call) }]
          : [{ type: 'text', text: next.text }];
      const unified = 'call' in next ? ('tool-calls' as const) : ('stop' as const);
      return { content, finishReason: { unified, raw: undefined }, usage, warnings: [] };
    },
    doStream: async (options) => {
      const { next, id } = decide(options);
      const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }];
      if ('call' in next) {
        parts.push({ type: 'tool-call', toolCallId: id, toolName: 'A2A', input: JSON.stringify(next.call) });
      } else {
        parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: next.text });
        parts.push({ type: 'text-end', id: 't' });
      }
      const unified = 'call' in next ? ('tool-calls' as const) : ('stop' as const);
      parts.push({ type: 'finish', finishReason: { unified, raw: undefined }, usage });
      return { stream: convertArrayToReadableStream(parts) };
    },
  });
  return { model, calls };
}

const last = (results: Result[]): Result => results.at(-1) ?? { ok: false };

describe('the A2A tool in the Vercel AI SDK', () => {
  it('two agents (generateText and streamText, mock models) delegate through the broker by tool calls only', async () => {
    const tmp = tempDir();
    const broker = createBroker({ path: tmp.db });
    const { client } = await connectInProcess(broker);
    cleanups.push(
      tmp.cleanup,
      () => broker.close(),
      () => client.close(),
    );
    const leadReg = await client.register({ name: 'lead', contextId: 'session' });
    const researcherReg = await client.register({
      name: 'researcher',
      contextId: 'session',
      description: 'finds facts',
    });

    const lead = scriptedModel((results) => {
      if (results.length === 0) return { call: { action: 'discover' } };
      const r = last(results);
      if (r.action === 'discover') {
        return { call: { action: 'send', to: r.agents?.[0]?.name, text: 'What is the capital of France?' } };
      }
      const taskId = results.find((x) => x.action === 'send')?.task?.taskId;
      const ended = results.flatMap((x) => x.events ?? []).find((e) => e.final);
      if (ended) return { text: `The researcher says: ${ended.message?.text ?? ended.state}` };
      return { call: { action: 'wait', taskId, timeoutSeconds: 10 } };
    });
    const researcher = scriptedModel((results) => {
      if (results.length === 0) return { call: { action: 'wait', timeoutSeconds: 10 } };
      const r = last(results);
      if (r.action === 'wait') {
        const taskId = r.events?.[0]?.taskId;
        return taskId ? { call: { action: 'get', taskId } } : { call: { action: 'wait', timeoutSeconds: 10 } };
      }
      if (r.action === 'get') {
        return {
          call: { action: 'stream', taskId: r.task?.taskId, artifact: { name: 'notes', text: 'looked it up' } },
        };
      }
      if (r.action === 'stream') return { call: { action: 'complete', taskId: r.task?.taskId, text: 'Paris.' } };
      return { text: 'Answered the lead.' };
    });

    const leadTools = { A2A: await toAISDKTool(createA2ATool({ client, token: leadReg.token })) };
    const researcherTools = { A2A: await toAISDKTool(createA2ATool({ client, token: researcherReg.token })) };
    const researcherRun = streamText({
      model: researcher.model,
      tools: researcherTools,
      prompt: 'Serve the tasks you receive.',
      stopWhen: stepCountIs(10),
    });
    const leadRun = generateText({
      model: lead.model,
      tools: leadTools,
      prompt: 'Find the capital of France with help.',
      stopWhen: stepCountIs(10),
    });
    const [leadResult, researcherText] = await Promise.all([leadRun, researcherRun.text]);

    expect(leadResult.text).toBe('The researcher says: Paris.');
    expect(researcherText).toBe('Answered the lead.');
    expect(lead.calls.map((c) => c.action).slice(0, 3)).toEqual(['discover', 'send', 'wait']);
    expect(researcher.calls.map((c) => c.action)).toEqual(['wait', 'get', 'stream', 'complete']);
    // Every step's tool result is the tool's own answer, for the model to read.
    const leadOutputs = leadResult.steps.flatMap((s) => s.toolResults.map((t) => t.output as Result));
    expect(leadOutputs.every((o) => o.ok)).toBe(true);
    const { tasks } = await client.listTasks({ token: leadReg.token });
    expect(tasks).toHaveLength(1);
    expect(tasks[0]).toMatchObject({ status: { state: 'completed' }, agentName: 'researcher' });
    expect(tasks[0]?.artifacts).toEqual([expect.objectContaining({ artifactId: 'notes' })]);
    for (const token of [leadReg.token, researcherReg.token]) {
      expect(JSON.stringify(leadResult.steps)).not.toContain(token);
    }
  });
});
