import { PROTOCOL_VERSION, SCHEMA_VERSION } from './bounds.js';
import type { HandshakeResult } from './methods.js';

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
