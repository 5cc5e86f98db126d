import { PROTOCOL_VERSION, SCHEMA_VERSION } from './bounds.js';
import { type HandshakeResult, METHODS } from './methods.js';
import { parseParams } from './parse.js';

export const SERVER_NAME = 'switchboard';
export const BASE_CAPABILITIES = ['a2a'] as const;

export function handshakeResult(version: string, extraCapabilities: readonly string[] = []): HandshakeResult {
  return {
    protocolVersion: PROTOCOL_VERSION,
    schemaVersion: SCHEMA_VERSION,
    capabilities: [...BASE_CAPABILITIES, ...extraCapabilities],
    server: { name: SERVER_NAME, version },
  };
}

/**
 * The answer to an `app.handshake` call with untrusted `params`: -32602 for
 * params the method's schema refuses, else the server's `handshakeResult`.
 * Every server answers the handshake through this function.
 */
export function answerHandshake(params: unknown, version: string): HandshakeResult {
  parseParams(METHODS['app.handshake'].params, params);
  return handshakeResult(version);
}
