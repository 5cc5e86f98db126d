import type { ToolOutput } from '../conversation.js';

/**
 * What an MCP tool call returned (`CallToolResult`), as the model reads it:
 * pure, plain JSON in and out.
 */

/** One content part of an MCP tool result (text, image, audio, resource, resource link), as JSON. */
export type McpContentPart = { type: string; text?: unknown } & Record<string, unknown>;

/** An MCP tool's result: content parts, structured content, and whether the tool failed. */
export interface McpToolResult {
  content?: McpContentPart[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  /** The result of a server of the 2024-10-07 protocol, which has no content. */
  toolResult?: unknown;
}

function textOf(content: readonly McpContentPart[]): string | undefined {
  if (!content.every((part) => part.type === 'text' && typeof part.text === 'string')) return undefined;
  return content.map((part) => part.text as string).join('\n');
}

/**
 * The tool result the model gets: a failed call (`isError`) as an error with
 * its text; structured content as JSON; content of text only as that text;
 * other content (images, resources) as JSON `{ content }`, as the server gave it.
 */
export function mcpToolOutput(result: McpToolResult, tool: string): ToolOutput {
  const content = Array.isArray(result.content) ? result.content : [];
  if (result.isError === true) {
    const text = textOf(content) ?? JSON.stringify(content);
    return { type: 'error-text', value: text.length > 0 && text !== '[]' ? text : `the tool ${tool} failed` };
  }
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    return { type: 'json', value: result.structuredContent };
  }
  if (result.content === undefined && result.toolResult !== undefined) {
    return { type: 'json', value: result.toolResult ?? null };
  }
  const text = textOf(content);
  if (text !== undefined) return { type: 'text', value: text };
  return { type: 'json', value: { content } };
}
