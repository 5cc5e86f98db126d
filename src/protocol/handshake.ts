import { A2A_V1_PROTOCOL_VERSION, PROTOCOL_VERSION, SCHEMA_VERSION } from './bounds.js';
import { type HandshakeResult, METHODS } from './methods.js';
import { parseParams } from './parse.js';

export const SERVER_NAME = 'switchboard';
/** The capability of a server whose `a2a.message.send` reads `blocking`. */
export const BLOCKING_SEND_CAPABILITY = 'a2a.send.blocking';
/**
 * `a2a`: the wire of version 10 (A2A v0.3 shapes); `a2a.v1`: version 11 (A2A
 * v1.0 shapes) is served too; `a2a.send.blocking`: `a2a.message.send` reads
 * `blocking` (answered once the task settles).
 */
export const BASE_CAPABILITIES = ['a2a', 'a2a.v1', BLOCKING_SEND_CAPABILITY] as const;

/**
 * The version a server answers a client that asked for `requested`: 11 (A2A
 * v1.0 shapes and method names) to a client that asks for 11, else 10 (the
 * v0.3 shapes, as before version 11 existed).
 */
export function negotiatedVersion(requested: number): number {
  return requested === A2A_V1_PROTOCOL_VERSION ? A2A_V1_PROTOCOL_VERSION : PROTOCOL_VERSION;
}

export function handshakeResult(
  version: string,
  extraCapabilities: readonly string[] = [],
  protocolVersion: number = PROTOCOL_VERSION,
): HandshakeResult {
  return {
    protocolVersion,
    schemaVersion: SCHEMA_VERSION,
    capabilities: [...BASE_CAPABILITIES, ...extraCapabilities],
    server: { name: SERVER_NAME, version },
  };
}

/**
 * The answer to an `app.handshake` call with untrusted `params`: -32602 for
 * params the method's schema refuses, else the server's `handshakeResult`
 * at the version `negotiatedVersion` gives.
 * Every server answers the handshake through this function.
 */
export function answerHandshake(params: unknown, version: string): HandshakeResult {
  const { protocolVersion } = parseParams(METHODS['app.handshake'].params, params);
  return handshakeResult(version, [], negotiatedVersion(protocolVersion));
}
