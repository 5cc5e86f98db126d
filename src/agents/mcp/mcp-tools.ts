import { jsonSchemaOf } from '../sdk.js';
import type { ToolDeclaration } from '../sdk.js';
import type { AgentTool, ToolRun } from '../tool-runs.js';
import { MCP_TOOL_SEPARATOR, McpServerError, type McpServers } from './mcp-servers.js';

/**
 * The tools of a model agent's MCP servers as a hop offers them to the model:
 * each one's declaration (its description, its JSON Schema through the AI
 * SDK's `jsonSchema()`) and its run (`callTool` on its server). The servers
 * not connected yet are connected; a tool named as one of the agent's own is
 * refused.
 */
export async function mcpToolsOf(
  mcp: McpServers | undefined,
  own: Readonly<Record<string, AgentTool>>,
): Promise<{ declarations: Record<string, ToolDeclaration>; runs: Record<string, ToolRun> }> {
  if (mcp === undefined) return { declarations: {}, runs: {} };
  const listed = await mcp.tools();
  const declarations: Record<string, ToolDeclaration> = {};
  const runs: Record<string, ToolRun> = {};
  for (const tool of listed) {
    if (Object.hasOwn(own, tool.name) || tool.name === 'ask' || tool.name === 'delegate') {
      throw new McpServerError(
        'MCP_TOOL_NAME_TAKEN',
        `the tool ${tool.tool} of the MCP server ${tool.server} is named ${tool.name} (server${MCP_TOOL_SEPARATOR}tool), the name of another tool of the agent: rename the server in mcpServers or your tool`,
        { details: { server: tool.server, tool: tool.tool } },
      );
    }
    declarations[tool.name] = {
      inputSchema: await jsonSchemaOf(tool.inputSchema),
      ...(tool.description === undefined ? {} : { description: tool.description }),
    };
    runs[tool.name] = (input, { abortSignal }) => mcp.call(tool, input, abortSignal);
  }
  return { declarations, runs };
}
