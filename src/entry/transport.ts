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
export type { Dispatch, JsonRpcServerOptions } from '../transport/jsonrpc-server.js';
export { BrokerSession } from '../transport/broker-session.js';
export { BrokerSocketServer, prepareSocketPath } from '../transport/socket-server.js';
export type { SocketServerOptions } from '../transport/socket-server.js';
export type { BrokerSessionOptions } from '../transport/broker-session.js';
export { AgentInbox, MAX_BUFFERED_EVENTS } from '../transport/agent-inbox.js';
export type { FetchEventsSince } from '../transport/agent-inbox.js';
export { ClientBase, CLIENT_METHODS } from '../transport/client.js';
// Where `connect({ db })` finds or starts the host's broker, and how long that broker idles.
export { defaultSocketPath } from '../transport/host-paths.js';
export { DEFAULT_BROKER_IDLE_SECONDS } from '../transport/host-broker.js';
// The MCP server's progress notifications.
export { MCP_PROGRESS_INTERVAL_MS } from '../transport/a2a-tool-mcp.js';
// The code lists of the errors a client meets (the classes are at the package root).
export { SOCKET_ERROR_CODES } from '../transport/socket-server.js';
export { TRANSPORT_ERROR_CODES } from '../transport/transport-error.js';
export { BROKER_OWNERSHIP_ERROR_CODES } from '../persistence/a2a/owner.js';
