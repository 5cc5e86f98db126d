import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { DEFAULT_REQUEST_TIMEOUT_MSEC } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  type JSONRPCMessage,
  ListToolsRequestSchema,
  McpError,
  type Tool,
  isJSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { VERSION } from '../version.js';
import type { A2ATool, A2AToolResult, EventView } from './a2a-tool.js';

/**
 * The longest one `wait` lasts behind an MCP server, in seconds: 10 s under
 * the request timeout MCP clients use by default (60 s in the official SDK),
 * so that a wait answers before the client gives up on the call.
 */
export const MCP_DEFAULT_MAX_WAIT_SECONDS = DEFAULT_REQUEST_TIMEOUT_MSEC / 1000 - 10;

/** How often a call in progress sends `notifications/progress` when the client asked for them. */
export const MCP_PROGRESS_INTERVAL_MS = 5000;

/** Options of `createA2AMcpServer`: the tool to expose and how the server introduces itself. */
export interface A2AMcpServerOptions {
  /**
   * The `A2A` tool, closed over the agent's token (create it with
   * `maxWaitSeconds` below the client's request timeout, e.g.
   * `MCP_DEFAULT_MAX_WAIT_SECONDS`).
   */
  tool: A2ATool;
  /** The server's name in the MCP handshake (default `switchboard`). */
  name?: string;
  /** Told to the host's model in the handshake (`instructions`). */
  instructions?: string;
  /** Interval of progress notifications during a call (default `MCP_PROGRESS_INTERVAL_MS`). */
  progressIntervalMs?: number;
}

/**
 * A Model Context Protocol server (the official SDK's `Server`) exposing
 * one tool, `A2A`: `tools/list` lists it with its JSON Schema, `tools/call`
 * runs it and answers its result as JSON text, `isError` when the call
 * failed (the text says what to do next). While a call runs, a client that
 * sent a `progressToken` gets `notifications/progress` every few seconds.
 * The token stays in the tool: no MCP message carries it. A `wait` whose
 * request the client cancelled (or gave up on at its timeout) may still have
 * taken events: they are kept and the next `wait` returns them first, so no
 * event is lost with a dropped answer. A `tools/call` whose `arguments`
 * are not a JSON object (an array, a string, null) is answered with -32602
 * saying what to send. Connect it to a transport to serve:
 * `McpStdioTransport` (from `a2a-switchboard/transport`, what `switchboard
 * mcp` uses) reads stdio within the broker's line bound; the SDK's
 * `StdioServerTransport` stops reading after one message over 10 MiB.
 */
