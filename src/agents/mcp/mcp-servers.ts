import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { NonRetryableError } from '../../actors/worker/errors.js';
import { type ErrorCodeOf, SwitchboardError, type SwitchboardErrorOptions } from '../../protocol/switchboard-error.js';
import { VERSION } from '../../version.js';
import type { ToolOutput } from '../conversation.js';
import { type McpToolResult, mcpToolOutput } from './tool-result.js';

/**
 * The MCP servers of a model agent, through the official MCP SDK client: each
 * is connected when the first hop needs its tools, its tools are listed once
 * per connection (a server that goes away is connected again by the next
 * hop), and every server is closed by `close()`. The child process of a stdio
 * server is ended when the server is closed, and when the worker process exits.
 */

/** An MCP server run as a child process, spoken to over its stdin and stdout. */
export interface McpStdioServer {
  /** The program to run (`npx`, `node`, a path). */
  command: string;
  args?: string[];
  /** Environment variables of the server, on top of a safe few of the worker's (`PATH`, `HOME`, ...). */
  env?: Record<string, string>;
  /** The server's working directory (default: the worker's). */
  cwd?: string;
}

/** An MCP server over streamable HTTP. */
export interface McpHttpServer {
  url: string | URL;
  /** Headers of every request (an `Authorization` header, say). */
  headers?: Record<string, string>;
}

/** An MCP server a model agent calls the tools of: stdio (`command`) or streamable HTTP (`url`). */
export type McpServerConfig = McpStdioServer | McpHttpServer;

/** Every code an `McpServerError` carries. */
export type McpServerErrorCode = ErrorCodeOf<'McpServerError'>;

/**
 * A model agent's MCP server that cannot be started, reached or listed
 * (`MCP_SERVER_UNREACHABLE`: the hop is retried), or whose tool names clash
 * with the agent's other tools (`MCP_TOOL_NAME_TAKEN`: not retried).
 */
export class McpServerError extends SwitchboardError {
  /** The error's code: a string a caller can branch on (listed in `ERROR_CODES`). */
  declare readonly code: McpServerErrorCode;
  /** Whether the worker retries the hop that met it. */
  readonly retryable: boolean;
  constructor(code: McpServerErrorCode, message: string, options: SwitchboardErrorOptions = {}) {
    super(code, message, options);
    this.retryable = code === 'MCP_SERVER_UNREACHABLE';
  }
}

/** The separator of an MCP tool's name as the model sees it: `server__tool`. */
export const MCP_TOOL_SEPARATOR = '__';

/** One tool of an MCP server, as the model is told of it. */
export interface McpToolListing {
  /** The name the model calls it by: `server__tool`. */
  name: string;
  server: string;
  /** The tool's own name on its server. */
  tool: string;
  description?: string;
  /** Its input's JSON Schema, as the server gave it. */
  inputSchema: Record<string, unknown>;
}

interface Connection {
  client: Client;
  transport: Transport;
  tools: McpToolListing[];
}

