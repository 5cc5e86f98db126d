import type { A2ATool, A2AToolResult } from './a2a-tool.js';

/** A client tool as Anthropic's Messages API takes it in `tools`. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Record<string, unknown>;
}

/** A `tool_use` content block of an assistant message. */
export interface AnthropicToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** The `tool_result` content block (in the next user message) that answers a `tool_use`. */
export interface AnthropicToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  /** Set when the call failed: the content says what to do next. */
  is_error?: true;
}

/** The `A2A` tool for Anthropic tool use. */
export interface AnthropicA2ATool {
  /** For `tools` of `messages.create`. */
  tool: AnthropicTool;
  /** Runs one call from a `tool_use` block's `input`. Never throws. */
  execute(input: unknown): Promise<A2AToolResult>;
  /** Answers a `tool_use` block for `A2A` (`undefined` for a block of another tool). */
  handleToolUse(block: AnthropicToolUseBlock): Promise<AnthropicToolResultBlock | undefined>;
}

/**
 * Adapts the `A2A` tool to Anthropic tool use: `name`, `description` and
 * `input_schema` (the tool's JSON Schema), and a handler that turns a
 * `tool_use` block into its `tool_result` (`is_error` on a failure). Plain
 * objects: no runtime dependency on `@anthropic-ai/sdk`.
 */
export function toAnthropicTool(tool: A2ATool): AnthropicA2ATool {
  const { $schema: _dialect, ...inputSchema } = tool.jsonSchema;
  return {
    tool: { name: tool.name, description: tool.description, input_schema: inputSchema },
    execute: (input) => tool.execute(input),
    async handleToolUse(block) {
      if (block.name !== tool.name) return undefined;
      const result = await tool.execute(block.input);
      const answer: AnthropicToolResultBlock = {
        type: 'tool_result',
        tool_use_id: block.id,
        content: JSON.stringify(result),
      };
      if (!result.ok) answer.is_error = true;
      return answer;
    },
  };
}