export function createA2AMcpServer(options: A2AMcpServerOptions): Server {
  const { tool } = options;
  const interval = options.progressIntervalMs ?? MCP_PROGRESS_INTERVAL_MS;
  const { $schema: _dialect, ...inputSchema } = tool.jsonSchema;
  const definition: Tool = {
    name: tool.name,
    title: 'Agent2Agent',
    description: tool.description,
    inputSchema: inputSchema as Tool['inputSchema'],
    annotations: { title: 'Agent2Agent', readOnlyHint: false, destructiveHint: false, openWorldHint: true },
  };
  const server = new Server(
    { name: options.name ?? 'switchboard', version: VERSION },
    options.instructions === undefined
      ? { capabilities: { tools: {} } }
      : { capabilities: { tools: {} }, instructions: options.instructions },
  );
  // The SDK would answer arguments that are not an object with -32603 and a
  // raw validation dump: such calls are answered before they reach it.
  const connect = server.connect.bind(server);
  server.connect = (transport) => connect(new ToolCallScreen(transport));
  /** Events taken by waits whose answers the client no longer read. */
  let undelivered: EventView[] = [];
  const waitTaskId = (args: Record<string, unknown>): string | undefined | false => {
    if (args.action !== 'wait') return false;
    return typeof args.taskId === 'string' ? args.taskId : undefined;
  };
  const takeKept = (only: string | undefined): EventView[] => {
    const kept = undelivered.filter((e) => only === undefined || e.taskId === only);
    undelivered = undelivered.filter((e) => !kept.includes(e));
    return kept;
  };
  const run = async (args: Record<string, unknown>, signal: AbortSignal): Promise<A2AToolResult> => {
    const only = waitTaskId(args);
    if (only === false) return tool.execute(args);
    const before = takeKept(only);
    // Kept events answer at once, with whatever else is buffered.
    const result = await tool.execute(before.length > 0 ? { ...args, timeoutSeconds: 0 } : args);
    if (!result.ok || result.action !== 'wait') return result;
    if (signal.aborted) {
      undelivered = [...before, ...undelivered, ...result.events];
      return result;
    }
    // Events a cancelled wait took while this one ran come with it.
    const kept = [...before, ...takeKept(only)];
    return kept.length === 0 ? result : { ok: true, action: 'wait', events: [...kept, ...result.events] };
  };
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [definition] }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    if (request.params.name !== tool.name) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `Unknown tool ${request.params.name}: this server has one tool, A2A.`,
      );
    }
    const progressToken = request.params._meta?.progressToken;
    let progress = 0;
    const timer =
      progressToken === undefined
        ? undefined
        : setInterval(() => {
            progress += 1;
            extra
              .sendNotification({
                method: 'notifications/progress',
                params: { progressToken, progress, message: 'waiting on the A2A broker' },
              })
              .catch(() => undefined);
          }, interval);
    try {
      const result = await run(request.params.arguments ?? {}, extra.signal);
      return { content: [{ type: 'text', text: JSON.stringify(result) }], isError: !result.ok };
    } finally {
      if (timer !== undefined) clearInterval(timer);
    }
  });
  return server;
}

/** Why a `tools/call` request cannot be run, as one line saying what to send; undefined when it can. */
function toolCallProblem(message: JSONRPCMessage): string | undefined {
  if (!isJSONRPCRequest(message) || message.method !== 'tools/call') return undefined;
  const params = message.params as Record<string, unknown> | undefined;
  const send = 'send params {"name":"A2A","arguments":{"action":"discover"}}: arguments is one JSON object';
  if (params === undefined || typeof params.name !== 'string') {
    return `Invalid params: tools/call needs the tool's name; ${send}`;
  }
  const args = params.arguments;
  if (args === undefined || (args !== null && typeof args === 'object' && !Array.isArray(args))) return undefined;
  const got = args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`;
  return `Invalid params: the tool's arguments must be a JSON object, not ${got}; ${send}`;
}

/**
 * A transport seen through a screen: `tools/call` requests that
 * `toolCallProblem` refuses are answered here with -32602 and never reach
 * the server; everything else passes as is.
 */
class ToolCallScreen implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: Transport['onmessage'];
  setProtocolVersion?: (version: string) => void;

  constructor(private readonly inner: Transport) {
    if (inner.setProtocolVersion !== undefined) {
      this.setProtocolVersion = (version) => inner.setProtocolVersion?.(version);
    }
  }

  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  start(): Promise<void> {
    const { onclose, onerror } = this.inner;
    this.inner.onclose = () => {
      onclose?.();
      this.onclose?.();
    };
    this.inner.onerror = (error) => {
      onerror?.(error);
      this.onerror?.(error);
    };
    this.inner.onmessage = (message, extra) => {
      const problem = toolCallProblem(message);
      if (problem === undefined || !isJSONRPCRequest(message)) {
        this.onmessage?.(message, extra);
        return;
      }
      this.inner
        .send({ jsonrpc: '2.0', id: message.id, error: { code: ErrorCode.InvalidParams, message: problem } })
        .catch((error: unknown) => this.onerror?.(error instanceof Error ? error : new Error(String(error))));
    };
    return this.inner.start();
  }

  send: Transport['send'] = (message, options) => this.inner.send(message, options);

  close(): Promise<void> {
    return this.inner.close();
  }
}
