// The A2A v1.0 card of a bench server's agent (bench/peer-sdk-server.mjs,
// bench/gateway-floor-server.mjs): JSON-RPC at `url`, no streaming, no push,
// no security scheme.
export function benchAgentCard({ name, description, url, protocolVersion }) {
  return {
    name,
    description,
    supportedInterfaces: [{ url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion }],
    provider: undefined,
    version: '1.0.0',
    capabilities: { streaming: false, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text'],
    defaultOutputModes: ['text'],
    skills: [],
    documentationUrl: '',
    signatures: [],
  };
}