/** The child processes of stdio servers still open: ended when the process exits, whatever the way. */
const children = new Set<{ pid: number | null }>();
let exitHooked = false;
function trackChild(transport: { pid: number | null }): void {
  children.add(transport);
  if (exitHooked) return;
  exitHooked = true;
  process.once('exit', () => {
    for (const child of children) {
      if (child.pid === null) continue;
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

function isStdio(config: McpServerConfig): config is McpStdioServer {
  return typeof (config as McpStdioServer).command === 'string';
}

/** Where a server is, for messages: its command, or its URL without query nor credentials. */
export function describeServer(config: McpServerConfig): string {
  if (isStdio(config)) return [config.command, ...(config.args ?? [])].join(' ');
  try {
    const url = new URL(String(config.url));
    return `${url.origin}${url.pathname}`;
  } catch {
    return 'an invalid URL';
  }
}

function unreachable(name: string, config: McpServerConfig, error: unknown): McpServerError {
  const why = error instanceof Error ? error.message : String(error);
  const check = isStdio(config)
    ? 'check its command, args and env, and that it speaks MCP on stdio'
    : 'check the url, that the server is running, and its headers';
  return new McpServerError(
    'MCP_SERVER_UNREACHABLE',
    `cannot use the MCP server ${name} (${describeServer(config)}): ${why}: ${check}`,
    { details: { server: name }, cause: error },
  );
}

/** The MCP servers of one agent, by name. */
export class McpServers {
  private readonly connections = new Map<string, Promise<Connection>>();
  private closed = false;

  constructor(private readonly servers: Readonly<Record<string, McpServerConfig>>) {
    for (const [name, config] of Object.entries(servers)) {
      const bad = checkServer(name, config);
      if (bad !== undefined) {
        throw new NonRetryableError(`the MCP server ${name} of the agent: ${bad}`, { type: 'InvalidAgent' });
      }
    }
  }

  /** Every server's tools, connecting the servers not connected yet; names are checked to be distinct. */
  async tools(): Promise<McpToolListing[]> {
    const listed = await Promise.all(Object.keys(this.servers).map((name) => this.connection(name)));
    const tools = listed.flatMap((c) => c.tools);
    const seen = new Map<string, McpToolListing>();
    for (const tool of tools) {
      const other = seen.get(tool.name);
      if (other !== undefined) {
        throw new McpServerError(
          'MCP_TOOL_NAME_TAKEN',
          `the tool ${tool.tool} of the MCP server ${tool.server} and the tool ${other.tool} of ${other.server} are both named ${tool.name}: rename one of the servers in mcpServers`,
          { details: { server: tool.server, tool: tool.tool } },
        );
      }
      seen.set(tool.name, tool);
    }
    return tools;
  }

  /**
   * Calls a listed tool on its server: its result as the model reads it (a
   * failure as an error result); a call the hop's signal aborts throws.
   */
  async call(tool: McpToolListing, input: unknown, signal: AbortSignal): Promise<ToolOutput> {
    let result: McpToolResult;
    try {
      const { client } = await this.connection(tool.server);
      result = (await client.callTool(
        { name: tool.tool, arguments: (input ?? {}) as Record<string, unknown> },
        undefined,
        { signal },
      )) as McpToolResult;
    } catch (error) {
      // The hop stopped (its lease lost, the worker stopping): not a result to record; the hop runs the call again.
      if (signal.aborted) throw error;
      const why = error instanceof Error ? error.message : String(error);
      return { type: 'error-text', value: `the MCP server ${tool.server} could not run ${tool.tool}: ${why}` };
    }
    return mcpToolOutput(result, tool.name);
  }

  /** Closes every server (a stdio server's child process ends); idempotent. */
  async close(): Promise<void> {
    this.closed = true;
    const open = [...this.connections.values()];
    this.connections.clear();
    await Promise.all(
      open.map(async (pending) => {
        const connection = await pending.catch(() => undefined);
        await connection?.client.close().catch(() => {});
      }),
    );
  }

  private connection(name: string): Promise<Connection> {
    if (this.closed) {
      return Promise.reject(
        new McpServerError('MCP_SERVER_UNREACHABLE', `the MCP server ${name} is closed: the agent was closed`, {
          details: { server: name },
        }),
      );
    }
    let pending = this.connections.get(name);
    if (pending === undefined) {
      pending = this.connect(name);
      this.connections.set(name, pending);
      // A failed connection is tried again by the next hop.
      pending.catch(() => {
        if (this.connections.get(name) === pending) this.connections.delete(name);
      });
    }
    return pending;
  }

  private async connect(name: string): Promise<Connection> {
    const config = this.servers[name] as McpServerConfig;
    let transport: Transport;
    let client: Client;
    try {
      const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
      if (isStdio(config)) {
        const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
        const stdio = new StdioClientTransport({
          command: config.command,
          args: config.args ?? [],
          ...(config.env === undefined ? {} : { env: config.env }),
          ...(config.cwd === undefined ? {} : { cwd: config.cwd }),
          stderr: 'inherit',
        });
        trackChild(stdio);
        transport = stdio;
        // Kept by the client when it connects: the child is no longer tracked once it has ended.
        transport.onclose = () => children.delete(stdio);
      } else {
        const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
        transport = new StreamableHTTPClientTransport(new URL(String(config.url)), {
          ...(config.headers === undefined ? {} : { requestInit: { headers: config.headers } }),
        });
      }
      client = new Client({ name: 'switchboard-model-agent', version: VERSION });
      await client.connect(transport);
    } catch (error) {
      throw unreachable(name, config, error);
    }
    // The client sets the transport's onclose to its own: a server gone is connected again by the next hop.
    const onClose = client.onclose;
    client.onclose = () => {
      onClose?.();
      const current = this.connections.get(name);
      void current?.then((c) => {
        if (c.client === client && this.connections.get(name) === current) this.connections.delete(name);
      });
    };
    try {
      const tools: McpToolListing[] = [];
      let cursor: string | undefined;
      do {
        const page = await client.listTools(cursor === undefined ? {} : { cursor });
        for (const tool of page.tools) {
          tools.push({
            name: `${name}${MCP_TOOL_SEPARATOR}${tool.name}`,
            server: name,
            tool: tool.name,
            ...(tool.description === undefined ? {} : { description: tool.description }),
            inputSchema: tool.inputSchema as Record<string, unknown>,
          });
        }
        cursor = page.nextCursor;
      } while (cursor !== undefined);
      return { client, transport, tools };
    } catch (error) {
      await client.close().catch(() => {});
      throw unreachable(name, config, error);
    }
  }
}

/** What is wrong with a server's configuration, or undefined. */
function checkServer(name: string, config: McpServerConfig): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(name) || name.includes(MCP_TOOL_SEPARATOR)) {
    return `name it with letters, digits, - and single _ only (its tools are named ${name}${MCP_TOOL_SEPARATOR}TOOL)`;
  }
  if (typeof config !== 'object' || config === null) return 'give it { command, args? } or { url }';
  const stdio = typeof (config as McpStdioServer).command === 'string';
  const http = (config as McpHttpServer).url !== undefined;
  if (stdio === http) return 'give it either { command, args?, env? } (stdio) or { url, headers? } (streamable HTTP)';
  if (stdio && (config as McpStdioServer).command.length === 0) return 'its command is empty';
  if (http) {
    try {
      const url = new URL(String((config as McpHttpServer).url));
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'its url must be http: or https:';
    } catch {
      return 'its url is not a URL';
    }
  }
  return undefined;
}
