import type { V1AgentCard } from '../protocol/a2a-v1/schemas.js';

/** The name of the bearer scheme every card of the gateway declares. */
export const GATEWAY_SECURITY_SCHEME = 'gatewayKey';

/** The path of a served agent's base URL: `/agents/NAME/`. */
export function agentBasePath(name: string): string {
  return `/agents/${encodeURIComponent(name)}/`;
}

/**
 * The card the gateway serves for one agent, at its well-known path: the
 * broker's v1.0 card of the agent (when it is live) with the gateway's
 * JSON-RPC and HTTP+JSON interfaces, the bearer scheme its keys are, and push
 * notifications (the gateway POSTs a task's updates to the webhooks of its configs). The extended
 * card (`GetExtendedAgentCard`, for a key scoped to the agent) is the same
 * card: the public one hides nothing.
 */
export function gatewayCard(
  name: string,
  baseUrl: string,
  brokerCard: V1AgentCard | undefined,
  version: string,
): V1AgentCard {
  const base: V1AgentCard = brokerCard ?? {
    name,
    description: `the agent ${name} of a switchboard broker (not live at this moment: its tasks wait until it registers)`,
    version,
    capabilities: {},
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [],
  };
  return {
    ...base,
    name,
    supportedInterfaces: [
      { url: baseUrl, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: baseUrl, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ],
    capabilities: { ...base.capabilities, streaming: true, pushNotifications: true, extendedAgentCard: true },
    securitySchemes: {
      [GATEWAY_SECURITY_SCHEME]: {
        httpAuthSecurityScheme: {
          scheme: 'Bearer',
          description: 'a key of switchboard gateway keys add, scoped to this agent',
        },
      },
    },
    securityRequirements: [{ schemes: { [GATEWAY_SECURITY_SCHEME]: { list: [] } } }],
  };
}
