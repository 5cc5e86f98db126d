import type { Tool } from 'ai';
import type { A2ATool, A2AToolResult } from './a2a-tool.js';

/** The `A2A` tool as the Vercel AI SDK takes it in `tools` (what its `tool()` returns). */
export type AISDKA2ATool = Tool<unknown, A2AToolResult>;

/**
 * Adapts the `A2A` tool to the Vercel AI SDK: `tool()` with the tool's JSON
 * Schema (`jsonSchema()`, no validation by the SDK: the tool checks the
 * input and answers a bad one with a result saying what to fix) and its
 * `execute`. Use it as `tools: { A2A: await toAISDKTool(tool) }`. `ai` is an
 * optional peer dependency, imported when this is called.
 */
export async function toAISDKTool(tool: A2ATool): Promise<AISDKA2ATool> {
  const ai = await import('ai');
  return ai.tool<unknown, A2AToolResult>({
    description: tool.description,
    inputSchema: ai.jsonSchema<unknown>(tool.jsonSchema),
    execute: (input) => tool.execute(input),
  });
}
