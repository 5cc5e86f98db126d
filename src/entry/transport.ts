/**
 * `a2a-switchboard/transport`: the pieces of `switchboard serve`: NDJSON
 * output framing, the JSON-RPC server, the broker session, the socket server
 * and the agent inbox.
 *
 * @packageDocumentation
 */

export { LineWriter } from '../transport/line-writer.js';
export type { LineWriterOptions } from '../transport/line-writer.js';
export { JsonRpcServer } from '../transport/jsonrpc-server.js';
export type { Dispatch, DispatchedCall, JsonRpcServerOptions } from '../transport/jsonrpc-server.js';
export { BrokerSession } from '../transport/broker-session.js';
export { BrokerSocketServer, prepareSocketPath } from '../transport/socket-server.js';
export type { SocketServerOptions } from '../transport/socket-server.js';
export type {
  BrokerSessionOptions,
  SessionCommonOptions,
  StreamSessionOptions,
  LinkedSessionOptions,
  SessionLink,
  SessionDispatch,
} from '../transport/broker-session.js';
export { AgentInbox, MAX_BUFFERED_EVENTS } from '../transport/agent-inbox.js';
export type { FetchEventsSince, ScreenEvents } from '../transport/agent-inbox.js';
// A client is a `ClientBase` (handshake, inboxes, reconnect) with one call per
// method (`ClientMethods`): together the root's `SwitchboardClient`.
export { ClientBase, CLIENT_METHODS } from '../transport/client.js';
export type { ClientMethods } from '../transport/client.js';
// What the model-facing `A2A` tool answers with (its two arms and the views of
// tasks, messages, parts, artifacts, events and agents), and its adapters for
// the AI SDK, OpenAI and Anthropic: the tools they return and the message
// shapes they read and write.
export type {
  A2AToolSuccess,
  A2AToolFailure,
  CandidateView,
  TaskView,
  MessageView,
  PartView,
  ArtifactView,
  EventView,
  AgentView,
} from '../transport/a2a-tool.js';
export type { AISDKA2ATool, AISDKInputSchema } from '../transport/a2a-tool-ai-sdk.js';
export type {
  OpenAIA2ATool,
  OpenAIChatTool,
  OpenAIChatToolCall,
  OpenAIChatToolMessage,
  OpenAIFunctionCall,
  OpenAIFunctionCallOutput,
  OpenAIResponsesTool,
} from '../transport/a2a-tool-openai.js';
export type {
  AnthropicA2ATool,
  AnthropicTool,
  AnthropicToolResultBlock,
  AnthropicToolUseBlock,
} from '../transport/a2a-tool-anthropic.js';
// Where `connect({ db })` finds or starts the host's broker, and how long that broker idles.
export { defaultSocketPath } from '../transport/host-paths.js';
export { DEFAULT_BROKER_IDLE_SECONDS } from '../transport/host-broker.js';
// The MCP server's progress notifications, and the bounded stdio transport `switchboard mcp` serves it on.
export { MCP_PROGRESS_INTERVAL_MS } from '../transport/a2a-tool-mcp.js';
export { McpStdioTransport } from '../transport/mcp-stdio-transport.js';
export type { McpStdioTransportOptions, McpTransportCloseReason } from '../transport/mcp-stdio-transport.js';
// The code lists of the errors a client meets (the classes are at the package root).
export { SOCKET_ERROR_CODES } from '../transport/socket-server.js';
export { TRANSPORT_ERROR_CODES } from '../transport/transport-error.js';
export { BROKER_OWNERSHIP_ERROR_CODES } from '../persistence/a2a/owner.js';
