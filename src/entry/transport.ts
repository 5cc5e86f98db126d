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
export { ClientBase } from '../transport/client.js';
