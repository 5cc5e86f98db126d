import type { HopInput } from '../actors/worker/handler.js';
import { type ConversationMessage, type ToolOutput, toolOutput } from './conversation.js';
import type { ModelToolCall } from './sdk.js';
import { toolStepKey } from './steps.js';

/**
 * A tool as the AI SDK's `tool()` makes it: what the model reads
 * (`description`, `inputSchema`: zod, Standard Schema or `jsonSchema()`), and
 * `execute`, run once per call whatever the redeliveries (its value is
 * recorded; give external systems `effects.key` of the call as their
 * idempotency key).
 */
export interface AgentTool {
  description?: string;
  inputSchema: unknown;
  execute?(input: never, options: { toolCallId: string; messages: unknown[]; abortSignal: AbortSignal }): unknown;
}

/** How one tool of a hop runs: its call's input in, the result the model reads out (a failure as an error result). */
export type ToolRun = (
  input: unknown,
  options: { toolCallId: string; messages: ConversationMessage[]; abortSignal: AbortSignal },
) => Promise<ToolOutput>;

/** The runs of the agent's own tools: their value as a tool result, a throw as an error result. */
export function agentToolRuns(tools: Readonly<Record<string, AgentTool>>): Record<string, ToolRun> {
  const runs: Record<string, ToolRun> = {};
  for (const [name, tool] of Object.entries(tools)) {
    if (tool.execute === undefined) continue;
    const execute = tool.execute.bind(tool) as (input: unknown, options: unknown) => unknown;
    runs[name] = async (input, options) => {
      try {
        return toolOutput(await execute(input, options));
      } catch (error) {
        return { type: 'error-text', value: error instanceof Error ? error.message : String(error) };
      }
    };
  }
  return runs;
}

/** Runs one tool call once per hop: its result (or its error) is recorded, and replayed on a redelivery. */
export async function runTool(
  hop: HopInput,
  runs: Readonly<Record<string, ToolRun>>,
  call: ModelToolCall,
  step: number,
  messages: ConversationMessage[],
): Promise<ToolOutput> {
  if (call.invalid !== undefined) return { type: 'error-text', value: call.invalid };
  const run = Object.hasOwn(runs, call.toolName) ? runs[call.toolName] : undefined;
  if (run === undefined) return { type: 'error-text', value: `there is no tool ${call.toolName} to run` };
  return hop.effects.once(toolStepKey(step, call.toolCallId), async (): Promise<ToolOutput> => {
    const output = await run(call.input, { toolCallId: call.toolCallId, messages, abortSignal: hop.signal });
    return JSON.parse(JSON.stringify(output)) as ToolOutput;
  });
}
