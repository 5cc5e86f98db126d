import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { HopResume, Suspension } from '../../src/actors/worker/handler.js';
import { createModelAgent } from '../../src/agents/model-agent.js';
import { ModelAgentCheckpointSchema } from '../../src/protocol/model-agent-checkpoint.js';
import { hopInput, journal, scripted, text, toolCall, usage } from './scripted-model.js';

// createModelAgent as a worker handler, called as the worker calls it, with
// the AI SDK's MockLanguageModelV3 scripted turn by turn and an in-memory
// effects journal (the worker's is the Context Engine's).

function resumeWith(state: unknown, answer: string): HopResume {
  return {
    state,
    reply: { role: 'agent', parts: [{ kind: 'text', text: answer }] },
    from: { role: 'architect', outcome: 'completed' },
    checkpoint: {} as HopResume['checkpoint'],
  };
}

const PRICE = { inputPerMTok: 1, outputPerMTok: 10, cachedInputPerMTok: 0.5 };

describe('createModelAgent', () => {
  it('answers with the model text and reports its priced usage (cached input at the cached rate)', async () => {
    const model = scripted([text('Done.', usage(1000, 200, 400, 50))]);
    const agent = createModelAgent({ model, system: 'You code.', pricing: PRICE });
    const result = await agent(hopInput('Write it', journal()));
    expect(result).toMatchObject({ kind: 'complete', parts: [{ kind: 'text', text: 'Done.' }] });
    // 600 uncached at 1, 400 cached at 0.5, 200 out at 10 (reasoning is part of output).
    expect((result as { usage: { costUsd: number } }).usage).toEqual({
      inputTokens: 1000,
      outputTokens: 200,
      costUsd: (600 * 1 + 400 * 0.5 + 200 * 10) / 1e6,
      model: 'gpt-4o-mini',
    });
    expect(model.doGenerateCalls[0]?.prompt).toEqual([
      { role: 'system', content: 'You code.' },
      { role: 'user', content: [{ type: 'text', text: 'Write it' }] },
    ]);
  });

  it('runs a tool as a step of its own and a redelivered hop replays every completed step: no model call or tool twice', async () => {
    const model = scripted([toolCall('lookup', { q: 'x' }, 'c1'), text('Found x.')]);
    let runs = 0;
    const lookup = {
      description: 'look something up',
      inputSchema: z.object({ q: z.string() }),
      execute: async ({ q }: { q: string }) => {
        runs++;
        return { found: q };
      },
    };
    const effects = journal();
    const agent = createModelAgent({ model, pricing: PRICE, tools: { lookup } });
    const first = await agent(hopInput('Find x', effects));
    expect(first).toMatchObject({ kind: 'complete', parts: [{ kind: 'text', text: 'Found x.' }] });
    expect([...effects.records.keys()]).toEqual(['model/0', 'tool/0/c1', 'model/1']);
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'c1', toolName: 'lookup', output: { type: 'json', value: { found: 'x' } } },
      ],
    });
    // The same hop again (a worker killed before the completion was recorded): replayed, same result.
    const again = await agent(hopInput('Find x', effects));
    expect(again).toEqual(first);
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(runs).toBe(1);
  });

  it('ask suspends the hop with the conversation as its checkpoint; the answer resumes it as the tool result', async () => {
    const model = scripted([
      toolCall('ask', { role: 'architect', question: 'Which database?' }, 'q1', usage(100, 10)),
      text('Built on SQLite.', usage(200, 30)),
    ]);
    const agent = createModelAgent({ model, pricing: PRICE, ask: { roles: ['architect'] } });
    const suspended = (await agent(hopInput('Build the store', journal()))) as Suspension;
    expect(suspended.kind).toBe('suspend');
    expect(suspended.ask).toEqual({
      role: 'architect',
      message: { role: 'agent', parts: [{ kind: 'text', text: 'Which database?' }] },
    });
    expect(suspended.usage).toEqual({ inputTokens: 100, outputTokens: 10, costUsd: 200 / 1e6, model: 'gpt-4o-mini' });
    const checkpoint = ModelAgentCheckpointSchema.parse(JSON.parse(JSON.stringify(suspended.state)));
    expect(checkpoint.step).toBe(1);
    expect(checkpoint.pending).toEqual({ toolCallId: 'q1', toolName: 'ask' });
    expect(checkpoint.messages.map((m) => m.role)).toEqual(['user', 'assistant']);

    // Resumed with a fresh journal: in another process the first step is not needed again.
    const resumed = await agent(hopInput('Build the store', journal(), resumeWith(checkpoint, 'SQLite.')));
    expect(resumed).toMatchObject({ kind: 'complete', parts: [{ kind: 'text', text: 'Built on SQLite.' }] });
    // Only the resumed segment's usage: the suspension reported the first.
    expect((resumed as { usage: unknown }).usage).toEqual({
      inputTokens: 200,
      outputTokens: 30,
      costUsd: (200 + 300) / 1e6,
      model: 'gpt-4o-mini',
    });
    const [first, second] = model.doGenerateCalls;
    expect(second?.prompt.slice(0, first?.prompt.length)).toEqual(first?.prompt);
    expect(second?.prompt).toHaveLength((first?.prompt.length ?? 0) + 2);
    expect(second?.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [{ type: 'tool-result', toolCallId: 'q1', toolName: 'ask', output: { type: 'text', value: 'SQLite.' } }],
    });
  });

  it('a bad ask gets an error result, not a suspension', async () => {
    const model = scripted([toolCall('ask', { role: 'intern', question: 'Hm?' }, 'q1'), text('Fine, alone.')]);
    const agent = createModelAgent({ model, pricing: PRICE, ask: { roles: ['architect'] } });
    const result = await agent(hopInput('Go', journal()));
    expect(result).toMatchObject({ kind: 'complete' });
    expect(JSON.stringify(model.doGenerateCalls[1]?.prompt.at(-1))).toContain('you may ask architect, not intern');
  });

  it('delegate spawns a child work item and resumes with its outcome as JSON', async () => {
    const model = scripted([
      toolCall('delegate', { workflow: 'review@1', input: 'Review it', budget: { maxTokens: 500 } }, 'd1'),
      text('Reviewed.'),
    ]);
    const agent = createModelAgent({ model, pricing: PRICE, delegate: true });
    const suspended = (await agent(hopInput('Ship', journal()))) as Suspension;
    expect(suspended.spawn).toEqual([{ workflow: 'review@1', input: 'Review it', budget: { maxTokens: 500 } }]);
    const children = { children: [{ workflow: 'review@1', outcome: 'completed', output: [] }] };
    const resume = resumeWith(suspended.state, '');
    resume.reply = { role: 'agent', parts: [{ kind: 'data', data: children }] };
    await agent(hopInput('Ship', journal(), resume));
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toMatchObject({
      content: [{ toolName: 'delegate', output: { type: 'json', value: children } }],
    });
  });

  it('stops before the model call that the budget has no room for: BudgetExceeded, one step past at most', async () => {
    const turns = Array.from({ length: 10 }, (_, i) => toolCall('lookup', { q: `${i}` }, `c${i}`, usage(100, 0)));
    const model = scripted(turns);
    const lookup = { inputSchema: z.object({ q: z.string() }), execute: async () => 'nothing' };
    const agent = createModelAgent({ model, pricing: PRICE, tools: { lookup }, budget: { maxTokens: 250 } });
    await expect(agent(hopInput('Loop', journal()))).rejects.toMatchObject({
      type: 'BudgetExceeded',
      retryable: false,
      message: expect.stringContaining('300 of 250 tokens'),
    });
    expect(model.doGenerateCalls).toHaveLength(3);
  });

  it('a structured answer becomes a data part; a wrong one is sent back to the model to fix', async () => {
    const model = scripted([text('{"files": 3}'), text('```json\n{"files": ["a.ts"]}\n```')]);
    const agent = createModelAgent({
      model,
      pricing: PRICE,
      outputSchema: z.object({ files: z.array(z.string()) }),
    });
    const result = await agent(hopInput('List', journal()));
    expect(result).toMatchObject({ parts: [{ kind: 'text' }, { kind: 'data', data: { files: ['a.ts'] } }] });
    expect(model.doGenerateCalls).toHaveLength(2);
    expect(JSON.stringify(model.doGenerateCalls[1]?.prompt.at(-1))).toContain('does not match the schema');
  });

  it('refuses a model it has no price for, and the agent’s own tool names', () => {
    const model = scripted([]);
    const unknown = new MockLanguageModelV3({ modelId: 'house-model' });
    expect(() => createModelAgent({ model: unknown })).toThrow(/no price for model house-model/);
    expect(() => createModelAgent({ model, tools: { ask: { inputSchema: z.object({}) } } })).toThrow(/rename/);
    expect(() => createModelAgent({ model, maxSteps: 0 })).toThrow(/maxSteps/);
  });
});
