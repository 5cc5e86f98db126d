/**
 * `a2a-switchboard/protocol`: every zod schema of the wire, the bounds, the
 * error constructors, the JSON-RPC codes and the parsing helpers around them.
 *
 * @packageDocumentation
 */

// The broker's wire: parts, tasks, cards, events, methods, JSON-RPC, errors.
export * from '../protocol/index.js';
// JSON-RPC: its error codes, and the mapping of a `BrokerError` onto them and back.
export {
  A2A_ERROR,
  JSONRPC_CODE_OF,
  JSONRPC_INTERNAL_ERROR,
  JSONRPC_INVALID_PARAMS,
  JSONRPC_INVALID_REQUEST,
  JSONRPC_METHOD_NOT_FOUND,
  JSONRPC_PARSE_ERROR,
  fromJsonRpcError,
  toJsonRpcError,
} from '../transport/jsonrpc-errors.js';
export type { JsonRpcErrorObject } from '../transport/jsonrpc-errors.js';
// The model-facing `A2A` tool's input.
export * from '../protocol/a2a-tool.js';
// The work bus: envelopes and retry policies.
export * from '../protocol/work-envelope.js';
export * from '../protocol/retry-policy.js';
// A hop's answer streamed while it runs (artifact chunks on the results role).
export * from '../protocol/artifact-chunk.js';
// Workflows, work items' outputs and the audit chain's entries.
export * from '../protocol/workflow.js';
export * from '../protocol/item-output.js';
export * from '../protocol/audit.js';
// The operations console's HTTP API bodies.
export * from '../protocol/console-api.js';
// Cancels and retries of work items sent to the Coordinator (`switchboard items cancel|retry`).
export * from '../protocol/item-control.js';
// What a model agent keeps as its hop's checkpoint.
export * from '../protocol/model-agent-checkpoint.js';
